"""The pair search of a stored corpus: candidates verified a pair of row blocks at a time.

The weights of a stored corpus are not in memory, and reading two rows at random for each
candidate would read the store over and over. The rows are cut into blocks of about
:attr:`~simdup.search.plan.budget.SpillLimits.block_entries` entries; each candidate pair
goes to the tile of its two rows' blocks (:class:`Tiles`: held in memory up to a limit,
past it written to disk in runs). Once every candidate is found, each tile is verified in
turn: the rows its pairs need are read from the store in row order, as a small matrix,
and its pairs measured there (a cosine depends on its two rows alone, so the bits are
those of the whole matrix). The pairs to report are held up to a limit too, and past it
spilled by score and put in order a score range at a time (:class:`Held`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.engines.local.stored import Spill
from simdup.fingerprints.weights import StoredWeights, row_ranges
from simdup.model import PairArrays
from simdup.progress import Advance
from simdup.search.plan.budget import SpillLimits, format_size
from simdup.search.plan.planner import Plan
from simdup.search.result import Verified, canonical_order, measure
from simdup.spill import Buckets, SpillDir, SpillError
from simdup.window import in_order

#: A candidate pair waiting for verification, as written to disk.
WAITING = np.dtype([("pair", np.int64, (2,))])

#: A reported pair held for the report, as written to disk.
REPORTED = np.dtype(
    [
        ("pair", np.int64, (2,)),
        ("hamming", np.int64),
        ("estimated", np.float64),
        ("cosine", np.float64),
    ]
)

#: Score ranges spilled reported pairs are sorted by, one range at a time.
SCORE_BINS = 4096


class Tiles:
    """Candidate pairs gathered by the blocks of their rows (the lower row's block first).

    Args:
        indptr: The stored matrix's row pointers.
        block_entries: Entries in a block of rows.
        spill: Where pairs past ``waiting`` go.
        waiting: Pairs held in memory before they are written to disk.
    """

    def __init__(
        self, indptr: npt.NDArray[np.int64], block_entries: int, spill: SpillDir, waiting: int
    ) -> None:
        self.starts = np.array([lo for lo, _ in row_ranges(indptr, block_entries)], np.int64)
        self.pairs = Buckets(spill, "waiting.pairs", WAITING, waiting)

    def add(self, pairs: npt.NDArray[np.int64]) -> None:
        """Add candidate pairs ``(i, j)``, ``i < j``."""
        blocks = np.searchsorted(self.starts, pairs, side="right") - 1
        records = np.empty(len(pairs), dtype=WAITING)
        records["pair"] = pairs
        self.pairs.add(blocks[:, 0] * len(self.starts) + blocks[:, 1], records)

    def drain(self) -> Iterator[npt.NDArray[np.int64]]:
        """Yield the pairs of each tile that has any, tile after tile."""
        for _, records in self.pairs.drain():
            yield np.ascontiguousarray(records["pair"])


class Held:
    """Pairs to report: in memory up to ``limit``, past it on disk by score range.

    Args:
        spill: Where pairs past ``limit`` go.
        limit: Pairs held in memory.
    """

    def __init__(self, spill: SpillDir, limit: int) -> None:
        self.spill = spill
        self.limit = limit
        self.parts: list[PairArrays] = []
        self.count = 0
        self.bins: Buckets | None = None

    def add(self, kept: PairArrays) -> None:
        """Hold more pairs to report."""
        if self.bins is not None:
            self._spill(kept)
            return
        self.parts.append(kept)
        self.count += len(kept)
        if self.count > self.limit:
            self.bins = Buckets(self.spill, "held.pairs", REPORTED, self.limit)
            for part in self.parts:
                self._spill(part)
            self.parts = []

    def _spill(self, pairs: PairArrays) -> None:
        assert self.bins is not None
        records = np.empty(len(pairs), dtype=REPORTED)
        records["pair"] = pairs.pairs
        records["hamming"] = pairs.hamming
        records["estimated"] = pairs.estimated
        records["cosine"] = pairs.cosine
        self.bins.add(score_bins(pairs.score()), records)

    def ordered(self) -> PairArrays:
        """Return every pair held, in :func:`~simdup.search.result.canonical_order`.

        Pairs spilled are sorted a score range at a time, into files mapped back.
        """
        if self.bins is None:
            return canonical_order((), PairArrays.join(self.parts))
        kinds = {"pairs": np.int64, "hamming": np.int64, "estimated": np.float64}
        columns = [
            self.spill.column(f"reported.{name}", kind)
            for name, kind in {**kinds, "cosine": np.float64}.items()
        ]
        for _, records in self.bins.drain():
            part = canonical_order(
                (),
                PairArrays(
                    np.ascontiguousarray(records["pair"]),
                    np.ascontiguousarray(records["hamming"]),
                    np.ascontiguousarray(records["estimated"]),
                    np.ascontiguousarray(records["cosine"]),
                ),
            )
            for column, values in zip(
                columns,
                (part.pairs.reshape(-1), part.hamming, part.estimated, part.cosine),
                strict=True,
            ):
                column.append(values)
        pairs, hamming, estimated, cosine = (column.mapped() for column in columns)
        return PairArrays(pairs.reshape(-1, 2), hamming, estimated, cosine)


def score_bins(score: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """Return each score's range: ranges in order hold scores from the highest down.

    Equal scores share a range, so sorting each range and joining them in order gives
    the order of the whole (an unknown score, NaN, sorts last).
    """
    bins = np.floor((1.0 - np.nan_to_num(score, nan=-1.0)) / 2.0 * SCORE_BINS)
    bins = np.clip(bins, 0, SCORE_BINS - 1).astype(np.int64)
    return np.where(np.isnan(score), SCORE_BINS, bins)


def verify_stored(
    chunks: Iterator[npt.NDArray[np.int64]],
    *,
    stored: StoredWeights,
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

    Returns the counts of every tile's verification (one part), with the pairs to report in
    :func:`~simdup.search.result.canonical_order`. Adds the time spent finding candidates
    to ``timings["candidates"]`` and the time verifying them to ``timings["verify"]``;
    ``advance``, when given, is told the pairs of each tile verified.
    """
    limits = spill.limits
    tiles = Tiles(stored.matrix.indptr, limits.block_entries, spill.directory, limits.waiting_pairs)
    clock = time.perf_counter()
    for chunk in chunks:
        tiles.add(chunk)
    timings["candidates"] += time.perf_counter() - clock

    def verify(pairs: npt.NDArray[np.int64]) -> Verified:
        rows = np.unique(pairs)
        measured = measure(stored.take(rows), fingerprints, pairs, bits, rows=rows)
        return Verified.of(measured, threshold, report_all)

    clock = time.perf_counter()
    held = Held(spill.directory, limits.held_pairs)
    candidates = above = 0
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for result in in_order(lambda p: pool.submit(verify, p), tiles.drain(), workers - 1):
            candidates += result.candidates
            above += result.above_threshold
            held.add(result.kept)
            if advance is not None:
                advance(result.candidates)
    reported = held.ordered()
    timings["verify"] += time.perf_counter() - clock
    return [Verified(candidates, above, reported)]


def spilled_pairs(limits: SpillLimits, verified: int, reported: int) -> int:
    """Return the bytes of pairs a pair search writes to disk: those past their limits.

    ``verified`` candidate pairs wait for verification, and ``reported`` are held for the
    report (spilled, then sorted into a copy).
    """
    waiting = verified * WAITING.itemsize if verified > limits.waiting_pairs else 0
    held = 2 * reported * REPORTED.itemsize if reported > limits.held_pairs else 0
    return waiting + held


def check_room(spill: Spill, plan: Plan, report_all: bool) -> None:
    """Refuse, before any pair work, a pair search whose spilled pairs would not fit on disk.

    Raises:
        SpillError: naming the room needed and the room free.
    """
    reported = plan.expected_verified if report_all else plan.expected_reported
    needed = spilled_pairs(spill.limits, plan.expected_verified, reported)
    free = spill.directory.free()
    if needed > free:
        raise SpillError(
            f"the pair search's temporary files need about {format_size(needed)} in "
            f"{spill.directory.parent}, which has {format_size(free)} free; free some space "
            "there or choose another directory with --tmp-dir"
        )


def stored_disk(stored: StoredWeights, names: int, spill: Spill, plan: Plan) -> dict[str, Any]:
    """Return what a stored corpus's scan writes to disk, for its plan (``disk``, in bytes).

    ``names``: bytes of the stored names.
    """
    store = stored.indices.length * stored.indices.dtype.itemsize
    store += stored.data.length * stored.data.dtype.itemsize + names
    pairs = spilled_pairs(spill.limits, plan.expected_verified, plan.expected_reported)
    return {"directory": spill.directory.parent, "store": store, "pairs": pairs}
