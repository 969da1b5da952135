"""The cosine screen of held candidates: a true upper bound, and the same answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_index_keys import documents, edited_queries

from simdup.index import open_index, screen
from simdup.index.keys import PLAN_MINIMUM


def set_bits(row: npt.NDArray[np.uint8]) -> list[int]:
    bits: list[int] = np.flatnonzero(np.unpackbits(row, bitorder="little")).tolist()
    return bits


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.lists(st.integers(1, 5000), max_size=40, unique=True), max_size=12),
    chunk=st.integers(1, 5),
)
def test_a_filter_has_exactly_the_bits_of_its_features(rows: list[list[int]], chunk: int) -> None:
    lengths = np.array([len(r) for r in rows], dtype=np.int64)
    ids = np.array([i for r in rows for i in r], dtype=np.uint32)
    built = screen.BUILD_ROWS
    screen.BUILD_ROWS = chunk  # rows built a few at a time, as a large batch is
    try:
        filters = screen.feature_filters(lengths, ids)
    finally:
        screen.BUILD_ROWS = built
    assert filters.shape == (len(rows), screen.FILTER_BYTES)
    for row, features in zip(filters, rows, strict=True):
        expected = sorted(set(screen.bit_positions(np.array(features, dtype=np.uint32)).tolist()))
        assert set_bits(row) == expected


def test_bits_spread_consecutive_ids() -> None:
    positions = screen.bit_positions(np.arange(1, 100_001, dtype=np.uint32))
    counts = np.bincount(positions, minlength=screen.FILTER_BITS)
    assert len(counts) == screen.FILTER_BITS
    # About 98 ids a bit: none empty, none more than twice its share.
    assert counts.min() > 0
    assert counts.max() < 2 * 100_000 / screen.FILTER_BITS


def cosine(a: dict[int, float], b: dict[int, float]) -> float:
    dot = sum(w * b.get(f, 0.0) for f, w in a.items())
    norm = np.sqrt(sum(w * w for w in a.values()) * sum(w * w for w in b.values()))
    return float(dot / norm) if norm > 0 else 0.0


vectors = st.dictionaries(st.integers(0, 3000), st.floats(0.01, 50.0), max_size=60)


@settings(max_examples=200, deadline=None)
@given(
    query=vectors,
    stored=st.lists(vectors, min_size=1, max_size=8),
    threshold=st.floats(0.0, 1.0),
)
def test_the_bound_is_at_least_the_cosine_and_only_pairs_under_the_threshold_are_left(
    query: dict[int, float], stored: list[dict[int, float]], threshold: float
) -> None:
    # Feature 0 is a query feature the index does not know: in the norm, never shared.
    lengths = np.array([len([f for f in s if f]) for s in stored], dtype=np.int64)
    ids = np.array([f for s in stored for f in s if f], dtype=np.uint32)
    filters = screen.feature_filters(lengths, ids)
    known = np.array([f for f in query if f], dtype=np.uint32)
    squares = np.array([query[f] ** 2 for f in query if f])
    norm = sum(w * w for w in query.values())
    keep, bounds = screen.screened(filters, known, squares, norm, threshold)
    for k, vector in enumerate(stored):
        shared_only = {f: w for f, w in vector.items() if f}
        true = cosine({f: w for f, w in query.items()}, shared_only)
        assert bounds[k] >= true - 1e-12
        if not keep[k]:
            assert bounds[k] < threshold
            assert true < threshold


@pytest.fixture(scope="module")
def corpus() -> list[Any]:
    return documents(PLAN_MINIMUM + 200, seed=41)


def test_a_held_query_leaves_most_candidates_unread_and_answers_alike(
    tmp_path: Path, corpus: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "screened.db")
    with open_index(path, create=True) as index:
        index.add_documents(corpus)
    queries = edited_queries(corpus, 40, seed=5)
    with open_index(path) as lookups:
        expected = lookups.query(queries, lookups.params)
        everything = lookups.query(queries, lookups.params, report_all=True)
    measured = {"screened": 0, "left": 0}
    screened = screen.screened

    def counting(*args: Any) -> Any:
        keep, bounds = screened(*args)
        measured["screened"] += len(keep)
        measured["left"] += int((~keep).sum())
        return keep, bounds

    monkeypatch.setattr(screen, "screened", counting)
    with open_index(path) as index:
        index.hold_fingerprints()
        found = index.query(queries, index.params)
        assert found.pair_list() == expected.pair_list()
        assert found.stats == expected.stats
        # The screen saw every candidate and left some unread.
        assert measured["screened"] == expected.stats["candidates"] > 0
        assert measured["left"] > 0
        # Every candidate reported: measured, none screened.
        before = dict(measured)
        assert index.query(queries, index.params, report_all=True).pair_list() == (
            everything.pair_list()
        )
        assert measured == before


@pytest.mark.parametrize("features", [1, 100, 5000])
def test_an_exact_copy_is_always_measured(features: int) -> None:
    # Summed in single precision, the bound must still reach 1.0 for every shared feature.
    rng = np.random.default_rng(features)
    ids = rng.choice(np.arange(1, 10**6, dtype=np.uint32), features, replace=False)
    weights = rng.lognormal(0.0, 3.0, features)
    squares = weights * weights
    norm = float(np.bincount(np.zeros(features, np.int64), squares)[0])
    filters = screen.feature_filters(np.array([features]), ids)
    keep, bounds = screen.screened(filters, ids, squares, norm, 1.0)
    assert keep.tolist() == [True]
    assert bounds.tolist() == [1.0]


def test_a_query_far_longer_than_its_candidates_is_measured_unscreened() -> None:
    # A byte a query feature and candidate against each candidate's entries read once.
    sizes = np.full(1000, 100, dtype=np.int64)
    assert screen.pays(100, sizes)
    assert screen.pays(screen.SCREEN_RATIO * 100, sizes)
    assert not screen.pays(screen.SCREEN_RATIO * 100 + 1, sizes)
    assert not screen.pays(1, np.zeros(3, dtype=np.int64))  # candidates without features
