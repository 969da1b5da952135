"""The pair search of a stored corpus: candidates verified a pair of row blocks at a time.

The weights of a stored corpus are not in memory, and reading two rows at random for each
candidate would read the store over and over. The rows are cut into blocks of about
:attr:`~simdup.search.plan.budget.SpillLimits.block_entries` entries; each candidate pair
goes to the tile of its two rows' blocks (:class:`Tiles`: held in memory up to a limit,
past it written to disk in runs). Once every candidate is found, each tile is verified in
turn: the rows its pairs need are read from the store in row order, as a small matrix,
and its pairs measured there (a cosine depends on its two rows alone, so the bits are
those of the whole matrix). The pairs to report are held up to a limit too, and past it
spilled by score and put in order a score range at a time
(:class:`~simdup.search.held.Held`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.engines.local.stored import Spill, StoredCorpus
from simdup.fingerprints.weights import row_ranges
from simdup.progress import Advance
from simdup.search.candidates import sorted_distinct
from simdup.search.held import Held, held_result
from simdup.search.plan.budget import SpillLimits, held_disk, held_pairs
from simdup.search.plan.planner import Plan
from simdup.search.result import Verified, measure
from simdup.search.verify import SharedRows, cosine_many, shared_cosines
from simdup.sizes import format_size
from simdup.spill import Buckets, SpillDir, SpillError, release
from simdup.window import in_order

#: A candidate pair waiting for verification, as written to disk: two row numbers, 32 bits
#: each while the rows allow (:func:`waiting_dtype`).
WAITING = np.dtype([("pair", np.uint32, (2,))])

#: The same for a corpus of 2**32 rows or more.
WAITING_WIDE = np.dtype([("pair", np.int64, (2,))])

#: Buckets the waiting pairs are spread over, at least: each tile's pairs are cut by a
#: hash of the pair into this many over all tiles, so that a tile's pairs are kept once
#: (its copies gathered and sorted) a batch of whole buckets at a time, in bounded memory,
#: however many pairs the tile holds.
SPREAD_BUCKETS = 1 << 12


def waiting_dtype(rows: int) -> np.dtype[Any]:
    """Return the record of a pair waiting for verification among ``rows`` rows."""
    return WAITING if rows <= 1 << 32 else WAITING_WIDE


class Tiles:
    """Candidate pairs gathered by the blocks of their rows (the lower row's block first).

    Each tile's pairs are spread over :func:`spread` buckets by a hash of the pair (every
    copy of a pair in one bucket).

    Args:
        bounds: ``(lo, hi)`` of each block of rows, in order.
        spill: Where pairs past ``waiting`` go.
        waiting: Pairs held in memory before they are written to disk, and at most (but
            for one bucket) in a batch kept once.
    """

    def __init__(self, bounds: Sequence[tuple[int, int]], spill: SpillDir, waiting: int) -> None:
        self.bounds = list(bounds)
        self.starts = np.array([lo for lo, _ in self.bounds], dtype=np.int64)
        self.rows = self.bounds[-1][1] if self.bounds else 0
        self.dtype = waiting_dtype(self.rows)
        self.spread = spread(len(self.bounds))
        self.pairs = Buckets(spill, "waiting.pairs", self.dtype, waiting)

    def add(self, pairs: npt.NDArray[np.int64]) -> None:
        """Add candidate pairs ``(i, j)``, ``i < j``."""
        records = np.empty(len(pairs), dtype=self.dtype)
        records["pair"] = pairs
        self.pairs.add(self.bucket_of(pairs), records)

    def bucket_of(self, pairs: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """Return the bucket of each pair: its tile's, spread by a hash of the pair."""
        blocks = np.searchsorted(self.starts, pairs, side="right") - 1
        tiles = blocks[:, 0] * len(self.starts) + blocks[:, 1]
        return tiles * self.spread + pair_hash(pairs, self.spread)

    def drain(self) -> Iterator[tuple[list[tuple[int, int]], npt.NDArray[np.int64]]]:
        """Yield the pairs of each tile, tile after tile, each pair once, with its blocks.

        A pair added more than once (a search past its record of emitted pairs leaves the
        repeats to this) is kept once: every copy of a pair is in one bucket of its tile,
        and whole buckets are gathered and sorted, in batches of about ``waiting`` pairs.
        The blocks are the ``(lo, hi)`` of the lower row's block, then of the higher's
        when it is another; a tile may come in several batches, one after another.
        """
        batch: list[npt.NDArray[Any]] = []
        held, tile, last = 0, -1, -1
        for bucket, records in self.pairs.drain():  # a bucket may come in several parts
            if bucket != last and (bucket // self.spread != tile or held >= self.pairs.limit):
                if batch:
                    yield self._blocks(tile), once(batch, self.rows)
                batch, held, tile = [], 0, bucket // self.spread
            batch.append(records)
            held += len(records)
            last = bucket
        if batch:
            yield self._blocks(tile), once(batch, self.rows)

    def _blocks(self, tile: int) -> list[tuple[int, int]]:
        """Return the blocks of rows of ``tile``: the lower row's, then the higher's if other."""
        low, high = divmod(tile, len(self.bounds))
        return [self.bounds[low]] + ([self.bounds[high]] if high != low else [])


def spread(blocks: int) -> int:
    """Return how many buckets each tile of ``blocks`` blocks of rows is spread over.

    >>> spread(1), spread(8), spread(100)
    (4096, 114, 1)
    """
    tiles = blocks * (blocks + 1) // 2
    return max(1, -(-SPREAD_BUCKETS // max(tiles, 1)))


def pair_hash(pairs: npt.NDArray[np.int64], buckets: int) -> npt.NDArray[np.int64]:
    """Return a bucket below ``buckets`` for each pair, from a hash of both rows.

    >>> pair_hash(np.array([[0, 1], [0, 1], [5, 9]]), 1).tolist()
    [0, 0, 0]
    """
    if buckets == 1:
        return np.zeros(len(pairs), dtype=np.int64)
    mixed = pairs[:, 0].astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    mixed ^= pairs[:, 1].astype(np.uint64) * np.uint64(0xC2B2AE3D27D4EB4F)
    mixed ^= mixed >> np.uint64(29)
    bucket: npt.NDArray[np.int64] = (mixed % np.uint64(buckets)).astype(np.int64)
    return bucket


def once(parts: Sequence[npt.NDArray[Any]], rows: int) -> npt.NDArray[np.int64]:
    """Return each pair ``(i, j)`` of rows below ``rows`` in the records ``parts`` once, in order.

    >>> parts = [np.array([([2, 3],), ([0, 1],)], WAITING), np.array([([2, 3],)], WAITING)]
    >>> once(parts, 4).tolist()
    [[0, 1], [2, 3]]
    """
    width = max(rows, 1)
    keys = np.concatenate(
        [np.zeros(0, np.int64)]
        + [p["pair"][:, 0].astype(np.int64) * width + p["pair"][:, 1] for p in parts]
    )
    keys = sorted_distinct(keys)
    return np.stack([keys // width, keys % width], axis=1)


def local_rows(
    blocks: Sequence[tuple[int, int]], pairs: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """Return pairs numbered within their tile's rows: the first block's, then the second's.

    >>> local_rows([(10, 20), (50, 60)], np.array([[12, 55], [19, 50]])).tolist()
    [[2, 15], [9, 10]]
    """
    (low, high), *other = blocks
    local = pairs - low
    if other:
        local[:, 1] = pairs[:, 1] - other[0][0] + (high - low)
    return local


#: Pairs of a tile measured at a time (each thread holds their temporaries).
PIECE_PAIRS = 1 << 20


def verify_stored(
    chunks: Iterator[npt.NDArray[np.int64]],
    *,
    stored: StoredCorpus,
    fingerprints: npt.NDArray[np.uint64],
    bits: int,
    threshold: float,
    report_all: bool,
    spill: Spill,
    workers: int,
    timings: dict[str, float],
    advance: Advance | None,
) -> list[Verified]:
    """Verify the candidate ``chunks`` of a stored corpus, tile by tile, in ``workers`` threads.

    Each tile's rows are read once, as one or two spans of the shared rows' files, and its
    pairs measured in parts of :data:`PIECE_PAIRS`. Returns the counts of every tile's
    verification (one part), with the pairs to report in
    :func:`~simdup.search.result.canonical_order`. Adds the time spent finding candidates
    to ``timings["candidates"]`` and the time verifying them to ``timings["verify"]``;
    ``advance``, when given, is told the pairs of each part verified.
    """
    shared = stored.shared
    bounds = row_ranges(shared.indptr, spill.limits.block_entries)
    release(shared.indptr)
    tiles = Tiles(bounds, spill.directory, spill.limits.waiting_pairs)
    clock = time.perf_counter()
    for chunk in chunks:
        tiles.add(chunk)
    timings["candidates"] += time.perf_counter() - clock

    def parts() -> Iterator[tuple[SharedRows | None, npt.NDArray[np.int64], npt.NDArray[np.int64]]]:
        """Yield the pairs to measure a part at a time, with their tile's rows."""
        read: tuple[list[tuple[int, int]], SharedRows | None] | None = None
        for blocks, pairs in tiles.drain():
            if read is None or read[0] != blocks:
                read = None  # the last tile's rows go before this one's come
                read = (blocks, shared.read(blocks) if shared.dense else None)
            local = local_rows(blocks, pairs)
            for lo in range(0, len(pairs), PIECE_PAIRS):
                yield read[1], pairs[lo : lo + PIECE_PAIRS], local[lo : lo + PIECE_PAIRS]

    def verify(
        part: tuple[SharedRows | None, npt.NDArray[np.int64], npt.NDArray[np.int64]],
    ) -> Verified:
        rows, pairs, local = part
        if rows is not None:
            cosines = shared_cosines(rows, local)
        else:  # too many shared features for dense blocks: the pairs' rows, read alone
            wanted = np.unique(pairs)
            cosines = cosine_many(stored.weights.take(wanted), np.searchsorted(wanted, pairs))
        measured = measure(None, fingerprints, pairs, bits, cosines=cosines)
        return Verified.of(measured, threshold, report_all)

    clock = time.perf_counter()
    held = Held(spill.directory, spill.limits.held_pairs, len(fingerprints))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        verified = in_order(lambda p: pool.submit(verify, p), parts(), workers - 1)
        result = held_result(verified, held, advance)
    timings["verify"] += time.perf_counter() - clock
    return [result]


def spilled_pairs(limits: SpillLimits, plan: Plan, seen_limit: int | None, reported: int) -> int:
    """Return the bytes of pairs a stored corpus's pair search writes to disk, past limits.

    The candidate pairs :func:`waiting_pairs` wait for verification, and ``reported`` are
    held for the report (spilled, then sorted into a copy).
    """
    waiting = waiting_pairs(plan, seen_limit)
    size = waiting_dtype(plan.documents).itemsize
    written = waiting * size if waiting > limits.waiting_pairs else 0
    return written + held_disk(reported, limits.held_pairs)


def waiting_pairs(plan: Plan, seen_limit: int | None) -> int:
    """Return the candidate pairs a stored corpus's search leaves to verification.

    Each pair once while the record of emitted pairs holds them; past ``seen_limit`` the
    repeats too (every table that meets a pair within the pre-filter adds it).
    """
    if seen_limit is None or seen_limit >= plan.expected_verified:
        return plan.expected_verified
    return max(plan.expected_verified, plan.expected_recorded)


def check_room(spill: Spill, plan: Plan, report_all: bool, seen_limit: int | None) -> None:
    """Refuse, before any pair work, a pair search whose spilled pairs would not fit on disk.

    Raises:
        SpillError: naming the room needed and the room free.
    """
    reported = held_pairs(plan, report_all)
    needed = spilled_pairs(spill.limits, plan, seen_limit, reported)
    free = spill.directory.free()
    if needed > free:
        raise SpillError(
            f"the pair search's temporary files need about {format_size(needed)} in "
            f"{spill.directory.parent}, which has {format_size(free)} free; free some space "
            "there or choose another directory with --tmp-dir"
        )


def stored_disk(
    stored: StoredCorpus, spill: Spill, plan: Plan, seen_limit: int | None
) -> dict[str, Any]:
    """Return what a stored corpus's scan writes to disk, for its plan (``disk``, in bytes)."""
    shared = stored.shared
    columns = [stored.weights.indices, stored.weights.data, shared.columns, shared.data]
    columns.append(shared.squares)
    store = sum(c.length * c.dtype.itemsize for c in columns) + stored.shared.indptr.nbytes
    pairs = spilled_pairs(spill.limits, plan, seen_limit, plan.expected_reported)
    return {"directory": spill.directory.parent, "store": store + stored.names, "pairs": pairs}
