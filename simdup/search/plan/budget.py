"""The memory a plan will take, part by part, and how it fits a budget.

A scan is refused before any pair work when no plan would fit
(:func:`simdup.search.plan.choice.fitted`), rather than started and killed by the system
halfway. What grows with the corpus is predicted from the plan: the tables' sort buffers,
the record of pairs already emitted, the chunks in flight, the pairs held for the report,
and for an exact scan its dense block. The memory the run holds at the time of the check
(the corpus, its weights and fingerprints, in this process and any worker process still
running) is added to that. A plan that would not fit gives way before it is refused
(:func:`fit_of`): the record of emitted pairs, then the second table thread, then the
chunks' size; a stored corpus's blocks of rows, an exact scan's blocks, and reported pairs
that may go to disk take the room left.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass

from simdup.errors import SimdupError
from simdup.search.candidates import CANDIDATE_CHUNK_PAIRS, DEDUPE_BATCH, FIRST_TABLE_LIMIT
from simdup.search.exact import BLOCK_CAP, BYTES_PER_PAIR
from simdup.search.plan.memory import held_entries, resident_memory
from simdup.search.plan.parts import (
    CHUNK_SHARE,
    ahead_bytes,
    index_bytes,
    table_bytes,
    verify_bytes,
)
from simdup.search.plan.planner import Plan

#: Bytes a reported pair takes while held for the report (row pair, distance, two cosines).
PAIR_BYTES = 40

#: Bytes per pair remembered as emitted (a sorted int64, and its copy while merging).
SEEN_BYTES = 16

#: An exact scan's block holds at least this many rows (or every row).
MIN_BLOCK_ROWS = 16

#: Bytes per candidate pair in flight: the pair, its distance, estimate, cosine, score.
CHUNK_BYTES_PER_PAIR = 56

#: Chunks are never smaller than this many pairs (smaller ones cost more per pair).
MIN_CHUNK_PAIRS = 1 << 14

#: Chunks that give way to a budget hold within this many pairs of the most that fit.
CHUNK_STEP = 1 << 10


class BudgetError(SimdupError):
    """A scan's plan needs more memory than allowed (raised before any pair work)."""


@dataclass(frozen=True)
class HeldSpill:
    """Where the reported pairs of a corpus held in memory may go past their share.

    Attributes:
        pairs: Pairs held in memory however many more go to disk (their share of the
            budget, :attr:`SpillLimits.held_pairs`).
        free: Bytes free on the disk of ``directory``.
        directory: Where the temporary files go.
        exact_only: Only an exact scan's pairs go there (the Dask engine verifies a plan
            of tables on its workers and gathers the pairs in memory).
    """

    pairs: int
    free: int
    directory: str
    exact_only: bool = False

    def holds(self, reported: int) -> bool:
        """Tell whether the disk has room for the pairs past the share of ``reported``."""
        return held_disk(reported, self.pairs) <= self.free

    def takes(self, plan: Plan) -> bool:
        """Tell whether ``plan``'s reported pairs may go to disk (see ``exact_only``)."""
        return plan.exact or not self.exact_only


@dataclass(frozen=True)
class Footprint:
    """Memory a scan will take beyond what is resident, by part (bytes).

    Attributes:
        resident: Resident memory when the check is made (corpus, weights, fingerprints).
        tables: Tables being bucketed at once.
        seen: The record of pairs already emitted (many tables).
        chunks: Candidate chunks in flight and verification temporaries.
        held: Pairs held for the report (an upper bound: every verified pair).
        exact: The dense matrix and postings of an exact scan.
    """

    resident: int
    tables: int = 0
    seen: int = 0
    chunks: int = 0
    held: int = 0
    exact: int = 0

    @property
    def total(self) -> int:
        """Predicted peak resident memory."""
        return self.resident + self.tables + self.seen + self.chunks + self.held + self.exact

    def describe(self) -> dict[str, int]:
        """Return the parts and the total, for JSON ``plan``."""
        return {**dataclasses.asdict(self), "total": self.total}


@dataclass(frozen=True)
class Fit:
    """How a plan runs within a budget.

    Attributes:
        footprint: The predicted memory, by part.
        block: Bytes an exact scan's blocks may take.
        seen_limit: Pairs the record of emitted pairs may hold before the tables fall
            back to testing earlier keys (slower, no memory); None: no limit needed.
        chunk_pairs: Candidate pairs per chunk.
        spill: A stored corpus's limits, its blocks of rows narrowed to fit (None: held
            in memory).
        held_limit: Reported pairs of a corpus in memory held before the rest go to disk
            (None: every pair is held): the room the budget leaves them, and when that
            is too little for the pairs expected, their share of the budget.
        table_threads: Threads bucketing tables at once: one when more would not fit.
        ahead_bytes: Bytes of pairs each table bucketed ahead of its turn may hold (see
            :func:`simdup.search.buckets.bucketed`; None: one thread, not pipelined).
        pipelined: One thread buckets the tables and makes their pairs while the scan's
            own thread takes them (a second core free).
    """

    footprint: Footprint
    block: int = 0
    seen_limit: int | None = None
    chunk_pairs: int = CANDIDATE_CHUNK_PAIRS
    spill: SpillLimits | None = None
    held_limit: int | None = None
    table_threads: int = 1
    ahead_bytes: int | None = None
    pipelined: bool = False

    @property
    def total(self) -> int:
        """Predicted peak resident memory."""
        return self.footprint.total

    def describe(self) -> dict[str, int]:
        """Return the footprint's parts and total, for JSON ``plan``."""
        return self.footprint.describe()


