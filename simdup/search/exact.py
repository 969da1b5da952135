"""Every pair above the threshold, by blocked products of the weight matrix (exact mode).

On a small corpus the true cosine of every pair costs less than planning and bucketing
tables, and it loses nothing: recall is 1.0. The Gram matrix ``W Wᵀ`` is computed one
block of rows at a time, in two parts that suit the two kinds of feature:

* **Heavy features** (present in a large share of the documents) are gathered into a
  dense ``(n, heavy)`` matrix, and a block's dot products are one BLAS product: cheap
  per pair, whatever the number of documents sharing a feature.
* **Light features** (in few documents) add ``w_i · w_j`` for each pair of documents that
  share them, walking the postings of each feature: the work is ``Σ df²`` over them,
  small when no light feature is in many documents.

Features present in one document only contribute to no dot product and are skipped.

Rows are scaled to unit length before the products, so a block's products are its
cosines and no pass over the block normalises them. The selection computes them in single
precision (float32: half the bytes to write and read per pair, and the machine's faster
matrix product): they only *select* pairs, with a margin below the threshold that covers
float32's rounding of every term (:func:`selection_margin`); every selected pair is then
verified by :func:`simdup.search.verify.cosine_many` like the candidates of the tables, so
the reported cosines are the same whichever way a pair was found, and an exact scan
reports exactly the pairs of an exhaustive one. The planner's cosine sample, whose values
are used as they are, is computed in double precision.

Memory is bounded: a block of ``rows`` rows holds a ``(rows, n)`` array and its selection
mask, and the block height is chosen from the memory allowed (:func:`block_rows`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.fingerprints.weights import WeightMatrix, order_of, row_ranges
from simdup.spill import release

#: Cosines are selected this far below the threshold before exact verification (sums in
#: another order differ by far less: about 1e-15 per term).
MARGIN = 1e-9

#: A feature is dense when it is in more than this share of the documents: its
#: ``df² / 2`` pair walks then cost more than its column in a single-precision BLAS
#: product (about 20 ns per walked pair against 0.01 ns per pair and column: they meet
#: near 2%; at 100,000 short documents 2% ran 7 to 10% faster than 5%, 1% slower).
HEAVY_SHARE = 0.02

#: At most this many dense columns (an ``(n, heavy)`` matrix is held: float32 when selecting).
MAX_HEAVY = 4096

#: The precision pairs are selected in (:func:`selection_margin`).
SELECTION = np.float32

#: Bytes per pair of a selecting block: its cosine and a byte of selection mask.
BYTES_PER_PAIR = np.dtype(SELECTION).itemsize + 1

#: An exact scan's blocks take at most this (taller blocks save little: measured 3.6 GiB
#: of peak memory for no gain at 20,000 documents when blocks took the whole budget).
BLOCK_CAP = 256 << 20

#: Bytes per matrix entry held by an exact scan besides the blocks (postings, masks).
ENTRY_BYTES = 48

#: Light postings expanded at a time (smaller runs stay in cache: 1 << 19 walked 10 to
#: 20% faster than 1 << 21 on 100,000 documents).
EXPAND_ENTRIES = 1 << 19

#: Bytes per expanded posting while it is added: its posting and pair indices, its
#: product in both precisions, and their temporaries.
EXPAND_BYTES = 40

#: Cost of one pair, one dense column, and one light walk, in the planner's unit (one
#: candidate pair, about 0.1 µs): measured on 2 cores.
PAIR_COST = 0.3
DENSE_COST = 0.002
LIGHT_COST = 2.0


@dataclass(frozen=True)
class ExactWork:
    """What an exact scan of a corpus would do, from its document frequencies.

    Document frequencies add up over parts of a corpus, so this can be computed per
    partition and merged (:meth:`merge` keeps the sums; the split is redone on the sum).

    Attributes:
        documents: Rows of the matrix.
        heavy: Features held densely.
        light_walks: ``Σ df (df - 1) / 2`` over the other shared features: pair walks.
        entries: Non-zero weights of the matrix.
        shared: Features in two documents or more (what verification's dense blocks
            are as wide as; 0: unknown).
    """

    documents: int
    heavy: int
    light_walks: int
    entries: int = 0
    shared: int = 0

    @property
    def pairs(self) -> int:
        """All pairs of documents."""
        return self.documents * (self.documents - 1) // 2

    @property
    def fixed_bytes(self) -> int:
        """Bytes held for the whole exact scan: the dense columns, the postings, a light run."""
        dense = self.documents * self.heavy * np.dtype(SELECTION).itemsize
        expanded = min(self.light_walks, EXPAND_ENTRIES) * EXPAND_BYTES
        return dense + self.entries * ENTRY_BYTES + expanded

    @property
    def products(self) -> int:
        """Dot products the blocks compute: each block's rows against every row from its first.

        Blocks of ``s`` rows (as tall as :data:`BLOCK_CAP` allows) make ``n (n + s) / 2`` in
        all: the pairs, and the lower corner of each block. A small corpus is one block, its
        whole square.
        """
        n = self.documents
        return min(n * n, n * (n + block_rows(n, BLOCK_CAP)) // 2)

    @property
    def cost(self) -> float:
        """Estimated cost in the planner's unit (one candidate pair)."""
        return self.products * (PAIR_COST + DENSE_COST * self.heavy) + LIGHT_COST * self.light_walks


