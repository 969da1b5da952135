"""Fingerprints to candidate pairs: block layout, schemes, distance tables, candidates."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simdup.errors import ParameterError
from simdup.fingerprints.simhash import int_to_words
from simdup.params import SCHEMES, Params
from simdup.search.buckets import row_groups, sorted_rows
from simdup.search.candidates import candidate_pairs, candidates
from simdup.search.plan.planner import tables_for
from simdup.search.tables import block_layout, block_tables, distance_tables, scheme_tables


def as_array(values: list[int], bits: int) -> npt.NDArray[np.uint64]:
    return np.stack([int_to_words(v, bits) for v in values]).reshape(len(values), -(-bits // 64))


def names_value(message: str, value: object) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(str(value))}(?![\w.])", message) is not None


# --- layout --------------------------------------------------------------------------------


@pytest.mark.parametrize(("bits", "blocks"), [(64, 1), (64, 4), (64, 8), (10, 4), (65, 8), (7, 7)])
def test_block_layout_is_contiguous_and_near_equal(bits: int, blocks: int) -> None:
    layout = block_layout(bits, blocks)
    assert len(layout) == blocks
    assert np.concatenate(layout).tolist() == list(range(bits))
    sizes = [len(b) for b in layout]
    assert max(sizes) - min(sizes) <= 1
    assert sizes == sorted(sizes, reverse=True)  # leftover bits go to the first blocks
    for block in layout:
        assert block.dtype == np.int64
        assert np.all(np.diff(block) == 1)


def test_block_layout_example() -> None:
    assert [b.tolist() for b in block_layout(10, 4)] == [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]


@pytest.mark.parametrize(("bits", "blocks"), [(64, 65), (8, 9), (64, 0), (64, -1), (1, 2)])
def test_bad_block_counts_are_rejected_naming_the_value(bits: int, blocks: int) -> None:
    with pytest.raises(ParameterError) as info:
        block_layout(bits, blocks)
    assert names_value(str(info.value), blocks)
    with pytest.raises(ParameterError) as info:
        candidates([0, 1], bits, blocks)
    assert names_value(str(info.value), blocks)
    with pytest.raises(ParameterError) as info:
        Params(bits=bits, blocks=blocks)
    assert names_value(str(info.value), blocks)


# --- schemes and tables ----------------------------------------------------------------------


def test_named_schemes_are_block_counts() -> None:
    assert SCHEMES == {"strict": 1, "balanced": 4, "loose": 8}
    for bits in (8, 16, 32, 64, 100, 128, 256, 512):
        for name, blocks in SCHEMES.items():
            tables = scheme_tables(bits, name)
            assert len(tables.keys) == blocks
            assert tables.guarantee == blocks - 1
            assert sum(tables.key_bits) == bits


def test_scheme_with_more_blocks_than_bits_uses_one_block_per_bit() -> None:
    tables = scheme_tables(4, "loose")
    assert [k.tolist() for k in tables.keys] == [[0], [1], [2], [3]]


def test_unknown_scheme_is_rejected() -> None:
    with pytest.raises(ParameterError, match="'medium'"):
        scheme_tables(64, "medium")
    with pytest.raises(ParameterError, match="'medium'"):
        Params(scheme="medium")


@pytest.mark.parametrize(("bits", "k"), [(64, 0), (64, 1), (64, 3), (64, 6), (128, 5), (20, 19)])
def test_distance_tables_choose_m_minus_k_of_m_blocks(bits: int, k: int) -> None:
    tables = distance_tables(bits, k)
    assert tables.guarantee == k
    assert tables.bits == bits
    keys = [set(key.tolist()) for key in tables.keys]
    # Every set of k positions is missed by some table (the guarantee, checked on blocks).
    m = re.search(r"of (\d+) blocks", tables.description)
    assert m is not None
    layout = block_layout(bits, int(m.group(1)))
    assert len(keys) == math.comb(len(layout), k)
    for dirty in itertools.combinations(range(len(layout)), k):
        touched = set(np.concatenate([layout[i] for i in dirty]).tolist()) if dirty else set()
        assert any(not (key & touched) for key in keys)


def test_distance_tables_reject_bad_distance() -> None:
    for bad in (-1, 64, 100):
        with pytest.raises(ParameterError) as info:
            distance_tables(64, bad)
        assert names_value(str(info.value), bad)
        with pytest.raises(ParameterError):
            Params(max_distance=bad)


def test_tables_for_precedence() -> None:
    assert tables_for(Params(max_distance=3, blocks=2, scheme="strict")).guarantee == 3
    assert len(tables_for(Params(blocks=2, scheme="strict")).keys) == 2
    assert len(tables_for(Params(scheme="balanced")).keys) == 4
    assert tables_for(Params(scheme="auto", threshold=0.9)).guarantee >= 1


# --- candidates ------------------------------------------------------------------------------


def test_candidates_doctest_example() -> None:
    assert candidates([0b1111, 0b1110, 0b0001], bits=4, blocks=2).tolist() == [[0, 1]]


def test_candidates_shape_order_and_uniqueness() -> None:
    values = [0, 0, 0, 1, 1 << 63, 0]
    pairs = candidates(values, 64, 4)
    assert pairs.dtype == np.int64
    assert pairs.shape[1] == 2
    as_list = [tuple(p) for p in pairs.tolist()]
    assert as_list == sorted(set(as_list))
    assert all(i < j for i, j in as_list)
    # identical fingerprints share every block; 1 and 1<<63 differ from 0 in one block only
    assert as_list == [(i, j) for i in range(6) for j in range(i + 1, 6)]


def test_candidates_accepts_ints_and_arrays_alike() -> None:
    rng = np.random.default_rng(11)
    for bits in (8, 64, 65, 130):
        values = [int.from_bytes(rng.bytes(24), "little") & ((1 << bits) - 1) for _ in range(30)]
        values += [v ^ 1 for v in values[:10]]
        from_ints = candidates(values, bits, 4)
        from_array = candidates(as_array(values, bits), bits, 4)
        assert from_ints.tolist() == from_array.tolist()
        assert len(from_ints) >= 10


def test_candidates_of_nothing() -> None:
    assert candidates([], 64, 4).shape == (0, 2)
    assert candidates([5], 64, 4).shape == (0, 2)


def test_ineligible_rows_never_pair() -> None:
    fps = as_array([7, 7, 7, 7], 64)
    eligible = np.array([True, False, True, True])
    pairs = candidate_pairs(fps, block_tables(64, 1), eligible=eligible)
    assert pairs.tolist() == [[0, 2], [0, 3], [2, 3]]


def test_candidate_budget_is_enforced() -> None:
    fps = as_array([0] * 10, 64)
    with pytest.raises(ParameterError, match="45"):
        candidate_pairs(fps, block_tables(64, 1), max_candidates=44)
    assert len(candidate_pairs(fps, block_tables(64, 1), max_candidates=45)) == 45


@given(
    words=st.integers(1, 8),
    values=st.lists(st.integers(0, 3), min_size=0, max_size=80),
    spread=st.booleans(),
)
def test_row_groups_are_the_groups_of_numpy_unique(
    words: int, values: list[int], spread: bool
) -> None:
    """The rows sorted by fingerprint and the runs of equal ones, as np.unique finds them."""
    rng = np.random.default_rng(len(values))
    noise = rng.integers(0, 2**64 - 1, size=4 * words, dtype=np.uint64).reshape(4, words)
    fingerprints = noise[values] if values else np.zeros((0, words), dtype=np.uint64)
    if spread:  # rows that differ in their last word only
        fingerprints = fingerprints.copy()
        fingerprints[:, -1] = np.array(values, dtype=np.uint64)
    order, starts = row_groups(fingerprints)
    if not values:
        assert (order.size, starts.size) == (0, 0)
        return
    unique, first, inverse, counts = np.unique(
        fingerprints, axis=0, return_index=True, return_inverse=True, return_counts=True
    )
    assert np.array_equal(fingerprints[order[starts]], unique)
    assert order[starts].tolist() == first.tolist()
    assert np.diff(np.append(starts, len(order))).tolist() == counts.tolist()
    assert order.tolist() == np.argsort(inverse.reshape(-1), kind="stable").tolist()


@given(
    words=st.integers(1, 8),
    firsts=st.lists(st.integers(0, 5), min_size=0, max_size=60),
    rest=st.integers(0, 3),
)
def test_rows_sort_as_a_sort_by_every_word(words: int, firsts: list[int], rest: int) -> None:
    """Sorted by the first word, then ties by the others, then by row: as ``np.lexsort``."""
    rng = np.random.default_rng(len(firsts) * 10 + rest)
    fingerprints = rng.integers(0, rest + 1, size=(len(firsts), words), dtype=np.uint64)
    fingerprints[:, 0] = np.array(firsts, dtype=np.uint64) * np.uint64(2**61)
    expected = np.lexsort(fingerprints.T[::-1]) if firsts else np.zeros(0, np.int64)
    assert sorted_rows(fingerprints).tolist() == expected.tolist()
    assert (
        sorted_rows(fingerprints[:, 0]).tolist()
        == np.argsort(fingerprints[:, 0], kind="stable").tolist()
    )
