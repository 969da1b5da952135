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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.fingerprints.weights import WeightMatrix, row_ranges
from simdup.spill import Column, SpillDir, release

#: Pairs whose true cosines are computed in one vectorised step of the sorted-key look-up
#: (its temporaries grow with the entries of the step's walked rows).
LOOKUP_STEP_PAIRS = 1 << 16

#: Pairs per vectorised step with the dense block (its temporaries grow per block only).
DENSE_STEP_PAIRS = 1 << 22

#: Entries of walked rows read against one dense block at a time: their positions,
#: weights and products take about :data:`WALK_ENTRY_BYTES` each.
WALK_ENTRIES = 1 << 16

#: Bytes of temporaries per walked entry (positions, columns, two weights, products).
WALK_ENTRY_BYTES = 32


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


class _Rows:
    """What both kinds of shared rows tell from their lengths and shared features."""

    lengths: npt.NDArray[np.int64]
    shared: int

    @property
    def rows(self) -> int:
        """Number of rows."""
        return len(self.lengths)

    @property
    def dense(self) -> bool:
        """Tell whether a dense block of a few rows' shared columns fits :data:`DENSE_ENTRIES`.

        Pairs are then verified in dense blocks, from memory or from a store alike.
        """
        return DENSE_ENTRIES // max(self.shared, 1) >= 4


@dataclass(frozen=True)
class SharedRows(_Rows):
    """Rows as verification reads them: their entries of features shared by two documents.

    Only features present in two or more documents can contribute to a dot product, so
    they get compact column numbers and the other entries are left out; each row keeps
    its full length and squared norm. A corpus's rows, or a block of them read from a
    store (:meth:`joined` puts two blocks together).

    Attributes:
        indptr: int64 (rows + 1,), each row's shared entries.
        columns: Each entry's compact column (int32, or the feature ids when all are shared).
        data: float32 where every weight is exactly a float32, else float64.
        lengths: int64 (rows,), every feature of each row, shared or not.
        squares: float64 (rows,), squared norms over every feature.
        shared: Shared features in the corpus: the columns of the dense block.
        small_integers: Every weight is an integer whose products stay below 2**24.
    """

    indptr: npt.NDArray[np.int64]
    columns: npt.NDArray[np.signedinteger[Any]]
    data: npt.NDArray[np.floating[Any]]
    lengths: npt.NDArray[np.int64]
    squares: npt.NDArray[np.float64]
    shared: int
    small_integers: bool

    def joined(self, other: SharedRows) -> SharedRows:
        """Return these rows followed by ``other``'s (rows of the same corpus)."""
        return SharedRows(
            np.concatenate((self.indptr[:-1], other.indptr + self.indptr[-1])),
            np.concatenate((self.columns, other.columns)),
            np.concatenate((self.data, other.data)),
            np.concatenate((self.lengths, other.lengths)),
            np.concatenate((self.squares, other.squares)),
            self.shared,
            self.small_integers,
        )


def shared_columns(
    document_frequency: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int32], int]:
    """Return each feature's compact column (-1: in fewer than two documents), and how many.

    >>> [a.tolist() if hasattr(a, "tolist") else a for a in shared_columns(np.array([2, 1, 3]))]
    [[0, -1, 1], 2]
    """
    shared = document_frequency >= 2
    return np.where(shared, np.cumsum(shared) - 1, -1).astype(np.int32), int(shared.sum())


def shared_entries(
    matrix: WeightMatrix, column_of: npt.NDArray[np.int32], shared: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.signedinteger[Any]], npt.NDArray[np.float64]]:
    """Return the row pointers, columns and weights of the shared entries of ``matrix``'s rows.

    ``column_of`` and ``shared`` are :func:`shared_columns` of the corpus's frequencies.
    """
    if shared == len(column_of):  # every feature is shared: the matrix as it is
        return matrix.indptr, matrix.indices, matrix.data
    columns = column_of[matrix.indices]
    kept = columns >= 0
    per_row = np.zeros(matrix.rows, dtype=np.int64)
    nonempty = matrix.row_lengths() > 0
    if kept.size:
        starts = matrix.indptr[:-1][nonempty] - matrix.indptr[0]
        per_row[nonempty] = np.add.reduceat(kept, starts, dtype=np.int64)
    indptr = np.concatenate(([0], np.cumsum(per_row))).astype(np.int64)
    return indptr, columns[kept], matrix.data[kept]