def heavy_features(
    document_frequency: npt.NDArray[np.int64], documents: int
) -> npt.NDArray[np.int64]:
    """Return the ids of the features held densely, most frequent first (at most MAX_HEAVY).

    >>> heavy_features(np.array([10, 1, 3, 9]), 20).tolist()
    [0, 3, 2]
    """
    cut = max(2, math.ceil(HEAVY_SHARE * documents))
    heavy = np.flatnonzero(document_frequency >= cut)
    order = np.argsort(-document_frequency[heavy], kind="stable")
    return heavy[order][:MAX_HEAVY].astype(np.int64)


#: Entries counted at a time by :func:`frequencies` (a stored matrix is read in blocks).
FREQUENCY_ENTRIES = 1 << 22


def frequencies(matrix: WeightMatrix) -> npt.NDArray[np.int64]:
    """Return how many rows hold each feature, int64 (vocabulary,).

    Counted a block of rows at a time, each block of a stored matrix given back once
    counted, so a pass over the store holds one block.
    """
    df = np.zeros(len(matrix.vocabulary), dtype=np.int64)
    for lo, hi in row_ranges(matrix.indptr, FREQUENCY_ENTRIES):
        block = matrix.indices[int(matrix.indptr[lo]) : int(matrix.indptr[hi])]
        df += np.bincount(block, minlength=len(df))
        release(block)
    return df


def exact_work(matrix: WeightMatrix) -> ExactWork:
    """Return the work of an exact scan of ``matrix`` (see :class:`ExactWork`)."""
    df = frequencies(matrix)
    return work_of(df, matrix.rows, len(matrix.data))


