"""Wire the stages: documents → tokens → weights → fingerprints → candidates → pairs.

Each stage works on row numbers and arrays; names appear only at the edges. The stage
names here are the ones used in progress labels, ``stats`` keys and the README.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.blocking import LargeBucket, candidate_chunks
from simdup.budget import Fit, check_budget, default_memory, predict
from simdup.exact import exact_chunks, exact_work
from simdup.model import Cluster, Document, PairArrays, Params, ScanResult, Skip
from simdup.parallel import CountMatrix, check_jobs, count_matrix, fingerprint_matrix
from simdup.plan import WIDTHS, Plan, plan
from simdup.progress import Advance, Meter, Progress, no_meter, no_progress
from simdup.segment import note_fallback
from simdup.simhash import words64
from simdup.verify import (
    CosineIndex,
    components,
    cosine_many,
    estimate_cosine_many,
    hamming_many,
)
from simdup.weights import WeightMatrix, scale_counts

NO_FEATURES = "no features (empty, or only punctuation or stop words)"


@dataclass
class Fingerprinted:
    """A corpus after the fingerprint stage.

    Attributes:
        names: Document names of the rows.
        matrix: Weights, one row per document.
        fingerprints: uint64 (n, words).
        skipped: Documents dropped for having no features.
    """

    names: list[str]
    matrix: WeightMatrix
    fingerprints: npt.NDArray[np.uint64]
    skipped: list[Skip]


def fingerprint_documents(
    documents: Sequence[Document],
    params: Params,
    *,
    progress: Progress = no_progress,
    jobs: int = 1,
) -> Fingerprinted:
    """Tokenize, weight and fingerprint documents; drop those without features.

    ``jobs`` worker processes tokenize and fingerprint (0: every core); the result never
    depends on it.
    """
    counts = count_matrix(
        [doc.text for doc in documents],
        stopwords=params.stopwords,
        segment=params.segment,
        ngram=params.ngram,
        jobs=jobs,
        progress=progress,
    )
    return fingerprint_counts(counts, [doc.name for doc in documents], params, jobs=jobs)


def fingerprint_counts(
    counts: CountMatrix, names: Sequence[str], params: Params, *, jobs: int = 1
) -> Fingerprinted:
    """Weight and fingerprint counted documents (rows named ``names``); drop featureless ones."""
    has_features = counts.row_lengths() > 0
    keep = np.flatnonzero(has_features).tolist()
    skipped = [
        Skip(names[i], NO_FEATURES, unreadable=False)
        for i in np.flatnonzero(~has_features).tolist()
    ]
    note_fallback(params.segment, counts.vocabulary)
    matrix = counts.weights(params.weighting, has_features)
    fingerprints = fingerprint_matrix(matrix, params.bits, params.seed, jobs=jobs)
    return Fingerprinted([names[i] for i in keep], matrix, fingerprints, skipped)


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
_Verified = tuple[int, int, PairArrays]


def find_pairs(
    names: list[str],
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
) -> ScanResult:
    """Plan, find, verify and select pairs among fingerprinted rows (names sorted, unique).

    The plan (:func:`simdup.plan.plan`) either computes every pair's cosine (exact mode)
    or streams candidates from tables; with ``bits="auto"`` it also chooses the width, and
    ``fingerprints`` must then be at least as wide as the widest priced (the width used is
    their first bits). Before any pair work the plan's memory is checked against
    ``memory`` (:func:`simdup.budget.check_budget`, :class:`~simdup.budget.BudgetError`).

    Candidates stream in chunks, tables bucketed by ``jobs`` threads (0: every core), and
    ``jobs`` threads verify chunks while the next ones are found: numpy releases the
    interpreter lock in the sorts, gathers and arithmetic these are made of. Results are
    joined in chunk order and sorted, so the output never depends on ``jobs``.
    ``timings["verify"]`` is the time spent waiting for verification beyond finding
    candidates. ``meter`` is told the pair work done (label ``pairs``): candidates verified
    out of the plan's estimate, or in exact mode the pairs each block of rows covered out
    of every pair, so a long pair stage shows its rate and the time left.
    """
    workers = check_jobs(jobs)
    timings = {} if timings is None else timings
    clock = time.perf_counter()
    chosen, fit = _checked_plan(params, matrix, fingerprints, memory, workers, report_all)
    timings["plan"] = time.perf_counter() - clock
    fingerprints = np.ascontiguousarray(fingerprints[:, : words64(chosen.bits)])
    used = params.replace(bits=chosen.bits) if params.auto_bits else params
    index = CosineIndex(matrix) if matrix is not None else None
    large: list[LargeBucket] = []
    counts: dict[str, int] = {}
    timings["candidates"] = timings["verify"] = 0.0

    def verify(chunk: npt.NDArray[np.int64]) -> _Verified:
        """Measure one chunk; return its size, how many pass, and the pairs kept."""
        measured = measure(matrix, fingerprints, chunk, chosen.bits, index=index)
        score = np.where(np.isnan(measured.cosine), measured.estimated, measured.cosine)
        passed = score >= params.threshold
        return len(chunk), int(passed.sum()), measured if report_all else measured.take(passed)

    exact = chosen.exact and matrix is not None
    rows = len(names)
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
        )
        # Exact blocks count the pairs they cover as they go; candidates once verified.
        results = _verified(chunks, verify, workers, timings, None if exact else advance)
    return _scan_result(
        names,
        matrix,
        fingerprints,
        used,
        chosen,
        results,
        large=large,
        counts=counts,
        skipped=skipped,
        timings=timings,
    )


def _checked_plan(
    params: Params,
    matrix: WeightMatrix | None,
    fingerprints: npt.NDArray[np.uint64],
    memory: int | None,
    workers: int,
    report_all: bool,
) -> tuple[Plan, Fit]:
    """Plan the pair work, and check it against the memory budget before any is done.

    Raises:
        BudgetError: the plan does not fit ``memory`` (with cheaper settings suggested).
    """
    budget = default_memory() if memory is None else memory
    work = exact_work(matrix) if matrix is not None and params.planned else None
    chosen = plan(params, fingerprints, work=work, workers=workers)
    fit = check_budget(
        chosen,
        budget,
        workers=workers,
        report_all=report_all,
        alternatives=lambda: alternatives(params, matrix, fingerprints, chosen, budget, workers),
    )
    return chosen, fit


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
) -> Iterator[npt.NDArray[np.int64]]:
    """Return the pairs to verify, in chunks: every pair (exact mode) or the candidates.

    ``large`` and ``counts`` are filled as the candidates stream (oversized buckets, and
    the pairs the tables produced before de-duplication); in exact mode ``covered`` is
    told the pairs each block of rows covered.
    """
    if chosen.exact and matrix is not None:
        return exact_chunks(matrix, params.threshold, memory=fit.block, covered=covered)
    return candidate_chunks(
        fingerprints,
        chosen.tables,
        large=large,
        max_hamming=None if report_all else chosen.max_hamming,
        workers=workers,
        counts=counts,
        seen_limit=fit.seen_limit,
        chunk_pairs=fit.chunk_pairs,
    )


def _verified(
    chunks: Iterator[npt.NDArray[np.int64]],
    verify: Callable[[npt.NDArray[np.int64]], _Verified],
    workers: int,
    timings: dict[str, float],
    advance: Advance | None,
) -> list[_Verified]:
    """Verify chunks in ``workers`` threads while the next ones are found; keep their order.

    Adds the time spent finding chunks to ``timings["candidates"]`` and the time spent
    waiting for verification beyond that to ``timings["verify"]``; ``advance``, when
    given, is told the pairs of each chunk verified.
    """
    results: list[_Verified] = []
    ahead = 2 * workers if workers > 1 else 0
    with ThreadPoolExecutor(max_workers=workers) as pool:
        waiting: deque[Future[_Verified]] = deque()
        while True:
            clock = time.perf_counter()
            chunk = next(chunks, None)
            timings["candidates"] += time.perf_counter() - clock
            clock = time.perf_counter()
            if chunk is not None:
                waiting.append(pool.submit(verify, chunk))
            # Bound the chunks held in memory (with one job, none waits: verification and
            # the search take turns); at the end, collect everything.
            while waiting and (chunk is None or len(waiting) > ahead):
                results.append(waiting.popleft().result())
                if advance is not None:
                    advance(results[-1][0])
            timings["verify"] += time.perf_counter() - clock
            if chunk is None:
                break
    return results


def _scan_result(
    names: list[str],
    matrix: WeightMatrix | None,
    fingerprints: npt.NDArray[np.uint64],
    used: Params,
    chosen: Plan,
    results: Sequence[_Verified],
    *,
    large: Sequence[LargeBucket],
    counts: dict[str, int],
    skipped: Sequence[Skip],
    timings: dict[str, float],
) -> ScanResult:
    """Join the verified chunks in order into the scan's result, with its statistics."""
    reported = _concat([kept for _, _, kept in results])
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