def narrowed(data: npt.NDArray[np.float64]) -> tuple[npt.NDArray[np.floating[Any]], bool]:
    """Return weights as float32 when every one is exactly a float32, and a flag.

    The flag tells whether they are integers whose products stay below 2**24 in magnitude
    (term counts): those sum exactly in any order.
    """
    narrow = data.astype(np.float32)
    exact = bool(np.array_equal(narrow, data))
    small = bool(
        data.size == 0
        or (
            exact
            and np.array_equal(narrow, np.round(narrow))
            and float(np.abs(narrow).max()) ** 2 < 2**24
        )
    )
    return (narrow if exact else data), small


class CosineIndex:
    """A corpus matrix prepared for many :func:`cosine_many` calls (built once per scan).

    The matrix's :class:`SharedRows`: verifying candidates chunk by chunk then costs only
    the look-ups.
    """

    def __init__(self, matrix: WeightMatrix) -> None:
        self.matrix = matrix
        df = np.bincount(matrix.indices, minlength=len(matrix.vocabulary))
        column_of, shared = shared_columns(df)
        # Columns fit in 32 bits, and term counts in float32 exactly: products and sums
        # are still taken in float64, so the results are the same, at half the memory.
        indptr, columns, data = shared_entries(matrix, column_of, shared)
        narrow, small = narrowed(data)
        self.rows = SharedRows(
            indptr, columns, narrow, matrix.row_lengths(), matrix.squared_norms(), shared, small
        )
        self._sorted: tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None = None

    @property
    def lengths(self) -> npt.NDArray[np.int64]:
        """Distinct features of every row."""
        return self.rows.lengths

    @property
    def squares(self) -> npt.NDArray[np.float64]:
        """Squared norm of every row."""
        return self.rows.squares

    @property
    def shared(self) -> int:
        """Features present in two or more rows."""
        return self.rows.shared

    @property
    def shared_data(self) -> npt.NDArray[np.floating[Any]]:
        """Weights of the shared entries (float32 when exact)."""
        return self.rows.data

    @property
    def small_integers(self) -> bool:
        """Integer weights whose products stay below 2**24 in magnitude (term counts)."""
        return self.rows.small_integers

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
    index: SharedRows, walk: npt.NDArray[np.int64], other: npt.NDArray[np.int64]
) -> npt.NDArray[np.float64]:
    """Dot products with ``other`` rows scattered into a small dense block.

    Pairs are sorted by ``other``; for each run of :data:`DENSE_ROWS` distinct ``other``
    rows their shared-feature weights are written into a dense (rows, shared features)
    block, and the shared entries of the walked rows read it with one gather: a product
    per entry, in the walked row's order, exactly as the sorted-key look-up computes it.
    Only rows met as ``other`` are written, so sparse pairs cost no more than dense ones.
    """
    indptr, columns, data = index.indptr, index.columns, index.data
    lengths = np.diff(indptr)
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
    # Each pair's ``other`` row ranked among the distinct ones, and their blocks.
    new = np.concatenate(([True], other_sorted[1:] != other_sorted[:-1]))
    rank = np.cumsum(new) - 1
    distinct = other_sorted[new]
    block = rank // rows_per_block
    starts = np.flatnonzero(np.concatenate(([True], block[1:] != block[:-1])))
    ends = np.concatenate((starts[1:], [len(block)]))
    dots = np.zeros(len(walk), dtype=np.float64)
    for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True):
        first_rank = int(block[lo]) * rows_per_block
        members = distinct[first_rank : first_rank + rows_per_block]
        sizes = lengths[members]
        offsets = np.cumsum(sizes) - sizes
        held = np.arange(int(sizes.sum()), dtype=position)
        held += np.repeat((indptr[members] - offsets).astype(position), sizes)
        slots = np.repeat(np.arange(len(members)), sizes) * width + columns[held]
        dense[slots] = data[held]
        # The pairs of a block walk their rows a bounded number of entries at a time: a
        # block whose few rows meet many pairs would otherwise hold all their entries.
        block_counts = lengths[walk_sorted[lo:hi]]
        for start, stop in spans(block_counts, WALK_ENTRIES):
            a, b = lo + start, lo + stop
            w = walk_sorted[a:b]
            counts = block_counts[start:stop]
            first = np.cumsum(counts) - counts
            total = int(first[-1] + counts[-1])
            entry = np.arange(total, dtype=position)
            entry += np.repeat((indptr[w] - first).astype(position), counts)
            at = np.repeat(((rank[a:b] - first_rank) * width).astype(np.int32), counts)
            at += columns[entry]
            products = data[entry] * dense[at]
            if exact:
                walked = counts > 0
                if total:
                    sums = np.add.reduceat(products, first[walked], dtype=np.float64)
                    dots[order[a:b][walked]] = sums
            else:
                owner = np.repeat(np.arange(b - a), counts)
                dots[order[a:b]] = np.bincount(owner, weights=products, minlength=b - a)
        dense[slots] = 0.0
    return dots


