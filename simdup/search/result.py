"""Measured pairs to the scan's result: scores, order, joined chunks, stats."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from simdup.fingerprints.weights import WeightMatrix
from simdup.model import PairArrays, ScanResult, Skip
from simdup.params import Params
from simdup.search.candidates import LargeBucket
from simdup.search.plan.planner import Plan
from simdup.search.verify import (
    CosineIndex,
    cosine_many,
    estimate_cosine_many,
    hamming_many,
)
from simdup.spill import stable_order


def measure(
    matrix: WeightMatrix | None,
    fingerprints: npt.NDArray[np.uint64],
    pairs: npt.NDArray[np.int64],
    bits: int,
    *,
    index: CosineIndex | None = None,
    cosines: npt.NDArray[np.float64] | None = None,
) -> PairArrays:
    """Return Hamming distance, estimated and true cosine (NaN without weights) of pairs.

    ``cosines``: the true cosines, when computed elsewhere (from the rows of the pairs
    alone: a cosine depends on its two rows only).
    """
    distances = hamming_many(fingerprints, pairs)
    estimated = estimate_cosine_many(distances, bits)
    if cosines is None:
        cosines = (
            np.full(len(pairs), np.nan)
            if matrix is None
            else cosine_many(matrix, pairs, index=index)
        )
    return PairArrays(pairs, distances, estimated, cosines)


def canonical_order(names: Sequence[str], pairs: PairArrays) -> PairArrays:
    """Sort pairs by true cosine (desc), then Hamming distance, then names: deterministic."""
    if len(pairs) == 0:
        return pairs
    return pairs.take(_canonical(pairs))


def in_canonical_order(parts: list[PairArrays]) -> PairArrays:
    """Return the pairs of ``parts`` joined, in :func:`canonical_order`; ``parts`` is emptied.

    Held about once: the parts are emptied as they are joined, and the join is sorted a
    column at a time.
    """
    joined = PairArrays.gather(parts)
    if len(joined):
        joined.permute(_canonical(joined))
    return joined


def _canonical(pairs: PairArrays) -> npt.NDArray[np.int64]:
    """Return the positions of ``pairs`` in :func:`canonical_order`.

    Rows are in name order, so the names order as ``a * rows + b`` does: one key of 8
    bytes a pair rather than two strided columns copied, and the negated score made in
    place; the keys take 16 bytes a pair beside the order's 8. Past
    :data:`RANGED_PAIRS` the pairs are first put in their score ranges
    (:func:`score_bins`, :func:`~simdup.spill.stable_order`), and each range is sorted on
    its own: a third of the time of one sort of them all (16 million pairs: 12 to 4 s).
    """
    rows = int(pairs.pairs.max()) + 1
    names = pairs.pairs[:, 0] * rows
    names += pairs.pairs[:, 1]
    descending = pairs.score()
    np.negative(descending, out=descending)
    if len(pairs) <= RANGED_PAIRS:
        return np.lexsort((names, pairs.hamming, descending))
    bins = score_bins(pairs, rows)
    order = stable_order(bins)
    ends = np.cumsum(np.bincount(bins)).tolist()
    for start, end in zip([0, *ends[:-1]], ends, strict=True):
        if end - start > 1:
            ranged = order[start:end]
            ranged[:] = ranged[
                np.lexsort((names[ranged], pairs.hamming[ranged], descending[ranged]))
            ]
    return order


#: Pairs from which :func:`_canonical` sorts score ranges one at a time.
RANGED_PAIRS = 1 << 20

#: Score ranges reported pairs are sorted by, one range at a time.
SCORE_BINS = 4096

#: Ranges of first rows exact copies are sorted by, one range at a time.
COPY_BINS = 4096


def score_bins(pairs: PairArrays, rows: int) -> npt.NDArray[np.int64]:
    """Return each pair's range: the ranges in order hold the pairs in canonical order.

    Scores above 1.0 (rounding) come first; then exact copies (score 1.0 at distance 0: the
    one tie a corpus can hold millions of, and a range is sorted whole) by the range of
    their first row of ``rows``; the other pairs at 1.0; ranges of the scores below, from
    the highest down; unknown scores (NaN) last. Equal scores share a range, or for exact
    copies split by the first row (the names' order), so sorting each range and joining
    them in order gives the order of the whole.
    """
    score = pairs.score()
    below = 2 + COPY_BINS  # the first range of scores below 1.0
    ranges = np.floor((1.0 - np.nan_to_num(score, nan=-1.0)) / 2.0 * SCORE_BINS)
    bins = below + np.clip(ranges, 0, SCORE_BINS - 1).astype(np.int64)
    one = score == 1.0
    bins[one] = 1 + COPY_BINS
    copies = one & (pairs.hamming == 0)
    bins[copies] = 1 + pairs.pairs[copies, 0] * COPY_BINS // max(rows, 1)
    bins[score > 1.0] = 0
    bins[np.isnan(score)] = below + SCORE_BINS
    return bins


@dataclass(frozen=True)
class Verified:
    """Candidates after verification: one chunk's, or one partition's of a distributed scan.

    Attributes:
        candidates: Pairs measured.
        above_threshold: Pairs whose score reaches the threshold.
        kept: The pairs to report: those, or every pair measured (``report_all``).
    """

    candidates: int
    above_threshold: int
    kept: PairArrays

    @classmethod
    def of(cls, measured: PairArrays, threshold: float, report_all: bool) -> Verified:
        """Count the measured pairs reaching ``threshold`` and keep those to report."""
        passed = measured.score() >= threshold
        kept = measured if report_all else measured.take(passed)
        return cls(len(measured), int(passed.sum()), kept)


@dataclass(frozen=True)
class Searched:
    """How a scan's candidates were found, for its statistics and its plan.

    Attributes:
        plan: The plan followed.
        large: Oversized buckets met while pairing.
        table_candidates: Pairs sharing a key, summed over the tables, plus the identical
            pairs (an exact scan counts every pair instead).
    """

    plan: Plan
    large: Sequence[LargeBucket] = ()
    table_candidates: int = 0

    def counts(self) -> dict[str, int]:
        """Return the counts the plan expected, and the pairs the tables found (``stats``)."""
        plan = self.plan
        return {
            "planned_candidates": plan.expected_candidates,
            "table_candidates": plan.expected_candidates if plan.exact else self.table_candidates,
            "planned_verified": plan.expected_verified,
        }


def scan_result(
    names: Sequence[str],
    params: Params,
    verified: Sequence[Verified],
    *,
    feature_counts: npt.NDArray[np.int64],
    fingerprints: npt.NDArray[np.uint64],
    skipped: Sequence[Skip],
    timings: dict[str, float],
    searched: Searched | None = None,
    tables: str = "",
    documents: int | None = None,
    stored: int | None = None,
    ordered: bool = False,
) -> ScanResult:
    """Join the verified candidates in order into a scan's result, with its statistics.

    Args:
        names: Name of every row (those of the pairs).
        params: The settings used (the width chosen, when the plan chose it).
        verified: The verified chunks or partitions, in order. Their pairs move into the
            result: the parts are left empty, so that the pairs are held once.
        feature_counts: int64 (rows,), distinct features per row.
        fingerprints: uint64 (rows, words).
        skipped: Inputs not scanned.
        timings: Seconds per stage.
        searched: How a scan found its candidates (its plan's counts, tables and width).
        tables: The tables' description without a plan (an index query).
        documents: Rows scanned, when not every row (an index query: the new documents).
        stored: Documents in the index queried.
        ordered: The pairs kept are in :func:`canonical_order` already (one part).
    """
    stats = {"documents": len(names) if documents is None else documents}
    if stored is not None:
        stats["stored"] = stored
    stats["skipped"] = len(skipped)
    stats["candidates"] = sum(v.candidates for v in verified)
    if searched is not None:
        stats.update(searched.counts())
    stats["above_threshold"] = sum(v.above_threshold for v in verified)
    reported = verified[0].kept if ordered else in_canonical_order([v.kept for v in verified])
    stats["pairs"] = len(reported)
    if searched is not None:
        stats["bits"] = searched.plan.bits
        tables = searched.plan.tables.description
    return ScanResult(
        names=names,
        params=params,
        pairs=reported,
        feature_counts=feature_counts,
        fingerprints=fingerprints,
        stats=stats,
        skipped=list(skipped),
        tables=tables,
        timings=timings,
        plan={} if searched is None else searched.plan.describe(searched.large, names),
    )
