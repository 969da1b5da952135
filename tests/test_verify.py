"""Candidate pairs to measurements: Hamming distance, estimated and true cosine, components."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simdup.errors import ParameterError
from simdup.fingerprints.simhash import int_to_words
from simdup.fingerprints.weights import term_weights, weight_matrix, weights_to_matrix
from simdup.model import PairArrays, ScanResult
from simdup.params import Params
from simdup.search.result import Verified
from simdup.search.verify import (
    components,
    cosine,
    cosine_many,
    estimate_cosine,
    estimate_cosine_many,
    hamming,
    hamming_many,
)
from simdup.text.tokens import tokenize

TEXT = "The quick brown fox jumps over the lazy dog while the quick cat sleeps in the sun"


def test_hamming() -> None:
    assert hamming(0, 0) == 0
    assert hamming(0b1011101, 0b1001001) == 2
    assert hamming(0, (1 << 512) - 1) == 512
    assert hamming(1 << 100, 1 << 101) == 2


def test_estimate_cosine_endpoints() -> None:
    assert estimate_cosine(7, 7, 64) == 1.0
    assert estimate_cosine(0, (1 << 64) - 1, 64) == -1.0
    assert estimate_cosine(0, (1 << 32) - 1, 64) == pytest.approx(0.0, abs=1e-15)
    assert estimate_cosine(0, 1, 8) == math.cos(math.pi / 8)


def test_estimate_cosine_many_matches_scalar() -> None:
    distances = np.arange(0, 65, dtype=np.int64)
    got = estimate_cosine_many(distances, 64)
    expected = [estimate_cosine(0, (1 << int(d)) - 1, 64) for d in distances]
    assert got.tolist() == expected


def test_cosine_of_zero_vector_is_zero() -> None:
    assert cosine({}, {"a": 1.0}) == 0.0
    assert cosine({"a": 1.0}, {}) == 0.0
    assert cosine({}, {}) == 0.0
    assert cosine({"a": 0.0}, {"a": 0.0}) == 0.0
    assert cosine({"a": 0.0, "b": 0.0}, {"a": 3.0}) == 0.0
    matrix = weights_to_matrix([{}, {"a": 1.0}, {"a": 0.0}])
    pairs = np.array([[0, 1], [1, 2], [0, 2]], dtype=np.int64)
    assert cosine_many(matrix, pairs).tolist() == [0.0, 0.0, 0.0]


def test_cosine_values() -> None:
    assert cosine({"a": 1.0, "b": 1.0}, {"a": 1.0}) == pytest.approx(1 / math.sqrt(2))
    assert cosine({"a": 1.0}, {"b": 1.0}) == 0.0
    assert cosine({"a": 3.0, "b": 4.0}, {"a": 4.0, "b": 3.0}) == pytest.approx(24 / 25)
    assert cosine({"a": 1.0}, {"a": -2.0}) == -1.0


@pytest.mark.parametrize("weighting", ["tf", "log", "binary"])
def test_exact_copies_give_exactly_one(weighting: str) -> None:
    weights = term_weights(tokenize(TEXT), weighting)
    assert cosine(weights, dict(weights)) == 1.0
    matrix = weight_matrix([tokenize(TEXT), tokenize("other words"), tokenize(TEXT)], weighting)
    got = cosine_many(matrix, np.array([[0, 2], [0, 1]], dtype=np.int64))
    assert got[0] == 1.0
    assert got[1] == 0.0


def test_exact_copies_give_exactly_one_with_tfidf() -> None:
    docs = [tokenize(TEXT), tokenize("the lazy dog barks"), tokenize(TEXT)]
    matrix = weight_matrix(docs, "tfidf")
    assert cosine(matrix.row(0), matrix.row(2)) == 1.0
    assert cosine_many(matrix, np.array([[0, 2]], dtype=np.int64)).tolist() == [1.0]


@given(
    st.dictionaries(
        st.text(max_size=5), st.floats(1e-6, 1e6, allow_nan=False), min_size=1, max_size=60
    )
)
@settings(max_examples=200, deadline=None)
def test_copies_score_exactly_one_for_any_positive_weights(weights: dict[str, float]) -> None:
    assert cosine(weights, dict(weights)) == 1.0
    matrix = weights_to_matrix([weights, weights])
    assert cosine_many(matrix, np.array([[0, 1]], dtype=np.int64)).tolist() == [1.0]


def test_hamming_many() -> None:
    values = [0, 1, (1 << 64) - 1, 0b1010]
    fps = np.stack([int_to_words(v, 64) for v in values])
    pairs = np.array([[0, 1], [0, 2], [1, 3], [2, 3]], dtype=np.int64)
    got = hamming_many(fps, pairs)
    assert got.dtype == np.int64
    assert got.tolist() == [hamming(values[i], values[j]) for i, j in pairs.tolist()]
    assert hamming_many(fps, np.zeros((0, 2), dtype=np.int64)).shape == (0,)


def test_cosine_many_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    import simdup.search.verify as verify

    monkeypatch.setattr(verify, "LOOKUP_STEP_PAIRS", 2)
    monkeypatch.setattr(verify, "DENSE_STEP_PAIRS", 2)
    rows = [{"a": 1.0, "b": float(i)} for i in range(6)] + [{"c": 2.0}]
    matrix = weights_to_matrix(rows)
    pairs = np.array([(i, j) for i in range(7) for j in range(i + 1, 7)], dtype=np.int64)
    got = cosine_many(matrix, pairs)
    expected = [cosine(rows[i], rows[j]) for i, j in pairs.tolist()]
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    walk=st.sampled_from([1, 2, 7, 50]),
    integers=st.booleans(),
    lookup=st.booleans(),
)
def test_a_block_walked_a_few_entries_at_a_time_gives_the_same_bytes(
    seed: int, walk: int, integers: bool, lookup: bool
) -> None:
    """Rows met by many pairs walk their partners' entries in bounded spans: same sums.

    Through dense blocks, and (``lookup``) through the sorted-key look-up that a corpus
    too wide for a dense block takes.
    """
    import simdup.search.verify as verify

    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(12):
        words = rng.choice(30, size=int(rng.integers(0, 15)), replace=False)
        values = rng.integers(1, 5, len(words)) if integers else rng.random(len(words)) + 0.1
        rows.append({f"w{int(w)}": float(v) for w, v in zip(words, values, strict=True)})
    matrix = weights_to_matrix(rows)
    # Every pair, and many with the first rows: a few rows met by most pairs.
    pairs = np.array(
        [(i, j) for i in range(12) for j in range(i + 1, 12)] + [(0, j) for j in range(1, 12)] * 3,
        dtype=np.int64,
    )
    with pytest.MonkeyPatch.context() as patch:
        if lookup:
            patch.setattr(verify, "DENSE_ENTRIES", 1)
        assert verify.CosineIndex(matrix).rows.dense is not lookup
        whole = cosine_many(matrix, pairs)
        patch.setattr(verify, "WALK_ENTRIES", walk)
        spanned = cosine_many(matrix, pairs)
    assert spanned.tobytes() == whole.tobytes()
    expected = [cosine(rows[i], rows[j]) for i, j in pairs.tolist()]
    np.testing.assert_allclose(whole, expected, rtol=1e-12, atol=1e-15)


# --- connected components -----------------------------------------------------------------


def edges(*pairs: tuple[int, int]) -> npt.NDArray[np.int64]:
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


@pytest.mark.parametrize(
    ("n", "pairs", "expected"),
    [
        (0, edges(), []),
        (3, edges(), [0, 1, 2]),
        (5, edges((0, 3), (3, 4)), [0, 1, 2, 0, 0]),
        (4, edges((2, 3)), [0, 1, 2, 2]),
        # a chain listed from the far end needs several rounds of propagation
        (6, edges((4, 5), (3, 4), (2, 3), (1, 2), (0, 1)), [0, 0, 0, 0, 0, 0]),
        (6, edges((1, 5), (0, 4), (4, 5), (2, 3)), [0, 0, 2, 2, 0, 0]),
        (4, edges((0, 1), (1, 2), (0, 2)), [0, 0, 0, 3]),  # a triangle
    ],
)
def test_components_small_graphs(n: int, pairs: npt.NDArray[np.int64], expected: list[int]) -> None:
    assert components(n, pairs).tolist() == expected


def union_find_labels(n: int, pairs: list[tuple[int, int]]) -> list[int]:
    parent = list(range(n))

    def root(x: int) -> int:
        while parent[x] != x:
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = root(a), root(b)
        parent[max(ra, rb)] = min(ra, rb)
    return [root(x) for x in range(n)]


@given(
    st.integers(1, 40).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=60),
        )
    )
)
@settings(max_examples=150, deadline=None)
def test_components_equal_union_find(graph: tuple[int, list[tuple[int, int]]]) -> None:
    n, raw = graph
    pairs = [(min(a, b), max(a, b)) for a, b in raw if a != b]
    got = components(n, np.array(pairs, dtype=np.int64).reshape(-1, 2))
    assert got.tolist() == union_find_labels(n, pairs)


# --- the threshold ----------------------------------------------------------------------------


@pytest.mark.parametrize("threshold", [1.5, -0.1, 2.0])
def test_threshold_out_of_range_is_rejected_naming_it(threshold: float) -> None:
    with pytest.raises(ParameterError, match=rf"(?<![\w.]){threshold}(?![\w.])"):
        Params(threshold=threshold)


def test_threshold_bounds_are_accepted() -> None:
    assert Params(threshold=0.0).threshold == 0.0
    assert Params(threshold=1.0).threshold == 1.0


def test_pairs_are_judged_by_the_true_cosine_else_the_estimate() -> None:
    measured = PairArrays(
        np.array([[0, 1], [0, 2], [1, 2]], dtype=np.int64),
        np.array([1, 5, 9], dtype=np.int64),
        np.array([0.99, 0.9, 0.5]),
        np.array([np.nan, 0.7, 0.85]),
    )
    assert measured.score().tolist() == [0.99, 0.7, 0.85]
    passed = Verified.of(measured, 0.8, report_all=False)
    assert (passed.candidates, passed.above_threshold) == (3, 2)
    assert passed.kept.pairs.tolist() == [[0, 1], [1, 2]]
    every = Verified.of(measured, 0.8, report_all=True)
    assert (every.above_threshold, len(every.kept)) == (2, 3)
    joined = PairArrays.join([passed.kept, PairArrays.empty(), measured.take(np.array([0]))])
    assert joined.pairs.tolist() == [[0, 1], [1, 2], [0, 1]]
    assert joined.hamming.tolist() == [1, 9, 1]
    none = PairArrays.join([])
    assert none.pairs.shape == (0, 2)
    assert [a.dtype for a in (none.pairs, none.hamming, none.estimated, none.cosine)] == [
        np.int64,
        np.int64,
        np.float64,
        np.float64,
    ]


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.integers(0, 3),
            st.sampled_from([0.5, 0.9, 1.0, math.nan]),
            st.sampled_from([-1, 3, 20]),
        ),
        max_size=12,
    ),
    limit=st.integers(0, 14),
)
def test_a_few_pairs_are_the_first_of_all_pairs(
    rows: list[tuple[int, float, int]], limit: int
) -> None:
    # A terminal asks for the first few of many pairs; they must be exactly the first ones.
    count = len(rows)
    pairs = PairArrays(
        np.array([[i, i + 1] for i in range(count)], dtype=np.int64).reshape(-1, 2),
        np.array([r[0] for r in rows], dtype=np.int64),
        np.full(count, 0.9),
        np.array([r[1] for r in rows], dtype=np.float64),
    )
    result = ScanResult(
        names=[f"d{i}" for i in range(count + 1)],
        params=Params(),
        pairs=pairs,
        feature_counts=np.array([r[2] for r in rows] + [5], dtype=np.int64),
        fingerprints=np.zeros((count + 1, 1), dtype=np.uint64),
    )
    assert result.identical(limit) == result.identical()[:limit]
    assert result.pair_list(limit) == result.pair_list()[:limit]
    assert len(result.pair_list(limit)) == min(limit, count)