def spans(counts: npt.NDArray[np.int64], limit: int) -> list[tuple[int, int]]:
    """Cut consecutive items into runs whose ``counts`` sum to at most ``limit``.

    An item larger than ``limit`` makes a run alone. Runs are ``(start, stop)`` positions.

    >>> spans(np.array([3, 3, 5, 1, 9]), 6)
    [(0, 2), (2, 4), (4, 5)]
    """
    total = int(counts.sum())
    if total <= limit:
        return [(0, len(counts))] if len(counts) else []
    ends = np.cumsum(counts)
    out, start = [], 0
    while start < len(counts):
        base = int(ends[start - 1]) if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, base + limit, side="right")))
        out.append((start, stop))
        start = stop
    return out


def _dots_sorted(
    index: CosineIndex, walk: npt.NDArray[np.int64], other: npt.NDArray[np.int64]
) -> npt.NDArray[np.float64]:
    """Dot products by binary search of each walked entry among all sorted entries.

    The walked rows' entries are taken :data:`WALK_ENTRIES` at a time: long rows would
    otherwise hold their temporaries for a whole step of pairs at once.
    """
    matrix = index.matrix
    vocab = max(len(matrix.vocabulary), 1)
    sorted_keys, sorted_data = index.sorted_entries()
    dots = np.zeros(len(walk), dtype=np.float64)
    for a, b in spans(index.lengths[walk], WALK_ENTRIES):
        pair_of, entry = _entries(matrix.indptr, index.lengths, walk[a:b])
        wanted = other[a:b][pair_of] * vocab + matrix.indices[entry]
        at = np.searchsorted(sorted_keys, wanted)
        at_clipped = np.minimum(at, len(sorted_keys) - 1)
        hit = (at < len(sorted_keys)) & (sorted_keys[at_clipped] == wanted)
        products = np.where(hit, matrix.data[entry] * sorted_data[at_clipped], 0.0)
        dots[a:b] = np.bincount(pair_of, weights=products, minlength=b - a)
    return dots


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
    if len(pairs) == 0:
        return np.zeros(0, dtype=np.float64)
    if index is None or index.matrix is not matrix:
        index = CosineIndex(matrix)
    if index.rows.dense:
        return shared_cosines(index.rows, pairs)
    found = index
    return _cosines(
        index.rows, pairs, LOOKUP_STEP_PAIRS, lambda walk, other: _dots_sorted(found, walk, other)
    )


def shared_cosines(
    rows: SharedRows, pairs: npt.NDArray[np.int64], *, step: int = DENSE_STEP_PAIRS
) -> npt.NDArray[np.float64]:
    """Return :func:`cosine_many` of pairs of ``rows`` (whose :attr:`SharedRows.dense` holds).

    The rows may be a block of a corpus (pairs numbered within it): a cosine depends on
    its two rows alone.
    """
    return _cosines(rows, pairs, step, lambda walk, other: _dots_dense(rows, walk, other))


