"""Candidate pairs to measured pairs: Hamming distance, estimated and true cosine.

Blocking only proposes pairs; verification measures them. The Hamming distance ``d`` of two
``b``-bit fingerprints estimates the angle between the weight vectors as ``π d / b``
(Charikar 2002), hence the estimated cosine ``cos(π d / b)``. The true cosine comes from
the weight vectors themselves, so every reported pair is checked against the user's
threshold exactly, not by the estimate.

Cosines are computed as ``dot / sqrt(|u|² |v|²)``: for identical vectors the two sums are
equal and ``sqrt(x * x) == x`` in IEEE arithmetic, so an exact copy scores exactly 1.0.
The cosine of a zero vector (a document with no features) is defined as 0.0: it is
similar to nothing, and nothing is divided by zero.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.fingerprints.weights import WeightMatrix

#: Pairs whose true cosines are computed in one vectorised step of the sorted-key look-up
#: (its temporaries grow with the entries of the step's walked rows).
LOOKUP_STEP_PAIRS = 1 << 16

#: Pairs per vectorised step with the dense block (its temporaries grow per block only).
DENSE_STEP_PAIRS = 1 << 22


def hamming(a: int, b: int) -> int:
    """Return the number of bits in which two int fingerprints differ.

    >>> hamming(0b1011101, 0b1001001)
    2
    """
    return (a ^ b).bit_count()


def estimate_cosine(a: int, b: int, bits: int) -> float:
    """Return ``cos(π · hamming(a, b) / bits)``, the SimHash estimate of the cosine.

    >>> estimate_cosine(5, 5, 64)
    1.0
    """
    return math.cos(math.pi * hamming(a, b) / bits)


def cosine(u: Mapping[str, float], v: Mapping[str, float]) -> float:
    """Return the true cosine of two sparse weight vectors (0.0 if either is all zero).

    >>> cosine({"a": 1, "b": 1}, {"a": 1})
    0.7071067811865475
    >>> cosine({}, {"a": 1})
    0.0
    """
    if len(u) > len(v):
        u, v = v, u
    dot = math.fsum(w * v[k] for k, w in u.items() if k in v)
    squares = math.fsum(w * w for w in u.values()) * math.fsum(w * w for w in v.values())
    if squares == 0.0:
        return 0.0
    return max(-1.0, min(1.0, dot / math.sqrt(squares)))


def hamming_many(
    fingerprints: npt.NDArray[np.uint64], pairs: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """Return the Hamming distance of every pair, int64 (m,)."""
    if len(pairs) == 0:
        return np.zeros(0, dtype=np.int64)
    distances = np.zeros(len(pairs), dtype=np.int64)
    for w in range(fingerprints.shape[1]):  # word by word: no (m, words) temporaries
        column = fingerprints[:, w]
        distances += np.bitwise_count(column[pairs[:, 0]] ^ column[pairs[:, 1]])
    return distances


def estimate_cosine_many(distances: npt.NDArray[np.int64], bits: int) -> npt.NDArray[np.float64]:
    """Return ``cos(π d / bits)`` for every distance, float64 (m,)."""
    return np.cos(np.pi * distances.astype(np.float64) / bits)


#: Rows held densely at once while verifying: ``DENSE_ROWS x shared features`` floats.
DENSE_ROWS = 32

#: Budget of that dense block in float64 entries (32 MiB); below 4 rows per block the
#: sorted-key look-up is used instead.
DENSE_ENTRIES = 1 << 22


class CosineIndex:
    """A corpus matrix prepared for many :func:`cosine_many` calls (built once per scan).

    Only features present in two or more documents can contribute to a dot product, so
    they get compact column numbers (``-1`` for the others); squared norms and row lengths
    are kept too. Verifying candidates chunk by chunk then costs only the look-ups.
    """

    def __init__(self, matrix: WeightMatrix) -> None:
        self.matrix = matrix
        self.lengths = matrix.row_lengths()
        self.squares = matrix.squared_norms()
        df = np.bincount(matrix.indices, minlength=len(matrix.vocabulary))
        shared = df >= 2
        self.shared = int(shared.sum())
        # The shared entries alone, as their own CSR: the dense walk reads nothing else.
        # Columns fit in 32 bits, and term counts in float32 exactly: products and sums
        # are still taken in float64, so the results are the same, at half the memory.
        data: npt.NDArray[np.float64]
        self.shared_columns: npt.NDArray[np.signedinteger[Any]]
        if self.shared == len(shared):  # every feature is shared: the matrix as it is
            self.shared_indptr, self.shared_columns = matrix.indptr, matrix.indices
            data = matrix.data
        else:
            column_of = np.where(shared, np.cumsum(shared) - 1, -1).astype(np.int32)
            kept = shared[matrix.indices]
            per_row = np.zeros(matrix.rows, dtype=np.int64)
            nonempty = self.lengths > 0
            if kept.size:
                per_row[nonempty] = np.add.reduceat(
                    kept, matrix.indptr[:-1][nonempty], dtype=np.int64
                )
            self.shared_indptr = np.concatenate(([0], np.cumsum(per_row))).astype(np.int64)
            self.shared_columns = column_of[matrix.indices[kept]]
            data = matrix.data[kept]
        narrow = data.astype(np.float32)
        exact = bool(np.array_equal(narrow, data))
        self.shared_data: npt.NDArray[np.floating[Any]] = narrow if exact else data
        #: Integer weights whose products stay below 2**24 in magnitude (term counts).
        self.small_integers = bool(
            data.size == 0
            or (
                exact
                and np.array_equal(narrow, np.round(narrow))
                and float(np.abs(narrow).max()) ** 2 < 2**24
            )
        )
        self._sorted: tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None = None

    def sorted_entries(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """Return every entry's ``row * vocabulary + feature`` key, sorted, and its weight."""
        if self._sorted is None:
            vocab = max(len(self.matrix.vocabulary), 1)
            rows = np.repeat(np.arange(self.matrix.rows, dtype=np.int64), self.lengths)
            keys = rows * vocab + self.matrix.indices
            order = np.argsort(keys, kind="stable")
            self._sorted = (keys[order], self.matrix.data[order])
        return self._sorted


