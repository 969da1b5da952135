"""The memory budget: sizes, predictions, refusal before pair work, and peak RSS."""

from __future__ import annotations

import dataclasses
import functools
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from simdup.cli import cli
from simdup.engines import local
from simdup.engines.local import find_duplicates
from simdup.engines.local import pairs as pipeline
from simdup.engines.local.fingerprinting import fingerprint_documents
from simdup.errors import SimdupError
from simdup.model import Document
from simdup.params import Params
from simdup.search.candidates import DEDUPE_BATCH, FIRST_TABLE_LIMIT
from simdup.search.plan import budget as budget_module
from simdup.search.plan.budget import (
    CHUNK_STEP,
    MIN_BLOCK_ENTRIES,
    MIN_CHUNK_PAIRS,
    BudgetError,
    fit_of,
    predict,
    spill_limits,
    stored_fit,
)
from simdup.search.plan.choice import fit_warned, fitted
from simdup.search.plan.memory import default_memory, physical_memory
from simdup.search.plan.parts import (
    MIN_AHEAD_BYTES,
    TABLE_BYTES_PER_ROW,
    ahead_bytes,
    index_bytes,
    table_bytes,
)
from simdup.search.plan.planner import plan
from simdup.sizes import format_size, parse_size


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("512M", 512 << 20),
        ("2G", 2 << 30),
        ("1.5GiB", 3 << 29),
        ("100kb", 100_000),
        ("300000000", 300_000_000),
        (" 4 gib ", 4 << 30),
        ("1T", 1 << 40),
    ],
)
def test_parse_size_reads_units(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "lots", "12 parsecs", "-1G", "0", "1..5G", "G"])
def test_parse_size_refuses_what_is_not_a_size(text: str) -> None:
    with pytest.raises(SimdupError, match="size"):
        parse_size(text)


def test_default_memory_is_at_most_4_gib_and_half_the_machine() -> None:
    memory = default_memory()
    assert 0 < memory <= 4 << 30
    physical = physical_memory()
    if physical is not None:
        assert memory <= physical // 2


def test_format_size() -> None:
    assert format_size(1 << 30) == "1.0 GiB"
    assert format_size(5 << 20) == "5 MiB"


def _corpus(n: int, seed: int = 0) -> list[Document]:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(300)]
    return [
        Document(f"d{i:05d}", " ".join(words[k] for k in rng.integers(0, 300, 12)))
        for i in range(n)
    ]


def test_prediction_grows_with_the_plan_and_stays_within_a_large_budget() -> None:
    corpus = fingerprint_documents(_corpus(200), Params(bits=512))
    chosen = plan(Params(), corpus.fingerprints)
    fit = predict(chosen, 1 << 40, workers=1, report_all=False)
    assert fit.total == sum(v for k, v in fit.describe().items() if k != "total")
    assert fit.seen_limit is None
    assert fit.total <= 1 << 40
    everything = predict(chosen, 1 << 40, workers=1, report_all=True)
    assert everything.footprint.held >= fit.footprint.held


