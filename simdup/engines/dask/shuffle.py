"""The candidates stage of a distributed scan: Manku's sorted tables as a shuffle.

Locally, each table's rows are sorted by key and equal keys pair up. Distributed, each
partition of weighted rows splits its fingerprints by table and by a hash of their key
(:func:`split_keys`), so a shuffle brings one table's equal keys into one partition, where
pairs are made and pre-filtered by Hamming distance (:func:`bucket_candidates`). A pair
sharing keys in several tables is kept by the first of them only, as the local engine keeps
it; the counts the local engine reports (pairs sharing a key, identical fingerprints,
oversized buckets) add up over the partitions.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from simdup.engines.dask.partitions import Vectors
from simdup.search.candidates import LARGE_BUCKET, LargeBucket, shared_earlier
from simdup.search.tables import masked_keys

#: Rows per shuffle partition of one table (a row travels as its number and fingerprint).
SHUFFLE_ROWS = 1 << 21


@dataclass(frozen=True)
class Candidates:
    """Candidate pairs of one shuffle partition, with their Hamming distances.

    Attributes:
        pairs: int64 (m, 2) global rows, ``i < j``.
        hamming: int64 (m,).
        large: Buckets of the partition with more than :data:`LARGE_BUCKET` distinct
            fingerprints, ordered by key (reported in the plan, as locally).
        table_candidates: Pairs of distinct fingerprints sharing a key of the table in
            this partition, before the pre-filter (the local ``table_candidates``).
    """

    pairs: npt.NDArray[np.int64]
    hamming: npt.NDArray[np.int64]
    large: tuple[LargeBucket, ...] = ()
    table_candidates: int = 0


def shuffle_partitions(documents: int) -> int:
    """Return how many shuffle partitions one table's keys are split into.

    >>> shuffle_partitions(10), shuffle_partitions(5_000_000)
    (1, 3)
    """
    return max(1, -(-documents // SHUFFLE_ROWS))


def split_keys(
    vectors: Vectors, masks: npt.NDArray[np.uint64], partitions: int
) -> dict[tuple[int, int], tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]]]:
    """Split a partition's rows by table and by shuffle partition of their key.

    Returns:
        ``{(table, shuffle partition): (rows, fingerprints)}``; every pair of rows with
        equal keys in a table lands in the same shuffle partition of that table.
    """
    out = {}
    # The fingerprints may be wider than the plan's width: its width is their first bits.
    prints = np.ascontiguousarray(vectors.fingerprints[:, : masks.shape[1]])
    for t, mask in enumerate(masks):
        keys = masked_keys(prints, mask)
        target = (keys % np.uint64(partitions)).astype(np.int64)
        for p in range(partitions):
            chosen = target == p
            out[(t, p)] = (vectors.rows[chosen], prints[chosen])
    return out


def _pairs_in_runs(
    starts: npt.NDArray[np.int64], sizes: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Return every pair of positions ``(x, y)``, ``x < y``, inside runs of sorted items.

    >>> [a.tolist() for a in _pairs_in_runs(np.array([0, 5]), np.array([3, 2]))]
    [[5, 0, 0, 1], [6, 1, 2, 2]]
    """
    firsts: list[npt.NDArray[np.int64]] = []
    seconds: list[npt.NDArray[np.int64]] = []
    for size in np.unique(sizes).tolist():
        x, y = np.triu_indices(size, 1)
        base = starts[sizes == size][:, None]
        firsts.append((base + x[None, :]).reshape(-1))
        seconds.append((base + y[None, :]).reshape(-1))
    if not firsts:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    return np.concatenate(firsts), np.concatenate(seconds)


def bucket_candidates(
    table: int,
    masks: npt.NDArray[np.uint64],
    max_hamming: int | None,
    *pieces: tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]],
) -> Candidates:
    """Return the pairs of one table's shuffle partition that the local engine would find.

    Rows with equal keys (the table's bits of their fingerprints) pair up; pairs farther
    apart than ``max_hamming`` are dropped, and so are pairs sharing a key in an earlier
    table (that table's partition reports them), so every pair is found once. Pairs are
    made and filtered about :data:`PAIRS_PER_STEP` at a time.
    """
    rows = np.concatenate([p[0] for p in pieces]) if pieces else np.zeros(0, np.int64)
    words = masks.shape[1]
    fingerprints = (
        np.concatenate([p[1] for p in pieces]) if pieces else np.zeros((0, words), np.uint64)
    )
    empty = Candidates(np.zeros((0, 2), np.int64), np.zeros(0, np.int64))
    if len(rows) < 2:
        return empty
    keyed = fingerprints & masks[table][None, :]
    order = np.lexsort((rows, *[keyed[:, w] for w in reversed(range(words))]))
    ordered = keyed[order]
    edges = np.flatnonzero(np.any(ordered[1:] != ordered[:-1], axis=1)) + 1
    starts = np.concatenate(([0], edges)).astype(np.int64)
    sizes = np.diff(np.concatenate((starts, [len(rows)]))).astype(np.int64)
    large = _large_buckets(table, rows[order], fingerprints[order], starts, sizes)
    raw = _distinct_key_pairs(fingerprints, masks[table])
    shared = sizes > 1
    rows, fingerprints = rows[order], fingerprints[order]
    columns = [np.ascontiguousarray(fingerprints[:, w]) for w in range(words)]
    found: list[npt.NDArray[np.int64]] = []
    distances: list[npt.NDArray[np.int64]] = []
    for run_starts, run_sizes in _run_groups(starts[shared], sizes[shared], PAIRS_PER_STEP):
        x, y = _pairs_in_runs(run_starts, run_sizes)
        x, y, distance = _within(columns, x, y, max_hamming)
        if table and len(x):
            fresh = ~shared_earlier(fingerprints[x] ^ fingerprints[y], masks[:table])
            x, y, distance = x[fresh], y[fresh], distance[fresh]
        a, b = rows[x], rows[y]
        found.append(np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1))
        distances.append(distance)
    if not found or not sum(len(f) for f in found):
        return Candidates(empty.pairs, empty.hamming, large, raw)
    return Candidates(np.concatenate(found), np.concatenate(distances), large, raw)