def _entries(
    indptr: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64], rows: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Return (position in ``rows``, entry number) of every entry of the given rows."""
    counts = lengths[rows]
    owner = np.repeat(np.arange(len(rows), dtype=np.int64), counts)
    first = np.cumsum(counts) - counts
    return owner, indptr[rows][owner] + (np.arange(int(counts.sum())) - first[owner])


def _dots_dense(
    index: CosineIndex, walk: npt.NDArray[np.int64], other: npt.NDArray[np.int64]
) -> npt.NDArray[np.float64]:
    """Dot products with ``other`` rows scattered into a small dense block.

    Pairs are sorted by ``other``; for each run of :data:`DENSE_ROWS` consecutive rows
    their shared-feature weights are written into a dense (rows, shared features) block,
    and the shared entries of the walked rows read it with one gather: a product per
    entry, in the walked row's order, exactly as the sorted-key look-up computes it.
    """
    indptr, columns, data = index.shared_indptr, index.shared_columns, index.shared_data
    lengths = np.diff(indptr)
    rows = index.matrix.rows
    rows_per_block = max(1, min(DENSE_ROWS, DENSE_ENTRIES // max(index.shared, 1)))
    width = max(index.shared, 1)
    # Small integer weights (term counts): every product is an integer below 2**24, exact
    # in float32, and their sums exact in float64 in any order, so the block and the
    # products take half the bytes and the sums the faster reduceat.
    exact = index.small_integers
    dense = np.zeros(rows_per_block * width, dtype=np.float32 if exact else np.float64)
    position = np.int32 if len(data) < 2**31 else np.int64
    order = np.argsort(other, kind="stable")
    walk_sorted, other_sorted = walk[order], other[order]
    block = other_sorted // rows_per_block
    starts = np.flatnonzero(np.concatenate(([True], block[1:] != block[:-1])))
    ends = np.concatenate((starts[1:], [len(block)]))
    dots = np.zeros(len(walk), dtype=np.float64)
    for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True):
        first_row = int(block[lo]) * rows_per_block
        last_row = min(first_row + rows_per_block, rows)
        # The block's rows are consecutive, so their entries are one slice of the CSR.
        e0, e1 = int(indptr[first_row]), int(indptr[last_row])
        local_row = np.repeat(np.arange(last_row - first_row), lengths[first_row:last_row])
        slots = local_row * width + columns[e0:e1]
        dense[slots] = data[e0:e1]
        w = walk_sorted[lo:hi]
        counts = lengths[w]
        first = np.cumsum(counts) - counts
        total = int(first[-1] + counts[-1])
        entry = np.arange(total, dtype=position)
        entry += np.repeat((indptr[w] - first).astype(position), counts)
        at = np.repeat(((other_sorted[lo:hi] - first_row) * width).astype(np.int32), counts)
        at += columns[entry]
        products = data[entry] * dense[at]
        if exact:
            walked = counts > 0
            if total:
                sums = np.add.reduceat(products, first[walked], dtype=np.float64)
                dots[order[lo:hi][walked]] = sums
        else:
            owner = np.repeat(np.arange(hi - lo), counts)
            dots[order[lo:hi]] = np.bincount(owner, weights=products, minlength=hi - lo)
        dense[slots] = 0.0
    return dots


def _dots_sorted(
    index: CosineIndex, walk: npt.NDArray[np.int64], other: npt.NDArray[np.int64]
) -> npt.NDArray[np.float64]:
    """Dot products by binary search of each walked entry among all sorted entries."""
    matrix = index.matrix
    vocab = max(len(matrix.vocabulary), 1)
    sorted_keys, sorted_data = index.sorted_entries()
    pair_of, entry = _entries(matrix.indptr, index.lengths, walk)
    wanted = other[pair_of] * vocab + matrix.indices[entry]
    at = np.searchsorted(sorted_keys, wanted)
    at_clipped = np.minimum(at, len(sorted_keys) - 1)
    hit = (at < len(sorted_keys)) & (sorted_keys[at_clipped] == wanted)
    products = np.where(hit, matrix.data[entry] * sorted_data[at_clipped], 0.0)
    return np.asarray(np.bincount(pair_of, weights=products, minlength=len(walk)), dtype=np.float64)


def cosine_many(
    matrix: WeightMatrix, pairs: npt.NDArray[np.int64], *, index: CosineIndex | None = None
) -> npt.NDArray[np.float64]:
    """Return the true cosine of every pair of rows, float64 (m,).

    Each pair walks its shorter row (the first on a tie) and multiplies every entry by the
    other row's weight of the same feature, summing in the walked row's order; the other
    row's weights come from a small dense block (or, for a vocabulary too large for that,
    a binary search among all entries). Both give the same products in the same order.

    Args:
        matrix: The corpus weights.
        pairs: int64 (m, 2) row numbers.
        index: ``CosineIndex(matrix)``, to reuse across calls.
    """
    m = len(pairs)
    out = np.zeros(m, dtype=np.float64)
    if m == 0:
        return out
    if index is None or index.matrix is not matrix:
        index = CosineIndex(matrix)
    lengths, squares = index.lengths, index.squares
    dense = DENSE_ENTRIES // max(index.shared, 1) >= 4
    step = DENSE_STEP_PAIRS if dense else LOOKUP_STEP_PAIRS
    for lo in range(0, m, step):
        chunk = pairs[lo : lo + step]
        short_first = lengths[chunk[:, 0]] <= lengths[chunk[:, 1]]
        walk = np.where(short_first, chunk[:, 0], chunk[:, 1])
        other = np.where(short_first, chunk[:, 1], chunk[:, 0])
        dots = _dots_dense(index, walk, other) if dense else _dots_sorted(index, walk, other)
        denom = np.sqrt(squares[chunk[:, 0]] * squares[chunk[:, 1]])
        with np.errstate(invalid="ignore", divide="ignore"):
            values = np.where(denom > 0, dots / np.where(denom > 0, denom, 1.0), 0.0)
        out[lo : lo + len(chunk)] = np.clip(values, -1.0, 1.0) + 0.0
    return out


def components(n: int, pairs: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Return a component label per node (the smallest node index in its component).

    Label propagation with pointer jumping, all in numpy: each round every edge pulls both
    ends to the smaller label, then labels jump to their label's label.

    >>> components(5, np.array([[0, 3], [3, 4]])).tolist()
    [0, 1, 2, 0, 0]
    """
    labels = np.arange(n, dtype=np.int64)
    if len(pairs) == 0:
        return labels
    a, b = pairs[:, 0], pairs[:, 1]
    while True:
        low = np.minimum(labels[a], labels[b])
        before = labels.copy()
        np.minimum.at(labels, a, low)
        np.minimum.at(labels, b, low)
        labels = labels[labels]
        if np.array_equal(labels, before):
            return labels
