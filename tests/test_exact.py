"""Exact mode: every pair's cosine by blocked products, and the planner choosing it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simdup.engines.local import find_duplicates
from simdup.engines.local import pairs as pairs_stage
from simdup.engines.local.fingerprinting import fingerprint_documents, fingerprint_matrix
from simdup.fingerprints.simhash import fingerprint, fingerprint_many
from simdup.fingerprints.weights import weight_matrix
from simdup.model import Document
from simdup.params import Params
from simdup.search import exact
from simdup.search.exact import (
    block_rows,
    exact_chunks,
    exact_work,
    heavy_features,
    selection_margin,
)
from simdup.search.plan import budget
from simdup.search.plan.cosines import census_sample
from simdup.search.plan.planner import Plan, plan
from simdup.search.verify import cosine_many, hamming_many

GOLDEN = Path(__file__).parent / "data" / "golden_fingerprints.json"

#: Two paraphrases (three words changed of fourteen): true cosine 0.80, yet 23 of their
#: 64 fingerprint bits differ, beyond what the tables of a 64-bit plan find.
PARAPHRASE_A = (
    "word17 word54 word57 word53 word51 word57 word5 word13 word39 word33 word42 word38 "
    "word26 word32"
)
PARAPHRASE_B = (
    "word17 word54 word57 word53 word51 word36 word5 word13 word39 word25 word42 word38 "
    "word11 word32"
)


def _all_pairs(n: int) -> np.ndarray:
    i, j = np.triu_indices(n, 1)
    return np.stack([i, j], axis=1).astype(np.int64)


def _random_rows(seed: int, n: int, vocabulary: int, length: int) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    # A Zipf-like draw: a few features in most rows (dense), a long tail (light).
    ranks = np.minimum(rng.zipf(1.4, (n, length)) - 1, vocabulary - 1)
    return [[f"f{k}" for k in row] for row in ranks.tolist()]


@pytest.mark.parametrize("memory", [1 << 30, 5 * 50 * 3, 1])
def test_exact_chunks_select_every_pair_at_or_above_the_threshold(memory: int) -> None:
    matrix = weight_matrix(_random_rows(1, 50, 40, 12))
    pairs = _all_pairs(matrix.rows)
    cosines = cosine_many(matrix, pairs)
    for threshold in (0.0, 0.3, 0.6, 0.9, 1.0):
        found = list(exact_chunks(matrix, threshold, memory=memory))
        selected = np.concatenate(found) if found else np.zeros((0, 2), dtype=np.int64)
        assert bool(np.all(selected[:, 0] < selected[:, 1]))
        chosen = {tuple(p) for p in selected.tolist()}
        truth = {tuple(p) for p in pairs[cosines >= threshold].tolist()}
        assert truth <= chosen
        # Only the margin lets more in: nothing clearly below the threshold.
        extra = [p for p in chosen - truth]
        if extra:
            extra_cos = cosine_many(matrix, np.array(extra, dtype=np.int64))
            longest = int(matrix.row_lengths().max())
            assert bool(np.all(extra_cos >= threshold - selection_margin(longest)))


@pytest.mark.parametrize("memory", [1 << 30, 5 * 50 * 3, 1])
def test_blocks_tell_the_pairs_they_cover_whether_or_not_any_is_selected(memory: int) -> None:
    matrix = weight_matrix(_random_rows(1, 50, 40, 12))
    told: list[int] = []
    yielded = list(exact_chunks(matrix, 1.01, memory=memory, covered=told.append))
    assert not yielded  # no pair reaches a cosine above 1
    assert sum(told) == 50 * 49 // 2
    assert len(told) == len(range(0, 49, block_rows(50, memory)))
    assert all(k > 0 for k in told)


def test_heavy_and_light_parts_add_up_to_the_dot_products(monkeypatch: pytest.MonkeyPatch) -> None:
    matrix = weight_matrix(_random_rows(2, 40, 30, 10))
    pairs = _all_pairs(matrix.rows)
    truth = {tuple(p) for p in pairs[cosine_many(matrix, pairs) >= 0.5].tolist()}
    for share in (0.0, 0.3, 2.0):  # all dense, mixed, all light
        monkeypatch.setattr(exact, "HEAVY_SHARE", share)
        selected = np.concatenate(list(exact_chunks(matrix, 0.5)))
        assert truth <= {tuple(p) for p in selected.tolist()}


def test_heavy_features_are_the_frequent_ones_most_frequent_first() -> None:
    # At 1,000 documents a feature in 20 of them or more is dense (2%).
    df = np.array([1, 300, 20, 500, 60, 19])
    assert heavy_features(df, 1000).tolist() == [3, 1, 4, 2]


def test_exact_work_counts_the_light_walks() -> None:
    # f0 in all 3 rows (heavy at n=3: cut is 2), f1 in two rows (light: 1 walk).
    matrix = weight_matrix([["f0", "f1"], ["f0", "f1"], ["f0", "f2"]])
    work = exact_work(matrix)
    assert work.documents == 3
    assert work.pairs == 3
    assert work.heavy + 0 >= 1
    assert work.entries == 6
    assert work.cost > 0


def test_block_rows_is_at_least_one() -> None:
    assert block_rows(10, 0) == 1
    assert block_rows(10, 10**9) == 10


def test_the_paraphrases_lie_beyond_a_64_bit_plan() -> None:
    docs = [Document("a", PARAPHRASE_A), Document("b", PARAPHRASE_B)]
    corpus = fingerprint_documents(docs, Params(bits=64))
    pair = np.array([[0, 1]])
    assert 0.8 <= cosine_many(corpus.matrix, pair)[0] < 0.82
    assert hamming_many(corpus.fingerprints, pair)[0] >= 20


@pytest.mark.parametrize("bits", ["auto", 64])
def test_small_corpora_report_paraphrases_far_apart_in_hamming_distance(bits: object) -> None:
    docs = [Document("a", PARAPHRASE_A), Document("b", PARAPHRASE_B)]
    result = find_duplicates(docs, Params(bits=bits))  # type: ignore[arg-type]
    assert result.plan["mode"] == "exact"
    assert result.plan["recall_at_threshold"] == 1.0
    assert result.tables == "exact: every pair"
    assert [(p.a, p.b) for p in result.pair_list()] == [("a", "b")]
    assert result.pair_list()[0].cosine == pytest.approx(0.8018, abs=1e-4)


def _texts(seed: int, n: int) -> list[Document]:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(30)]
    docs: list[Document] = []
    for d in range(n):
        if d and rng.random() < 0.3:  # an edited copy of an earlier document
            base = docs[int(rng.integers(0, d))].text.split()
            base[int(rng.integers(0, len(base)))] = words[int(rng.integers(0, 30))]
            text = " ".join(base)
        else:
            text = " ".join(words[k] for k in rng.integers(0, 30, int(rng.integers(3, 15))))
        docs.append(Document(f"d{d:03d}", text))
    return docs


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(2, 40),
    threshold=st.sampled_from([0.5, 0.7, 0.8, 0.9, 0.95]),
)
def test_default_scan_of_a_small_corpus_equals_an_exhaustive_scan(
    seed: int, n: int, threshold: float
) -> None:
    docs = _texts(seed, n)
    default = find_duplicates(docs, Params(threshold=threshold))
    exhaustive = find_duplicates(docs, Params(bits=64, max_distance=63, threshold=threshold))
    assert default.plan["mode"] == "exact"
    assert default.pairs.pairs.tolist() == exhaustive.pairs.pairs.tolist()
    assert default.pairs.cosine.tolist() == exhaustive.pairs.cosine.tolist()


def test_exact_plan_is_chosen_only_when_cheaper_than_tables() -> None:
    docs = _texts(3, 30)
    corpus = fingerprint_documents(docs, Params(bits=512))
    work = exact_work(corpus.matrix)
    assert plan(Params(), corpus.fingerprints, work=work).exact
    assert not plan(Params(), corpus.fingerprints).exact  # no weights: tables
    # Explicit tables are never replaced.
    assert not plan(Params(scheme="loose"), corpus.fingerprints, work=work).exact


# --- widths cut from one wide fingerprint ---------------------------------------------------


def test_a_narrow_reference_fingerprint_is_the_low_bits_of_a_wide_one() -> None:
    cases = json.loads(GOLDEN.read_text())["cases"]
    groups: dict[str, dict[int, int]] = {}
    for case in cases:
        key = json.dumps([case["weights"], case["seed"]])
        groups.setdefault(key, {})[case["bits"]] = int(case["fingerprint"], 16)
    compared = 0
    for widths in groups.values():
        for narrow, value in widths.items():
            for wide, wide_value in widths.items():
                if wide > narrow:
                    assert wide_value & ((1 << narrow) - 1) == value
                    compared += 1
    assert compared > 0
    # Our own implementation, against every golden case at every width up to 512.
    for case in cases:
        weights = dict(case["weights"]) if isinstance(case["weights"], list) else case["weights"]
        wide = fingerprint(weights, 512, case["seed"])
        assert wide & ((1 << case["bits"]) - 1) == int(case["fingerprint"], 16)


def test_corpus_fingerprints_at_512_bits_cut_to_every_priced_width() -> None:
    matrix = weight_matrix(_random_rows(4, 30, 50, 20))
    wide = fingerprint_many(matrix, 512, 12345)
    for bits in (64, 128, 256):
        assert np.array_equal(wide[:, : bits // 64], fingerprint_many(matrix, bits, 12345))
    assert np.array_equal(fingerprint_matrix(matrix, 512, 12345, jobs=2), wide)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 60),
    length=st.integers(1, 80),
    pick=st.integers(0, 10**6),
)
def test_single_precision_selects_a_pair_exactly_at_the_threshold(
    seed: int, n: int, length: int, pick: int
) -> None:
    # The hardest threshold is a pair's own cosine: float32 products round it either way,
    # and the margin must still let it (and every pair above it) in.
    matrix = weight_matrix(_random_rows(seed, n, 200, length))
    pairs = _all_pairs(matrix.rows)
    cosines = cosine_many(matrix, pairs)
    threshold = float(cosines[pick % len(cosines)])
    found = list(exact_chunks(matrix, threshold))
    selected = {tuple(p) for p in np.concatenate(found).tolist()} if found else set()
    assert {tuple(p) for p in pairs[cosines >= threshold].tolist()} <= selected


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(2, 30),
    share=st.sampled_from([0.0, 0.3, 2.0]),
    expand=st.sampled_from([1, 7, 1 << 19]),
    memory=st.sampled_from([1, 400, 1 << 30]),
)
def test_cosine_blocks_are_the_gram_matrix_of_the_unit_rows(
    seed: int, n: int, share: float, expand: int, memory: int
) -> None:
    # Whatever the split into dense and light features, the light postings expanded a
    # few at a time or all at once, and the blocks' height, each block holds the cosines
    # of its pairs (above the diagonal: below it, and on it, a block is not read).
    matrix = weight_matrix(_random_rows(seed, n, 25, 8))
    dense = np.zeros((matrix.rows, len(matrix.vocabulary)))
    rows = np.repeat(np.arange(matrix.rows), matrix.row_lengths())
    dense[rows, matrix.indices] = matrix.data
    unit = dense / np.linalg.norm(dense, axis=1, keepdims=True)
    gram = unit @ unit.T
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(exact, "HEAVY_SHARE", share)
        patch.setattr(exact, "EXPAND_ENTRIES", expand)
        seen = 0
        for lo, hi, cosines in exact.cosine_blocks(matrix, memory):
            upper = np.triu(np.ones(cosines.shape, dtype=bool), 1)
            np.testing.assert_allclose(cosines[upper], gram[lo:hi, lo:][upper], atol=1e-12)
            seen += hi - lo
    assert seen >= n - 1


@settings(max_examples=50, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    rows=st.integers(1, 12),
    width=st.integers(1, 40),
    floor=st.floats(0.0, 1.0),
)
def test_entries_at_least_a_floor_above_the_diagonal_are_those_of_a_2d_search(
    seed: int, rows: int, width: int, floor: float
) -> None:
    block = np.random.default_rng(seed).random((rows, width)).astype(np.float32)
    local, offset = np.nonzero(block >= floor)
    upper = offset > local
    mask = np.ones(rows * width + 5, dtype=bool)[: rows * width]  # a reused, stale mask
    got = exact.upper_at_least(block, floor, mask)
    assert got[0].tolist() == local[upper].tolist()
    assert got[1].tolist() == offset[upper].tolist()


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(2, 40),
    chunk_pairs=st.integers(1, 400),
    memory=st.sampled_from([1, 400, 1 << 30]),
)
def test_exact_chunks_hold_at_most_chunk_pairs_and_the_same_pairs_in_the_same_order(
    seed: int, n: int, chunk_pairs: int, memory: int
) -> None:
    # A low threshold selects most pairs: a block searched whole would be one chunk.
    matrix = weight_matrix(_random_rows(seed, n, 6, 8))
    whole = np.concatenate([*exact_chunks(matrix, 0.1, memory=1 << 30), np.zeros((0, 2), int)])
    chunks = list(exact_chunks(matrix, 0.1, memory=memory, chunk_pairs=chunk_pairs))
    assert all(0 < len(chunk) <= chunk_pairs for chunk in chunks)
    # A block gives as few chunks as hold its pairs (one, when they fit in one).
    height = block_rows(n, memory)
    first_rows = whole[:, 0]
    assert len(chunks) == sum(
        -(-int(((first_rows >= lo) & (first_rows < lo + height)).sum()) // chunk_pairs)
        for lo in range(0, n - 1, height)
    )
    joined = np.concatenate([*chunks, np.zeros((0, 2), int)])
    assert joined.tolist() == whole.tolist()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(2, 60),
    floor=st.sampled_from([0.0, 0.3, 0.6, 0.85]),
)
def test_a_census_holds_every_pair_at_or_above_its_floor_with_its_reported_cosine(
    seed: int, n: int, floor: float
) -> None:
    matrix = weight_matrix(_random_rows(seed, n, 30, 10))
    prints = fingerprint_many(matrix, 128)
    sample = census_sample(matrix, prints, floor)
    pairs = _all_pairs(n)
    cosines = cosine_many(matrix, pairs)
    assert sample.pairs is not None
    assert sample.pairs.tolist() == pairs[cosines >= floor].tolist()
    assert sample.cosines.tolist() == cosines[cosines >= floor].tolist()
    assert sample.words.sum(axis=1).tolist() == hamming_many(prints, sample.pairs).tolist()
    # Every row is its own group: the estimates are counts.
    assert sample.above(max(floor, 0.9)) == float(np.count_nonzero(cosines >= max(floor, 0.9)))


def test_a_small_scan_plans_on_a_census_and_takes_its_pairs_without_new_products(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    docs = _texts(7, 40)
    expected = find_duplicates(docs, Params(bits=64, max_distance=63, threshold=0.7))

    def no_products(*args: object, **kwargs: object) -> None:
        raise AssertionError("the exact scan computed its products again")

    monkeypatch.setattr(pairs_stage, "exact_chunks", no_products)
    result = find_duplicates(docs, Params(threshold=0.7))
    assert result.plan["mode"] == "exact"
    assert result.pairs.pairs.tolist() == expected.pairs.pairs.tolist()
    assert result.pairs.cosine.tolist() == expected.pairs.cosine.tolist()
    # The plan counted the pairs it then reported, on every document.
    assert result.plan["expected_verified"] == len(result.pairs) > 0
    assert result.plan["cosines_measured_on"] == len(docs)


def test_an_exact_scan_on_a_census_is_priced_without_blocks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The census holds the pairs already: the scan builds no blocks, so none are priced
    # (they were, at tens of MiB, and a small scan's own peak was refused as a budget).
    fits: list[tuple[Plan, budget.Fit]] = []
    predict = budget.predict

    def recorded(chosen: Plan, *args: Any, **kwargs: Any) -> budget.Fit:
        fit = predict(chosen, *args, **kwargs)
        fits.append((chosen, fit))
        return fit

    monkeypatch.setattr(budget, "predict", recorded)
    result = find_duplicates(_texts(7, 40), Params(threshold=0.7))
    assert result.plan["mode"] == "exact"
    exact = [(chosen, fit) for chosen, fit in fits if chosen.exact]
    assert exact
    assert all(chosen.census for chosen, _ in exact)
    assert all((fit.footprint.exact, fit.block) == (0, 0) for _, fit in exact)
    unknown = dataclasses.replace(exact[0][0], census=False)
    blocks = predict(unknown, 1 << 40, workers=2, report_all=False)
    assert blocks.footprint.exact > 0