def _distinct_key_pairs(fingerprints: npt.NDArray[np.uint64], mask: npt.NDArray[np.uint64]) -> int:
    """Return the pairs of distinct fingerprints sharing a key under ``mask``.

    The local engine counts a table's candidates among distinct fingerprints (equal ones
    are counted once, as identical pairs); equal fingerprints share every key, so they all
    land in one shuffle partition and the count adds up over partitions.

    >>> f = np.array([[1], [1], [3], [7]], dtype=np.uint64)
    >>> _distinct_key_pairs(f, np.array([1], dtype=np.uint64))
    3
    """
    distinct = np.unique(fingerprints, axis=0)
    _, sizes = np.unique(distinct & mask[None, :], axis=0, return_counts=True)
    return int((sizes * (sizes - 1) // 2).sum())


#: Pairs of positions made at once by :func:`bucket_candidates` (a run larger than this
#: is made whole).
PAIRS_PER_STEP = 1 << 21


def _run_groups(
    starts: npt.NDArray[np.int64], sizes: npt.NDArray[np.int64], budget: int
) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]]:
    """Yield consecutive runs in groups of about ``budget`` pairs.

    >>> [s.tolist() for s, _ in _run_groups(np.array([0, 4, 9]), np.array([4, 3, 2]), 7)]
    [[0], [4, 9]]
    """
    ends = np.cumsum(sizes * (sizes - 1) // 2)
    lo = 0
    while lo < len(sizes):
        base = int(ends[lo - 1]) if lo else 0
        hi = max(lo + 1, int(np.searchsorted(ends, base + budget, side="right")))
        yield starts[lo:hi], sizes[lo:hi]
        lo = hi


def _within(
    columns: Sequence[npt.NDArray[np.uint64]],
    x: npt.NDArray[np.int64],
    y: npt.NDArray[np.int64],
    max_hamming: int | None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Return the pairs within ``max_hamming`` and their distances, a word at a time.

    Most pairs of a bucket are far apart: after a word or two most are out of range, and
    the remaining words are read for the few left.
    """
    distance = np.zeros(len(x), dtype=np.int64)
    for column in columns:
        distance += np.bitwise_count(column[x] ^ column[y])
        if max_hamming is not None:
            near = distance <= max_hamming
            x, y, distance = x[near], y[near], distance[near]
    return x, y, distance


def _large_buckets(
    table: int,
    rows: npt.NDArray[np.int64],
    fingerprints: npt.NDArray[np.uint64],
    starts: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
) -> tuple[LargeBucket, ...]:
    """Return the runs of equal keys holding over :data:`LARGE_BUCKET` distinct fingerprints.

    Each is sampled, as locally, by the lowest row of its first five distinct fingerprints.
    """
    out = []
    for start, size in zip(starts.tolist(), sizes.tolist(), strict=True):
        if size <= LARGE_BUCKET:
            continue
        members = fingerprints[start : start + size]
        distinct, inverse = np.unique(members, axis=0, return_inverse=True)
        if len(distinct) <= LARGE_BUCKET:
            continue
        inverse = inverse.reshape(-1)
        first = np.full(len(distinct), np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(first, inverse, rows[start : start + size])
        sample = tuple(first[:5].tolist())
        out.append(LargeBucket(table, size, size * (size - 1) // 2, sample))
    return tuple(out)


def join_candidates(*parts: Candidates) -> Candidates:
    """Join the candidates of several partitions (each pair is in exactly one of them)."""
    if not parts:
        return Candidates(np.zeros((0, 2), np.int64), np.zeros(0, np.int64))
    return Candidates(
        np.concatenate([p.pairs for p in parts]), np.concatenate([p.hamming for p in parts])
    )


def candidate_summary(candidates: Candidates) -> tuple[int, tuple[LargeBucket, ...], int]:
    """Return what the client needs of a candidate partition.

    Returns:
        ``(pairs, large buckets, table candidates)``.
    """
    return len(candidates.pairs), candidates.large, candidates.table_candidates


def identical_pairs(fingerprints: npt.NDArray[np.uint64]) -> int:
    """Return the pairs of rows with identical fingerprints (counted once, as locally).

    >>> identical_pairs(np.array([[1], [1], [1], [2]], dtype=np.uint64))
    3
    """
    if not len(fingerprints):
        return 0
    _, sizes = np.unique(fingerprints, axis=0, return_counts=True)
    return int((sizes * (sizes - 1) // 2).sum())


def duplicate_groups(fingerprints: npt.NDArray[np.uint64]) -> list[LargeBucket]:
    """Return the groups of over :data:`LARGE_BUCKET` identical fingerprints, as locally.

    Groups come in the order of their fingerprints, each with its five lowest rows.
    """
    if not len(fingerprints):
        return []
    _, inverse, counts = np.unique(fingerprints, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    out = []
    for group in np.flatnonzero(counts > LARGE_BUCKET).tolist():
        size = int(counts[group])
        sample = tuple(np.flatnonzero(inverse == group)[:5].tolist())
        out.append(LargeBucket(-1, size, size * (size - 1) // 2, sample))
    return out