def alternatives(
    params: Params,
    matrix: WeightMatrix | None,
    fingerprints: npt.NDArray[np.uint64],
    chosen: Plan,
    budget: int,
    workers: int,
) -> list[tuple[str, Plan, Fit]]:
    """Return settings that would need less than ``chosen``, each with its plan and fit.

    A higher threshold and a lower recall are planned on the same fingerprints; ``log``
    and ``binary`` weighting (which damp the words every document repeats) re-weight the
    term counts and fingerprint them again. Only called when a scan is refused.
    """
    auto = params.planned
    out: list[tuple[str, Plan, Fit]] = []

    def add(
        what: str, changed: Params, prints: npt.NDArray[np.uint64], m: WeightMatrix | None
    ) -> None:
        work = exact_work(m) if m is not None and auto else None
        alternative = plan(changed, prints, work=work)
        out.append(
            (what, alternative, predict(alternative, budget, workers=workers, report_all=False))
        )

    for step in (0.05, 0.1):
        higher = round(min(1.0, params.threshold + step), 4)
        if higher > params.threshold:
            add(f"--threshold {higher:g}", params.replace(threshold=higher), fingerprints, matrix)
    for lower in (0.9, 0.8):
        if lower < params.recall:
            add(f"--recall {lower:g}", params.replace(recall=lower), fingerprints, matrix)
    if matrix is not None and params.weighting == "tf":
        for weighting in ("log", "binary"):
            scaled = WeightMatrix(
                matrix.indptr,
                matrix.indices,
                scale_counts(matrix.data, weighting),
                matrix.vocabulary,
            )
            prints = fingerprint_matrix(
                scaled, fingerprints.shape[1] * 64, params.seed, jobs=workers
            )
            add(f"--weighting {weighting}", params.replace(weighting=weighting), prints, scaled)
    return out


