"""Fingerprinted rows to the scan's result: plan, check the budget, find, verify."""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import numpy.typing as npt

from simdup import allocator
from simdup.engines.local.stored import Spill, StoredCorpus
from simdup.engines.local.tiles import check_room, verify_stored
from simdup.engines.pool import check_jobs
from simdup.fingerprints.simhash import Wider
from simdup.fingerprints.weights import StoredWeights, WeightMatrix, take_rows
from simdup.model import ScanResult, Skip
from simdup.params import Params
from simdup.progress import Advance, Meter, Tell, no_meter, no_tell
from simdup.search.candidates import LargeBucket, candidate_chunks
from simdup.search.exact import exact_chunks, exact_work
from simdup.search.held import Held, held_result
from simdup.search.plan.budget import Fit
from simdup.search.plan.choice import fitted
from simdup.search.plan.memory import default_memory
from simdup.search.plan.planner import Plan, survey_of
from simdup.search.plan.survey import Survey
from simdup.search.result import Searched, Verified, measure, scan_result
from simdup.search.verify import CosineIndex
from simdup.window import in_order


def find_pairs(
    names: Sequence[str],
    matrix: WeightMatrix | None,
    fingerprints: npt.NDArray[np.uint64],
    params: Params,
    *,
    report_all: bool = False,
    skipped: Sequence[Skip] = (),
    timings: dict[str, float] | None = None,
    jobs: int = 1,
    memory: int | None = None,
    meter: Meter = no_meter,
    stored: StoredCorpus | None = None,
    spill: Spill | None = None,
    feature_counts: npt.NDArray[np.int64] | None = None,
    tell: Tell = no_tell,
    wider: Wider | None = None,
) -> ScanResult:
    """Plan, find, verify and select pairs among fingerprinted rows (names sorted, unique).

    The plan (:func:`simdup.search.plan.planner.plan`) either computes every pair's cosine (exact
    mode) or streams candidates from tables; with ``bits="auto"`` it also chooses the width from
    ``fingerprints`` (their first bits) or the wider ones ``wider`` makes. Before any pair work
    its memory is checked against ``memory`` (:func:`~simdup.search.plan.choice.fitted`), and
    ``tell`` is told its warnings (a plan expected to take minutes).

    Candidates stream in chunks, tables bucketed and chunks verified by ``jobs`` threads (0:
    every core), joined in chunk order and sorted: the output never depends on ``jobs``.
    ``timings["verify"]`` is the wait for verification beyond finding candidates. ``meter`` is
    told the pair work done (label ``pairs``). A ``stored`` corpus is verified from the store;
    the rows' ``feature_counts`` stand for a missing ``matrix``'s (negative: unknown).
    """
    workers = check_jobs(jobs)
    timings = {} if timings is None else timings
    clock = time.perf_counter()
    weights = None if stored is None else stored.weights
    survey = corpus_survey(params, matrix, fingerprints, weights, wider)
    chosen, fit = _planned(params, survey, memory, workers, report_all, spill, stored)
    timings["plan"] = time.perf_counter() - clock
    for warning in chosen.warnings:  # before the work they warn of
        tell(warning)
    fingerprints = np.ascontiguousarray(survey.prints(chosen.bits))
    used = params.replace(bits=chosen.bits) if params.auto_bits else params
    large: list[LargeBucket] = []
    counts: dict[str, int] = {}
    timings["candidates"] = timings["verify"] = 0.0
    verify_all = _verifier(matrix, fingerprints, chosen, fit, params, report_all, stored, spill)
    exact, rows = chosen.exact and matrix is not None, len(names)
    total = rows * (rows - 1) // 2 if exact else chosen.expected_verified
    with meter(desc="pairs", total=total, unit="pair") as advance:
        chunks = _pair_chunks(
            matrix,
            fingerprints,
            params,
            chosen,
            fit,
            large=large,
            counts=counts,
            report_all=report_all,
            workers=workers,
            covered=advance,
            census=survey.census(params.threshold),
            repeats=spill is not None and stored is not None,  # tiles keep each pair once
        )
        # Exact blocks count the pairs they cover as they go; candidates once verified.
        results = verify_all(
            chunks, workers=workers, timings=timings, advance=None if exact else advance
        )
    searched = Searched(chosen, large, counts.get("table_candidates", 0))
    return scan_result(
        names,
        used,
        results,
        feature_counts=_feature_counts(matrix, feature_counts, rows),
        fingerprints=fingerprints,
        skipped=skipped,
        timings=timings,
        searched=searched,
        ordered=True,
    )


