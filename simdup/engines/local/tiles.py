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

import itertools
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.engines.local.stored import Spill, StoredCorpus
from simdup.fingerprints.weights import row_ranges
from simdup.progress import Advance
from simdup.search.held import Held, held_result
from simdup.search.plan.budget import SpillLimits, held_disk, held_pairs
from simdup.search.plan.planner import Plan
from simdup.search.result import Verified, measure
from simdup.search.verify import SharedRows, cosine_many, shared_cosines
from simdup.sizes import format_size
from simdup.spill import Buckets, SpillDir, SpillError, release
from simdup.window import in_order

#: A candidate pair waiting for verification, as written to disk.
WAITING = np.dtype([("pair", np.int64, (2,))])


class Tiles:
    """Candidate pairs gathered by the blocks of their rows (the lower row's block first).

    Args:
        bounds: ``(lo, hi)`` of each block of rows, in order.
        spill: Where pairs past ``waiting`` go.
        waiting: Pairs held in memory before they are written to disk.
    """

    def __init__(self, bounds: Sequence[tuple[int, int]], spill: SpillDir, waiting: int) -> None:
        self.bounds = list(bounds)
        self.starts = np.array([lo for lo, _ in self.bounds], dtype=np.int64)
        self.pairs = Buckets(spill, "waiting.pairs", WAITING, waiting)

    def add(self, pairs: npt.NDArray[np.int64]) -> None:
        """Add candidate pairs ``(i, j)``, ``i < j``."""
        blocks = np.searchsorted(self.starts, pairs, side="right") - 1
        records = np.empty(len(pairs), dtype=WAITING)
        records["pair"] = pairs
        self.pairs.add(blocks[:, 0] * len(self.starts) + blocks[:, 1], records)

    def drain(self) -> Iterator[tuple[list[tuple[int, int]], npt.NDArray[np.int64]]]:
        """Yield the pairs of each tile, tile after tile, each pair once, with its blocks.

        A pair added more than once (a search past its record of emitted pairs leaves the
        repeats to this) is kept once: every copy of a pair is in its tile, whose pairs
        are gathered whole and sorted. The blocks are the ``(lo, hi)`` of the lower row's
        block, then of the higher's when it is another.
        """
        rows = self.bounds[-1][1] if self.bounds else 0
        for tile, parts in itertools.groupby(self.pairs.drain(), key=lambda part: part[0]):
            low, high = divmod(tile, len(self.bounds))
            blocks = [self.bounds[low]] + ([self.bounds[high]] if high != low else [])
            pairs = np.concatenate([records["pair"] for _, records in parts])
            yield blocks, once(pairs, rows)


def once(pairs: npt.NDArray[np.int64], rows: int) -> npt.NDArray[np.int64]:
    """Return each pair ``(i, j)`` of rows below ``rows`` once, in row order.

    >>> once(np.array([[2, 3], [0, 1], [2, 3]]), 4).tolist()
    [[0, 1], [2, 3]]
    """
    keys = pairs[:, 0] * rows + pairs[:, 1]
    keys.sort()
    keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if len(keys) else keys
    return np.stack([keys // max(rows, 1), keys % max(rows, 1)], axis=1)


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


def spilled_pairs(limits: SpillLimits, waiting: int, reported: int) -> int:
    """Return the bytes of pairs a pair search writes to disk: those past their limits.

    ``waiting`` candidate pairs wait for verification, and ``reported`` are held for the
    report (spilled, then sorted into a copy).
    """
    written = waiting * WAITING.itemsize if waiting > limits.waiting_pairs else 0
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
    needed = spilled_pairs(spill.limits, waiting_pairs(plan, seen_limit), reported)
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
    waiting = waiting_pairs(plan, seen_limit)
    pairs = spilled_pairs(spill.limits, waiting, plan.expected_reported)
    return {"directory": spill.directory.parent, "store": store + stored.names, "pairs": pairs}
