"""The stages of a distributed scan, each submitted as Dask tasks and awaited.

Each function submits one stage's tasks (the partition work of
:mod:`simdup.engines.dask.partitions`, :mod:`simdup.engines.dask.shuffle` and
:mod:`simdup.engines.dask.joins`) from the futures of the stage before, waits for what the
client needs of them, and returns it with the futures the next stage builds on.
:func:`simdup.engines.dask.find_duplicates` runs them in order.

Every task is submitted from the results of earlier tasks, never from data scattered from
the client, so a worker lost mid-run costs a recomputation, not the scan.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from simdup.engines.dask.cluster import import_distributed
from simdup.engines.dask.inputs import Inputs, read_partitions
from simdup.engines.dask.joins import (
    RowBlock,
    gathered_matrix,
    row_block,
    select_rows,
    verify_pairs,
)
from simdup.engines.dask.partitions import (
    Summary,
    Vectors,
    add_frequencies,
    corpus_work,
    document_frequencies,
    part_summary,
    read_part,
    vector_rows,
    weigh_part,
)
from simdup.engines.dask.shuffle import (
    bucket_candidates,
    candidate_summary,
    join_candidates,
    shuffle_partitions,
    split_keys,
)
from simdup.engines.local.fingerprinting import feature_skip, widest
from simdup.fingerprints.simhash import words64
from simdup.fingerprints.weights import WeightMatrix, take_rows
from simdup.inputs.names import DUPLICATE_NAME, first_named
from simdup.model import Skip
from simdup.params import Params
from simdup.progress import Progress
from simdup.search.candidates import identical_groups
from simdup.search.exact import ExactWork
from simdup.search.plan.budget import HeldSpill
from simdup.search.plan.choice import fitted
from simdup.search.plan.memory import default_memory
from simdup.search.plan.planner import Plan, survey_of
from simdup.search.result import Searched, Verified
from simdup.search.tables import table_masks

if TYPE_CHECKING:
    from distributed import Client, Future

T = TypeVar("T")

#: Candidate pairs verified by one task (partitions are joined up to it).
VERIFY_PAIRS = 1 << 20


def completed(
    client: Client, futures: Sequence[Future[Any]], progress: Progress, desc: str
) -> list[Any]:
    """Wait for ``futures`` (advancing ``progress``) and return their results in order."""
    distributed = import_distributed()
    done = distributed.as_completed(futures, loop=client.loop)
    for _ in progress(done, desc=desc, total=len(futures)):
        pass
    return list(client.gather(list(futures)))  # type: ignore[no-untyped-call]


@dataclass
class Numbered:
    """Documents numbered as the local engine numbers them."""

    rows: list[npt.NDArray[np.int64]]  # per partition, the global row of each document
    names: list[str]
    lengths: npt.NDArray[np.int64]
    skipped: list[Skip]


def number(summaries: Sequence[Summary], min_features: int = 0) -> Numbered:
    """Drop repeated names (the first kept), sort by name, skip documents without features.

    Documents with fewer than ``min_features`` features are skipped too, as the local
    engine skips them.
    """
    skipped = [skip for s in summaries for skip in s.skipped]
    read = [  # name, partition, position, length
        (name, p, k, int(summary.lengths[k]))
        for p, summary in enumerate(summaries)
        for k, name in enumerate(summary.names)
    ]
    kept, repeats = first_named(read, lambda item: item[0])
    skipped += [Skip(name, DUPLICATE_NAME) for name, _, _, _ in repeats]
    kept.sort(key=lambda item: item[0])
    rows = [np.full(len(s.names), -1, dtype=np.int64) for s in summaries]
    names: list[str] = []
    lengths: list[int] = []
    for name, p, k, length in kept:
        skip = feature_skip(name, length, min_features)
        if skip is not None:
            skipped.append(skip)
            continue
        rows[p][k] = len(names)
        names.append(name)
        lengths.append(length)
    return Numbered(rows, names, np.asarray(lengths, dtype=np.int64), skipped)


def read_stage(
    client: Client, inputs: Inputs, params: Params, files_per_partition: int, progress: Progress
) -> tuple[list[Future[Any]], Numbered, list[Skip]]:
    """Read and count every partition on the workers; number the documents here.

    Returns:
        The futures of the read partitions (counts stay on the workers), the numbering,
        and every input skipped so far, in the local engine's order.
    """
    workers = len(client.nthreads())  # type: ignore[no-untyped-call]
    parts, walk_skipped = read_partitions(inputs, files_per_partition, workers)
    read = [
        client.submit(
            read_part,
            part,
            inputs.read_options,
            inputs.fields,
            params.stopwords,
            params.ngram,
            params.segment,
        )
        for part in parts
    ]
    summaries = completed(client, [client.submit(part_summary, f) for f in read], progress, "read")
    numbered = number(summaries, params.min_features)
    return read, numbered, [*walk_skipped, *numbered.skipped]


def _reduce(client: Client, futures: list[Future[Any]]) -> Future[Any]:
    """Add document-frequency tables pairwise until one is left (a tree reduction)."""
    while len(futures) > 1:
        futures = [
            client.submit(add_frequencies, *futures[lo : lo + 2])
            for lo in range(0, len(futures), 2)
        ]
    return futures[0]


def fingerprint_stage(
    client: Client,
    read: Sequence[Future[Any]],
    numbered: Numbered,
    params: Params,
    progress: Progress,
) -> tuple[list[Future[Any]], npt.NDArray[np.uint64], ExactWork | None]:
    """Weigh and fingerprint every partition's rows at the widest width the plan may use.

    tf-idf's document frequencies (and, for the planner, the exact scan's work) come from
    a tree reduction over the partitions first.

    Returns:
        The futures of the weighted partitions, the fingerprints gathered in row order
        (uint64, (documents, words)), and the exact scan's work when the planner needs it.
    """
    wide = widest(params)
    auto = params.planned
    documents = len(numbered.names)
    frequencies: Future[Any] | None = None
    if (params.weighting == "tfidf" or auto) and read:
        frequencies = _reduce(
            client,
            [
                client.submit(document_frequencies, f, rows)
                for f, rows in zip(read, numbered.rows, strict=True)
            ],
        )
    vectors = [
        client.submit(weigh_part, f, rows, wide, frequencies, documents)
        for f, rows in zip(read, numbered.rows, strict=True)
    ]
    work: ExactWork | None = None
    if auto:
        entries = int(numbered.lengths.sum())
        work = (
            client.submit(corpus_work, frequencies, documents, entries).result()
            if frequencies is not None
            else ExactWork(documents, 0, 0, entries)
        )
    fingerprints = np.zeros((documents, words64(wide.fixed_bits)), dtype=np.uint64)
    gathered = completed(
        client, [client.submit(vector_rows, v) for v in vectors], progress, "fingerprint"
    )
    for rows, part_fingerprints in gathered:
        fingerprints[rows] = part_fingerprints
    return vectors, fingerprints, work


def gathered_rows(
    client: Client, vectors: Sequence[Future[Any]], progress: Progress
) -> WeightMatrix:
    """Gather every weight row into the corpus matrix, for an exact scan on the client."""
    blocks = completed(client, [client.submit(row_block, v) for v in vectors], progress, "gather")
    return gathered_matrix(blocks)


def plan_stage(
    client: Client,
    vectors: Sequence[Future[Any]],
    numbered: Numbered,
    fingerprints: npt.NDArray[np.uint64],
    params: Params,
    work: ExactWork | None,
    memory: int | None,
    *,
    report_all: bool,
    held_spill: HeldSpill | None = None,
) -> Plan:
    """Plan the pair search as the local engine does; refuse it when no plan fits ``memory``.

    The cosine sample's weight rows are gathered from the workers (a few thousand rows),
    and the plan is then the local engine's to the last bit. Only an exact scan, which
    the client runs with the local engine, writes its reported pairs past the budget to
    ``held_spill``'s disk; pairs verified on the workers are gathered in memory, so a
    plan of tables is priced holding them (:attr:`HeldSpill.exact_only`).

    Raises:
        BudgetError: naming the settings that would fit.
    """
    budget = default_memory() if memory is None else memory
    rows = functools.partial(gathered_sample, client, vectors)
    entries = float(numbered.lengths.mean()) if len(numbered.lengths) else 0.0
    shared = 0 if work is None else work.shared
    survey = survey_of(params, fingerprints, work, rows, entries, shared)
    if held_spill is not None:
        held_spill = dataclasses.replace(held_spill, exact_only=True)
    chosen, _ = fitted(
        params, survey, budget, workers=1, report_all=report_all, held_spill=held_spill
    )
    return chosen


def gathered_sample(
    client: Client, vectors: Sequence[Future[Any]], rows: npt.NDArray[np.int64]
) -> WeightMatrix:
    """Return the weight rows ``rows`` (global row numbers), in that order, from the workers."""
    wanted = np.unique(rows)
    blocks = client.gather(  # type: ignore[no-untyped-call]
        [client.submit(rows_of, v, wanted) for v in vectors]
    )
    return take_rows(gathered_matrix(blocks), np.searchsorted(wanted, rows))


def rows_of(vectors: Vectors, rows: npt.NDArray[np.int64]) -> RowBlock:
    """Return the partition's rows among ``rows`` (global row numbers, ascending)."""
    at = np.flatnonzero(np.isin(vectors.rows, rows))
    return RowBlock(vectors.rows[at], take_rows(vectors.matrix, at), vectors.fingerprints[at])


