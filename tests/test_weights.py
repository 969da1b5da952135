"""Features to weights: per-document dicts and the corpus matrix."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simdup.errors import ParameterError
from simdup.fingerprints.weights import (
    WeightMatrix,
    idf,
    order_of,
    term_weights,
    weight_matrix,
    weights_to_matrix,
)
from simdup.params import WEIGHTINGS, Params, check_weighting

TOKENS = ["cat", "sat", "cat", "mat", "cat", "sat"]
CORPUS = [
    ["cat", "sat", "cat"],
    ["dog", "cat"],
    [],
    ["dog", "dog", "dog", "emu"],
]


def test_tf_counts_in_first_occurrence_order() -> None:
    weights = term_weights(TOKENS)
    assert list(weights.items()) == [("cat", 3.0), ("sat", 2.0), ("mat", 1.0)]
    assert term_weights(TOKENS, "tf") == weights
    assert all(type(w) is float for w in weights.values())


def test_log_is_one_plus_ln_tf() -> None:
    weights = term_weights(TOKENS, "log")
    assert weights == {"cat": 1.0 + math.log(3), "sat": 1.0 + math.log(2), "mat": 1.0}


def test_binary_is_one_for_every_present_feature() -> None:
    assert term_weights(TOKENS, "binary") == {"cat": 1.0, "sat": 1.0, "mat": 1.0}


def test_tfidf_multiplies_tf_by_given_idf() -> None:
    idf_of = {"cat": 1.5, "sat": 2.0, "mat": 3.0}
    assert term_weights(TOKENS, "tfidf", idf_of=idf_of) == {"cat": 4.5, "sat": 4.0, "mat": 3.0}


def test_tfidf_without_idf_is_an_error() -> None:
    with pytest.raises(ParameterError, match="idf"):
        term_weights(TOKENS, "tfidf")


def test_no_tokens_no_weights() -> None:
    for weighting in WEIGHTINGS:
        assert term_weights([], weighting, idf_of={}) == {}


@pytest.mark.parametrize("weighting", ["TF", "bm25", "", "tf-idf"])
def test_unknown_weighting_raises_naming_it(weighting: str) -> None:
    for call in (
        lambda: check_weighting(weighting),
        lambda: term_weights(TOKENS, weighting),
        lambda: weight_matrix([TOKENS], weighting),
        lambda: Params(weighting=weighting),
    ):
        with pytest.raises(ParameterError) as info:
            call()
        assert repr(weighting) in str(info.value)
        assert "tfidf" in str(info.value)  # lists the choices


def test_idf_is_smoothed_and_positive() -> None:
    values = idf([1, 3, 0], 3)
    assert values.dtype == np.float64
    np.testing.assert_allclose(values, [math.log(4 / 2) + 1, 1.0, math.log(4) + 1])
    assert bool(np.all(values > 0))


# --- the corpus matrix ---------------------------------------------------------------------


def test_weight_matrix_csr_layout() -> None:
    matrix = weight_matrix(CORPUS)
    assert matrix.vocabulary == ("cat", "sat", "dog", "emu")
    assert matrix.indptr.tolist() == [0, 2, 4, 4, 6]
    assert matrix.indices.tolist() == [0, 1, 2, 0, 2, 3]
    assert matrix.data.tolist() == [2.0, 1.0, 1.0, 1.0, 3.0, 1.0]
    assert matrix.indptr.dtype == matrix.indices.dtype == np.int64
    assert matrix.data.dtype == np.float64
    assert matrix.rows == 4
    assert matrix.row_lengths().tolist() == [2, 2, 0, 2]


def test_rows_are_the_document_dicts() -> None:
    for weighting in ("tf", "log", "binary"):
        matrix = weight_matrix(CORPUS, weighting)
        for i, tokens in enumerate(CORPUS):
            row = matrix.row(i)
            expected = term_weights(tokens, weighting)
            assert list(row.items()) == list(expected.items())


def test_tfidf_rows_use_the_corpus_idf() -> None:
    matrix = weight_matrix(CORPUS, "tfidf")
    n = len(CORPUS)
    df = {f: sum(f in doc for doc in CORPUS) for f in matrix.vocabulary}
    idf_of = {f: math.log((1 + n) / (1 + d)) + 1 for f, d in df.items()}
    for i, tokens in enumerate(CORPUS):
        row = matrix.row(i)
        expected = term_weights(tokens, "tfidf", idf_of=idf_of)
        assert row.keys() == expected.keys()
        for feature, weight in expected.items():
            assert row[feature] == pytest.approx(weight, rel=1e-15)
    # Equal counts and document frequencies give equal weights; a rarer word weighs more.
    assert matrix.row(1)["cat"] == matrix.row(1)["dog"]
    assert matrix.row(3)["emu"] > matrix.row(1)["dog"]


def test_norms() -> None:
    matrix = weight_matrix(CORPUS)
    expected = [math.sqrt(5.0), math.sqrt(2.0), 0.0, math.sqrt(10.0)]
    np.testing.assert_allclose(matrix.norms(), expected, rtol=1e-15)
    assert matrix.norms()[2] == 0.0
    np.testing.assert_allclose(matrix.squared_norms(), [5.0, 2.0, 0.0, 10.0])


def test_empty_corpus() -> None:
    matrix = weight_matrix([])
    assert matrix.rows == 0
    assert matrix.norms().shape == (0,)
    assert matrix.vocabulary == ()
    only_empty = weight_matrix([[], []])
    assert only_empty.norms().tolist() == [0.0, 0.0]
    for m in (matrix, only_empty):
        assert m.norms().dtype == m.squared_norms().dtype == np.float64


def test_weights_to_matrix_keeps_dicts_and_their_order() -> None:
    rows = [{"b": 2.5, "a": -1.0}, {}, {"a": 4.0, "c": 0.5}]
    matrix = weights_to_matrix(rows)
    assert isinstance(matrix, WeightMatrix)
    assert matrix.vocabulary == ("b", "a", "c")
    for i, row in enumerate(rows):
        assert list(matrix.row(i).items()) == list(row.items())
    np.testing.assert_allclose(
        matrix.norms(), [math.hypot(2.5, 1.0), 0.0, math.hypot(4.0, 0.5)], rtol=1e-15
    )


def test_same_documents_same_matrix() -> None:
    a, b = weight_matrix(CORPUS, "tfidf"), weight_matrix(CORPUS, "tfidf")
    assert a.vocabulary == b.vocabulary
    assert a.data.tolist() == b.data.tolist()


@given(
    st.lists(st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f"]), max_size=12), max_size=8),
    st.sampled_from(["tf", "log", "binary"]),
)
@settings(max_examples=60, deadline=None)
def test_matrix_rows_equal_term_weights(docs: list[list[str]], weighting: str) -> None:
    matrix = weight_matrix(docs, weighting)
    assert matrix.rows == len(docs)
    for i, tokens in enumerate(docs):
        assert matrix.row(i) == term_weights(tokens, weighting)
        assert matrix.row_lengths()[i] == len(set(tokens))
    squares = [sum(w * w for w in term_weights(t, weighting).values()) for t in docs]
    np.testing.assert_allclose(matrix.squared_norms(), squares, rtol=1e-12)


def test_tfidf_unseen_features_get_the_given_or_largest_idf() -> None:
    from simdup.fingerprints.weights import term_weights as tw

    idf_of = {"common": 1.0, "rare": 2.5}
    assert tw(["new", "common"], "tfidf", idf_of=idf_of) == {"new": 2.5, "common": 1.0}
    assert tw(["new"], "tfidf", idf_of=idf_of, unseen_idf=4.0) == {"new": 4.0}


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.dictionaries(
            st.sampled_from([f"f{i}" for i in range(12)]),
            st.one_of(st.integers(1, 9).map(float), st.floats(0.01, 50.0)),
            max_size=8,
        ),
        max_size=12,
    ),
    chunk=st.integers(1, 20),
)
def test_squared_norms_in_row_ranges_equal_sums_in_row_order(
    rows: list[dict[str, float]], chunk: int
) -> None:
    # Squares are taken a range of rows at a time; every row's sum is still the one
    # summed entry by entry in row order (exact for integers in any order).
    matrix = weights_to_matrix(rows)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("simdup.fingerprints.weights.NORM_CHUNK", chunk)
        got = matrix.squared_norms()
    want = [
        math.fsum(w * w for w in r.values())
        if all(float(w).is_integer() for w in r.values())
        else None
        for r in rows
    ]
    for value, row, exact in zip(got.tolist(), rows, want, strict=True):
        sequential = 0.0
        for w in row.values():
            sequential += w * w
        assert value == sequential
        if exact is not None:
            assert value == exact


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 20)), max_size=60))
def test_order_of_is_the_order_lexsort_gives(entries: list[tuple[int, int]]) -> None:
    """Ties included: both sorts are stable."""
    major = np.array([e[0] for e in entries], dtype=np.int64)
    minor = np.array([e[1] for e in entries], dtype=np.int64)
    expected = np.lexsort((minor, major)) if entries else np.zeros(0, dtype=np.int64)
    assert order_of(major, minor, 21).tolist() == expected.tolist()
