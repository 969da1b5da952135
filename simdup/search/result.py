"""Measured pairs to the scan's result: scores, order, joined chunks, stats, clusters."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from simdup.fingerprints.weights import WeightMatrix
from simdup.model import Cluster, PairArrays, ScanResult, Skip
from simdup.params import Params
from simdup.search.candidates import LargeBucket
from simdup.search.plan.planner import Plan
from simdup.search.verify import (
    CosineIndex,
    components,
    cosine_many,
    estimate_cosine_many,
    hamming_many,
)


def measure(
    matrix: WeightMatrix | None,
    fingerprints: npt.NDArray[np.uint64],
    pairs: npt.NDArray[np.int64],
    bits: int,
    *,
    index: CosineIndex | None = None,
) -> PairArrays:
    """Return Hamming distance, estimated and true cosine (NaN without weights) of pairs."""
    distances = hamming_many(fingerprints, pairs)
    estimated = estimate_cosine_many(distances, bits)
    cosines = (
        np.full(len(pairs), np.nan) if matrix is None else cosine_many(matrix, pairs, index=index)
    )
    return PairArrays(pairs, distances, estimated, cosines)


def canonical_order(names: Sequence[str], pairs: PairArrays) -> PairArrays:
    """Sort pairs by true cosine (desc), then Hamming distance, then names: deterministic."""
    if len(pairs) == 0:
        return pairs
    score = np.where(np.isnan(pairs.cosine), pairs.estimated, pairs.cosine)
    rank_a, rank_b = pairs.pairs[:, 0], pairs.pairs[:, 1]  # rows are in name order
    order = np.lexsort((rank_b, rank_a, pairs.hamming, -score))
    return pairs.take(order)


#: What verifying one chunk gives: pairs measured, pairs above the threshold, pairs kept.
Verified = tuple[int, int, PairArrays]


def scan_result(
    names: list[str],
    matrix: WeightMatrix | None,
    fingerprints: npt.NDArray[np.uint64],
    used: Params,
    chosen: Plan,
    results: Sequence[Verified],
    *,
    large: Sequence[LargeBucket],
    counts: dict[str, int],
    skipped: Sequence[Skip],
    timings: dict[str, float],
) -> ScanResult:
    """Join the verified chunks in order into the scan's result, with its statistics."""
    reported = concat_pairs([kept for _, _, kept in results])
    row_counts = (
        matrix.row_lengths() if matrix is not None else np.zeros(len(names), dtype=np.int64)
    )
    measured_candidates = sum(found for found, _, _ in results)
    stats = {
        "documents": len(names),
        "skipped": len(skipped),
        "candidates": measured_candidates,
        "planned_candidates": chosen.expected_candidates,
        "table_candidates": counts.get("table_candidates", 0)
        if not chosen.exact
        else chosen.expected_candidates,
        "planned_verified": chosen.expected_verified,
        "above_threshold": sum(above for _, above, _ in results),
        "pairs": len(reported),
        "bits": chosen.bits,
    }
    described = chosen.describe(large, names)
    return ScanResult(
        names=names,
        params=used,
        pairs=canonical_order(names, reported),
        feature_counts=row_counts,
        fingerprints=fingerprints,
        stats=stats,
        skipped=list(skipped),
        tables=chosen.tables.description,
        timings=timings,
        plan=described,
    )


def concat_pairs(parts: Sequence[PairArrays]) -> PairArrays:
    """Join measured chunks into one :class:`PairArrays` (empty arrays for none)."""
    if not parts:
        return PairArrays(
            np.zeros((0, 2), dtype=np.int64),
            np.zeros(0, dtype=np.int64),
            np.zeros(0, dtype=np.float64),
            np.zeros(0, dtype=np.float64),
        )
    return PairArrays(
        np.concatenate([p.pairs for p in parts]),
        np.concatenate([p.hamming for p in parts]),
        np.concatenate([p.estimated for p in parts]),
        np.concatenate([p.cosine for p in parts]),
    )


def clusters(result: ScanResult) -> list[Cluster]:
    """Group the pairs above the threshold into connected components, largest first.

    Each cluster carries its size, the cosine of its weakest reported pair, and its
    members in name order.
    """
    score = np.where(np.isnan(result.pairs.cosine), result.pairs.estimated, result.pairs.cosine)
    pairs = result.pairs.take(score >= result.params.threshold)
    score = score[score >= result.params.threshold]
    if len(pairs) == 0:
        return []
    labels = components(len(result.names), pairs.pairs)
    members = np.unique(pairs.pairs)
    known = not bool(np.isnan(pairs.cosine).any())
    out = []
    for label in np.unique(labels[members]).tolist():
        rows = members[labels[members] == label]
        in_cluster = labels[pairs.pairs[:, 0]] == label
        weakest = float(score[in_cluster].min())
        out.append(
            Cluster(len(rows), weakest if known else None, tuple(result.names[r] for r in rows))
        )
    out.sort(key=lambda c: (-c.size, c.members))
    return out
