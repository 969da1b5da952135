"""Reported pairs past the room the budget leaves them go to disk, in the same order.

A corpus held in memory whose reported pairs would not fit beside the rest of the scan is
not refused when the disk has room for them: they are written past their share of the
budget and read back in order, and the scan is the same to the last bit. Without that
room the refusal says so.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simdup.search.plan.budget as budget_module
import simdup.search.result as result_module
from simdup.cli import cli
from simdup.engines.local import find_duplicates, plan_inputs, scan_inputs
from simdup.engines.local.fingerprinting import fingerprint_documents, widest
from simdup.engines.local.pairs import corpus_survey
from simdup.inputs.files import ReadOptions
from simdup.inputs.gather import InputSet, gather_inputs
from simdup.model import Document, PairArrays, ScanResult
from simdup.params import Params
from simdup.search.held import REPORTED, Held
from simdup.search.plan.budget import (
    PAIR_BYTES,
    BudgetError,
    HeldSpill,
    SpillLimits,
    fit_of,
    held_disk,
)
from simdup.search.plan.choice import fitted, refusal
from simdup.search.plan.planner import Plan
from simdup.search.plan.survey import Survey
from simdup.search.result import in_canonical_order
from simdup.spill import SpillDir, is_mapped

#: The corpus stays in memory; its reported pairs have a share of ten.
HELD_TEN = SpillLimits(
    corpus_entries=10**9, block_entries=1 << 16, waiting_pairs=1 << 20, held_pairs=10
)


def copies(documents: int, seed: int = 0) -> list[Document]:
    """Edited copies of four texts: most pairs are above the threshold."""
    rng = np.random.default_rng(seed)
    words = [f"w{k}" for k in range(60)]
    bases = [[words[int(k)] for k in rng.integers(0, 60, 30)] for _ in range(4)]
    out = []
    for k in range(documents):
        text = list(bases[k % 4])
        text[int(rng.integers(len(text)))] = words[int(rng.integers(60))]
        out.append(Document(f"doc{k:04d}", " ".join(text)))
    return out


def columns(pairs: PairArrays) -> list[bytes]:
    return [
        np.asarray(getattr(pairs, c)).tobytes() for c in ("pairs", "hamming", "estimated", "cosine")
    ]


def parts_of(draw_sizes: list[int], seed: int) -> list[PairArrays]:
    """Parts of measured pairs of 31 rows, with ties in every column.

    Exact copies (score 1.0 at distance 0) among them, scores rounded past 1.0, and
    unknown cosines.
    """
    rng = np.random.default_rng(seed)
    parts = []
    for size in draw_sizes:
        pairs = np.sort(rng.integers(0, 30, (size, 2)), axis=1)
        pairs[:, 1] += 1
        cosine = rng.choice([np.nextafter(1.0, 2.0), 1.0, 0.95, 0.9, 0.5, -0.2, np.nan], size)
        parts.append(
            PairArrays(
                pairs.astype(np.int64),
                rng.integers(0, 4, size).astype(np.int64),
                rng.choice([1.0, 0.9, 0.8], size),
                cosine,
            )
        )
    return parts


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sizes=st.lists(st.integers(0, 60), max_size=8),
    limit=st.integers(1, 200),
    seed=st.integers(0, 2**16),
)
def test_held_pairs_come_back_in_the_order_of_those_in_memory(
    tmp_path: Path, sizes: list[int], limit: int, seed: int
) -> None:
    expected = in_canonical_order(parts_of(sizes, seed))
    with SpillDir(str(tmp_path)) as spill:
        held = Held(spill, limit, 31)
        for part in parts_of(sizes, seed):
            held.add(part)
        assert held.spilled == (sum(sizes) > limit)
        ordered = held.ordered()
        assert columns(ordered) == columns(expected)
        assert is_mapped(ordered.cosine) == held.spilled
    assert list(tmp_path.iterdir()) == []


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(0, 80), max_size=6), seed=st.integers(0, 2**16))
def test_pairs_sorted_a_score_range_at_a_time_come_in_the_order_of_one_sort(
    sizes: list[int], seed: int
) -> None:
    expected = in_canonical_order(parts_of(sizes, seed))
    every = result_module.RANGED_PAIRS
    try:
        result_module.RANGED_PAIRS = 0  # every result large enough to be sorted by range
        ranged = in_canonical_order(parts_of(sizes, seed))
    finally:
        result_module.RANGED_PAIRS = every
    assert columns(ranged) == columns(expected)


def test_pairs_without_a_place_to_go_are_all_held() -> None:
    held = Held(None, 1)
    for part in parts_of([5, 7], 3):
        held.add(part)
    assert not held.spilled
    assert columns(held.ordered()) == columns(in_canonical_order(parts_of([5, 7], 3)))


def test_the_disk_needed_is_twice_the_records_past_the_limit_only() -> None:
    assert held_disk(100, None) == 0
    assert held_disk(100, 100) == 0
    assert held_disk(101, 100) == 2 * 101 * 40  # a pair, its distance and two cosines
    assert REPORTED.itemsize == PAIR_BYTES  # the pairs the budget counts are those written


def _plan_and_survey(documents: int = 120) -> tuple[Params, Survey]:
    params = Params(threshold=0.8)
    corpus = fingerprint_documents(copies(documents), widest(params))
    survey = corpus_survey(params, corpus.matrix, corpus.fingerprints)
    return params, survey


@pytest.fixture
def planned(monkeypatch: pytest.MonkeyPatch) -> Plan:
    """The plan of a corpus of copies within 1 GiB, no memory counted as resident."""
    monkeypatch.setattr(budget_module, "resident_memory", lambda: 0)
    params, survey = _plan_and_survey()
    plan, _ = fitted(params, survey, 1 << 30, workers=1, report_all=False)
    return plan


def test_a_plan_that_fits_in_memory_is_priced_as_before_and_may_hold_more_than_expected(
    planned: Plan,
) -> None:
    plan = planned
    plain = fit_of(plan, 1 << 30, workers=1, report_all=False)
    spillable = fit_of(
        plan, 1 << 30, workers=1, report_all=False, held_spill=HeldSpill(10, 1 << 40, "/tmp")
    )
    assert spillable.footprint == plain.footprint
    assert plain.held_limit is None
    assert spillable.held_limit is not None
    assert spillable.held_limit >= plan.expected_reported
    # The room the rest leaves: the pairs may outgrow the estimate up to the budget.
    others = plain.total - plain.footprint.held
    assert spillable.held_limit == ((1 << 30) - others) // (2 * PAIR_BYTES)


def test_a_plan_whose_pairs_do_not_fit_holds_their_share_and_writes_the_rest(
    planned: Plan,
) -> None:
    big = dataclasses.replace(planned, expected_reported=10**9, reported_bound=10**9)
    budget = 1 << 30
    in_memory = fit_of(big, budget, workers=1, report_all=False)
    assert in_memory.total > budget
    share = 1000
    roomy = HeldSpill(share, 1 << 50, "/somewhere")
    spilled = fit_of(big, budget, workers=1, report_all=False, held_spill=roomy)
    assert spilled.total <= budget
    assert spilled.held_limit is not None
    assert share <= spilled.held_limit < 10**9
    # The pairs held fill the room the rest leaves before the others go to disk: the plan
    # counts that room, so its memory is the run's.
    assert spilled.footprint.held == 2 * spilled.held_limit * PAIR_BYTES
    assert spilled.total > budget - 2 * PAIR_BYTES
    # A full disk: the need is memory's, and the refusal says what the disk lacks.
    full = HeldSpill(share, 1 << 20, "/somewhere")
    assert fit_of(big, budget, workers=1, report_all=False, held_spill=full) == in_memory


def test_pairs_that_go_to_disk_in_exact_mode_only_leave_tables_priced_in_memory(
    planned: Plan,
) -> None:
    big = dataclasses.replace(planned, expected_reported=10**9, reported_bound=10**9)
    assert big.exact  # a corpus of copies: every pair
    tables = dataclasses.replace(big, source="scheme")
    budget = 1 << 30
    exact_only = HeldSpill(1000, 1 << 50, "/somewhere", exact_only=True)
    assert fit_of(big, budget, workers=1, report_all=False, held_spill=exact_only).total <= budget
    in_memory = fit_of(tables, budget, workers=1, report_all=False)
    assert fit_of(tables, budget, workers=1, report_all=False, held_spill=exact_only) == in_memory
    refused = refusal(tables, in_memory, budget, [], HeldSpill(1, 0, "/x", exact_only=True))
    assert "to disk" not in refused
    assert "to disk" in refusal(big, in_memory, budget, [], HeldSpill(1, 0, "/x", exact_only=True))


def test_a_refusal_says_the_disk_lacks_the_room_for_the_pairs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(budget_module, "resident_memory", lambda: 0)
    params, survey = _plan_and_survey()
    budget = 1 << 10  # nothing fits
    with pytest.raises(BudgetError) as refused:
        fitted(
            params,
            survey,
            budget,
            workers=1,
            report_all=False,
            held_spill=HeldSpill(1, 0, "/nowhere"),
        )
    assert "writing those pairs to disk instead would need about" in str(refused.value)
    assert "in /nowhere, which has 0 bytes free" in str(refused.value)


def squeezed(found: InputSet, params: Params, jobs: int = 1) -> int:
    """Return a budget that holds the scan of ``found`` but not its reported pairs."""
    described = plan_inputs(found, params, memory=1 << 40, limits=HELD_TEN, jobs=jobs)
    predicted = described["memory"]["predicted"]
    assert predicted["held"] > 2 * 40 * PAIR_BYTES  # many pairs
    return int(predicted["total"] - predicted["held"] + 2 * 20 * PAIR_BYTES)


@pytest.mark.parametrize(
    "settings",
    [{"threshold": 0.8}, {"threshold": 0.95}, {"threshold": 0.8, "bits": 64, "scheme": "loose"}],
    ids=["exact-0.8", "exact-0.95", "tables"],
)
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_scan_whose_pairs_outgrow_the_budget_writes_them_and_reports_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: dict[str, Any], jobs: int
) -> None:
    monkeypatch.setattr(budget_module, "resident_memory", lambda: 0)
    found = gather_inputs([], ReadOptions(), copies(160))
    params = Params(**settings)
    budget = squeezed(found, params, jobs)
    plan = plan_inputs(
        found, params, memory=budget, limits=HELD_TEN, tmp_dir=str(tmp_path), jobs=jobs
    )
    assert not any("refused" in w for w in plan["warnings"])
    assert plan["disk"]["pairs"] > 0
    assert plan["disk"]["store"] == 0
    assert plan["memory"]["predicted"]["total"] <= budget
    held = scan_inputs(found, params, jobs=jobs)
    spilled = scan_inputs(
        found, params, jobs=jobs, memory=budget, limits=HELD_TEN, tmp_dir=str(tmp_path)
    )
    assert is_mapped(spilled.pairs.cosine)
    assert not is_mapped(held.pairs.cosine)
    assert len(spilled.pairs) > 100
    assert columns(spilled.pairs) == columns(held.pairs)
    assert spilled.stats == held.stats
    assert list(tmp_path.iterdir()) == []


def test_pairs_that_would_not_fit_on_disk_either_are_refused_before_pair_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(budget_module, "resident_memory", lambda: 0)
    found = gather_inputs([], ReadOptions(), copies(160))
    params = Params(threshold=0.8, bits=64, scheme="balanced")  # the one plan
    budget = squeezed(found, params)
    spilled = scan_inputs(found, params, memory=budget, limits=HELD_TEN, tmp_dir=str(tmp_path))
    assert is_mapped(spilled.pairs.cosine)
    monkeypatch.setattr(SpillDir, "free", lambda self: 0)
    with pytest.raises(BudgetError, match="which has 0 bytes free"):
        scan_inputs(found, params, memory=budget, limits=HELD_TEN, tmp_dir=str(tmp_path))
    assert list(tmp_path.iterdir()) == []


def squeezed_copies(
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[list[Document], Params, int, ScanResult]:
    """Return copies, their settings, a budget too small for their pairs, and their scan.

    Held pairs are limited to ten, and no memory counts as resident.
    """
    monkeypatch.setattr(budget_module, "resident_memory", lambda: 0)
    monkeypatch.setattr(budget_module, "spill_limits", lambda size: HELD_TEN)
    docs = copies(160)
    params = Params(threshold=0.8)
    budget = squeezed(gather_inputs([], ReadOptions(), docs), params)
    return docs, params, budget, find_duplicates(docs, params)


def test_the_library_call_spills_too(monkeypatch: pytest.MonkeyPatch) -> None:
    docs, params, budget, held = squeezed_copies(monkeypatch)
    spilled = find_duplicates(docs, params, memory=budget)
    assert is_mapped(spilled.pairs.cosine)
    assert columns(spilled.pairs) == columns(held.pairs)


def test_the_command_line_writes_the_same_report_when_pairs_spill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(budget_module, "resident_memory", lambda: 0)
    monkeypatch.setattr(budget_module, "spill_limits", lambda size: HELD_TEN)
    docs = copies(160)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": d.name, "text": d.text}) + "\n" for d in docs))
    budget = squeezed(gather_inputs([], ReadOptions(), docs), Params(threshold=0.8))
    runner = CliRunner()
    args = [
        "scan",
        "--jsonl",
        str(corpus),
        "--threshold",
        "0.8",
        "--jobs",
        "1",
        "--format",
        "jsonl",
    ]
    plain = runner.invoke(cli, args)
    spilled = runner.invoke(cli, [*args, "--memory", str(budget), "--tmp-dir", str(tmp_path)])
    assert plain.exit_code == 0, plain.output
    assert spilled.exit_code == 0, spilled.output
    assert spilled.stdout == plain.stdout
    assert plain.stdout.count("\n") > 100
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.jsonl"]


def test_the_installed_script_writes_pairs_past_its_budget_to_disk_and_the_same_report(
    tmp_path: Path, simdup_script: str
) -> None:
    """A real process: one text copied 2,000 times with an edit each, about 2 million pairs.

    Holding them takes about 160 MiB. The budget is the first, in steps of 16 MiB, whose
    plan writes them to disk and fits, plus 32 MiB: inside the range where the plan
    writes them (about 80 MiB wide here) by far more than two processes differ by.
    """
    rng = np.random.default_rng(7)
    words = [f"w{k}" for k in range(400)]
    template = [words[int(k)] for k in rng.integers(0, 400, 60)]
    corpus = tmp_path / "corpus.jsonl"
    with corpus.open("w") as out:
        for k in range(2000):
            text = list(template)
            text[int(rng.integers(60))] = words[int(rng.integers(400))]
            out.write(json.dumps({"id": f"d{k:05d}", "text": " ".join(text)}) + "\n")
    work = tmp_path / "work"
    work.mkdir()
    scan = [simdup_script, "scan", "--jsonl", str(corpus), "--threshold", "0.9", "-q"]
    scan += ["--tmp-dir", str(work)]

    def plan(memory: int) -> dict[str, Any]:
        done = subprocess.run(
            [*scan, "--plan", "--format", "json", "--memory", str(memory)],
            capture_output=True,
            text=True,
            check=True,
        )
        described: dict[str, Any] = json.loads(done.stdout)
        return described

    assert plan(1 << 30)["memory"]["predicted"]["held"] > 128 << 20
    budget = None
    for memory in range(96 << 20, 512 << 20, 16 << 20):  # the first budget that spills
        described = plan(memory)
        refused = any("refused" in w for w in described["warnings"])
        if not refused and described.get("disk", {}).get("pairs", 0) > 0:
            budget = memory + (32 << 20)
            break
    assert budget is not None
    assert plan(budget).get("disk", {}).get("pairs", 0) > 0
    plain, squeezed = tmp_path / "plain.csv", tmp_path / "squeezed.csv"
    subprocess.run([*scan, "--format", "csv", "-o", str(plain)], check=True)
    done = subprocess.run(
        [*scan, "--memory", str(budget), "--format", "csv", "-o", str(squeezed)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert squeezed.stat().st_size == plain.stat().st_size > 10 << 20
    with plain.open("rb") as a, squeezed.open("rb") as b:
        while chunk := a.read(1 << 20):
            assert chunk == b.read(1 << 20)
    assert list(work.iterdir()) == []
