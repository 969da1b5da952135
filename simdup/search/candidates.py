"""Fingerprints to candidate pairs: documents that agree exactly on some table's key bits.

The tables themselves (which bit positions key each one, and what they find) are in
:mod:`simdup.search.tables`. Documents are sorted by key within each table and every pair inside
a run of equal keys becomes a candidate (:mod:`simdup.search.buckets`, one table at a time);
this module combines the tables.

Candidates stream out in bounded chunks (:func:`candidate_chunks`), so a huge bucket costs
time, never memory. Identical fingerprints are collapsed first: an exact-duplicate group
yields its pairs once, and the tables bucket one representative per distinct fingerprint.
A pair sharing keys in several tables is emitted once: with a few tables, only by the
first table whose key it shares (no memory kept); with many tables (the planner's, where
a near pair shares most keys and a per-pair test of every earlier table would dominate),
pairs already emitted are remembered in one sorted array and new ones found by merging,
up to a limit past which the earlier keys are tested instead.

A distributed scan shuffles each table's rows by key and finds the same pairs one table's
partition at a time (:func:`table_candidates`, :func:`identical_groups`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from simdup.errors import ParameterError
from simdup.fingerprints.simhash import int_to_words
from simdup.fingerprints.weights import order_of
from simdup.params import SCHEMES
from simdup.search.buckets import bucketed
from simdup.search.identical import Groups, LargeBucket
from simdup.search.tables import (
    TABLE_SEED,
    Tables,
    block_layout,
    block_tables,
    bucket_pairs,
    bucket_sizes,
    clean_ranks,
    distance_tables,
    found_probability,
    masked_keys,
    sampled_tables,
    scheme_tables,
    table_masks,
)

__all__ = [
    "CANDIDATE_CHUNK_PAIRS",
    "DEDUPE_BATCH",
    "FIRST_TABLE_LIMIT",
    "LARGE_BUCKET",
    "MAX_CANDIDATES",
    "SCHEMES",
    "TABLE_SEED",
    "LargeBucket",
    "TableCandidates",
    "Tables",
    "block_layout",
    "block_tables",
    "bucket_pairs",
    "bucket_sizes",
    "candidate_chunks",
    "candidate_pairs",
    "candidates",
    "clean_ranks",
    "distance_tables",
    "found_probability",
    "identical_groups",
    "masked_keys",
    "sampled_tables",
    "scheme_tables",
    "table_candidates",
    "table_masks",
]

#: :func:`candidate_pairs` (which holds every pair in memory) refuses more pairs than this.
#: The pipeline streams instead; the planner warns past it.
MAX_CANDIDATES = 50_000_000

#: Pairs per chunk yielded by :func:`candidate_chunks` (16 bytes each).
CANDIDATE_CHUNK_PAIRS = 1 << 20

#: A bucket with more distinct fingerprints than this is reported as oversized (it is
#: still paired, in chunks): 5,000 members already make 12.5 million pairs.
LARGE_BUCKET = 5_000

#: Up to this many tables, a pair is emitted by the first table it shares a key in (tested
#: against every earlier mask); beyond it, emitted pairs are remembered instead.
FIRST_TABLE_LIMIT = 16

#: Pairs gathered from the tables before they are deduplicated against those emitted.
DEDUPE_BATCH = 1 << 22


def shared_earlier(
    differ: npt.NDArray[np.uint64], masks: npt.NDArray[np.uint64]
) -> npt.NDArray[np.bool_]:
    """Tell which pairs (their fingerprints' XOR, one row each) agree on all bits of a mask.

    A pair that shares the key of an earlier table was already emitted by that table.
    """
    shared = np.zeros(len(differ), dtype=bool)
    for mask in masks:
        used = np.flatnonzero(mask).tolist()
        clean = (differ[:, used[0]] & mask[used[0]]) == 0
        for w in used[1:]:
            clean &= (differ[:, w] & mask[w]) == 0
        shared |= clean
    return shared


def candidate_chunks(
    fingerprints: npt.NDArray[np.uint64],
    tables: Tables,
    *,
    eligible: npt.NDArray[np.bool_] | None = None,
    chunk_pairs: int | None = None,
    large: list[LargeBucket] | None = None,
    large_bucket: int = LARGE_BUCKET,
    max_hamming: int | None = None,
    workers: int = 1,
    counts: dict[str, int] | None = None,
    seen_limit: int | None = None,
    test_earlier: bool = True,
    ahead_bytes: int | None = None,
    pipelined: bool = False,
) -> Iterator[npt.NDArray[np.int64]]:
    """Yield every pair ``(i, j)``, ``i < j``, sharing a key in some table, exactly once.

    Identical fingerprints are grouped first: their pairs come out once (they share every
    key), and each table buckets one representative per distinct fingerprint; a pair of
    representatives stands for every pair across their two groups. A pair is yielded by
    the first table it shares a key in (later tables test the earlier masks, or many tables
    keep a record of the pairs emitted). Chunks hold at most ``chunk_pairs`` pairs, in no
    particular order; a bucket of any size is cut into chunks rather than materialised.

    Args:
        fingerprints: uint64 (n, words).
        tables: The tables to bucket by.
        eligible: bool (n,); documents marked False (e.g. with no features) never pair.
        chunk_pairs: Pairs per yielded chunk at most (default :data:`CANDIDATE_CHUNK_PAIRS`).
        large: When given, buckets with more than ``large_bucket`` members are appended.
        large_bucket: Member count above which a bucket is reported in ``large``.
        max_hamming: Drop pairs farther apart than this, first (the planner's pre-filter).
        workers: Threads bucketing tables at once (used with many tables and a
            pre-filter); the pairs never depend on it.
        counts: When given, ``table_candidates`` is set to the pairs sharing a key,
            summed over tables (before the pre-filter) plus the identical pairs, and
            ``recorded`` to the pairs checked against the record of emitted pairs (many
            tables: those within the pre-filter, each time a table finds one).
        seen_limit: At most this many emitted pairs are remembered (many tables); past
            it, later tables test the earlier keys instead, without memory.
        test_earlier: False: past ``seen_limit`` no test (it costs each table more than
            the last), so pairs may repeat: the caller removes the repeats.
        ahead_bytes: Bytes of pairs a table bucketed ahead may hold (None: all of them).
        pipelined: With one thread bucketing, make the tables' pairs in another while
            this one takes them (the fit decides when); the pairs never depend on it.

    Yields:
        int64 (m, 2) arrays of row numbers.
    """
    chunk_pairs = max(1, CANDIDATE_CHUNK_PAIRS if chunk_pairs is None else chunk_pairs)
    if (len(fingerprints) if eligible is None else int(np.count_nonzero(eligible))) < 2:
        return
    groups = Groups.of(fingerprints, keep=eligible)  # read in place: no copy of the rows
    if large is not None:
        large += groups.oversized(large_bucket)
    if counts is not None:
        counts["table_candidates"] = groups.identical_pairs()
    masks = table_masks(tables)
    limits = (seen_limit, test_earlier, ahead_bytes, pipelined)
    pairing = _Pairing(chunk_pairs, max_hamming, large, large_bucket, counts, *limits)
    found = _table_pieces(
        groups, masks, pairing, remember=len(masks) > FIRST_TABLE_LIMIT, workers=workers
    )
    pending: list[npt.NDArray[np.int64]] = []
    held = 0
    # The pairs of identical fingerprints (each once), then the tables'.
    for piece in itertools.chain(groups.duplicates(chunk_pairs), found):
        if held + len(piece) > chunk_pairs and pending:
            yield np.concatenate(pending)
            pending, held = [], 0
        if len(piece):
            pending.append(piece)
            held += len(piece)
    if pending:
        yield np.concatenate(pending)


@dataclass(frozen=True)
class TableCandidates:
    """The pairs one table finds first among some rows, and what a scan reports of them.

    Attributes:
        pairs: int64 (m, 2) rows, ``i < j``.
        large: The table's buckets among the rows with more than :data:`LARGE_BUCKET`
            distinct fingerprints.
        table_candidates: Pairs of distinct fingerprints among the rows sharing a key of
            the table, before the Hamming pre-filter.
    """

    pairs: npt.NDArray[np.int64]
    large: tuple[LargeBucket, ...] = ()
    table_candidates: int = 0


def table_candidates(
    rows: npt.NDArray[np.int64],
    fingerprints: npt.NDArray[np.uint64],
    masks: npt.NDArray[np.uint64],
    table: int,
    max_hamming: int | None,
) -> TableCandidates:
    """Return the pairs among ``rows`` that :func:`candidate_chunks` yields from ``table``.

    For a distributed scan, where a shuffle brings the rows of each key of a table into
    one partition: pairs sharing a key of an earlier table are left to that table (as
    :func:`candidate_chunks` leaves them), and identical fingerprints, which share every
    key, pair in the first table. Over every partition of every table, each pair of
    :func:`candidate_chunks` is found once, and the large buckets and the table
    candidates add up to its own but for the groups of identical fingerprints (see
    :func:`identical_groups`).

    Args:
        rows: int64 (n,), distinct row numbers.
        fingerprints: uint64 (n, words), those of ``rows``.
        masks: The tables' masks (:func:`~simdup.search.tables.table_masks`).
        table: The table whose keys the rows share.
        max_hamming: The pre-filter of :func:`candidate_chunks`.
    """
    order = np.argsort(rows, kind="stable")  # members in row order: samples as locally
    rows = rows[order]
    large: list[LargeBucket] = []
    counts = {"table_candidates": 0}
    found: list[npt.NDArray[np.int64]] = []
    if len(rows) > 1:
        groups = Groups.of(fingerprints[order], names=rows)
        pairing = _Pairing(CANDIDATE_CHUNK_PAIRS, max_hamming, large, LARGE_BUCKET, counts)
        if table == 0:
            found += groups.duplicates(CANDIDATE_CHUNK_PAIRS)
        found += _table_pieces(groups, masks[: table + 1], pairing, first=table)
    pairs = np.concatenate(found) if found else np.zeros((0, 2), dtype=np.int64)
    return TableCandidates(pairs, tuple(large), counts["table_candidates"])


def identical_groups(fingerprints: npt.NDArray[np.uint64]) -> tuple[int, list[LargeBucket]]:
    """Return what :func:`candidate_chunks` reports of the groups of identical fingerprints.

    Returns:
        The pairs inside the groups (counted in ``table_candidates``), and the groups of
        over :data:`LARGE_BUCKET` members, in the order of their fingerprints.

    >>> identical_groups(np.array([[1], [1], [1], [2]], dtype=np.uint64))
    (3, [])
    """
    groups = Groups.of(fingerprints)
    return groups.identical_pairs(), groups.oversized(LARGE_BUCKET)


@dataclass(frozen=True)
class _Pairing:
    """How the tables' buckets are paired, and where what they meet is reported.

    Attributes:
        chunk_pairs: Pairs per piece at most.
        max_hamming: The Hamming pre-filter (None: every pair is kept).
        large: Buckets of more than ``large_bucket`` members are appended here.
        large_bucket: See ``large``.
        counts: ``table_candidates`` is increased by the pairs sharing a key.
        seen_limit: Emitted pairs remembered at most (see :func:`candidate_chunks`).
        test_earlier: Past ``seen_limit``, later tables test the earlier keys (False:
            the caller removes repeats).
        ahead_bytes: Bytes of pairs a table bucketed ahead may hold (None: unbounded).
        pipelined: One thread bucketing makes a table's pairs in another thread while the
            reader takes them (see :func:`~simdup.search.buckets.bucketed`).
    """

    chunk_pairs: int
    max_hamming: int | None
    large: list[LargeBucket] | None
    large_bucket: int
    counts: dict[str, int] | None
    seen_limit: int | None = None
    test_earlier: bool = True
    ahead_bytes: int | None = None
    pipelined: bool = False


def _table_pieces(
    groups: Groups,
    masks: npt.NDArray[np.uint64],
    pairing: _Pairing,
    *,
    first: int = 0,
    remember: bool = False,
    workers: int = 1,
) -> Iterator[npt.NDArray[np.int64]]:
    """Yield the pairs tables ``first`` and after find between groups, each pair once.

    A pair is yielded by the first table sharing its key: later tables test the earlier
    keys, or, with ``remember`` (many tables), the pairs emitted are remembered, up to
    ``pairing.seen_limit`` of them; see :func:`candidate_chunks`.
    """
    prints, chunk_pairs, max_hamming = groups.prints, pairing.chunk_pairs, pairing.max_hamming
    seen = _Seen(len(groups.size))
    forget_after = 0  # tables after this one test the earlier keys (without a record)
    # Many tables with a pre-filter (the planner's): tables are bucketed and filtered in
    # threads, a few ahead, and taken in table order. Each yields few pairs, so holding a
    # table's pairs is cheap; without a pre-filter a table is streamed in this thread.
    threads = workers if remember and max_hamming is not None else 1
    tables = bucketed(
        prints,
        masks[first:],
        chunk_pairs,
        max_hamming,
        threads,
        pairing.ahead_bytes,
        pipelined=pairing.pipelined,  # with more threads it changes nothing
    )
    for t, (order, starts, sizes, found) in enumerate(tables, start=first):
        if pairing.large is not None:
            for k in np.flatnonzero(sizes > pairing.large_bucket).tolist():
                pairing.large.append(groups.large_bucket(t, order, int(starts[k]), int(sizes[k])))
        for a, b, raw in found:
            if pairing.counts is not None:
                pairing.counts["table_candidates"] = pairing.counts.get("table_candidates", 0) + raw
            if remember:
                if pairing.counts is not None:
                    pairing.counts["recorded"] = pairing.counts.get("recorded", 0) + len(a)
                if seen.add(a, b) < DEDUPE_BATCH:
                    continue
                a, b = seen.flush()
                if pairing.seen_limit is not None and len(seen.emitted) > pairing.seen_limit:
                    # The record may grow no more: from here on (the rest of this table
                    # too) a pair is emitted by the first table sharing its key; every
                    # pair of the tables before was emitted above or is among these.
                    remember = False
                    seen = _Seen(len(groups.size))
                    # Without the test, no table after this one is tested either.
                    forget_after = t - 1 if pairing.test_earlier else len(masks) + first
            elif t > forget_after:
                fresh = ~shared_earlier(prints.xor(a, b), masks[:t])
                a, b = a[fresh], b[fresh]
            yield from groups.expand(a, b, chunk_pairs)
    if remember:
        yield from groups.expand(*seen.flush(), chunk_pairs)


def sorted_distinct(keys: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Return each of ``keys`` once, ascending; ``keys`` is sorted in place.

    A plain sort, then the first of each run: several times faster than ``np.unique``'s
    hashing on pair keys.

    >>> sorted_distinct(np.array([5, 1, 5, 3, 1])).tolist()
    [1, 3, 5]
    """
    keys.sort()
    return keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if len(keys) else keys


class _Seen:
    """Pairs of representatives already emitted, as sorted ``a * n + b`` keys.

    Pairs from the tables are gathered (:meth:`add`) and, in batches, deduplicated and
    merged into the sorted record (:meth:`flush`): memory grows with the distinct pairs
    emitted, not with how many tables found each of them.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.emitted = np.zeros(0, dtype=np.int64)
        self.pending: list[npt.NDArray[np.int64]] = []
        self.held = 0

    def add(self, a: npt.NDArray[np.int64], b: npt.NDArray[np.int64]) -> int:
        """Gather pairs ``a < b``; return how many are waiting."""
        if len(a):
            self.pending.append(a * self.n + b)
            self.held += len(a)
        return self.held

    def flush(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Return the waiting pairs not emitted before, and record them as emitted."""
        keys = sorted_distinct(np.concatenate(self.pending) if self.pending else self.emitted[:0])
        self.pending, self.held = [], 0
        if len(self.emitted) and len(keys):
            at = np.searchsorted(self.emitted, keys)
            fresh = self.emitted[np.minimum(at, len(self.emitted) - 1)] != keys
            keys, at = keys[fresh], at[fresh]
            if len(keys):
                self.emitted = merged(self.emitted, keys, at)
        elif len(keys):
            self.emitted = keys
        return keys // self.n, keys % self.n


def merged(
    emitted: npt.NDArray[np.int64], keys: npt.NDArray[np.int64], at: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """Return sorted ``emitted`` and ``keys`` (none among them) as one sorted array.

    ``at`` is ``np.searchsorted(emitted, keys)``. Each key goes to its place and the rest
    are filled in order: one new array besides the two given and a byte per entry, where a
    sort of the two joined holds three copies and its buffer.

    >>> merged(np.array([1, 4, 9]), np.array([0, 5]), np.array([0, 2])).tolist()
    [0, 1, 4, 5, 9]
    """
    out = np.empty(len(emitted) + len(keys), dtype=np.int64)
    place = at + np.arange(len(keys))
    taken = np.zeros(len(out), dtype=bool)
    taken[place] = True
    out[place] = keys
    np.logical_not(taken, out=taken)
    out[taken] = emitted
    return out


def candidate_pairs(
    fingerprints: npt.NDArray[np.uint64],
    tables: Tables,
    *,
    eligible: npt.NDArray[np.bool_] | None = None,
    max_candidates: int = MAX_CANDIDATES,
) -> npt.NDArray[np.int64]:
    """Return the unique pairs ``(i, j)``, ``i < j``, sharing a key in some table.

    Holds every pair in memory; the pipeline uses :func:`candidate_chunks` instead.

    Args:
        fingerprints: uint64 (n, words).
        tables: The tables to bucket by.
        eligible: bool (n,); documents marked False (e.g. with no features) never pair.
        max_candidates: Refuse when there are more pairs than this.

    Returns:
        int64 (m, 2), sorted lexicographically.

    Raises:
        ParameterError: when there are more than ``max_candidates`` pairs.
    """
    found: list[npt.NDArray[np.int64]] = []
    count = 0
    for chunk in candidate_chunks(fingerprints, tables, eligible=eligible):
        count += len(chunk)
        if count > max_candidates:
            raise ParameterError(
                f"these blocking tables make {count:,}+ candidate pairs (limit "
                f"{max_candidates:,}); use fewer blocks, a smaller --max-distance or more --bits"
            )
        found.append(chunk)
    if not found:
        return np.zeros((0, 2), dtype=np.int64)
    pairs = np.concatenate(found)
    return pairs[order_of(pairs[:, 0], pairs[:, 1], int(pairs[:, 1].max()) + 1)]


def candidates(
    fingerprints: Sequence[int] | npt.NDArray[np.uint64], bits: int, blocks: int
) -> npt.NDArray[np.int64]:
    """Return every pair (i < j) whose fingerprints agree exactly on at least one block.

    Args:
        fingerprints: Int fingerprints, or a uint64 (n, words) array.
        bits: Fingerprint width.
        blocks: Number of contiguous blocks (1 to ``bits``).

    Returns:
        int64 array (m, 2) of index pairs, sorted.

    >>> candidates([0b1111, 0b1110, 0b0001], bits=4, blocks=2).tolist()
    [[0, 1]]
    """
    if isinstance(fingerprints, np.ndarray):
        array = fingerprints
    else:
        array = np.array([int_to_words(f, bits) for f in fingerprints], dtype=np.uint64)
        array = array.reshape(len(fingerprints), -(-bits // 64))
    return candidate_pairs(array, block_tables(bits, blocks))