def test_tables_bucketed_in_threads_give_way_to_one_at_a_time_before_a_refusal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At ten million documents five tables in flight take 3 GB: one at a time fits."""
    # The budgets below are cut to the byte from one prediction: the memory resident when
    # each is made is held still (this process's own moves with the tests beside it).
    monkeypatch.setattr(budget_module, "resident_memory", lambda: 300 << 20)
    corpus = fingerprint_documents(_corpus(200), Params(bits=512))
    chosen = plan(Params(), corpus.fingerprints)
    assert len(chosen.tables.keys) > FIRST_TABLE_LIMIT
    assert chosen.max_hamming is not None
    large = dataclasses.replace(chosen, distinct=10_000_000)
    roomy = predict(large, 1 << 40, workers=2, report_all=False)
    assert roomy.table_threads == 2
    assert roomy.footprint.tables == table_bytes(large, 2, roomy.ahead_bytes)
    assert table_bytes(large, 2) - table_bytes(large, 1) == 4 * 10_000_000 * TABLE_BYTES_PER_ROW
    # Each of the five tables in flight may hold its share of the pairs the plan expects.
    assert roomy.ahead_bytes == ahead_bytes(large, 1 << 40, 2)
    assert roomy.ahead_bytes is not None
    assert roomy.ahead_bytes >= MIN_AHEAD_BYTES
    ahead = table_bytes(large, 2, roomy.ahead_bytes) - table_bytes(large, 2)
    assert ahead == 5 * roomy.ahead_bytes
    # The record of emitted pairs gives way first, the threads only when that is not enough.
    without_record = roomy.total - roomy.footprint.seen + DEDUPE_BATCH * 16
    recordless = predict(large, without_record, workers=2, report_all=False)
    assert (recordless.table_threads, recordless.footprint.seen) == (2, 0)
    budget = without_record - (roomy.footprint.tables - table_bytes(large, 1)) // 2
    tight = fit_of(large, budget, workers=2, report_all=False)
    assert (tight.table_threads, tight.pipelined) == (1, False)  # verification runs beside
    assert tight.footprint.tables == table_bytes(large, 1)
    assert tight.total <= budget
    # With a second core idle (a stored corpus is verified after the search), the one
    # thread makes the pairs while the scan's own takes them, a few pieces ahead, in the
    # chunks' share: the same memory.
    idle = predict(large, budget, workers=2, report_all=False, table_threads=1, idle=True)
    assert idle.pipelined
    assert idle.ahead_bytes == ahead_bytes(large, budget, 1, pipelined=True) == MIN_AHEAD_BYTES
    assert idle.total == predict(large, budget, workers=2, report_all=False, table_threads=1).total
    assert idle.footprint.tables == table_bytes(large, 1)
    alone = predict(large, 1 << 40, workers=1, report_all=False, idle=True)
    assert (alone.table_threads, alone.pipelined, alone.ahead_bytes) == (1, False, None)
    assert alone.footprint.tables == table_bytes(large, 1)


def test_chunks_of_candidate_pairs_give_way_to_a_resident_memory_a_few_percent_higher() -> None:
    """A run at the budget's edge takes smaller chunks rather than a refusal.

    The resident memory read at the plan varies from run to run by a few percent; smaller
    chunks give the same pairs, a little slower.
    """
    corpus = fingerprint_documents(_corpus(200), Params(bits=512))
    chosen = plan(Params(), corpus.fingerprints)
    few = dataclasses.replace(chosen.tables, keys=chosen.tables.keys[:FIRST_TABLE_LIMIT])
    large = dataclasses.replace(
        chosen, tables=few, distinct=1_000_000, expected_verified=10**9, expected_reported=10**5
    )
    budget = 1 << 30
    roomy = fit_of(large, budget, workers=1, report_all=False, resident=0)
    assert roomy.chunk_pairs > 4 * MIN_CHUNK_PAIRS
    one = functools.partial(predict, large, budget, workers=1, report_all=False, table_threads=1)
    least = one(resident=0, chunk_cap=MIN_CHUNK_PAIRS)
    saved = roomy.total - least.total
    assert saved > 0
    # A resident memory that takes half of what the smallest chunks would save.
    crowded = budget - roomy.total + saved // 2
    fit = fit_of(large, budget, workers=1, report_all=False, resident=crowded)
    assert fit.total <= budget
    assert MIN_CHUNK_PAIRS <= fit.chunk_pairs < roomy.chunk_pairs
    # The largest that fits, to a step.
    larger = one(resident=crowded, chunk_cap=fit.chunk_pairs + CHUNK_STEP)
    assert larger.total > budget
    # Past what the smallest save, the need a refusal names is theirs.
    over = budget - roomy.total + saved + (1 << 20)
    refused = fit_of(large, budget, workers=1, report_all=False, resident=over)
    assert refused.total > budget
    assert refused.chunk_pairs == MIN_CHUNK_PAIRS
    assert refused.total == least.total + over


def test_every_plan_a_scan_prices_is_priced_on_one_reading_of_the_resident_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    readings = iter(range(1 << 20, 1 << 40, 1 << 20))  # a memory that grows as it is read
    read: list[int] = []

    def resident() -> int:
        read.append(next(readings))
        return read[-1]

    monkeypatch.setattr(budget_module, "resident_memory", resident)
    corpus = fingerprint_documents(_corpus(200), Params(bits=512))
    survey = pipeline.corpus_survey(Params(), corpus.matrix, corpus.fingerprints)
    with pytest.raises(BudgetError):
        fitted(Params(), survey, 1 << 20, workers=2, report_all=False)  # every plan priced
    assert len(read) == 1
    _, fit = fitted(Params(), survey, 1 << 40, workers=2, report_all=False)
    assert len(read) == 2
    assert fit.footprint.resident == read[-1]


def test_a_stored_corpus_is_not_priced_for_a_verification_index_in_memory() -> None:
    # Ten million documents of 200 features: their index in memory would take 45 GiB, far
    # past the budget; a stored corpus reads it from the store a few blocks at a time.
    corpus = fingerprint_documents(_corpus(200), Params(bits=512))
    chosen = plan(Params(), corpus.fingerprints)
    large = dataclasses.replace(chosen, entries=200.0, shared=5000, documents=10_000_000)
    budget = 4 << 30
    held = predict(large, budget, workers=2, report_all=False)
    assert index_bytes(large) == 24 * 200 * 10_000_000
    assert held.total > budget
    stored = stored_fit(held, spill_limits(budget), index_bytes(large))
    assert stored.total <= budget


def test_a_stored_corpus_narrows_its_blocks_of_rows_rather_than_be_refused() -> None:
    corpus = fingerprint_documents(_corpus(200), Params(bits=512))
    chosen = plan(Params(), corpus.fingerprints)
    budget = 1 << 30
    limits = spill_limits(budget)
    held = predict(chosen, budget, workers=2, report_all=False)
    crowded = dataclasses.replace(
        held, footprint=dataclasses.replace(held.footprint, resident=budget // 2)
    )
    wide = stored_fit(crowded, limits)
    assert wide.total > budget  # blocks of half the budget beside half already used
    narrowed = stored_fit(crowded, limits, budget=budget)
    assert narrowed.total <= budget
    assert narrowed.spill is not None
    assert narrowed.spill.block_entries < limits.block_entries
    assert narrowed.spill.waiting_pairs == limits.waiting_pairs
    # A budget the resident memory alone fills leaves the smallest blocks, and no fit.
    full = dataclasses.replace(held, footprint=dataclasses.replace(held.footprint, resident=budget))
    least = stored_fit(full, limits, budget=budget)
    assert least.total > budget
    assert least.spill is not None
    assert least.spill.block_entries == MIN_BLOCK_ENTRIES


def test_a_plan_that_cannot_fit_is_refused_before_any_pair_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_pair_work(*args: object, **kwargs: object) -> None:
        raise AssertionError("pair work started")

    monkeypatch.setattr(pipeline, "candidate_chunks", no_pair_work)
    monkeypatch.setattr(pipeline, "exact_chunks", no_pair_work)
    with pytest.raises(BudgetError) as caught:
        find_duplicates(_corpus(300), Params(threshold=0.5), memory=1 << 20)
    message = str(caught.value)
    assert "budget 1 MiB" in message
    assert "--threshold 0.55" in message
    assert "--weighting log" in message
    assert "--weighting binary" in message
    assert "stop-word list" in message
    assert "--memory" in message


def test_a_scan_that_fits_reports_its_predicted_memory_in_the_plan_only() -> None:
    described = local.plan_duplicates(_corpus(50), Params(), memory=1 << 30)
    assert described["memory"]["budget"] == 1 << 30
    assert described["memory"]["predicted"]["total"] <= 1 << 30
    result = find_duplicates(_corpus(50), Params(), memory=1 << 30)
    assert "memory" not in result.plan  # scan output stays byte-identical across machines


#: A scan in a child process whose unbounded form would hold a 16,000 x 16,000 float64
#: Gram matrix (about 2 GiB); exact mode is forced by pricing the tables out of reach.
_CHILD = textwrap.dedent(
    """
    import json, resource, sys
    import numpy as np
    from simdup.search.plan import planner as plan_module
    from simdup.model import Document
    from simdup.params import Params
    from simdup.engines.local import find_duplicates

    plan_module.PLAN_SECONDS = 1e18  # every corpus is "cheap" enough to be exact
    n, budget = int(sys.argv[1]), int(sys.argv[2])
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(200)]
    docs = [
        Document(f"d{i:05d}", " ".join(words[k] for k in rng.integers(0, 200, 6)))
        for i in range(n)
    ]
    docs += [Document("copy", docs[0].text), Document("copy2", docs[1].text)]
    result = find_duplicates(docs, Params(threshold=0.99), memory=budget)
    # The peak of this process's own memory: ru_maxrss would carry over the parent's peak
    # across exec (pytest's, after the tests before), where VmHWM starts afresh.
    try:
        with open("/proc/self/status") as status:
            fields = dict(line.split(":", 1) for line in status)
        peak = int(fields["VmHWM"].split()[0]) * 1024
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"mode": result.plan["mode"], "pairs": len(result.pairs), "peak": peak}))
    """
)


def test_an_exact_scan_stays_under_a_small_budget_measured_in_a_subprocess() -> None:
    n, budget = 16_000, 400 << 20
    assert n * n * 8 > 1.9 * (1 << 30)  # what one unblocked product would hold
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(n), str(budget)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    outcome = json.loads(done.stdout)
    assert outcome["mode"] == "exact"
    assert outcome["pairs"] >= 2  # the two planted copies, at least
    assert outcome["peak"] < budget


def test_cli_refuses_a_scan_over_budget_with_a_message_not_a_traceback(
    runner: CliRunner, sample_corpus: Path
) -> None:
    result = runner.invoke(cli, ["scan", "--memory", "1M", str(sample_corpus)])
    assert result.exit_code == 4
    assert result.stdout == ""
    assert "budget 1 MiB" in result.stderr
    assert "--threshold 0.85" in result.stderr
    bad = runner.invoke(cli, ["scan", "--memory", "lots", str(sample_corpus)])
    assert bad.exit_code == 2
    assert "cannot read the size 'lots'" in bad.stderr


def test_installed_script_refuses_over_budget_and_plans_within_it(
    simdup_script: str, sample_corpus: Path
) -> None:
    refused = subprocess.run(
        [simdup_script, "scan", "--memory", "2M", str(sample_corpus)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert refused.returncode == 4
    assert "Traceback" not in refused.stderr
    assert "budget 2 MiB" in refused.stderr
    planned = subprocess.run(
        [simdup_script, "scan", "--plan", "--format", "json", "--memory", "3G", str(sample_corpus)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    described = json.loads(planned.stdout)
    assert described["mode"] == "exact"
    assert described["memory"]["budget"] == 3 << 30
    assert described["memory"]["predicted"]["total"] < 3 << 30


def test_a_fit_without_room_for_the_record_of_emitted_pairs_is_warned() -> None:
    corpus = fingerprint_documents(_corpus(200), Params(bits=512))
    chosen = plan(Params(), corpus.fingerprints)
    assert len(chosen.tables.keys) > FIRST_TABLE_LIMIT
    large = dataclasses.replace(chosen, distinct=10_000_000, expected_verified=50_000_000)
    roomy = predict(large, 1 << 40, workers=2, report_all=False)
    assert fit_warned(large, roomy) is large  # the record fits: nothing to say
    without_record = roomy.total - roomy.footprint.seen + DEDUPE_BATCH * 16
    tight = predict(large, without_record, workers=2, report_all=False)
    assert tight.seen_limit is not None
    assert tight.seen_limit < large.expected_verified
    warned = fit_warned(large, tight)
    assert len(warned.warnings) == len(large.warnings) + 1
    assert "a record of only part of the about 50,000,000 pairs" in warned.warnings[-1]
    assert "more --memory" in warned.warnings[-1]
    # The record's size follows the memory resident at the plan, which varies between
    # runs; the warning, part of every report, does not.
    tighter = dataclasses.replace(tight, seen_limit=tight.seen_limit // 2)
    assert fit_warned(large, tighter).warnings == warned.warnings


def test_a_corpus_is_priced_as_stored_where_the_default_budget_stores_it() -> None:
    from simdup.search.plan.memory import DEFAULT_CAP
    from simdup.search.plan.survey import STORED_ENTRIES, Survey

    # The same bound as the store's own: whatever this run's budget, the plan is the same.
    assert spill_limits(DEFAULT_CAP).corpus_entries == STORED_ENTRIES
    fingerprints = np.zeros((1000, 1), dtype=np.uint64)
    per_row = STORED_ENTRIES / 1000
    assert not Survey.of(Params(), fingerprints, entries=per_row).stored
    assert Survey.of(Params(), fingerprints, entries=per_row * 1.01).stored
