"""Plans measured on the corpus: pairs above the threshold, refusals, and what fits."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from simdup.engines.local import find_duplicates
from simdup.engines.local import pairs as pipeline
from simdup.engines.local.fingerprinting import fingerprint_documents, widest
from simdup.fingerprints import simhash
from simdup.fingerprints.weights import WeightMatrix
from simdup.model import Document
from simdup.params import Params
from simdup.search.plan import cosines, planner, survey
from simdup.search.plan.budget import (
    PAIR_BYTES,
    BudgetError,
    fit_of,
    predict,
    spill_limits,
)
from simdup.search.plan.choice import alternatives, fitted
from simdup.search.plan.memory import resident_memory


def _zipf_corpus(
    n: int, exponent: float, vocabulary: int, words: int, seed: int = 0
) -> list[Document]:
    """Documents drawn from one Zipf law (a heavy shared head), a tenth of them near copies."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, vocabulary + 1) ** exponent
    cdf = np.cumsum(weights) / weights.sum()
    texts: list[np.ndarray] = []
    for i in range(n):
        if i % 10 == 9:  # a copy of an earlier document, 1% to 20% of its words replaced
            ids = texts[int(rng.integers(i))].copy()
            edits = rng.random(len(ids)) < [0.01, 0.05, 0.1, 0.2][i % 4]
            ids[edits] = np.searchsorted(cdf, rng.random(int(edits.sum())))
        else:
            length = int(words * rng.uniform(0.5, 1.5))
            ids = np.searchsorted(cdf, rng.random(length))
        texts.append(ids)
    return [Document(f"d{i:05d}", " ".join(f"w{k}" for k in ids)) for i, ids in enumerate(texts)]


#: Shapes of corpora: unrelated documents from far apart (a flat law over many words) to
#: close (a steep law over few, as source code or logs), short and long documents.
SHAPES = {
    "light": (1500, 0.6, 20_000, 60),
    "heavy": (1500, 1.0, 5_000, 200),
    "short-heavy": (1500, 1.2, 2_000, 40),
    "long": (600, 0.9, 20_000, 800),
}


@pytest.fixture
def small_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cosine sample of a third of the documents, so its counts are scaled."""
    monkeypatch.setattr(survey, "COSINE_ROWS", 500)
    monkeypatch.setattr(survey, "QUICK_ROWS", 500)


@pytest.mark.usefixtures("small_sample")
@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("threshold", [0.8, 0.9])
def test_pairs_above_the_threshold_are_estimated_within_2x_of_counted(
    shape: str, threshold: float
) -> None:
    docs = _zipf_corpus(*SHAPES[shape])
    result = find_duplicates(docs, Params(threshold=threshold))
    counted = result.stats["above_threshold"]
    predicted = result.plan["expected_reported"]
    assert result.plan["cosines_measured_on"] == 500 < len(docs)
    assert counted > 0
    assert counted / 2 <= predicted <= 2 * counted
    assert predicted <= result.plan["reported_bound"]
    if result.plan["mode"] == "exact":
        assert counted / 2 <= result.plan["expected_verified"] <= 2 * counted


@pytest.mark.parametrize(("shape", "grows"), [("short-heavy", False), ("light", True)])
def test_the_cosine_sample_grows_only_while_it_finds_few_pairs(
    monkeypatch: pytest.MonkeyPatch, shape: str, grows: bool
) -> None:
    """Many pairs near the threshold: the first sample is enough; few: the full one is taken."""
    monkeypatch.setattr(survey, "COSINE_ROWS", 1200)
    monkeypatch.setattr(survey, "QUICK_ROWS", 1200)
    monkeypatch.setattr(cosines, "FIRST_ROWS", 300)
    monkeypatch.setattr(cosines, "ENOUGH_PAIRS", 200)
    docs = _zipf_corpus(*SHAPES[shape])
    params = Params(threshold=0.8)
    found = pipeline.corpus_survey(params, *_fingerprinted(docs, params)).cosines()
    assert found is not None
    if grows:
        assert 600 <= found.size <= 1200
    else:
        assert found.size == 300
        assert len(found.cosines) >= 200
    result = find_duplicates(docs, params)
    counted = result.stats["above_threshold"]
    assert counted / 2 <= result.plan["expected_reported"] <= 2 * counted


def test_the_cosine_sample_is_the_same_whatever_the_order_of_the_rows() -> None:
    docs = _zipf_corpus(*SHAPES["heavy"])
    params = Params(threshold=0.8)
    one = pipeline.corpus_survey(params, *_fingerprinted(docs, params)).cosines()
    two = pipeline.corpus_survey(params, *_fingerprinted(docs[::-1], params)).cosines()
    assert one is not None
    assert two is not None
    assert one.above(0.8) == pytest.approx(two.above(0.8))
    assert one.above(0.9) == pytest.approx(two.above(0.9))


def _fingerprinted(docs: list[Document], params: Params) -> tuple[WeightMatrix, np.ndarray]:
    corpus = fingerprint_documents(docs, widest(params))
    return corpus.matrix, corpus.fingerprints


def _heavy(threshold: float) -> tuple[list[Document], Params, WeightMatrix, np.ndarray]:
    """The heavy-background corpus, the settings at ``threshold``, its weights and prints."""
    docs = _zipf_corpus(*SHAPES["heavy"])
    params = Params(threshold=threshold)
    return docs, params, *_fingerprinted(docs, params)


def _no_pair_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every pair function of the engine fail the test if it runs."""

    def pair_work(*args: object, **kwargs: object) -> None:
        raise AssertionError("pair work started")

    for name in ("candidate_chunks", "exact_chunks", "measure"):
        monkeypatch.setattr(pipeline, name, pair_work)