def _cosines(
    rows: SharedRows,
    pairs: npt.NDArray[np.int64],
    step: int,
    dots_of: Callable[[npt.NDArray[np.int64], npt.NDArray[np.int64]], npt.NDArray[np.float64]],
) -> npt.NDArray[np.float64]:
    """Return the cosine of every pair, ``step`` pairs at a time, from their dot products."""
    out = np.zeros(len(pairs), dtype=np.float64)
    lengths, squares = rows.lengths, rows.squares
    for lo in range(0, len(pairs), step):
        chunk = pairs[lo : lo + step]
        short_first = lengths[chunk[:, 0]] <= lengths[chunk[:, 1]]
        walk = np.where(short_first, chunk[:, 0], chunk[:, 1])
        other = np.where(short_first, chunk[:, 1], chunk[:, 0])
        dots = dots_of(walk, other)
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


class StoredShared(_Rows):
    """A stored corpus's :class:`SharedRows`, written once and read a few blocks at a time.

    Verification reads only the shared entries of each row, its length and its squared
    norm; written in row order, a block of consecutive rows is one span of each file, so
    the pairs of two blocks are verified from two sequential reads (:meth:`read`).

    Attributes:
        indptr: int64 (rows + 1,), each row's shared entries (mapped).
        columns: Compact columns of the shared entries (int32).
        data: Their weights (float32 when narrowed, else float64).
        squares: float64, squared norm of every row.
        lengths: int64 (rows,), every feature of each row.
        shared: Shared features in the corpus.
        small_integers: As for :class:`SharedRows`.
    """

    def __init__(
        self,
        indptr: npt.NDArray[np.int64],
        columns: Column,
        data: Column,
        squares: Column,
        lengths: npt.NDArray[np.int64],
        shared: int,
        small_integers: bool,
    ) -> None:
        self.indptr = indptr
        self.columns = columns
        self.data = data
        self.squares = squares
        self.lengths = lengths
        self.shared = shared
        self.small_integers = small_integers

    @classmethod
    def write(
        cls,
        matrix: WeightMatrix,
        document_frequency: npt.NDArray[np.int64],
        spill: SpillDir,
        *,
        narrow: bool,
        small_integers: bool,
        block_entries: int,
    ) -> StoredShared:
        """Write the shared rows of ``matrix`` (read a block at a time) to ``spill``.

        ``narrow``: every weight is exactly a float32 (stored as one); ``small_integers``:
        as for :class:`SharedRows`. Both may be false when unsure: the cosines are the
        same bits either way, only the memory and the speed change.
        """
        column_of, shared = shared_columns(document_frequency)
        columns = spill.column("shared.columns", np.int32)
        data = spill.column("shared.data", np.float32 if narrow else np.float64)
        squares = spill.column("shared.squares", np.float64)
        ends = spill.column("shared.indptr", np.int64)
        ends.append([0])
        end = 0
        for lo, hi in row_ranges(matrix.indptr, block_entries):
            block = matrix.row_slice(lo, hi)
            indptr, kept_columns, kept_data = shared_entries(block, column_of, shared)
            columns.append(kept_columns)
            data.append(kept_data)
            squares.append(block.squared_norms())
            ends.append(indptr[1:] + end)
            end += int(indptr[-1])
            release(block.indices, block.data)
        return cls(
            ends.mapped(),
            columns,
            data,
            squares,
            matrix.row_lengths(),
            shared,
            small_integers,
        )

    def read(self, ranges: Sequence[tuple[int, int]]) -> SharedRows:
        """Return the rows of ``ranges`` (``lo, hi`` each, in order) as one :class:`SharedRows`."""
        rows = np.array(ranges, dtype=np.int64).reshape(-1, 2)
        starts, ends = self.indptr[rows[:, 0]], self.indptr[rows[:, 1]]
        spans = np.stack([starts, ends], axis=1)
        counts = [np.diff(self.indptr[lo : hi + 1]) for lo, hi in rows.tolist()]
        release(self.indptr)
        lengths = np.concatenate([self.lengths[lo:hi] for lo, hi in rows.tolist()])
        return SharedRows(
            np.concatenate(([0], np.cumsum(np.concatenate(counts)))).astype(np.int64),
            self.columns.read_spans(spans),
            self.data.read_spans(spans),
            lengths,
            self.squares.read_spans(rows),
            self.shared,
            self.small_integers,
        )