def work_of(document_frequency: npt.NDArray[np.int64], documents: int, entries: int) -> ExactWork:
    """Return the work of an exact scan from its features' document frequencies alone."""
    heavy = heavy_features(document_frequency, documents)
    light = document_frequency.copy()
    light[heavy] = 0
    walks = int((light * (light - 1) // 2).sum())
    shared = int((document_frequency >= 2).sum())
    return ExactWork(documents, len(heavy), walks, entries, shared)


def block_rows(documents: int, memory: int, pair_bytes: int = BYTES_PER_PAIR) -> int:
    """Return how many rows a block may hold within ``memory`` bytes (at least one).

    >>> block_rows(1000, 5 * 1000 * 10)
    10
    """
    return max(1, min(documents, memory // max(1, pair_bytes * documents)))


def selection_margin(longest: int) -> float:
    """Return how far below the threshold float32 cosines select, rows of ``longest`` features.

    Rows are unit length, so every partial sum of a product is at most 1 in size, and
    each of its terms (at most :data:`MAX_HEAVY` dense columns, then one addition per
    light feature a pair shares, fewer than ``longest``), the scaling of the rows and the
    threshold's own rounding adds at most one float32 rounding (half an ``eps``) of it.
    Each light product is rounded to float32 before it is added: those roundings are
    relative to products that sum to at most 1, so together at most one more.

    >>> round(selection_margin(0) / np.finfo(np.float32).eps)
    2051
    """
    terms = MAX_HEAVY + longest + 6
    return MARGIN + terms * float(np.finfo(SELECTION).eps) / 2


def exact_chunks(
    matrix: WeightMatrix,
    threshold: float,
    *,
    memory: int = 1 << 28,
    chunk_pairs: int = 1 << 20,
    covered: Callable[[int], None] | None = None,
) -> Iterator[npt.NDArray[np.int64]]:
    """Yield every pair ``(i, j)``, ``i < j``, whose cosine may reach ``threshold``.

    The selection computes every pair's cosine (a margin of :data:`MARGIN` below the
    threshold covers the order of the sums); callers verify the pairs exactly.

    Args:
        matrix: The corpus weights.
        threshold: The true cosine a pair must reach.
        memory: Bytes the blocks may take (sets the block height).
        chunk_pairs: At most this many pairs a chunk: a block is searched a few rows at
            a time and its pairs cut into chunks of this size, so that a block where most
            pairs reach the threshold (a corpus whose documents all look alike) yields
            chunks of the size verification is planned for, not one of millions.
        covered: Told, after each block, how many pairs it covered (of ``n (n - 1) / 2``
            in all), also for blocks without a pair to yield: a progress display's unit.

    Yields:
        int64 (m, 2) arrays, in row order: a block's pairs (at most ``chunk_pairs``), or
        as many chunks of ``chunk_pairs`` as it has and its last ones.
    """
    n = matrix.rows
    floor = threshold - selection_margin(int(matrix.row_lengths().max(initial=0)))
    step = max(1, chunk_pairs // max(1, n))  # rows searched at a time
    mask: npt.NDArray[np.bool_] = np.empty(0, dtype=bool)
    for lo, hi, cosines in cosine_blocks(matrix, memory, dtype=SELECTION):
        width = cosines.shape[1]
        if mask.size < step * width:  # one mask for every step, as for the cosines
            mask = np.empty(step * width, dtype=bool)
        found: list[npt.NDArray[np.int64]] = []
        held = 0
        for first in range(0, hi - lo, step):
            rows = cosines[first : first + step]
            local, offset = upper_at_least(rows, floor, mask[: rows.size], first=first)
            found.append(np.stack([local + lo, offset + lo], axis=1))
            held += len(local)
            while held >= chunk_pairs:  # a full chunk, and what is left of the rows
                pairs = np.concatenate(found)
                yield pairs[:chunk_pairs]
                found, held = [pairs[chunk_pairs:].copy()], held - chunk_pairs
        if covered is not None:  # row r pairs with the n - 1 - r rows after it
            covered((hi - lo) * (n - 1) - (lo + hi - 1) * (hi - lo) // 2)
        if held:
            yield np.concatenate(found)


def upper_at_least(
    cosines: npt.NDArray[np.floating[Any]],
    floor: float,
    mask: npt.NDArray[np.bool_] | None = None,
    *,
    first: int = 0,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Return ``(row, offset)`` of a block's entries at or above ``floor`` above its diagonal.

    ``cosines`` is a block of :func:`cosine_blocks` (row ``a`` against rows from the
    block's first on, so entry ``(a, b)`` is a pair when ``b > a``), in row-major order,
    or the block's rows from ``first`` on (rows are then numbered as in the block).
    The entries are found in the flattened block: ``np.nonzero`` of a 2-D mask is several
    times slower than of a flat one (100 against 6 ms for 54 million entries). ``mask``, of
    the size of ``cosines``, is written instead of a new array.

    >>> upper_at_least(np.array([[1.0, 0.9, 0.2], [0.9, 1.0, 0.95]]), 0.9)
    (array([0, 1]), array([1, 2]))
    >>> upper_at_least(np.array([[0.9, 1.0, 0.95]]), 0.9, first=1)
    (array([1]), array([2]))
    """
    width = cosines.shape[1]
    hits = np.flatnonzero(np.greater_equal(cosines.reshape(-1), floor, out=mask))
    local, offset = np.divmod(hits, width)
    local += first
    upper = offset > local
    return local[upper].astype(np.int64), offset[upper].astype(np.int64)


def cosine_blocks(
    matrix: WeightMatrix, memory: int, *, dtype: type[np.floating[Any]] = np.float64
) -> Iterator[tuple[int, int, npt.NDArray[np.floating[Any]]]]:
    """Yield ``(lo, hi, cosines)``: rows ``lo:hi`` against rows ``lo:n``, a block at a time.

    ``cosines[a, b]`` is the cosine of rows ``lo + a`` and ``lo + b`` (the upper triangle
    and a corner of the Gram matrix of the unit rows), of ``dtype``; the array is reused
    by the next block.
    """
    n = matrix.rows
    if n < 2:
        return
    lengths = matrix.row_lengths()
    df = frequencies(matrix)
    heavy = heavy_features(df, n)
    column_of = np.full(len(df), -1, dtype=np.int64)
    column_of[heavy] = np.arange(len(heavy))
    entry_row = np.repeat(np.arange(n, dtype=np.int64), lengths)
    features = matrix.indices.astype(np.int64)
    norms = np.sqrt(matrix.squared_norms())
    inverse = np.where(norms > 0, 1.0 / np.where(norms > 0, norms, 1.0), 0.0)
    # Dense part: the heavy features of every row, each row scaled to unit length.
    dense = np.zeros((n, len(heavy)), dtype=dtype)
    is_heavy = column_of[features] >= 0
    rows = entry_row[is_heavy]
    dense[rows, column_of[features[is_heavy]]] = matrix.data[is_heavy] * inverse[rows]
    # Light part: postings of the shared light features, by feature then row (CSC).
    light = (~is_heavy) & (df[features] >= 2)
    by_feature = order_of(features[light], entry_row[light], n)
    post_rows = entry_row[light][by_feature]
    post_data = matrix.data[light][by_feature] * inverse[post_rows]
    post_features = features[light][by_feature]
    post_start = np.searchsorted(post_features, np.arange(len(df) + 1))
    release(matrix.indices, matrix.data)  # a stored matrix's pages: only blocks are read now
    step = block_rows(n, memory, np.dtype(dtype).itemsize + 1)
    # One buffer for every block (allocated and touched once).
    buffer = np.empty(step * n, dtype=dtype)
    for lo in range(0, n - 1, step):
        hi = min(n, lo + step)
        # Cosines of block rows with rows lo..n-1 (the upper triangle and a corner).
        dots = buffer[: (hi - lo) * (n - lo)].reshape(hi - lo, n - lo)
        np.matmul(dense[lo:hi], dense[lo:].T, out=dots)
        postings = (post_rows, post_data, post_start)
        _add_light(dots, lo, hi, matrix, light, postings, features, lengths, inverse)
        release(matrix.indices, matrix.data)
        yield lo, hi, dots


def _add_light(
    dots: npt.NDArray[np.float64],
    lo: int,
    hi: int,
    matrix: WeightMatrix,
    light: npt.NDArray[np.bool_],
    postings: tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.int64]],
    features: npt.NDArray[np.int64],
    lengths: npt.NDArray[np.int64],
    inverse: npt.NDArray[np.float64],
) -> None:
    """Add to ``dots`` (rows lo..hi against lo..n) the products of shared light features.

    Each light entry of a block row meets the postings of its feature from its own row
    on (postings are sorted by row, their weights scaled as their rows, and the entry's by
    ``inverse``, its row's), so every pair is walked once per shared feature.
    """
    post_rows, post_data, post_start = postings
    start, stop = int(matrix.indptr[lo]), int(matrix.indptr[hi])
    mine = np.flatnonzero(light[start:stop]) + start
    if len(mine) == 0:
        return
    rows = np.repeat(np.arange(lo, hi, dtype=np.int64), lengths[lo:hi])[mine - start]
    feature = features[mine]
    weight = matrix.data[mine] * inverse[rows]
    # Postings of the feature with a row after this one.
    first = _first_after(post_rows, post_start[feature], post_start[feature + 1], rows)
    counts = post_start[feature + 1] - first
    width = dots.shape[1]
    flat = dots.reshape(-1)
    ends = np.cumsum(counts)
    # Per entry, what its stretch of the expansion adds to the expansion's index to give
    # the posting's, and to a posting's row to give the pair's place in the block.
    shift = first - (ends - counts)
    origin = (rows - lo) * width - lo
    begin = 0
    while begin < len(mine):
        # A run of entries whose expansion stays within EXPAND_ENTRIES.
        base = int(ends[begin] - counts[begin])
        stop_at = int(np.searchsorted(ends, base + EXPAND_ENTRIES, side="right"))
        stop_at = max(stop_at, begin + 1)
        c = counts[begin:stop_at]
        total = int(ends[stop_at - 1]) - base
        if total:
            at = np.repeat(shift[begin:stop_at], c)
            at += np.arange(base, base + total, dtype=np.int64)
            target = np.repeat(origin[begin:stop_at], c)
            target += post_rows[at]
            products = np.repeat(weight[begin:stop_at], c)
            products *= post_data[at]
            # Added in place in the block's own precision: the work is the walks alone
            # (a bincount would zero and add a float64 array as wide as the rows' span:
            # 2 ns per pair of the block whether or not it shares a light feature), and
            # ``np.add.at`` is only fast with values of the array's dtype.
            np.add.at(flat, target, products.astype(dots.dtype, copy=False))
        begin = stop_at


def _first_after(
    post_rows: npt.NDArray[np.int64],
    begin: npt.NDArray[np.int64],
    end: npt.NDArray[np.int64],
    rows: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    """Return, per entry, the first posting in ``begin:end`` whose row is after ``rows``.

    Each feature's postings are sorted by row, so one vectorised binary search, every
    entry within its own feature's segment, finds them all at once.
    """
    lo: npt.NDArray[np.int64] = begin.copy()
    hi: npt.NDArray[np.int64] = end.copy()
    while True:
        active = lo < hi
        if not active.any():
            return lo
        mid = (lo + hi) // 2
        mid_safe = np.minimum(mid, len(post_rows) - 1)
        go_right = active & (post_rows[mid_safe] <= rows)
        go_left = active & ~go_right
        lo = np.where(go_right, mid + 1, lo).astype(np.int64)
        hi = np.where(go_left, mid, hi).astype(np.int64)