@pytest.mark.parametrize("shape", ["light", "heavy"])
def test_a_plan_that_cannot_fit_is_refused_before_any_pair_work(
    shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_pair_work(monkeypatch)
    with pytest.raises(BudgetError) as caught:
        find_duplicates(_zipf_corpus(*SHAPES[shape]), Params(), memory=1 << 20)
    message = str(caught.value)
    assert "budget 1 MiB" in message
    assert "--threshold 0.85" in message
    assert "--memory" in message


def test_alternatives_weigh_and_fingerprint_only_the_sample_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    docs, params, matrix, fingerprints = _heavy(0.8)
    monkeypatch.setattr(survey, "PLAN_SAMPLE", 300)
    fingerprinted: list[int] = []
    real = simhash.fingerprint_rows

    def counted(matrix: WeightMatrix, signs: np.ndarray, bits: int) -> np.ndarray:
        fingerprinted.append(matrix.rows)
        return real(matrix, signs, bits)

    monkeypatch.setattr(survey, "fingerprint_rows", counted)
    _no_pair_work(monkeypatch)
    with pytest.raises(BudgetError) as caught:
        pipeline.find_pairs([d.name for d in docs], matrix, fingerprints, params, memory=1 << 20)
    assert "--weighting log" in str(caught.value)
    assert "--weighting binary" in str(caught.value)
    assert fingerprinted == [300, 300]  # the sample, once per weighting; never the corpus


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_corpus_the_budget_can_hold_is_not_refused(shape: str) -> None:
    docs = _zipf_corpus(*SHAPES[shape])
    params = Params(threshold=0.6)  # many pairs to hold where the background is heavy
    unbounded = find_duplicates(docs, params)
    held = 2 * len(unbounded.pairs) * PAIR_BYTES
    # What the pair work needs beyond what is resident: the pairs held, the chunks and
    # the verification's temporaries, with room to spare; and exact mode's matrix.
    budget = resident_memory() + 2 * held + (160 << 20)
    bounded = find_duplicates(docs, params, memory=budget)
    assert bounded.pairs.pairs.tolist() == unbounded.pairs.pairs.tolist()


def test_a_plan_that_does_not_fit_gives_way_to_one_that_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Exact mode is preferred (cheap) but its matrix does not fit; tables do. (Without a
    # census: an exact scan that takes a census's pairs builds no matrix.)
    _, params, matrix, fingerprints = _heavy(0.9)
    where = pipeline.corpus_survey(params, matrix, fingerprints)
    monkeypatch.setattr(where, "census", lambda threshold: None)
    options = list(planner.choices(params, where))
    assert not options[0].census
    assert options[0].exact
    tables = next(p for p in options if not p.exact)
    needs = {
        p.exact: predict(p, 1 << 40, workers=1, report_all=False).total
        for p in (options[0], tables)
    }
    monkeypatch.setattr("simdup.search.exact.ENTRY_BYTES", 4096)  # a matrix too large
    huge = predict(options[0], 1 << 40, workers=1, report_all=False).total
    budget = (max(needs.values()) + huge) // 2
    assert needs[False] <= budget < huge
    chosen, fit = fitted(params, where, budget, workers=1, report_all=False)
    assert not chosen.exact
    assert fit.total <= budget


def test_a_stored_corpus_prices_the_settings_a_refusal_offers_as_stored_too() -> None:
    # A refusal of a stored corpus names its stored need; the settings it offers instead
    # must be priced the same way, or a smaller plan reads as the larger one.
    _, params, matrix, fingerprints = _heavy(0.9)
    where = pipeline.corpus_survey(params, matrix, fingerprints)
    budget = 1 << 30
    limits = spill_limits(budget)
    stored = alternatives(params, where, budget, workers=2, limits=limits)
    held = alternatives(params, where, budget, workers=2)
    assert [what for what, _, _ in stored] == [what for what, _, _ in held]
    assert len(stored) >= 4
    for what, option, fit in stored:
        assert fit.spill is not None, what
        again = fit_of(option, budget, workers=2, report_all=False, limits=limits)
        # Priced as the scan would run it; blocks narrowed to what resident memory leaves
        # (which moves between two calls) and the other limits as they are.
        assert again.spill is not None
        assert dataclasses.replace(again.spill, block_entries=0) == dataclasses.replace(
            fit.spill, block_entries=0
        )
        assert fit.spill.block_entries <= limits.block_entries
    assert all(fit.spill is None for _, _, fit in held)
    # Without a store the fit is the in-memory prediction, part for part.
    _, option, fit = held[0]
    alone = predict(option, budget, workers=2, report_all=False)
    assert dataclasses.replace(fit.footprint, resident=0) == dataclasses.replace(
        alone.footprint, resident=0
    )


#: A default scan of a corpus shape at threshold 0.9 in a child process, with a budget:
#: prints whether it was refused, its pairs, and the process's own peak resident memory.
_BUDGETED = textwrap.dedent(
    """
    import json, resource, sys
    from pathlib import Path
    from simdup.engines.local import find_duplicates
    from simdup.params import Params
    from simdup.search.plan.budget import BudgetError
    sys.path.insert(0, sys.argv[1])
    from test_plan_measured import SHAPES, _zipf_corpus

    docs = _zipf_corpus(*SHAPES[sys.argv[2]])
    try:
        result = find_duplicates(docs, Params(threshold=0.9), memory=int(sys.argv[3]), jobs=2)
        out = {"pairs": result.pairs.pairs.tolist()}
    except BudgetError as refused:
        out = {"refused": str(refused)}
    try:  # this process's own peak (ru_maxrss may carry over the parent's across exec)
        status = Path("/proc/self/status").read_text().splitlines()
        out["peak"] = int(dict(s.split(":", 1) for s in status)["VmHWM"].split()[0]) * 1024
    except OSError:
        out["peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps(out))
    """
)


def _budgeted(shape: str, budget: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _BUDGETED, str(Path(__file__).parent), shape, str(budget)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    outcome: dict[str, Any] = json.loads(done.stdout)
    return outcome


@pytest.mark.parametrize("shape", ["heavy", "short-heavy", "light"])
def test_a_scan_is_not_refused_a_budget_as_large_as_its_own_peak(shape: str) -> None:
    # The scan's own peak, measured unbounded, is a budget it can be held to: the plan
    # must not predict more than that and refuse (4 MiB allow for the noise of a run).
    unbounded = _budgeted(shape, 1 << 40)
    bounded = _budgeted(shape, unbounded["peak"] + (4 << 20))
    assert "refused" not in bounded, bounded.get("refused")
    assert bounded["pairs"] == unbounded["pairs"]
    assert len(bounded["pairs"]) > 0