@dataclass(frozen=True)
class Found:
    """The candidates stage's outcome.

    Attributes:
        candidates: Futures of the candidate partitions, one per table and shuffle
            partition, in that order.
        sizes: Candidate pairs in each.
        searched: The plan with the oversized groups and buckets (as the local plan lists
            them) and the local ``table_candidates`` count.
    """

    candidates: list[Future[Any]]
    sizes: list[int]
    searched: Searched


def candidate_stage(
    client: Client,
    vectors: Sequence[Future[Any]],
    fingerprints: npt.NDArray[np.uint64],
    chosen: Plan,
    report_all: bool,
    progress: Progress,
) -> Found:
    """Shuffle every table's keys and make the pre-filtered candidate pairs.

    ``fingerprints`` are at the plan's width (uint64, (documents, words)).
    """
    masks = table_masks(chosen.tables)
    max_hamming = None if report_all else chosen.max_hamming
    shuffles = shuffle_partitions(len(fingerprints))
    splits = [client.submit(split_keys, v, masks, shuffles) for v in vectors]
    candidates = [
        client.submit(
            bucket_candidates,
            t,
            masks,
            max_hamming,
            *[client.submit(operator.getitem, s, (t, q)) for s in splits],
        )
        for t in range(len(masks))
        for q in range(shuffles)
    ]
    summaries = completed(
        client, [client.submit(candidate_summary, c) for c in candidates], progress, "candidates"
    )
    identical, large = identical_groups(fingerprints)
    large += [bucket for _, buckets, _ in summaries for bucket in buckets]
    table_candidates = identical + sum(raw for _, _, raw in summaries)
    searched = Searched(chosen, large, table_candidates)
    return Found(candidates, [size for size, _, _ in summaries], searched)


def verify_stage(
    client: Client,
    found: Found,
    vectors: Sequence[Future[Any]],
    params: Params,
    report_all: bool,
    progress: Progress,
) -> list[Verified]:
    """Measure the candidates where their weight rows live, about a million pairs a task."""
    futures = []
    for batch in batches(found.candidates, found.sizes, VERIFY_PAIRS):
        joined = client.submit(join_candidates, *batch)
        blocks = [client.submit(select_rows, v, joined) for v in vectors]
        futures.append(client.submit(verify_pairs, joined, params, report_all, *blocks))
    verified: list[Verified] = completed(client, futures, progress, "verify")
    return verified


def batches(items: Sequence[T], sizes: Sequence[int], budget: int) -> list[list[T]]:
    """Group consecutive non-empty items into batches of about ``budget`` in size.

    >>> batches("abcd", [3, 0, 2, 5], 5)
    [['a', 'c'], ['d']]
    """
    out: list[list[T]] = []
    held = budget
    for item, size in zip(items, sizes, strict=True):
        if not size:
            continue
        if held + size > budget:
            out.append([])
            held = 0
        out[-1].append(item)
        held += size
    return out
