"""The candidates stage of a distributed scan: Manku's sorted tables as a shuffle.

Locally, each table's rows are sorted by key and equal keys pair up. Distributed, each
partition of weighted rows splits its fingerprints by table and by a hash of their key
(:func:`split_keys`), so a shuffle brings one table's equal keys into one partition, where
:func:`simdup.search.candidates.table_candidates` pairs them as the local engine does
(:func:`bucket_candidates`): a pair sharing keys in several tables is kept by the first of
them only, and the counts the local engine reports (pairs sharing a key, oversized
buckets) add up over the partitions.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from simdup.engines.dask.partitions import Vectors
from simdup.search.candidates import LargeBucket, TableCandidates, table_candidates
from simdup.search.tables import masked_keys

#: Rows per shuffle partition of one table (a row travels as its number and fingerprint).
SHUFFLE_ROWS = 1 << 21


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


def bucket_candidates(
    table: int,
    masks: npt.NDArray[np.uint64],
    max_hamming: int | None,
    *pieces: tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]],
) -> TableCandidates:
    """Return the pairs of one table's shuffle partition that the local engine would find.

    ``pieces`` are the rows and fingerprints each partition of :func:`split_keys` sent.
    """
    if not pieces:
        return TableCandidates(np.zeros((0, 2), np.int64))
    rows = np.concatenate([p[0] for p in pieces])
    fingerprints = np.concatenate([p[1] for p in pieces])
    return table_candidates(rows, fingerprints, masks, table, max_hamming)


def join_candidates(*parts: TableCandidates) -> TableCandidates:
    """Join the candidates of several partitions (each pair is in exactly one of them)."""
    if not parts:
        return TableCandidates(np.zeros((0, 2), np.int64))
    return TableCandidates(np.concatenate([p.pairs for p in parts]))


def candidate_summary(candidates: TableCandidates) -> tuple[int, tuple[LargeBucket, ...], int]:
    """Return what the client needs of a candidate partition.

    Returns:
        ``(pairs, large buckets, table candidates)``.
    """
    return len(candidates.pairs), candidates.large, candidates.table_candidates
