"""Weights to SimHash fingerprints (Charikar 2002), scalar and for a whole corpus.

Each feature contributes ``+weight`` to the slots where its sign bit is 1 and ``-weight``
where it is 0; bit ``i`` of the fingerprint is set iff slot ``i`` sums to more than zero
(exactly zero gives 0). The sign of each slot is the side of one random hyperplane the
weight vector falls on, so two documents disagree on a bit with probability θ/π, θ being
the angle between their vectors: the Hamming distance estimates the angle.

A fingerprint is a Python ``int`` (bit ``i`` = slot ``i``) in the scalar API and a uint64
array of shape ``(n, ceil(bits / 64))`` for a corpus, word ``k`` holding bits ``64k`` to
``64k + 63``. Hex strings are zero-padded to ``ceil(bits / 4)`` digits.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.errors import FingerprintFormatError, ParameterError
from simdup.fingerprints.hashing import feature_words, feature_words_many
from simdup.fingerprints.weights import WeightMatrix, row_ranges
from simdup.params import check_bits, check_seed

#: Non-zero entries per vectorised step at 64 bits (scaled by 64 / bits): bounds the
#: (nnz, bits) temporary; small enough to stay in cache with int16 sums.
CHUNK_NNZ = 1 << 14

#: Feature occurrences per vectorised step of the counting path: a (tokens, bits) byte
#: block of 1 MiB at 256 bits, which stays in cache between the gather and the sums.
COUNT_CHUNK_TOKENS = 1 << 12

#: A byte lane counts to 255: the counting path sums a document in segments of at most
#: this many occurrences, eight or more lanes per uint64 addition.
LANE_LIMIT = 255

#: Lane words a row (a byte a bit: 32 at 256 bits) from which the counting path sums each
#: segment on its own: ``np.add.reduceat`` along rows slows as they widen (100,000
#: generated documents at 512 bits 3.7 against 1.75 s, at 256 bits 1.36 against 1.17 s);
#: on narrower rows a Python step per segment costs more than it saves (64 bits 0.48
#: against 0.73 s).
SUMMED_BY_SEGMENT = 32

#: The counting path expands every weight into that many occurrences; above this many
#: occurrences per stored entry on average, the weighted sums are cheaper.
MAX_OCCURRENCES_PER_ENTRY = 16


def words64(bits: int) -> int:
    """Return how many uint64 words hold a fingerprint of ``bits`` bits."""
    return -(-bits // 64)


def _is_array_index(key: str) -> bool:
    """Tell whether JavaScript treats ``key`` as an array index (0 <= n < 2**32 - 1).

    ``Object.entries`` lists such keys first, in ascending numeric order, before all other
    keys in insertion order; the reference sums weights in that order.
    """
    return (
        key.isascii() and key.isdigit() and (key == "0" or key[0] != "0") and (int(key) < 2**32 - 1)
    )


def js_entry_order(weights: Mapping[str, float]) -> list[tuple[str, float]]:
    """Return ``weights`` items in the order JavaScript's ``Object.entries`` yields them.

    >>> js_entry_order({"b": 1, "10": 2, "a": 3, "2": 4})
    [('2', 4), ('10', 2), ('b', 1), ('a', 3)]
    """
    items = list(weights.items())
    index_keys = sorted((kv for kv in items if _is_array_index(kv[0])), key=lambda kv: int(kv[0]))
    return index_keys + [kv for kv in items if not _is_array_index(kv[0])]


def fingerprint(weights: Mapping[str, float], bits: int = 64, seed: int = 12345) -> int:
    """Return the SimHash fingerprint of one weight vector, bit-identical to the reference.

    Args:
        weights: Feature to weight. Weights are summed in the order the reference sums
            them, so even floating-point ties break the same way.
        bits: Fingerprint width, any positive integer.
        seed: Hash seed, 0 <= seed < 2**53.

    Returns:
        The fingerprint as an int; bit ``i`` is slot ``i``.

    >>> fingerprint({}, 8)
    0
    >>> fingerprint({"cat": 2, "dog": 1}, 8) == fingerprint({"dog": 1, "cat": 2}, 8)
    True
    """
    check_bits(bits)
    check_seed(seed)
    nwords = -(-bits // 32)
    acc = [0.0] * bits
    for feature, weight in js_entry_order(weights):
        w = float(weight)
        if not math.isfinite(w):
            raise ParameterError(f"weight of feature {feature!r} is not finite: {weight!r}")
        sign_words = feature_words(feature, seed, nwords)
        for i in range(bits):
            if (sign_words[i >> 5] >> (i & 31)) & 1:
                acc[i] += w
            else:
                acc[i] += -w
    return sum(1 << i for i, total in enumerate(acc) if total > 0)


def pack_bits(bit_matrix: npt.NDArray[np.bool_]) -> npt.NDArray[np.uint64]:
    """Pack a (n, bits) bool matrix into fingerprints, uint64 (n, ceil(bits/64))."""
    n, bits = bit_matrix.shape
    width = words64(bits) * 64
    padded = np.zeros((n, width), dtype=np.uint8)
    padded[:, :bits] = bit_matrix
    return np.packbits(padded, axis=1, bitorder="little").view("<u8").astype(np.uint64)


def unpack_bits(fingerprints: npt.NDArray[np.uint64], bits: int) -> npt.NDArray[np.uint8]:
    """Return the bits of fingerprints as a (n, bits) uint8 matrix of 0/1, bit i in column i."""
    as_bytes = np.ascontiguousarray(fingerprints.astype("<u8")).view(np.uint8)
    return np.unpackbits(as_bytes, axis=1, bitorder="little")[:, :bits]


def _slot_sums(
    matrix: WeightMatrix,
    signs: npt.NDArray[np.uint8],
    local: npt.NDArray[np.int32],
    weights: npt.NDArray[np.generic],
    lo: int,
    hi: int,
    bits: int,
) -> npt.NDArray[np.generic]:
    """Return the slot accumulators of documents ``lo:hi``, (hi - lo, bits).

    ``signs`` holds the sign words, as bytes, of the features the rows use, numbered by
    ``local`` (:func:`used_features`); they are unpacked for these rows only (a byte a bit
    of every feature was 70 MB at 512 bits for 136,000 features). Sums are taken in the
    dtype of ``weights``: integers when every partial sum fits (exact in any order, and
    several times faster), float64 otherwise, in row order, a row at a time
    (:func:`_segment_sums`: ``np.add.reduceat`` along the rows took three quarters of the
    time).
    """
    start, stop = int(matrix.indptr[lo]), int(matrix.indptr[hi])
    contrib = _signed(signs, local[matrix.indices[start:stop]], weights[start:stop], bits)
    out = np.empty((hi - lo, bits), dtype=contrib.dtype)
    _segment_sums(contrib, matrix.indptr[lo:hi] - start, out)
    return out


def _signed(
    signs: npt.NDArray[np.uint8],
    features: npt.NDArray[np.int32],
    weights: npt.NDArray[np.generic],
    bits: int,
) -> npt.NDArray[np.generic]:
    """Return each weight times its feature's ±1 signs, (len(weights), bits).

    ``features`` number the weights' features among the rows of ``signs`` (sign words as
    bytes). A weight times one and minus one is exact: these are the reference's terms.
    """
    ones = np.unpackbits(signs[features], axis=1, bitorder="little")
    plus_minus = ones[:, :bits].view(np.int8) * np.int8(2)
    plus_minus -= np.int8(1)
    terms: npt.NDArray[np.generic] = plus_minus * weights[:, None]
    return terms


def _reference_sums(
    matrix: WeightMatrix,
    row: int,
    signs: npt.NDArray[np.uint8],
    local: npt.NDArray[np.int32],
    bits: int,
) -> npt.NDArray[np.float64]:
    """Return row ``row``'s slot sums added in the order the reference adds them.

    For the rows whose sums are too close to zero for another order to be trusted: the
    terms in :func:`js_entry_order` of the row's features, accumulated one after another
    (``np.add.accumulate`` adds in order, as the reference's loop does, in the same float64
    arithmetic), not the scalar :func:`fingerprint`'s loop over every bit of every feature
    (a fifth of the time on the manual pages under ``log``, most of it on short documents).
    """
    lo, hi = int(matrix.indptr[row]), int(matrix.indptr[row + 1])
    names = [matrix.vocabulary[k] for k in matrix.indices[lo:hi].tolist()]
    visited = [at for _, at in js_entry_order(dict(zip(names, range(hi - lo), strict=True)))]
    entries = lo + np.asarray(visited, dtype=np.int64)
    terms = _signed(signs, local[matrix.indices[entries]], matrix.data[entries], bits)
    sums: npt.NDArray[np.float64] = np.add.accumulate(terms, axis=0, dtype=np.float64)[-1]
    return sums


def _occurrences(matrix: WeightMatrix) -> npt.NDArray[np.int64] | None:
    """Return each row's total weight if the counting path applies, else None.

    It applies when every weight is a small non-negative integer (term counts, binary).
    """
    data = matrix.data
    total = 0.0
    for block in _blocks(data):
        if not bool(np.all(block >= 0) and np.all(block == np.round(block))):
            return None
        total += float(block.sum())
    if total > MAX_OCCURRENCES_PER_ENTRY * data.size:
        return None
    row_mass = np.zeros(matrix.rows, dtype=np.int64)
    nonempty = matrix.row_lengths() > 0
    if data.size:  # sums of integers below 2**53: exact in float64
        row_mass[nonempty] = np.add.reduceat(data, matrix.indptr[:-1][nonempty])
    return row_mass if row_mass.size == 0 or int(row_mass.max()) < 2**31 else None


#: Weights tested at a time: temporaries of a block stay in cache, where one of a whole
#: corpus's weights is fresh memory (100,000 documents: 0.23 s of page faults).
CHECK_BLOCK = 1 << 16


def _blocks(data: npt.NDArray[np.floating[Any]]) -> Iterator[npt.NDArray[np.floating[Any]]]:
    """Yield ``data`` a block of :data:`CHECK_BLOCK` weights at a time."""
    for lo in range(0, data.size, CHECK_BLOCK):
        yield data[lo : lo + CHECK_BLOCK]


def _fingerprints_by_counting(
    matrix: WeightMatrix,
    signs: npt.NDArray[np.uint32],
    bits: int,
    row_mass: npt.NDArray[np.int64],
) -> npt.NDArray[np.uint64]:
    """Fingerprints of non-negative integer weights, by counting set sign bits.

    With integer weights ``w``, slot ``i`` sums to ``2 * ones_i - mass``, where ``ones_i``
    is the weight of the features whose sign bit ``i`` is set and ``mass`` the row's total
    weight; the bit is set iff ``2 * ones_i > mass``. Every feature occurrence (a weight of
    3 is three occurrences) contributes its sign bits as bytes of 0 or 1, and the bytes are
    added eight at a time as uint64 words: no byte exceeds 255 within a segment of at most
    :data:`LANE_LIMIT` occurrences, so no carry crosses into the next byte. The result is
    exact, so it equals the reference whatever the order of summation. ``row_mass`` is
    each row's total weight (:func:`_occurrences`).
    """
    lanes = words64(bits) * 64
    # Only the features these rows use: a range of a large corpus meets a small part of
    # its vocabulary, and a byte per bit of every feature (512 bytes at 512 bits) would
    # grow with the whole vocabulary in every worker.
    local, used = used_features(matrix.indices, len(signs))
    ones = np.zeros((len(used), lanes), dtype=np.uint8)
    ones[:, :bits] = np.unpackbits(
        np.ascontiguousarray(signs[used]).view(np.uint8), axis=1, bitorder="little"
    )[:, :bits]
    # One row of lane words per feature: each occurrence gathers one contiguous row (a
    # word per row of a transposed table misses the cache once per word when the
    # vocabulary is large: 512 bits of 20,000 generated documents 1.6 to 0.5 s).
    lane_words = ones.view(np.uint64)
    token_ptr = np.concatenate(([0], np.cumsum(row_mass))).astype(np.int64)
    out = np.zeros((matrix.rows, words64(bits)), dtype=np.uint64)
    for lo, hi in row_ranges(token_ptr, COUNT_CHUNK_TOKENS):
        start, stop = int(matrix.indptr[lo]), int(matrix.indptr[hi])
        occurrences = np.repeat(
            local[matrix.indices[start:stop]], matrix.data[start:stop].astype(np.int64)
        )
        mass = row_mass[lo:hi]
        segments = -(-mass // LANE_LIMIT)
        first_segment = np.cumsum(segments) - segments
        segment_row = np.repeat(np.arange(hi - lo), segments)
        segment_start = (token_ptr[lo:hi] - token_ptr[lo])[segment_row] + LANE_LIMIT * (
            np.arange(len(segment_row)) - first_segment[segment_row]
        )
        count = len(segment_row)
        sums = np.empty((count, lane_words.shape[1]), dtype=np.uint64)
        # One step normally; a document longer than the chunk is cut into several.
        small = len(occurrences) <= 2 * COUNT_CHUNK_TOKENS
        step = max(1, count if small else COUNT_CHUNK_TOKENS // LANE_LIMIT)
        for a in range(0, count, step):
            b = min(count, a + step)
            first = int(segment_start[a])
            last = int(segment_start[b]) if b < count else len(occurrences)
            block = np.take(lane_words, occurrences[first:last], axis=0)
            if lane_words.shape[1] >= SUMMED_BY_SEGMENT:
                _segment_sums(block, segment_start[a:b] - first, sums[a:b])
            else:
                sums[a:b] = np.add.reduceat(block, segment_start[a:b] - first, axis=0)
        set_counts: npt.NDArray[np.integer[Any]]
        if count == hi - lo:  # a segment a row: its bytes are the counts
            set_counts = sums.view(np.uint8)
        else:
            counted = segments > 0
            set_counts = np.zeros((hi - lo, lanes), dtype=np.int32)
            if count:
                set_counts[counted] = np.add.reduceat(
                    sums.view(np.uint8), first_segment[counted], axis=0, dtype=np.int32
                )
        # 2 * ones > mass, for integers: ones > mass // 2 (no product to overflow a byte)
        out[lo:hi] = pack_bits(set_counts[:, :bits] > (mass // 2)[:, None])
    return out


def _segment_sums(
    block: npt.NDArray[Any], starts: npt.NDArray[np.int64], out: npt.NDArray[Any]
) -> None:
    """Write to ``out[k]`` the sum of the rows of ``block`` from ``starts[k]`` to the next start.

    A sum along a run of contiguous rows adds whole rows at a time; ``np.add.reduceat``
    along the first axis took four times as long (650 against 170 us for 4,096 rows of
    64 words in 40 segments), a Python step per segment included.
    """
    ends = [*starts[1:].tolist(), len(block)]
    for k, (start, end) in enumerate(zip(starts.tolist(), ends, strict=True)):
        np.add.reduce(block[start:end], axis=0, out=out[k])


def used_features(
    indices: npt.NDArray[np.integer[Any]], vocabulary: int
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]]:
    """Return each feature's number among those ``indices`` use, and those features.

    >>> [a.tolist() for a in used_features(np.array([4, 1, 4]), 6)]
    [[0, 0, 0, 0, 1, 0], [1, 4]]
    """
    seen = np.zeros(vocabulary, dtype=bool)
    seen[indices] = True
    used = np.flatnonzero(seen)
    local = np.zeros(vocabulary, dtype=np.int32)
    local[used] = np.arange(len(used), dtype=np.int32)
    return local, used


@dataclass(frozen=True)
class Wider:
    """Fingerprints wider than those at hand, made only for the rows asked for.

    A corpus whose exact scan is cheap is fingerprinted at the width it reports
    distances at, not at the widest a plan could price: its plan needs the wider ones
    only to tell rows with the same narrow fingerprint apart, and every row's only
    if it falls back on tables.

    Attributes:
        bits: Their width.
        of: The fingerprints of the rows asked for, uint64 (rows, words at ``bits``).
    """

    bits: int
    of: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.uint64]]


def fingerprint_many(
    matrix: WeightMatrix, bits: int = 64, seed: int = 12345
) -> npt.NDArray[np.uint64]:
    """Return the fingerprints of every row of ``matrix``, uint64 (n, ceil(bits / 64)).

    Each vocabulary feature is hashed once. Term counts and binary weights (non-negative
    integers) take the counting path, exact and fastest. Other integer weights are summed
    exactly as integers. For real weights a slot whose sum is within the worst-case
    rounding error of zero could depend on summation order, so those documents' sums are
    taken again in the reference's order (:func:`_reference_sums`): the result always
    equals the scalar :func:`fingerprint`.
    """
    check_bits(bits)
    check_seed(seed)
    return fingerprint_rows(
        matrix, feature_words_many(matrix.vocabulary, seed, -(-bits // 32)), bits
    )


def fingerprint_rows(
    matrix: WeightMatrix, signs: npt.NDArray[np.uint32], bits: int
) -> npt.NDArray[np.uint64]:
    """Return :func:`fingerprint_many` given the vocabulary's sign words, ``signs``.

    ``signs`` is :func:`simdup.fingerprints.hashing.feature_words_many` of ``matrix.vocabulary`` for
    ``seed`` and ``bits``: hashed once, it serves every range of rows of one corpus.
    """
    if not all(bool(np.all(np.isfinite(block))) for block in _blocks(matrix.data)):
        raise ParameterError("weights must be finite numbers")
    row_mass = _occurrences(matrix)
    if row_mass is not None:
        return _fingerprints_by_counting(matrix, signs, bits, row_mass)
    local, used = used_features(matrix.indices, len(signs))
    signs_used = np.ascontiguousarray(signs[used]).view(np.uint8)
    exact = bool(
        np.all(matrix.data == np.round(matrix.data))
        and (matrix.data.size == 0 or float(np.abs(matrix.data).sum()) < 2.0**53)
    )
    absolute = np.abs(matrix.data)
    weights: npt.NDArray[np.generic] = matrix.data
    if exact:
        # Integer weights: any partial sum of a row is bounded by its mass sum |w|, so an
        # integer type wider than the largest mass sums exactly, and faster than float64.
        mass = np.zeros(matrix.rows)
        nonempty = matrix.row_lengths() > 0
        if absolute.size:
            mass[nonempty] = np.add.reduceat(absolute, matrix.indptr[:-1][nonempty])
        largest = float(mass.max()) if mass.size else 0.0
        if largest < 2**15:
            weights = matrix.data.astype(np.int16)
        elif largest < 2**31:
            weights = matrix.data.astype(np.int32)
    per_chunk = max(1, CHUNK_NNZ * 64 // max(bits, 1))
    out = np.zeros((matrix.rows, words64(bits)), dtype=np.uint64)
    for lo, hi in row_ranges(matrix.indptr, per_chunk):
        sums = _slot_sums(matrix, signs_used, local, weights, lo, hi, bits)
        out[lo:hi] = pack_bits(np.greater(sums, 0))
        if not exact:
            start, stop = int(matrix.indptr[lo]), int(matrix.indptr[hi])
            mass = np.zeros(hi - lo)
            nonempty = np.diff(matrix.indptr[lo : hi + 1]) > 0
            if stop > start:
                mass[nonempty] = np.add.reduceat(
                    absolute[start:stop], (matrix.indptr[lo:hi] - start)[nonempty]
                )
            # Both orders of summation err by at most (n - 1) * eps * sum|w| (n features),
            # so two sums of one slot differ by less than this slack; closer to zero, the sign
            # could depend on the order and the reference order decides.
            lengths = np.diff(matrix.indptr[lo : hi + 1])
            slack = mass * lengths * (4 * np.finfo(np.float64).eps)
            close = np.any(np.abs(sums) <= slack[:, None], axis=1) & nonempty
            for row in (np.flatnonzero(close) + lo).tolist():
                sums_of_row = _reference_sums(matrix, row, signs_used, local, bits)
                out[row] = pack_bits(np.greater(sums_of_row, 0)[None, :])[0]
    return out


def int_to_words(value: int, bits: int) -> npt.NDArray[np.uint64]:
    """Return an int fingerprint as uint64 words, least significant word first."""
    n = words64(bits)
    return np.array([(value >> (64 * k)) & (2**64 - 1) for k in range(n)], dtype=np.uint64)


def words_to_int(words: npt.NDArray[np.uint64]) -> int:
    """Return uint64 words (least significant first) as one int fingerprint."""
    return sum(int(w) << (64 * k) for k, w in enumerate(words.tolist()))


def to_hex(value: int, bits: int) -> str:
    """Return a fingerprint as lowercase hex zero-padded to ``ceil(bits / 4)`` digits.

    >>> to_hex(10, 16)
    '000a'
    """
    return format(value, f"0{-(-bits // 4)}x")


def from_hex(text: str, bits: int) -> int:
    """Parse a hex fingerprint of ``bits`` bits written by :func:`to_hex`.

    Raises:
        FingerprintFormatError: when ``text`` is not hex or has bits above ``bits``.
    """
    try:
        value = int(text, 16)
    except ValueError:
        raise FingerprintFormatError(f"{text!r} is not a hexadecimal fingerprint") from None
    if value >> bits or text.startswith(("-", "+", "0x", "0X")) or "_" in text:
        raise FingerprintFormatError(f"{text!r} is not a {bits}-bit hexadecimal fingerprint")
    return value


def to_hex_many(fingerprints: npt.NDArray[np.uint64], bits: int) -> list[str]:
    """Return :func:`to_hex` of every row of a fingerprint array."""
    return [to_hex(words_to_int(row), bits) for row in fingerprints]