def predict(
    plan: Plan,
    budget: int,
    *,
    workers: int,
    report_all: bool,
    held_cap: int | None = None,
    table_threads: int | None = None,
    idle: bool = False,
    resident: int | None = None,
    chunk_cap: int = CANDIDATE_CHUNK_PAIRS,
) -> Fit:
    """Return how ``plan`` would use memory within ``budget`` bytes (not checked here).

    ``held_cap``: reported pairs held in memory at most, the rest on disk (None: all).
    ``table_threads``: threads bucketing tables (None: ``workers``). ``idle``: nothing
    else runs beside the candidate search (a stored corpus is verified after it), so
    one thread bucketing tables is :attr:`Fit.pipelined` with ``workers`` to spare.
    ``resident``: the memory resident now (None: read it). ``chunk_cap``: candidate
    pairs a chunk holds at most (never fewer than :data:`MIN_CHUNK_PAIRS`).
    """
    resident = resident_memory() if resident is None else resident
    held_pairs = held_in_memory(plan, report_all, held_cap)
    held = 2 * held_pairs * PAIR_BYTES  # the kept chunks, then joined and sorted
    in_flight = 2 * workers + 1 if workers > 1 else 2  # chunks verified, waiting, found
    per_chunk = budget // CHUNK_SHARE // (in_flight * CHUNK_BYTES_PER_PAIR)
    chunk_pairs = int(max(MIN_CHUNK_PAIRS, min(CANDIDATE_CHUNK_PAIRS, chunk_cap, per_chunk)))
    flowing = min(chunk_pairs, max(plan.expected_verified, plan.expected_reported, 1))
    chunks = flowing * in_flight * CHUNK_BYTES_PER_PAIR + verify_bytes(plan, workers, flowing)
    if plan.exact and plan.census:
        # The survey's census holds the pairs (resident already): no blocks are built.
        return Fit(Footprint(resident, chunks=chunks, held=held), chunk_pairs=chunk_pairs)
    if plan.exact and plan.work is not None:
        work = plan.work
        # The blocks take what is left once the pairs held might reach their bound.
        bound = plan.reported_bound if held_cap is None else min(plan.reported_bound, held_cap)
        fixed = resident + 2 * bound * PAIR_BYTES + chunks + work.fixed_bytes
        smallest = BYTES_PER_PAIR * work.documents * min(work.documents, MIN_BLOCK_ROWS)
        room = min(budget - fixed, BLOCK_CAP, BYTES_PER_PAIR * work.documents**2)
        block = max(smallest, room)
        footprint = Footprint(resident, chunks=chunks, held=held, exact=work.fixed_bytes + block)
        return Fit(footprint, block=block, chunk_pairs=chunk_pairs)
    many = len(plan.tables.keys) > FIRST_TABLE_LIMIT
    threads = table_threads or workers if many and plan.max_hamming is not None else 1
    # One thread bucketing, a second core idle: it makes the pairs while this one takes them.
    pipelined = idle and threads == 1 and workers > 1 and plan.max_hamming is not None
    ahead = ahead_bytes(plan, budget, threads, pipelined)
    tables = table_bytes(plan, threads, ahead)
    seen = (plan.expected_verified * SEEN_BYTES + DEDUPE_BATCH * 16) if many else 0
    footprint = Footprint(resident, tables=tables, seen=seen, chunks=chunks, held=held)
    limit: int | None = None
    if many and footprint.total > budget:
        # The record of emitted pairs gives way: past a limit the tables test earlier
        # keys instead (slower, no memory).
        room = budget - (footprint.total - seen) - DEDUPE_BATCH * 16
        limit = max(0, room // SEEN_BYTES)
        footprint = Footprint(resident, tables=tables, seen=max(0, room), chunks=chunks, held=held)
    return Fit(
        footprint,
        seen_limit=limit,
        chunk_pairs=chunk_pairs,
        table_threads=threads,
        ahead_bytes=ahead,
        pipelined=pipelined,
    )


def held_disk(pairs: int, limit: int | None) -> int:
    """Return the bytes ``pairs`` reported pairs write to disk when ``limit`` are held.

    Past the limit every pair is written, then sorted into a copy: twice their bytes.

    >>> held_disk(10, 20), held_disk(30, 20)
    (0, 2400)
    """
    return 2 * pairs * PAIR_BYTES if limit is not None and pairs > limit else 0


def held_pairs(plan: Plan, report_all: bool) -> int:
    """Return the pairs ``plan`` expects to report: above the threshold, or every one verified."""
    return plan.expected_verified if report_all else plan.expected_reported


def held_in_memory(plan: Plan, report_all: bool, cap: int | None) -> int:
    """Return the reported pairs ``plan`` holds in memory when at most ``cap`` are (None: all)."""
    pairs = held_pairs(plan, report_all)
    return pairs if cap is None else min(pairs, cap)


def fit_of(
    plan: Plan,
    budget: int,
    *,
    workers: int,
    report_all: bool,
    limits: SpillLimits | None = None,
    held_spill: HeldSpill | None = None,
    resident: int | None = None,
) -> Fit:
    """Return how ``plan`` would run within ``budget``: the fit a scan of it would use.

    When nothing else makes it fit, its tables are bucketed one at a time (slower), and
    then its chunks of candidate pairs hold fewer (:func:`_smaller_chunks`). Every fit
    priced is against the one ``resident`` memory (None: read now).
    """
    resident = resident_memory() if resident is None else resident
    shape = functools.partial(
        _fit_within, plan, budget, workers, report_all, limits, held_spill, resident
    )
    fit = shape()
    if fit.total > budget and fit.table_threads > 1:
        fewer = shape(table_threads=1)
        fit = fewer if fewer.total < fit.total else fit
    if fit.total > budget and fit.chunk_pairs > MIN_CHUNK_PAIRS:
        fewer_pairs = functools.partial(shape, table_threads=fit.table_threads)
        fit = _smaller_chunks(fewer_pairs, fit, budget)
    return fit


def _smaller_chunks(shape: Callable[..., Fit], fit: Fit, budget: int) -> Fit:
    """Return ``fit`` with the largest chunks that fit ``budget``, or else the least need.

    The chunks in flight are sized by a fixed share of the budget. A run whose other
    parts leave them less (the memory resident when it is planned varies from one run to
    the next by a few percent) takes chunks of fewer candidate pairs, down to
    :data:`MIN_CHUNK_PAIRS`, rather than being refused: more chunks cost a little time,
    and the pairs are the same. ``shape`` prices the fit with a ``chunk_cap``.
    """
    least = shape(chunk_cap=MIN_CHUNK_PAIRS)
    if least.total > budget:
        return least if least.total < fit.total else fit
    fits, over = least, fit.chunk_pairs  # the chunk sizes known to fit, and not to
    while over - fits.chunk_pairs > CHUNK_STEP:
        trial = shape(chunk_cap=(fits.chunk_pairs + over) // 2)
        if trial.total <= budget:
            fits = trial
        else:
            over = trial.chunk_pairs
    return fits


def _fit_within(
    plan: Plan,
    budget: int,
    workers: int,
    report_all: bool,
    limits: SpillLimits | None,
    held_spill: HeldSpill | None,
    resident: int,
    table_threads: int | None = None,
    chunk_cap: int = CANDIDATE_CHUNK_PAIRS,
) -> Fit:
    """Return :func:`fit_of` of ``plan`` with ``table_threads`` bucketing its tables.

    In memory; or, for a stored corpus (``limits``), stored when that fits (see
    :func:`stored_fit`). When neither fits, the least of the two: the need a refusal
    names. A corpus in memory that may spill (``held_spill``, if it takes the plan's
    pairs) holds its reported pairs in the room the rest leaves them
    (:attr:`Fit.held_limit`: more than expected go to disk, not past the budget); when
    that room is too small for the pairs expected, it holds their share of the budget
    and writes the rest to disk, if the disk has room for them.
    """
    shape = functools.partial(
        predict,
        plan,
        workers=workers,
        report_all=report_all,
        table_threads=table_threads,
        resident=resident,
        chunk_cap=chunk_cap,
    )
    fit = shape(budget)
    if limits is not None:
        held = shape(budget - limits.reserved, idle=True)
        stored = stored_fit(held, limits, index_bytes(plan), budget)
        return stored if stored.total <= budget or stored.total < fit.total else fit
    if held_spill is None or not held_spill.takes(plan):
        return fit
    if fit.total > budget:
        if not held_spill.holds(held_pairs(plan, report_all)):
            return fit  # no room on disk either: the need is memory's
        fit = shape(budget, held_cap=held_spill.pairs)
    room = budget - (fit.total - fit.footprint.held)
    limit = max(held_spill.pairs, room // (2 * PAIR_BYTES))
    # The pairs held may fill that room before the rest go to disk: it is the plan's too.
    filled = 2 * PAIR_BYTES * min(room // (2 * PAIR_BYTES), held_pairs(plan, report_all))
    footprint = dataclasses.replace(fit.footprint, held=max(fit.footprint.held, filled))
    return dataclasses.replace(fit, footprint=footprint, held_limit=limit)


# What a scan's temporary store adds: a corpus whose counts outgrow their share of the
# budget spills them, with its weights and names, to temporary files; its pair search then
# holds a few blocks of rows at a time, and candidate and reported pairs past their share.

#: Bytes a stored entry takes on disk: its feature id (int32) and weight (float64).
STORED_ENTRY_BYTES = 12

#: Bytes per entry of a block of rows being verified: its shared feature's column and
#: weight, and its row's share of the row pointers, lengths and squared norms.
TILE_ENTRY_BYTES = 16

#: Tiles (two blocks each) in memory at once: the one being verified, and the next, read
#: while the last parts of the first are measured.
TILES_HELD = 2

#: Bytes of a candidate pair waiting for verification (two row numbers).
WAITING_PAIR_BYTES = 16

#: Fewest entries in a block of rows read at once (smaller blocks read rows one by one).
MIN_BLOCK_ENTRIES = 1 << 16


@dataclass(frozen=True)
class SpillLimits:
    """How much of a scan is held in memory, and past what it spills to the store.

    Attributes:
        corpus_entries: Term-count entries held in memory; past them, the corpus is stored.
        block_entries: Shared entries in a block of rows: the pairs of two blocks (a
            tile) are verified from one read of their rows.
        waiting_pairs: Candidate pairs held before they are written to disk to wait for
            verification.
        held_pairs: Reported pairs held before they are written to disk.
    """

    corpus_entries: int
    block_entries: int
    waiting_pairs: int
    held_pairs: int

    @property
    def reserved(self) -> int:
        """Bytes the pairs waiting and held may take, besides the candidate search."""
        return self.waiting_pairs * WAITING_PAIR_BYTES + self.held_pairs * 2 * PAIR_BYTES

    @property
    def blocks(self) -> int:
        """Bytes the blocks of rows being verified take at most."""
        return TILES_HELD * 2 * self.block_entries * TILE_ENTRY_BYTES


def spill_limits(budget: int) -> SpillLimits:
    """Return the limits of a scan's temporary store within ``budget`` bytes.

    The corpus is held in memory up to an eighth of the budget, and always below
    :data:`~simdup.search.plan.memory.MIN_HELD_CORPUS` (:func:`held_entries`); the pairs
    waiting and the pairs held each take at most a sixteenth of it, and the blocks being
    verified half (they are read once every candidate is found, in the memory the candidate
    search has given back: the fewer the blocks, the more pairs each tile verifies at once).
    """
    share = budget // 16
    blocks = budget // 2 // (TILES_HELD * 2 * TILE_ENTRY_BYTES)
    return SpillLimits(
        corpus_entries=held_entries(budget),
        block_entries=max(MIN_BLOCK_ENTRIES, blocks),
        waiting_pairs=max(1, share // WAITING_PAIR_BYTES),
        held_pairs=max(1, share // (2 * PAIR_BYTES)),
    )


def stored_fit(fit: Fit, limits: SpillLimits, index: int = 0, budget: int | None = None) -> Fit:
    """Return ``fit`` for a stored corpus: pairs held past their limit go to disk.

    The pairs waiting for verification are added to the chunks in flight, and the blocks
    verified too, for what they take beyond the tables and the record of emitted pairs
    (the blocks are read after the candidate search, in the memory it gave back). The
    verifier's index (``index`` bytes, counted in ``fit``'s chunks) is in the store, read
    with those blocks: it is taken out. Past ``budget``, the blocks give way first, down
    to :data:`MIN_BLOCK_ENTRIES`: smaller blocks read the store in more tiles, but fit.
    """
    search = fit.footprint.tables + fit.footprint.seen
    chunks = fit.footprint.chunks - index + limits.waiting_pairs * WAITING_PAIR_BYTES
    footprint = dataclasses.replace(
        fit.footprint,
        held=min(fit.footprint.held, limits.held_pairs * 2 * PAIR_BYTES),
        chunks=chunks + max(0, limits.blocks - search),
    )
    if budget is not None and footprint.total > budget:
        per_entry = TILES_HELD * 2 * TILE_ENTRY_BYTES
        room = limits.blocks - (footprint.total - budget)
        limits = dataclasses.replace(
            limits, block_entries=max(MIN_BLOCK_ENTRIES, room // per_entry)
        )
        footprint = dataclasses.replace(footprint, chunks=chunks + max(0, limits.blocks - search))
    return dataclasses.replace(fit, footprint=footprint, spill=limits)
