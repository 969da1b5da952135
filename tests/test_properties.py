"""Invariants of fingerprints, blocking and verification, checked with hypothesis."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from hypothesis import given, settings
from hypothesis import strategies as st

from simdup.fingerprints.simhash import fingerprint, fingerprint_many, int_to_words, words_to_int
from simdup.fingerprints.weights import term_weights, weight_matrix, weights_to_matrix
from simdup.search.candidates import candidate_pairs, candidates
from simdup.search.tables import (
    Tables,
    block_layout,
    block_tables,
    distance_tables,
    found_probability,
)
from simdup.search.verify import cosine, cosine_many, estimate_cosine, hamming, hamming_many

# Features as JavaScript sees them: any string, including array-index-like keys that
# Object.entries moves to the front, lone surrogates and astral characters.
FEATURE = st.one_of(
    st.text(alphabet=st.characters(exclude_categories=()), max_size=6),
    st.integers(0, 3000).map(str),
)
INT_WEIGHTS = st.dictionaries(FEATURE, st.integers(-1000, 1000), max_size=20).map(
    lambda d: {k: float(v) for k, v in d.items()}
)
# Term counts: the counting path (byte lanes of at most 255 occurrences per segment).
COUNT_WEIGHTS = st.dictionaries(FEATURE, st.integers(0, 600), max_size=20).map(
    lambda d: {k: float(v) for k, v in d.items()}
)
FLOAT_WEIGHTS = st.dictionaries(
    FEATURE,
    st.one_of(
        st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False),
        # values whose sums cancel to (almost) zero in one order and not in another
        st.sampled_from([0.1, 0.2, 0.3, -0.3, 0.6, 1 / 3, -2 / 3, 2.0**53, -(2.0**53), 1.0]),
    ),
    max_size=20,
)
BITS = st.sampled_from([1, 3, 8, 16, 31, 32, 33, 64, 65, 100, 128, 256])
SEED = st.integers(0, 2**53 - 1)
WORDS = st.lists(
    st.sampled_from(["red", "fox", "dog", "cat", "emu", "owl", "ant", "bee", "yak", "elk"]),
    max_size=30,
)


def fp_ints(array: npt.NDArray[np.uint64]) -> list[int]:
    return [words_to_int(row) for row in array]


def as_array(values: Sequence[int], bits: int) -> npt.NDArray[np.uint64]:
    out = np.zeros((len(values), -(-bits // 64)), dtype=np.uint64)
    for i, v in enumerate(values):
        out[i] = int_to_words(v, bits)
    return out


def key_of(value: int, positions: npt.NDArray[np.int64]) -> tuple[int, ...]:
    return tuple((value >> int(p)) & 1 for p in positions)


def shares_a_key(a: int, b: int, tables: Tables) -> bool:
    return any(key_of(a, k) == key_of(b, k) for k in tables.keys)


def brute_force(values: Sequence[int], max_distance: int) -> set[tuple[int, int]]:
    n = len(values)
    return {
        (i, j)
        for i in range(n)
        for j in range(i + 1, n)
        if hamming(values[i], values[j]) <= max_distance
    }


# --- fingerprints ----------------------------------------------------------------------------


@given(INT_WEIGHTS, st.data(), BITS, SEED)
@settings(max_examples=100, deadline=None)
def test_fingerprint_independent_of_feature_order(
    weights: dict[str, float], data: st.DataObject, bits: int, seed: int
) -> None:
    shuffled = dict(data.draw(st.permutations(list(weights.items()))))
    expected = fingerprint(weights, bits, seed)
    assert fingerprint(shuffled, bits, seed) == expected
    batch = fingerprint_many(weights_to_matrix([weights, shuffled]), bits, seed)
    assert fp_ints(batch) == [expected, expected]


@given(st.one_of(INT_WEIGHTS, FLOAT_WEIGHTS), st.integers(1, 256), st.data(), SEED)
@settings(max_examples=100, deadline=None)
def test_narrow_fingerprint_is_low_bits_of_wide(
    weights: dict[str, float], wide: int, data: st.DataObject, seed: int
) -> None:
    narrow = data.draw(st.integers(1, wide))
    assert fingerprint(weights, narrow, seed) == fingerprint(weights, wide, seed) & (
        (1 << narrow) - 1
    )


@given(INT_WEIGHTS, st.integers(1, 1000), BITS, SEED)
@settings(max_examples=100, deadline=None)
def test_scaling_by_positive_integer_keeps_fingerprint(
    weights: dict[str, float], factor: int, bits: int, seed: int
) -> None:
    # |weight| <= 1000, 20 features, factor <= 1000: every sum stays an exact double.
    scaled = {k: v * factor for k, v in weights.items()}
    assert fingerprint(scaled, bits, seed) == fingerprint(weights, bits, seed)


@given(FLOAT_WEIGHTS, st.integers(-30, 30), BITS, SEED)
@settings(max_examples=100, deadline=None)
def test_scaling_by_power_of_two_keeps_fingerprint(
    weights: dict[str, float], exponent: int, bits: int, seed: int
) -> None:
    # Multiplying by 2**e is exact and commutes with rounding away from overflow and
    # subnormals, so every slot keeps its sign even where floating-point sums cancel.
    scaled = {k: math.ldexp(v, exponent) for k, v in weights.items()}
    assert fingerprint(scaled, bits, seed) == fingerprint(weights, bits, seed)


@given(st.one_of(INT_WEIGHTS, FLOAT_WEIGHTS), BITS, SEED)
@settings(max_examples=60, deadline=None)
def test_identical_inputs_have_distance_zero(
    weights: dict[str, float], bits: int, seed: int
) -> None:
    a = fingerprint(weights, bits, seed)
    b = fingerprint(dict(weights), bits, seed)
    assert hamming(a, b) == 0
    assert estimate_cosine(a, b, bits) == 1.0


@given(st.lists(st.one_of(INT_WEIGHTS, FLOAT_WEIGHTS, COUNT_WEIGHTS), max_size=6), BITS, SEED)
@settings(max_examples=100, deadline=None)
def test_batch_fingerprints_equal_scalar(
    rows: list[dict[str, float]], bits: int, seed: int
) -> None:
    out = fingerprint_many(weights_to_matrix(rows), bits, seed)
    assert out.shape == (len(rows), -(-bits // 64))
    assert fp_ints(out) == [fingerprint(r, bits, seed) for r in rows]


@given(st.lists(COUNT_WEIGHTS, max_size=8), BITS, SEED)
@settings(max_examples=100, deadline=None)
def test_term_count_fingerprints_equal_scalar(
    rows: list[dict[str, float]], bits: int, seed: int
) -> None:
    out = fingerprint_many(weights_to_matrix(rows), bits, seed)
    assert fp_ints(out) == [fingerprint(r, bits, seed) for r in rows]


@given(st.lists(WORDS, min_size=1, max_size=8), BITS, SEED)
@settings(max_examples=60, deadline=None)
def test_batch_fingerprints_equal_scalar_for_log_and_tfidf(
    docs: list[list[str]], bits: int, seed: int
) -> None:
    for weighting in ("tf", "log", "binary"):
        out = fingerprint_many(weight_matrix(docs, weighting), bits, seed)
        expected = [fingerprint(term_weights(d, weighting), bits, seed) for d in docs]
        assert fp_ints(out) == expected, weighting
    matrix = weight_matrix(docs, "tfidf")
    out = fingerprint_many(matrix, bits, seed)
    assert fp_ints(out) == [fingerprint(matrix.row(i), bits, seed) for i in range(len(docs))]


# --- verification ------------------------------------------------------------------------------


@given(
    st.integers(1, 512).flatmap(
        lambda b: st.tuples(st.just(b), st.integers(0, 2**b - 1), st.integers(0, 2**b - 1))
    )
)
def test_estimate_cosine_in_range(case: tuple[int, int, int]) -> None:
    bits, a, b = case
    value = estimate_cosine(a, b, bits)
    assert -1.0 <= value <= 1.0
    assert value == estimate_cosine(b, a, bits)


NONNEGATIVE = st.dictionaries(
    st.sampled_from("abcdefghij"), st.floats(0, 1e6, allow_subnormal=False), max_size=10
)


@given(NONNEGATIVE, NONNEGATIVE)
@settings(max_examples=200)
def test_cosine_symmetric_and_in_unit_interval(u: dict[str, float], v: dict[str, float]) -> None:
    value = cosine(u, v)
    assert value == cosine(v, u)
    assert 0.0 <= value <= 1.0


@given(st.lists(st.one_of(FLOAT_WEIGHTS, NONNEGATIVE), min_size=2, max_size=8))
@settings(max_examples=100, deadline=None)
def test_cosine_many_equals_scalar(rows: list[dict[str, float]]) -> None:
    matrix = weights_to_matrix(rows)
    pairs = np.array(
        [(i, j) for i in range(len(rows)) for j in range(i + 1, len(rows))], dtype=np.int64
    )
    got = cosine_many(matrix, pairs)
    expected = [cosine(rows[i], rows[j]) for i, j in pairs.tolist()]
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    assert bool(np.all((got >= -1.0) & (got <= 1.0)))


@given(st.lists(st.integers(0, 2**130 - 1), min_size=2, max_size=12), st.sampled_from([8, 64, 130]))
def test_hamming_many_equals_scalar(values: list[int], bits: int) -> None:
    values = [v & ((1 << bits) - 1) for v in values]
    pairs = np.array(
        [(i, j) for i in range(len(values)) for j in range(len(values)) if i != j], dtype=np.int64
    )
    got = hamming_many(as_array(values, bits), pairs)
    assert got.tolist() == [hamming(values[i], values[j]) for i, j in pairs.tolist()]


# --- blocking ----------------------------------------------------------------------------------


@st.composite
def clustered_fingerprints(draw: st.DrawFn, bits: int, max_flips: int) -> list[int]:
    """Random fingerprints plus near copies of them at small distances."""
    bases = draw(st.lists(st.integers(0, 2**bits - 1), min_size=1, max_size=8))
    values = list(bases)
    for base in bases:
        for _ in range(draw(st.integers(0, 3))):
            flips = draw(st.lists(st.integers(0, bits - 1), max_size=max_flips, unique=True))
            values.append(base ^ sum(1 << p for p in flips))
    return values


@given(
    st.sampled_from([8, 16, 32, 64, 65, 100, 128]).flatmap(
        lambda bits: st.tuples(st.just(bits), st.integers(1, min(bits, 12)))
    ),
    st.data(),
)
@settings(max_examples=150, deadline=None)
def test_candidates_superset_of_pigeonhole_pairs(
    case: tuple[int, int], data: st.DataObject
) -> None:
    bits, blocks = case
    values = data.draw(clustered_fingerprints(bits, blocks + 1))
    found = {tuple(p) for p in candidates(values, bits, blocks).tolist()}
    assert brute_force(values, blocks - 1) <= found
    layout = block_layout(bits, blocks)
    for i, j in found:
        assert any(key_of(values[i], b) == key_of(values[j], b) for b in layout), (i, j)
    # and every pair that does share a block is found
    n = len(values)
    sharing = {
        (i, j)
        for i in range(n)
        for j in range(i + 1, n)
        if any(key_of(values[i], b) == key_of(values[j], b) for b in layout)
    }
    assert found == sharing


def table_cells(tables: Tables) -> list[list[int]]:
    """Group bit positions by the tables they belong to: the blocks tables are made of."""
    membership: dict[tuple[bool, ...], list[int]] = {}
    sets = [set(k.tolist()) for k in tables.keys]
    for position in range(tables.bits):
        membership.setdefault(tuple(position in s for s in sets), []).append(position)
    return list(membership.values())


@given(
    st.sampled_from([16, 32, 64, 100, 128]).flatmap(
        lambda bits: st.tuples(st.just(bits), st.integers(0, 7))
    ),
    st.data(),
)
@settings(max_examples=60, deadline=None)
def test_distance_tables_find_every_pair_within_k(
    case: tuple[int, int], data: st.DataObject
) -> None:
    bits, k = case
    tables = distance_tables(bits, k)
    assert tables.guarantee == k
    values = data.draw(clustered_fingerprints(bits, k + 2))
    # Adversarial copies: exactly k flips spread evenly, and one flip in each of k
    # different blocks, at the edges of those blocks.
    cells = table_cells(tables)
    for base in values[: min(len(values), 3)]:
        spread = {(i * bits) // k for i in range(k)} if k else set()
        values.append(base ^ sum(1 << p for p in spread))
        chosen = data.draw(st.permutations(range(len(cells))))[:k]
        edge = data.draw(st.sampled_from([0, -1]))
        values.append(base ^ sum(1 << cells[c][edge] for c in chosen))
    found = {tuple(p) for p in candidate_pairs(as_array(values, bits), tables).tolist()}
    assert brute_force(values, k) <= found
    for i, j in found:
        assert shares_a_key(values[i], values[j], tables), (i, j)


@given(st.sampled_from([8, 16, 64, 100]), st.integers(1, 8), st.integers(0, 5))
@settings(max_examples=40, deadline=None)
def test_found_probability_is_one_within_guarantee(bits: int, blocks: int, k: int) -> None:
    for tables in (block_tables(bits, min(blocks, bits)), distance_tables(bits, min(k, bits - 1))):
        within = found_probability(tables, range(tables.guarantee + 1))
        assert within.tolist() == [1.0] * (tables.guarantee + 1)
        beyond = found_probability(tables, range(tables.guarantee + 1, tables.guarantee + 6))
        assert bool(np.all((beyond >= 0.0) & (beyond <= 1.0)))
        assert bool(np.all(np.diff(beyond) <= 0.0))  # farther pairs are found less often


def test_found_probability_beyond_guarantee_matches_exact_value() -> None:
    """Equal blocks of s bits: P(some block clean) by inclusion-exclusion over blocks."""
    bits, blocks = 64, 4
    tables = block_tables(bits, blocks)
    size = bits // blocks
    for distance in (4, 8, 16, 30):
        exact = sum(
            (-1) ** (j + 1)
            * math.comb(blocks, j)
            * math.comb(bits - j * size, distance)
            / math.comb(bits, distance)
            for j in range(1, blocks + 1)
        )
        estimate = float(found_probability(tables, [distance])[0])
        assert abs(estimate - exact) < 0.05, (distance, estimate, exact)
    assert found_probability(block_tables(64, 1), [1, 5]).tolist() == [0.0, 0.0]