def _concat(parts: Sequence[PairArrays]) -> PairArrays:
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


def find_duplicates(
    documents: Sequence[Document],
    params: Params | None = None,
    *,
    report_all: bool = False,
    skipped: Sequence[Skip] = (),
    progress: Progress = no_progress,
    jobs: int = 1,
    memory: int | None = None,
) -> ScanResult:
    """Return the near-duplicate pairs among ``documents``.

    Args:
        documents: Texts with unique names; rows are ordered by name for determinism.
        params: Settings (defaults: :class:`Params`).
        report_all: Report every candidate pair, not only those above the threshold.
        skipped: Inputs the caller could not read, carried into the result.
        progress: Progress hook for long stages.
        jobs: Worker processes for tokenizing and fingerprinting, threads for finding and
            verifying candidates (0: every core); the output never depends on it.
        memory: Bytes the scan may use (default: :func:`simdup.budget.default_memory`);
            a plan that would not fit raises :class:`~simdup.budget.BudgetError` before
            any pair work.

    >>> docs = [Document("a", "red fox jumps"), Document("b", "red fox jumps"),
    ...         Document("c", "blue whale sings")]
    >>> [(p.a, p.b, p.cosine) for p in find_duplicates(docs).pair_list()]
    [('a', 'b', 1.0)]
    """
    params = params or Params()
    ordered = sorted(documents, key=lambda d: d.name)
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    corpus = fingerprint_documents(ordered, widest(params), progress=progress, jobs=jobs)
    timings["fingerprint"] = time.perf_counter() - clock
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
    )


def widest(params: Params) -> Params:
    """Return the settings to fingerprint with: with ``bits="auto"``, the widest priced.

    A fingerprint's first ``b`` bits are the ``b``-bit fingerprint of the same settings
    (each feature's sign bits are read in order), so one pass serves every width.
    """
    return params.replace(bits=max(WIDTHS)) if params.auto_bits and params.planned else params


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
    :func:`find_duplicates` does; see :meth:`simdup.plan.Plan.describe` for the keys.
    """
    params = params or Params()
    ordered = sorted(documents, key=lambda d: d.name)
    corpus = fingerprint_documents(ordered, widest(params), progress=progress, jobs=jobs)
    work = exact_work(corpus.matrix) if params.planned else None
    chosen = plan(params, corpus.fingerprints, work=work)
    described = chosen.describe(names=corpus.names)
    budget = default_memory() if memory is None else memory
    fit = predict(chosen, budget, workers=check_jobs(jobs), report_all=False)
    # Without the resident memory (it varies from run to run): the output stays the same.
    parts = {k: v for k, v in fit.describe().items() if k not in ("resident", "total")}
    described["memory"] = {"budget": budget, "predicted": {**parts, "total": sum(parts.values())}}
    return described


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
