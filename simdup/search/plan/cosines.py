"""Estimate the pairs above a threshold from the true cosines of a sample of documents.

How many pairs reach a true cosine decides what a scan holds (the pairs it reports) and,
in exact mode, how many it verifies. Hamming distances cannot tell it: where unrelated
documents share a heavy head of words, many more pairs fall within the distance of a pair
at the threshold than reach the threshold. So the planner computes the true cosine of
every pair of a random sample of documents, with the blocked products of an exact scan
(:func:`simdup.search.exact.cosine_blocks`), and scales the count to the corpus:

* Rows with identical fingerprints form a group; their pairs are counted exactly, at
  cosine 1 (identical fingerprints are identical texts, or as good as).
* ``m`` of the ``D`` groups are drawn (a fixed seed), one row each. A sampled pair of
  groups of ``a`` and ``b`` rows stands for ``a · b`` pairs of rows, and each pair of
  groups had the chance ``m (m - 1) / (D (D - 1))`` of being drawn: the weighted count
  over that chance is an unbiased estimate of the pairs of rows above the threshold.
* Its upper bound adds two standard deviations (from the squared weights) and three
  pairs (the bound of a count that found none), both at the sample's scale.

The work is an exact scan of ``m`` documents: it grows with the sample, not the corpus.
Each sampled pair also keeps its Hamming distance (per 64-bit word, so at every width),
so the pairs that a set of tables finds among those above the threshold can be estimated
too. Where very many sampled pairs are near the threshold, a fixed-seed share of them is
kept (weighted up), so the memory stays bounded.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from simdup.fingerprints.weights import WeightMatrix, order_of
from simdup.search.buckets import row_groups
from simdup.search.exact import cosine_blocks, exact_chunks, upper_at_least
from simdup.search.verify import cosine_many

#: Distinct documents whose every pair's true cosine is computed (18 million pairs: about
#: a second on 2 cores where many features are in most documents).
COSINE_ROWS = 6000

#: The sample starts with this many documents, and grows (up to its full size) only when
#: it holds fewer than :data:`ENOUGH_PAIRS` pairs at or above its floor.
FIRST_ROWS = 1500

#: Kept pairs that estimate the pairs near the threshold well within the planner's 2x (a
#: relative standard error of about 10% were they independent; copies of one document
#: make them less so).
ENOUGH_PAIRS = 100

#: Seed of the sample.
COSINE_SEED = 0xC051

#: Cosines are kept from this far below the threshold (alternatives ask about others).
BAND = 0.05

#: Bytes the sample's blocked products may take.
COSINE_MEMORY = 64 << 20

#: At most this many sampled pairs are kept (beyond, a fixed-seed share, weighted up).
KEPT_PAIRS = 1 << 20

#: Rows for a weight matrix of chosen rows (the corpus's, in the order asked).
RowSource = Callable[[npt.NDArray[np.int64]], WeightMatrix]


@dataclass(frozen=True)
class Groups:
    """Rows grouped by identical fingerprint, groups in the order of their fingerprints.

    Attributes:
        first: int64 (D,), the first row of each group.
        sizes: int64 (D,), rows in each group.
    """

    first: npt.NDArray[np.int64]
    sizes: npt.NDArray[np.int64]

    @classmethod
    def of(cls, fingerprints: npt.NDArray[np.uint64]) -> Groups:
        """Group the rows of ``fingerprints`` (uint64 (n, words))."""
        order, starts = row_groups(fingerprints)
        return cls(order[starts], np.diff(np.append(starts, len(order))).astype(np.int64))

    @property
    def documents(self) -> int:
        """Rows in all."""
        return int(self.sizes.sum())

    @property
    def identical_pairs(self) -> int:
        """Pairs of rows within a group."""
        return int((self.sizes * (self.sizes - 1) // 2).sum())

    def pick(self, size: int) -> npt.NDArray[np.int64]:
        """Return ``size`` groups at random (a fixed seed), in group order; all if fewer.

        The groups picked for a size are among those picked for any larger size.
        """
        count = len(self.first)
        if count <= size:
            return np.arange(count, dtype=np.int64)
        order = np.random.default_rng(COSINE_SEED).permutation(count)
        return np.sort(order[:size]).astype(np.int64)


@dataclass(frozen=True)
class CosineSample:
    """The true cosines of the sampled pairs at or above a floor, and how to scale them.

    Attributes:
        documents: Rows of the corpus.
        distinct: Groups of identical fingerprints (D).
        identical: Pairs of rows within a group.
        size: Groups sampled (m).
        floor: Cosines below this were not kept.
        cosines: float64 (k,), the kept pairs' cosines.
        weights: float64 (k,), pairs of rows each kept pair stands for (before scaling).
        words: uint8 (k, words), bits differing in each 64-bit word of the pair's
            fingerprints: the distance at ``bits`` is the sum of the first ``bits / 64``.
        pairs: int64 (k, 2), the rows of each kept pair, for a census
            (:func:`census_sample`) only: its pairs are those an exact scan reports.
    """

    documents: int
    distinct: int
    identical: int
    size: int
    floor: float
    cosines: npt.NDArray[np.float64]
    weights: npt.NDArray[np.float64]
    words: npt.NDArray[np.uint8]
    pairs: npt.NDArray[np.int64] | None = None

    @property
    def scale(self) -> float:
        """Factor from sampled pairs of groups to all pairs of groups."""
        m, d = self.size, self.distinct
        return 1.0 if m < 2 else d * (d - 1) / (m * (m - 1))

    def above(self, threshold: float, found: npt.NDArray[np.float64] | None = None) -> float:
        """Return the estimated pairs of rows whose true cosine reaches ``threshold``.

        Args:
            threshold: At least :attr:`floor`.
            found: float64 (bits + 1,), the probability that the tables find a pair at
                each distance: then only the pairs expected to be found are counted.
        """
        keep = self.cosines >= threshold
        weights = self.weights[keep]
        if found is not None:
            bits = len(found) - 1
            distance = self.words[keep, : bits // 64].sum(axis=1, dtype=np.int64)
            weights = weights * found[distance]
        return self.identical + self.scale * float(weights.sum())

    def bound(self, threshold: float) -> float:
        """Return an upper bound (about 97.5%) on the pairs at or above ``threshold``."""
        weights = self.weights[self.cosines >= threshold]
        spread = 2.0 * math.sqrt(float((weights**2).sum())) + 3.0
        return self.above(threshold) + (0.0 if self.size >= self.distinct else spread * self.scale)

    def hits(self, threshold: float) -> int:
        """Return the sampled pairs at or above ``threshold`` (kept ones)."""
        return int((self.cosines >= threshold).sum())


def cosine_sample(
    groups: Groups,
    fingerprints: npt.NDArray[np.uint64],
    rows: RowSource,
    floor: float,
    size: int = COSINE_ROWS,
) -> CosineSample:
    """Return the true cosines at or above ``floor`` among ``size`` sampled groups.

    Args:
        groups: The corpus's groups of identical fingerprints.
        fingerprints: uint64 (n, words), the corpus's (the distances are theirs).
        rows: The weight rows of the corpus's rows asked for.
        floor: The lowest cosine kept.
        size: Groups to sample.
    """
    picked = groups.pick(size)
    first = groups.first[picked]
    sizes = groups.sizes[picked].astype(np.float64)
    matrix = canonical(rows(first))
    kept = _Kept()
    for lo, _, cosines in cosine_blocks(matrix, COSINE_MEMORY):
        local, offset = upper_at_least(cosines, floor)
        near = np.asarray(cosines[local, offset], dtype=np.float64)
        kept.add(lo, local + lo, offset + lo, near)
    i, j, values, share = kept.arrays()
    words = np.bitwise_count(fingerprints[first[i]] ^ fingerprints[first[j]]).astype(np.uint8)
    return CosineSample(
        documents=groups.documents,
        distinct=len(groups.first),
        identical=groups.identical_pairs,
        size=len(picked),
        floor=floor,
        cosines=values,
        weights=sizes[i] * sizes[j] / share,
        words=words,
    )


def grown_sample(
    groups: Groups,
    fingerprints: npt.NDArray[np.uint64],
    rows: RowSource,
    floor: float,
    size: int = COSINE_ROWS,
    threshold: float | None = None,
) -> CosineSample:
    """Return :func:`cosine_sample` of :data:`FIRST_ROWS` groups, or of more if it finds few.

    Where many pairs reach the threshold (a heavy shared vocabulary, many copies), a
    sixteenth of the pairs of the full sample estimates them closely, in a sixteenth of
    the time. Where it finds fewer than :data:`ENOUGH_PAIRS` at or above ``threshold``
    (default: ``floor + BAND``), the sample grows to the size that should find that many
    (pairs grow with the square of the documents), at most ``size``. Pairs in the band
    below the threshold do not count: on a heavy background they are many where the
    pairs above it are a few copies, which a small sample misses (an estimate of 0.44
    times the count was seen so).
    """
    above = floor + BAND if threshold is None else threshold
    first = min(size, FIRST_ROWS)
    found = cosine_sample(groups, fingerprints, rows, floor, first)
    hits = found.hits(above)
    if hits >= ENOUGH_PAIRS or first >= min(size, len(groups.first)):
        return found
    wanted = math.ceil(first * math.sqrt(ENOUGH_PAIRS / max(hits, 1)))
    return cosine_sample(groups, fingerprints, rows, floor, min(size, max(wanted, 2 * first)))


def census_sample(
    matrix: WeightMatrix, fingerprints: npt.NDArray[np.uint64], floor: float
) -> CosineSample:
    """Return the true cosine of every pair of rows at or above ``floor``: a census.

    A corpus whose exact scan is cheap and whose sample would hold every document is
    surveyed as that scan reads it: every pair's cosine selected by the blocked products in
    single precision (:func:`~simdup.search.exact.exact_chunks`), those selected computed
    exactly (:func:`~simdup.search.verify.cosine_many`, the cosine a scan reports). Every
    row is its own group, so the estimates are counts; the pairs are kept, and the exact
    scan that follows takes them instead of computing every product again.
    """
    found = list(exact_chunks(matrix, floor, memory=COSINE_MEMORY))
    pairs = np.concatenate(found) if found else np.zeros((0, 2), dtype=np.int64)
    cosines = cosine_many(matrix, pairs)
    keep = cosines >= floor
    pairs, cosines = pairs[keep], cosines[keep]
    words = np.bitwise_count(fingerprints[pairs[:, 0]] ^ fingerprints[pairs[:, 1]])
    return CosineSample(
        documents=matrix.rows,
        distinct=matrix.rows,
        identical=0,
        size=matrix.rows,
        floor=floor,
        cosines=cosines,
        weights=np.ones(len(cosines)),
        words=words.astype(np.uint8),
        pairs=pairs,
    )


#: Rows i and j of the kept pairs, their priorities and their cosines.
_Part = tuple[
    npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.float64]
]


class _Kept:
    """Sampled pairs kept: every one, or past :data:`KEPT_PAIRS` a share halved as needed.

    Each pair draws a priority from a generator seeded by its block, so which pairs are
    kept depends only on the sample. While every pair is kept the priorities are not
    drawn (a small corpus's plan need not load ``numpy.random``): a block kept whole
    draws them, the same ones, when a share is first halved.
    """

    def __init__(self) -> None:
        self.share = 1.0
        self.parts: list[_Part] = []
        self.whole: list[tuple[int, _Part]] = []  # blocks kept whole, priorities not drawn

    def add(
        self,
        block: int,
        i: npt.NDArray[np.int64],
        j: npt.NDArray[np.int64],
        values: npt.NDArray[np.float64],
    ) -> None:
        """Keep the pairs ``(i, j)`` of a block whose priority is within the share."""
        empty = np.zeros(0, np.float64)
        if self.share == 1.0 and self._count() + len(i) <= KEPT_PAIRS:
            self.whole.append((block, (i, j, empty, values)))
            return
        self._draw()
        self.parts.append(_within((i, j, _priority(block, len(i)), values), self.share))
        while self._count() > KEPT_PAIRS:
            self.share /= 2
            self.parts = [_within(part, self.share) for part in self.parts]

    def _count(self) -> int:
        """Return the pairs kept."""
        parts = [*self.parts, *(part for _, part in self.whole)]
        return sum(len(part[0]) for part in parts)

    def _draw(self) -> None:
        """Draw the priorities of the blocks kept whole, so that a share can be taken."""
        for block, (i, j, _, values) in self.whole:
            self.parts.append((i, j, _priority(block, len(i)), values))
        self.whole = []

    def arrays(
        self,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64], float]:
        """Return the kept pairs' rows, their cosines, and the share kept."""
        parts = [*self.parts, *(part for _, part in self.whole)]
        if not parts:
            empty = np.zeros(0, np.int64)
            return empty, empty, np.zeros(0, np.float64), self.share
        i, j, _, values = (np.concatenate(column) for column in zip(*parts, strict=True))
        return i, j, values, self.share


def _priority(block: int, count: int) -> npt.NDArray[np.float64]:
    """Return the priorities of a block's pairs: from a generator seeded by the block."""
    return np.random.default_rng([COSINE_SEED, block]).random(count)


def _within(part: _Part, share: float) -> _Part:
    """Return the pairs of ``part`` whose priority is below ``share``."""
    i, j, priority, values = part
    keep = priority < share
    return i[keep], j[keep], priority[keep], values[keep]


def canonical(matrix: WeightMatrix) -> WeightMatrix:
    """Return the rows with their features numbered in the order of their strings.

    The blocked sums then depend on the rows alone, not on how an engine numbered its
    vocabulary or ordered a row's entries, so every engine computes the same cosines.
    """
    # The features in use, ascending (np.unique without its options loads numpy.ma: ~10 ms).
    used = np.flatnonzero(np.bincount(matrix.indices, minlength=len(matrix.vocabulary)))
    names = [matrix.vocabulary[k] for k in used.tolist()]
    order = sorted(range(len(names)), key=names.__getitem__)
    rank = np.empty(len(names), dtype=np.int64)
    rank[order] = np.arange(len(names), dtype=np.int64)
    mapping = np.full(len(matrix.vocabulary), -1, dtype=np.int64)
    mapping[used] = rank
    ids = mapping[matrix.indices]
    row = np.repeat(np.arange(matrix.rows, dtype=np.int64), matrix.row_lengths())
    by_row = order_of(row, ids, max(1, len(names)))
    return WeightMatrix(
        matrix.indptr.astype(np.int64),
        ids[by_row],
        matrix.data[by_row],
        tuple(names[k] for k in order),
    )