def _verifier(
    matrix: WeightMatrix | None,
    fingerprints: npt.NDArray[np.uint64],
    chosen: Plan,
    fit: Fit,
    params: Params,
    report_all: bool,
    stored: StoredCorpus | None,
    spill: Spill | None,
) -> Callable[..., list[Verified]]:
    """Return how the chunks of pairs are verified: with the matrix held, or from the store.

    A stored corpus's pair search is first checked to fit on disk (:func:`check_room`), in
    the limits its ``fit`` narrowed to the budget.
    """
    spill = _narrowed(spill, fit)
    if spill is not None and stored is not None:
        check_room(spill, chosen, report_all, fit.seen_limit)
        return functools.partial(
            verify_stored,
            stored=stored,
            fingerprints=fingerprints,
            bits=chosen.bits,
            spill=spill,
            threshold=params.threshold,
            report_all=report_all,
        )
    index = CosineIndex(matrix) if matrix is not None else None
    held = Held(None if spill is None else spill.directory, fit.held_limit, len(fingerprints))

    def verify(chunk: npt.NDArray[np.int64]) -> Verified:
        """Measure one chunk; return its size, how many pass, and the pairs kept."""
        measured = measure(matrix, fingerprints, chunk, chosen.bits, index=index)
        return Verified.of(measured, params.threshold, report_all)

    return functools.partial(_verified, verify=verify, held=held)


def _feature_counts(
    matrix: WeightMatrix | None, recorded: npt.NDArray[np.int64] | None, rows: int
) -> npt.NDArray[np.int64]:
    """Return each row's distinct features: counted, recorded, or else unknown (-1)."""
    if matrix is not None:
        return matrix.row_lengths()
    if recorded is not None:
        return recorded
    return np.full(rows, -1, dtype=np.int64)


def _narrowed(spill: Spill | None, fit: Fit) -> Spill | None:
    """Return ``spill`` with the limits ``fit`` narrowed to fit the budget, if any."""
    return (
        spill
        if spill is None or fit.spill is None
        else dataclasses.replace(spill, limits=fit.spill)
    )


def _planned(
    params: Params,
    survey: Survey,
    memory: int | None,
    workers: int,
    report_all: bool,
    spill: Spill | None = None,
    stored: StoredCorpus | None = None,
) -> tuple[Plan, Fit]:
    """Plan the pair work: the first plan worth running that fits ``memory``.

    A ``stored`` corpus's parts take their share of the budget (``spill``'s limits) and
    the pairs held past their limit go to disk (:func:`stored_fit`); a corpus in memory
    with a ``spill`` may write its reported pairs there past the room they are left.

    Raises:
        BudgetError: no plan fits ``memory`` (with settings that would suggested), before
            any pair work.
    """
    budget = default_memory() if memory is None else memory
    limits = spill.limits if spill and stored else None  # a stored corpus's share of memory
    chosen, fit = fitted(
        params,
        survey,
        budget,
        workers=workers,
        report_all=report_all,
        limits=limits,
        held_spill=spill.held_spill() if spill and not stored else None,
    )
    if allocator.tight(fit.total, budget):
        allocator.bound()  # before the pair stage's threads start
    return chosen, fit


def corpus_survey(
    params: Params,
    matrix: WeightMatrix | None,
    fingerprints: npt.NDArray[np.uint64],
    stored: StoredWeights | None = None,
    wider: Wider | None = None,
) -> Survey:
    """Return the survey a corpus's plans are priced on: its fingerprints and weights.

    The sampled rows of a ``stored`` corpus are read from its files, not through the
    mapped ``matrix``, whose pages would stay in this process's memory. ``wider``: how
    to make fingerprints wider than ``fingerprints``.
    """
    if matrix is None:
        return survey_of(params, fingerprints, None, None, wider=wider)
    work = exact_work(matrix) if params.planned else None
    rows = functools.partial(take_rows, matrix) if stored is None else stored.take
    # Verification's blocks are as wide as the shared features: known from the work (the
    # Dask engine knows them only there, and the plans of both engines are the same).
    shared = 0 if work is None else work.shared
    entries = len(matrix.data) / max(matrix.rows, 1)
    return survey_of(params, fingerprints, work, rows, entries, shared, wider)


