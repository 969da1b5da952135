"""The planner's widths, its many-table options, and its predictions against the run."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simdup.engines.local import find_duplicates
from simdup.engines.local import pairs as pipeline
from simdup.engines.local.fingerprinting import fingerprint_documents
from simdup.fingerprints.listing import fingerprint_settings
from simdup.model import Document
from simdup.params import REFERENCE_BITS, Params
from simdup.search import candidates as blocking
from simdup.search.candidates import candidate_chunks
from simdup.search.plan import pricing
from simdup.search.plan import survey as survey_module
from simdup.search.plan.choice import fitted
from simdup.search.plan.planner import WIDTHS, plan
from simdup.search.plan.planner import choices as plan_choices
from simdup.search.plan.pricing import (
    MANY_TABLES,
    _blocks,
    _family_tables,
    _fewest_tables,
    _survival,
    found_share,
    measuring_sample,
)
from simdup.search.plan.reach import counted, layered_reach
from simdup.search.plan.recall import binomial_pmf, flip_probability
from simdup.search.tables import clean_ranks, sampled_ranks, sampled_tables


def _documents(n: int, seed: int = 0, vocabulary: int = 2000) -> list[Document]:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(vocabulary)]
    docs = []
    for i in range(n):
        ids = rng.integers(0, vocabulary, 40)
        docs.append(Document(f"d{i:05d}", " ".join(words[k] for k in ids)))
        if i % 10 == 0:  # a near copy
            ids[:2] = rng.integers(0, vocabulary, 2)
            docs.append(Document(f"c{i:05d}", " ".join(words[k] for k in ids)))
    return docs


def test_auto_bits_is_the_default_and_64_where_a_width_is_fixed() -> None:
    assert Params().auto_bits
    assert Params(bits="auto").bits == "auto"
    assert not Params(bits=64).auto_bits
    assert Params().fixed_bits == 64
    assert REFERENCE_BITS == 64
    assert fingerprint_settings(Params())["bits"] == 64
    assert Params().as_dict()["bits"] == "auto"
    assert Params(bits=256).as_dict()["bits"] == 256


def test_the_planner_prices_every_width_and_records_the_one_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pipeline, "exact_work", lambda matrix: None)  # tables, not exact
    result = find_duplicates(_documents(400), Params(threshold=0.9))
    assert [w["bits"] for w in result.plan["widths_priced"]] == list(WIDTHS)
    bits = result.plan["bits"]
    assert bits in WIDTHS
    assert result.stats["bits"] == bits
    assert result.params.bits == bits
    assert not result.params.auto_bits
    assert result.fingerprints.shape[1] == bits // 64
    fastest = min(
        (w for w in result.plan["widths_priced"] if w["recall"] >= 0.95),
        key=lambda w: w["estimated_seconds"],
    )
    assert fastest["bits"] == bits
    # The reported estimate is at the width used.
    for pair in result.pair_list():
        assert pair.estimated_cosine == pytest.approx(np.cos(np.pi * pair.hamming / bits))


def test_the_plan_does_not_depend_on_the_threads_pricing_the_widths() -> None:
    corpus = fingerprint_documents(_documents(400), Params(bits=max(WIDTHS)))
    params = Params(threshold=0.9)
    alone = plan(params, corpus.fingerprints)
    side_by_side = plan(params, corpus.fingerprints, workers=4)
    assert [w for w, _, _, _ in alone.widths] == list(WIDTHS)
    assert side_by_side.describe() == alone.describe()
    assert [k.tolist() for k in side_by_side.tables.keys] == [k.tolist() for k in alone.tables.keys]


def test_a_forced_width_is_kept() -> None:
    result = find_duplicates(_documents(100), Params(bits=128, scheme="loose"))
    assert result.plan["bits"] == 128
    assert result.plan["widths_priced"] == []


def test_the_plan_is_the_same_whatever_the_order_of_the_fingerprints() -> None:
    corpus = fingerprint_documents(_documents(300), Params(bits=512))
    shuffled = corpus.fingerprints[np.random.default_rng(1).permutation(len(corpus.names))]
    one = plan(Params(threshold=0.9), corpus.fingerprints)
    two = plan(Params(threshold=0.9), shuffled)
    assert one.describe() == two.describe()


def test_survival_matches_a_direct_count() -> None:
    bits, key_bits = 10, 3
    survive = _survival(bits, key_bits)
    rng = np.random.default_rng(0)
    for d in (0, 2, 5, 8):
        differing = set(range(d))
        hits = sum(
            not differing & set(rng.choice(bits, key_bits, replace=False).tolist())
            for _ in range(4000)
        )
        assert survive[d] == pytest.approx(hits / 4000, abs=0.03)


def test_fewest_tables_reach_the_recall_and_one_fewer_does_not() -> None:
    bits, threshold, target = 512, 0.9, 0.95
    pmf = binomial_pmf(bits, flip_probability(threshold))
    survive = _survival(bits, 40)
    count = _fewest_tables(pmf, survive, bits, target)
    assert count is not None
    assert 256 < count <= MANY_TABLES

    def recall(tables: int) -> float:
        return float(pmf @ (1.0 - (1.0 - survive) ** tables))

    assert recall(count) >= target > recall(count - 1)
    assert _fewest_tables(pmf, _survival(bits, 64), bits, 0.999) is None


def test_a_bounded_record_of_emitted_pairs_changes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    corpus = fingerprint_documents(_documents(300, vocabulary=60), Params(bits=64))
    tables = sampled_tables(64, 6, 40)
    monkeypatch.setattr(blocking, "DEDUPE_BATCH", 64)  # flush, and check the limit, often

    def pairs(limit: int | None) -> list[list[int]]:
        found = np.concatenate(
            list(candidate_chunks(corpus.fingerprints, tables, seen_limit=limit))
        )
        return sorted(found.tolist())

    unbounded = pairs(None)
    assert len(unbounded) > 1000
    assert len({tuple(p) for p in unbounded}) == len(unbounded)
    for limit in (0, 100, 5000):
        assert pairs(limit) == unbounded


def test_past_the_record_without_the_test_of_earlier_keys_pairs_repeat_and_none_is_lost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    corpus = fingerprint_documents(_documents(300, vocabulary=60), Params(bits=64))
    tables = sampled_tables(64, 6, 40)
    monkeypatch.setattr(blocking, "DEDUPE_BATCH", 64)

    def pairs(limit: int | None, test: bool) -> list[list[int]]:
        chunks = candidate_chunks(corpus.fingerprints, tables, seen_limit=limit, test_earlier=test)
        return sorted(np.concatenate(list(chunks)).tolist())

    unbounded = pairs(None, True)
    for limit in (0, 100, 5000):
        repeated = pairs(limit, False)
        assert sorted({tuple(p) for p in repeated}) == [tuple(p) for p in unbounded]
        if limit < len(unbounded):  # past the record, a pair comes from every table it meets
            assert len(repeated) > len(unbounded)
    assert pairs(None, False) == unbounded  # a record that never fills: each pair once


def test_stats_put_the_counts_next_to_the_planned_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "exact_work", lambda matrix: None)
    result = find_duplicates(_documents(600, seed=3), Params(threshold=0.8))
    stats = result.stats
    for key in ("planned_candidates", "table_candidates", "planned_verified", "candidates"):
        assert key in stats
    # Both are estimates of the same sums (pairs per table, true cosines computed).
    assert stats["table_candidates"] > 0
    assert 0.25 <= stats["planned_candidates"] / stats["table_candidates"] <= 4


@given(
    st.integers(1, 512).flatmap(
        lambda bits: st.tuples(
            st.just(bits), st.lists(st.integers(0, bits), min_size=1, max_size=300)
        )
    )
)
def testfound_share_is_the_share_of_orders_reaching_each_distance(
    case: tuple[int, list[int]],
) -> None:
    bits, values = case
    reach = np.array(values, dtype=np.int64)
    by_comparison = (reach[None, :] >= np.arange(bits + 1)[:, None]).mean(axis=1)
    assert np.array_equal(found_share(reach, bits), by_comparison)


@pytest.mark.parametrize("family", ["blocks", "distance"])
@pytest.mark.parametrize("bits", [64, 128, 256, 512])
def test_a_family_is_priced_from_its_blocks_as_from_its_tables(family: str, bits: int) -> None:
    """The best rank of whole-block tables, told from the blocks, is what the tables give."""
    from simdup.search.plan.recall import RECALL_SAMPLES

    for k in (0, 1, 2, 3, 5, 8, 13, 40, bits // 2, bits - 1):
        tables = _family_tables(bits, family, k)
        blocks, kept = _blocks(bits, family, k)
        assert len(tables.keys) == math.comb(blocks, kept)
        if len(tables.keys) > 256:
            continue
        by_tables = clean_ranks(tables, samples=RECALL_SAMPLES).max(axis=1)
        assert np.array_equal(layered_reach(bits, blocks, kept), counted(by_tables[:, None], bits))


@given(
    st.sampled_from([64, 128, 256, 512]).flatmap(
        lambda bits: st.tuples(st.just(bits), st.integers(1, 40), st.integers(1, 80))
    )
)
def test_sampled_tables_are_ranked_as_their_tables_are(case: tuple[int, int, int]) -> None:
    """Ranks taken run by run along each permutation are those of the tables it cuts."""
    bits, key_bits, count = case
    by_tables = clean_ranks(sampled_tables(bits, key_bits, count), samples=300)
    assert np.array_equal(sampled_ranks(bits, key_bits, count, samples=300), by_tables)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=12), st.integers(1, 60))
def test_kept_sample_pairs_are_those_every_priority_drawn_would_keep(
    blocks: list[int], limit: int
) -> None:
    """Priorities drawn only once a share is taken keep the pairs drawing them all keeps."""
    from simdup.search.plan import cosines

    saved = cosines.KEPT_PAIRS
    cosines.KEPT_PAIRS = limit
    try:
        kept = cosines._Kept()
        share = 1.0
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        for block, size in enumerate(blocks):
            i = np.arange(size, dtype=np.int64) + 100 * block
            j = i + 1
            values = np.linspace(0.5, 1.0, size)
            kept.add(block, i, j, values)
            priority = np.random.default_rng([cosines.COSINE_SEED, block]).random(size)
            parts.append(cosines._within((i, j, priority, values), share))
            while sum(len(p[0]) for p in parts) > limit:
                share /= 2
                parts = [cosines._within(p, share) for p in parts]
        i, j, values, got_share = kept.arrays()
        assert got_share == share
        expected = [np.concatenate(c).tolist() if parts else [] for c in zip(*parts, strict=True)]
        if parts:
            assert (i.tolist(), j.tolist(), values.tolist()) == (
                expected[0],
                expected[1],
                expected[3],
            )
        else:
            assert len(i) == len(j) == len(values) == 0
    finally:
        cosines.KEPT_PAIRS = saved


def test_a_survey_under_another_weighting_estimates_from_its_own_true_cosines() -> None:
    params = Params(threshold=0.9)
    corpus = fingerprint_documents(_documents(400), Params(bits=max(WIDTHS)))
    survey = pipeline.corpus_survey(params, corpus.matrix, corpus.fingerprints)
    mine = survey.cosines()
    assert mine is not None
    for weighting in ("log", "binary"):
        other = survey.reweighted(weighting, WIDTHS)
        cosines = other.cosines()
        # Not the Hamming distances' guess: the reweighted sample's own true cosines.
        assert cosines is not None
        assert cosines.size == mine.size
        reweighted = next(iter(plan_choices(params.replace(weighting=weighting), other)))
        assert reweighted.cosine_sample == cosines.size


def test_a_survey_reweighs_its_sample_a_block_of_rows_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The sample's fingerprints under another weighting are those a scan with it makes;
    # blocks of 7 of the 400 rows give the samples, the sampled pairs' cosines and
    # distances, and the plan of one block.
    params = Params(threshold=0.9)
    documents = _documents(400)
    corpus = fingerprint_documents(documents, Params(bits=max(WIDTHS)))
    rows = np.arange(len(corpus.names), dtype=np.int64)
    for weighting in ("log", "binary"):
        scanned = fingerprint_documents(documents, Params(bits=max(WIDTHS), weighting=weighting))
        assert scanned.names == corpus.names
        found = []
        for block in (survey_module.REWEIGHED_ROWS, 7):
            monkeypatch.setattr(survey_module, "REWEIGHED_ROWS", block)
            survey = pipeline.corpus_survey(params, corpus.matrix, corpus.fingerprints)
            assert np.array_equal(survey._weighed_prints(rows, weighting), scanned.fingerprints)
            other = survey.reweighted(weighting, WIDTHS)
            cosines = other.cosines()
            assert cosines is not None
            plan = next(plan_choices(params.replace(weighting=weighting), other, workers=2))
            samples = [other.sample(bits).fingerprints.tolist() for bits in WIDTHS]
            found.append((samples, cosines.cosines.tolist(), cosines.words.tolist(), plan))
        assert found[0] == found[1]


def test_the_survey_lets_go_of_its_groups_once_the_plans_are_priced() -> None:
    """Held through the pair work they would count as resident; asked again, the same."""
    params = Params(threshold=0.9)
    corpus = fingerprint_documents(_documents(400), Params(bits=max(WIDTHS)))
    survey = pipeline.corpus_survey(params, corpus.matrix, corpus.fingerprints)
    before = survey.groups()
    assert survey._groups
    first, _ = fitted(params, survey, 1 << 40, workers=2, report_all=False)
    assert not survey._groups  # the plan fitted, the groups are gone
    again = survey.groups()
    assert again is not before
    assert np.array_equal(again.first, before.first)
    assert np.array_equal(again.sizes, before.sizes)
    # A refusal's alternatives make them again, and price the same plan from them.
    fresh = pipeline.corpus_survey(params, corpus.matrix, corpus.fingerprints)
    assert next(plan_choices(params, fresh, workers=2)) == first
    for weighting in ("log", "binary"):
        changed = params.replace(weighting=weighting)
        plans = [
            next(plan_choices(changed, where.reweighted(weighting, WIDTHS), workers=2))
            for where in (survey, fresh)
        ]
        assert plans[0] == plans[1]


def test_a_stored_corpus_prices_its_true_cosines_as_verified_from_the_store() -> None:
    from simdup.search.plan import seconds as costs

    corpus = fingerprint_documents(_documents(400), Params(bits=max(WIDTHS)))
    params = Params(threshold=0.9, bits=256, scheme="loose")
    held = next(
        plan_choices(
            params, pipeline.corpus_survey(params, corpus.matrix, corpus.fingerprints), workers=1
        )
    )
    survey = pipeline.corpus_survey(params, corpus.matrix, corpus.fingerprints)
    survey.stored = True
    stored = next(plan_choices(params, survey, workers=1))
    assert stored.tables.description == held.tables.description
    assert stored.expected_verified == held.expected_verified > 0
    extra = costs.STORED_COSINE_ENTRY - costs.COSINE_ENTRY
    assert stored.seconds - held.seconds == pytest.approx(
        held.expected_verified * extra * held.entries, rel=1e-9
    )


@settings(max_examples=40, deadline=None)
@given(
    st.integers(2, 120),
    st.sampled_from([1, 2, 8]),
    st.integers(1, 2_000),
    st.integers(0, 2**32 - 1),
)
def test_sampled_distances_count_every_pair_once(
    rows: int, words: int, block: int, seed: int
) -> None:
    # The sample's distances, measured a block of rows at a time against the rows after
    # it, equal a direct count of every pair i < j, whatever the block.
    rng = np.random.default_rng(seed)
    fingerprints = rng.integers(0, 2**63, size=(rows, words), dtype=np.int64).astype(np.uint64)
    fingerprints[rows // 2 :, 0] &= np.uint64(0xFFFF)  # near pairs, and some copies
    sample = measuring_sample(fingerprints)
    bits = 64 * words
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pricing, "DISTANCE_BLOCK", block)
        measured = sample.distances(bits)
    prints = sample.fingerprints
    s = len(prints)
    expected = np.zeros(bits + 1)
    for i in range(s):
        for j in range(i + 1, s):
            expected[int(np.bitwise_count(prints[i] ^ prints[j]).sum())] += 1
    if s >= 2:
        expected *= sample.distinct * (sample.distinct - 1) / (s * (s - 1))
    assert measured.tolist() == pytest.approx(expected.tolist())
