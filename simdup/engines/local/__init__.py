"""The local engine: a whole scan in this process and its workers.

Wire the stages: documents → tokens → weights → fingerprints → candidates → pairs. Each
stage works on row numbers and arrays; names appear only at the edges. The stage names
here are the ones used in progress labels, ``stats`` keys and the README.

The pair search and its planner load when a scan reaches them: a caller that only
fingerprints (``simdup compare``) never loads them.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from simdup.engines.local.fingerprinting import (
    Fingerprinted,
    fingerprint_documents,
    fingerprint_inputs,
)
from simdup.inputs.files import ReadOptions
from simdup.inputs.gather import InputSet
from simdup.model import Document, ScanResult, Skip
from simdup.params import Params
from simdup.progress import Meter, Progress, Tell, no_meter, no_progress, no_tell

if TYPE_CHECKING:
    from simdup.engines.local.stored import Spill
    from simdup.packed import Positions
    from simdup.search.plan.budget import SpillLimits


def find_duplicates(
    documents: Sequence[Document],
    params: Params | None = None,
    *,
    report_all: bool = False,
    skipped: Sequence[Skip] = (),
    jobs: int = 1,
    memory: int | None = None,
    progress: Progress = no_progress,
) -> ScanResult:
    """Return the near-duplicate pairs among ``documents``.

    Args:
        documents: Texts with unique names; rows are ordered by name for determinism.
        params: Settings (defaults: :class:`Params`).
        report_all: Report every candidate pair, not only those above the threshold.
        skipped: Inputs the caller could not read, carried into the result.
        jobs: Worker processes for tokenizing and fingerprinting, threads for finding and
            verifying candidates (0: every core); the output never depends on it.
        memory: Bytes the scan may use (default: :func:`simdup.search.plan.memory.default_memory`);
            a plan that would not fit raises :class:`~simdup.search.plan.budget.BudgetError` before
            any pair work.
        progress: Progress hook for long stages.

    >>> docs = [Document("a", "red fox jumps"), Document("b", "red fox jumps"),
    ...         Document("c", "blue whale sings")]
    >>> [(p.a, p.b, p.cosine) for p in find_duplicates(docs).pair_list()]
    [('a', 'b', 1.0)]
    """
    params = params or Params()
    ordered = sorted(documents, key=lambda d: d.name)
    clock = time.perf_counter()
    corpus = fingerprint_documents(ordered, params, progress=progress, jobs=jobs, planned=True)
    with spill_for(None, memory, None) as spill:  # reported pairs past the budget go to disk
        return _pairs(corpus, params, skipped, clock, report_all, jobs, memory, spill=spill)


def plan_duplicates(
    documents: Sequence[Document],
    params: Params | None = None,
    *,
    progress: Progress = no_progress,
    jobs: int = 1,
    memory: int | None = None,
) -> dict[str, Any]:
    """Return the blocking plan a scan of ``documents`` would use, before any pair work.

    The documents are fingerprinted and the plan measured on them exactly as
    :func:`find_duplicates` does; see :meth:`simdup.search.plan.planner.Plan.describe` for the keys.
    """
    params = params or Params()
    ordered = sorted(documents, key=lambda d: d.name)
    corpus = fingerprint_documents(ordered, params, progress=progress, jobs=jobs, planned=True)
    return _described_plan(corpus, params, jobs, memory)


def plan_inputs(
    found: InputSet,
    params: Params | None = None,
    options: ReadOptions | None = None,
    *,
    jobs: int = 1,
    meter: Meter = no_meter,
    memory: int | None = None,
    tmp_dir: str | None = None,
    limits: SpillLimits | None = None,
) -> dict[str, Any]:
    """Return the plan :func:`scan_inputs` would use for ``found``, holding no text.

    The inputs are read and counted as :func:`scan_inputs` reads them, so planning costs
    no more memory than the scan it plans; the plan is :func:`plan_duplicates`' for the
    documents read. A corpus that outgrows its share of the budget is stored as the scan
    would store it, and the plan then says what the scan writes to disk (``disk``).

    >>> from simdup.inputs.gather import gather_inputs
    >>> docs = [Document("a", "red fox jumps"), Document("b", "red fox jumps")]
    >>> plan_inputs(gather_inputs([], ReadOptions(), docs))["mode"]
    'exact'
    """
    params = params or Params()
    reading = _read(found, params, options, jobs, meter, memory, tmp_dir, limits, planned=True)
    with reading as (corpus, _, spill):
        return _described_plan(corpus, params, jobs, memory, spill)


@contextlib.contextmanager
def fingerprinted(
    found: InputSet,
    params: Params | None = None,
    options: ReadOptions | None = None,
    *,
    jobs: int = 1,
    meter: Meter = no_meter,
    memory: int | None = None,
    tmp_dir: str | None = None,
    limits: SpillLimits | None = None,
) -> Iterator[tuple[Fingerprinted, Positions, list[Skip]]]:
    """Yield the fingerprints of ``found`` read as a scan reads it, and what was skipped.

    Also yields the order in which the inputs were given (:attr:`InputSet.arrival`), as
    the corpus's rows in that order: a listing follows it. A corpus past its share of
    ``memory`` is stored (its names and weights mapped) until the block ends.
    """
    reading = _read(found, params or Params(), options, jobs, meter, memory, tmp_dir, limits)
    with reading as (corpus, unread, _):
        order = np.argsort(found.arrival_of(corpus.names), kind="stable")
        yield corpus, order, [*found.skipped, *unread, *found.duplicates, *corpus.skipped]


@contextlib.contextmanager
def _read(
    found: InputSet,
    params: Params,
    options: ReadOptions | None,
    jobs: int,
    meter: Meter,
    memory: int | None,
    tmp_dir: str | None,
    limits: SpillLimits | None,
    *,
    planned: bool = False,
) -> Iterator[tuple[Fingerprinted, list[Skip], Spill]]:
    """Yield ``found`` read, counted and fingerprinted, its unreadable inputs and the spill.

    What every reading of inputs shares: the corpus past its share of ``memory`` is
    stored under ``tmp_dir``, and the files go when the block ends.
    """
    with spill_for(tmp_dir, memory, limits) as spill:
        corpus, unread = fingerprint_inputs(
            found.inputs,
            params,
            options or ReadOptions(),
            jobs=jobs,
            meter=meter,
            spill=spill,
            planned=planned,
        )
        yield corpus, unread, spill


@contextlib.contextmanager
def spill_for(
    tmp_dir: str | None, memory: int | None, limits: SpillLimits | None = None
) -> Iterator[Spill]:
    """Yield where a scan spills and past what; its temporary files are removed on exit.

    Pairs spilled while it was open stay readable (their files are mapped) until the
    result holding them is dropped.
    """
    from simdup.engines.local.stored import Spill
    from simdup.search.plan.budget import spill_limits
    from simdup.search.plan.memory import default_memory
    from simdup.spill import SpillDir

    budget = default_memory() if memory is None else memory
    with SpillDir(tmp_dir) as directory:
        yield Spill(directory, limits or spill_limits(budget))


def _described_plan(
    corpus: Fingerprinted,
    params: Params,
    jobs: int,
    memory: int | None,
    spill: Spill | None = None,
) -> dict[str, Any]:
    """Plan the pair search of a fingerprinted corpus; describe it and its predicted memory.

    A plan that writes to disk (a stored corpus, or reported pairs past their room) also
    says what (``disk``).
    """
    from simdup.engines.local.pairs import corpus_survey
    from simdup.engines.local.tiles import stored_disk
    from simdup.engines.pool import check_jobs
    from simdup.search.plan.budget import held_disk
    from simdup.search.plan.choice import fitted
    from simdup.search.plan.memory import default_memory

    budget = default_memory() if memory is None else memory
    stored = None if corpus.stored is None else corpus.stored.weights
    survey = corpus_survey(params, corpus.matrix, corpus.fingerprints, stored, corpus.wider)
    # A stored corpus is planned as its scan plans it: the store's parts in their limits.
    limits = spill.limits if spill is not None and corpus.stored is not None else None
    chosen, fit = fitted(
        params,
        survey,
        budget,
        workers=check_jobs(jobs),
        report_all=False,
        refuse=False,
        limits=limits,
        held_spill=spill.held_spill() if spill is not None and limits is None else None,
    )
    described = chosen.describe(names=corpus.names)
    described["name_length"] = mean_length(corpus.names)
    # Without the resident memory (it varies from run to run): the output stays the same.
    parts = {k: v for k, v in fit.describe().items() if k not in ("resident", "total")}
    described["memory"] = {"budget": budget, "predicted": {**parts, "total": sum(parts.values())}}
    if corpus.stored is not None and spill is not None:
        described["disk"] = stored_disk(corpus.stored, spill, chosen, fit.seen_limit)
    elif spill is not None and (pairs := held_disk(chosen.expected_reported, fit.held_limit)):
        described["disk"] = {"directory": spill.directory.parent, "store": 0, "pairs": pairs}
    return described


def mean_length(names: Sequence[str], most: int = 4_096) -> float:
    """Return the mean length of ``names`` in characters, of ``most`` spread evenly at most.

    What a report costs grows with its names (:mod:`simdup.report.seconds`).

    >>> mean_length(["ab", "abcd"]), mean_length([])
    (3.0, 0.0)
    """
    if not names:
        return 0.0
    picked = range(0, len(names), max(1, len(names) // most))
    return round(sum(len(names[k]) for k in picked) / len(picked), 1)


def scan_inputs(
    found: InputSet,
    params: Params | None = None,
    options: ReadOptions | None = None,
    *,
    report_all: bool = False,
    skipped: Sequence[Skip] = (),
    jobs: int = 1,
    meter: Meter = no_meter,
    memory: int | None = None,
    tmp_dir: str | None = None,
    limits: SpillLimits | None = None,
    tell: Tell = no_tell,
) -> ScanResult:
    """Return the near-duplicate pairs among inputs, reading each file once, in a worker.

    The same result as :func:`simdup.engines.local.find_duplicates` of the documents read (with
    the same ``memory`` budget), with the skips in the same order: those of the walk,
    unreadable files, then ``skipped`` (inputs the caller left out), duplicate names, and
    documents without features.

    A corpus whose term counts outgrow their share of ``memory`` is spilled, as it is
    counted, to temporary files under ``tmp_dir`` (default: the system's temporary
    directory), and its pairs are verified from them block by block: the same result,
    with memory bounded by the budget rather than by the corpus (``limits``: how much
    is held before spilling; default :func:`~simdup.search.plan.budget.spill_limits` of
    the budget). The files are removed before this returns, or when it fails or is
    interrupted; the result's names and pairs may still be mapped from them. ``tell`` is
    told the plan's warnings before the pair work.

    >>> from simdup.inputs.gather import gather_inputs
    >>> docs = [Document("a", "red fox jumps"), Document("b", "red fox jumps")]
    >>> result = scan_inputs(gather_inputs([], ReadOptions(), docs))
    >>> [(p.a, p.b, p.cosine) for p in result.pair_list()]
    [('a', 'b', 1.0)]
    """
    params = params or Params()
    clock = time.perf_counter()
    reading = _read(found, params, options, jobs, meter, memory, tmp_dir, limits, planned=True)
    with reading as (corpus, unread, spill):
        skipped = [*found.skipped, *unread, *skipped, *found.duplicates]
        return _pairs(corpus, params, skipped, clock, report_all, jobs, memory, meter, spill, tell)


def _pairs(
    corpus: Fingerprinted,
    params: Params,
    skipped: Sequence[Skip],
    clock: float,
    report_all: bool,
    jobs: int,
    memory: int | None,
    meter: Meter = no_meter,
    spill: Spill | None = None,
    tell: Tell = no_tell,
) -> ScanResult:
    """Find the pairs of a corpus fingerprinted since ``clock``; its featureless rows last."""
    from simdup.engines.local.pairs import find_pairs

    timings = {"fingerprint": time.perf_counter() - clock}
    return find_pairs(
        corpus.names,
        corpus.matrix,
        corpus.fingerprints,
        params,
        report_all=report_all,
        skipped=[*skipped, *corpus.skipped],
        timings=timings,
        jobs=jobs,
        memory=memory,
        meter=meter,
        stored=corpus.stored,
        spill=spill,
        tell=tell,
        wider=corpus.wider,
    )