def _pair_chunks(
    matrix: WeightMatrix | None,
    fingerprints: npt.NDArray[np.uint64],
    params: Params,
    chosen: Plan,
    fit: Fit,
    *,
    large: list[LargeBucket],
    counts: dict[str, int],
    report_all: bool,
    workers: int,
    covered: Advance,
    census: npt.NDArray[np.int64] | None = None,
    repeats: bool = False,
) -> Iterator[npt.NDArray[np.int64]]:
    """Return the pairs to verify, in chunks: every pair (exact mode) or the candidates.

    ``large`` and ``counts`` are filled as the candidates stream (oversized buckets, and
    the pairs the tables produced before de-duplication); in exact mode ``covered`` is
    told the pairs each block of rows covered. An exact scan takes the pairs of a
    ``census`` of the corpus (:meth:`~simdup.search.plan.survey.Survey.census`) as they are.
    With ``repeats`` the verifier keeps each pair once, so tables past the record of
    emitted pairs need not test every earlier key (``test_earlier``).
    """
    if chosen.exact and matrix is not None and census is not None:
        return _census_chunks(census, fit.chunk_pairs, covered, matrix.rows)
    if chosen.exact and matrix is not None:
        return exact_chunks(
            matrix,
            params.threshold,
            memory=fit.block,
            chunk_pairs=fit.chunk_pairs,
            covered=covered,
        )
    return candidate_chunks(
        fingerprints,
        chosen.tables,
        large=large,
        max_hamming=None if report_all else chosen.max_hamming,
        workers=min(workers, fit.table_threads),
        counts=counts,
        seen_limit=fit.seen_limit,
        test_earlier=not repeats,
        chunk_pairs=fit.chunk_pairs,
        ahead_bytes=fit.ahead_bytes,
        pipelined=fit.pipelined,
    )


def _census_chunks(
    census: npt.NDArray[np.int64], chunk_pairs: int, covered: Advance, rows: int
) -> Iterator[npt.NDArray[np.int64]]:
    """Yield the pairs of a census in chunks of ``chunk_pairs``; every pair is covered."""
    covered(rows * (rows - 1) // 2)
    for start in range(0, len(census), max(1, chunk_pairs)):
        yield census[start : start + chunk_pairs]


def _verified(
    chunks: Iterator[npt.NDArray[np.int64]],
    *,
    verify: Callable[[npt.NDArray[np.int64]], Verified],
    held: Held,
    workers: int,
    timings: dict[str, float],
    advance: Advance | None,
) -> list[Verified]:
    """Verify chunks in ``workers`` threads while the next ones are found; keep their order.

    Returns their counts, with the pairs to report ``held`` (in memory, or past its limit
    on disk) and put in :func:`~simdup.search.result.canonical_order`. Adds the time spent
    finding chunks to ``timings["candidates"]`` and the time spent waiting for verification
    beyond that (the ordering included) to ``timings["verify"]``; ``advance``, when given,
    is told the pairs of each chunk verified.
    """

    def found() -> Iterator[npt.NDArray[np.int64]]:
        while True:
            clock = time.perf_counter()
            chunk = next(chunks, None)
            timings["candidates"] += time.perf_counter() - clock
            if chunk is None:
                return
            yield chunk

    clock, finding = time.perf_counter(), timings["candidates"]
    # Bound the chunks held in memory (with one job, none waits: verification and the
    # search take turns).
    ahead = 2 * workers if workers > 1 else 0
    with ThreadPoolExecutor(max_workers=workers) as pool:
        verified = in_order(lambda chunk: pool.submit(verify, chunk), found(), ahead)
        result = held_result(verified, held, advance)
    timings["verify"] += time.perf_counter() - clock - (timings["candidates"] - finding)
    return [result]
