"""Run a scan on a Dask cluster, with the local engine's output to the last byte.

The stages are those of :func:`simdup.find_duplicates`, cut into partitions
(:mod:`simdup.engines.partitions`) and scheduled as Dask tasks:

1. **read**: each partition of the inputs (a group of files, or one JSON Lines file) is
   read and counted by a worker. The client sends names (file paths, URLs), never texts,
   and receives names, feature counts and skips.
2. **fingerprint**: the client numbers the documents as the local engine does (duplicate
   names dropped in input order, then sorted by name, documents without features
   skipped) and each partition weighs and fingerprints its own rows; tf-idf's document
   frequencies are a tree reduction over the partitions first.
3. **plan**: the fingerprints (8 bytes per 64 bits per document) are gathered and
   :func:`simdup.plan.plan` chooses the tables from them, exactly as locally.
4. **candidates**: every partition splits its rows by table and key; a shuffle brings
   one table's equal keys into one partition, where pairs are made and pre-filtered.
5. **verify**: each candidate partition takes the weight rows of its pairs from the
   partitions holding them and measures its pairs there; the kept pairs are gathered and
   sorted by :func:`simdup.pipeline.canonical_order`.

Every piece of data lives in a Dask future computed from its inputs, never scattered
from the client, so a worker lost mid-run costs a recomputation, not the scan.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import operator
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from simdup.blocking import table_masks
from simdup.budget import check_budget, default_memory
from simdup.corpus import JsonlOptions, ReadOptions, find_files
from simdup.engines.partitions import (
    FilesPart,
    JsonlPart,
    Part,
    Summary,
    Verified,
    add_frequencies,
    bucket_candidates,
    candidate_summary,
    corpus_work,
    document_frequencies,
    duplicate_groups,
    empty_pairs,
    gathered_matrix,
    identical_pairs,
    join_candidates,
    part_summary,
    read_part,
    row_block,
    select_rows,
    shuffle_partitions,
    split_keys,
    vector_rows,
    verify_pairs,
    weigh_part,
)
from simdup.errors import SimdupError
from simdup.exact import ExactWork
from simdup.model import Document, PairArrays, Params, ScanResult, Skip
from simdup.parallel import check_jobs
from simdup.pipeline import NO_FEATURES, alternatives, canonical_order, find_pairs, widest
from simdup.plan import plan
from simdup.progress import Progress, no_progress
from simdup.simhash import words64

if TYPE_CHECKING:
    from distributed import Client, Future

T = TypeVar("T")

#: Files read by one task: enough to outweigh a task's overhead (about a millisecond).
FILES_PER_PARTITION = 2_000

#: Partitions of the files per worker, at least (while partitions stay above one file).
TASKS_PER_WORKER = 4

#: Candidate pairs verified by one task (partitions are joined up to it).
VERIFY_PAIRS = 1 << 20

#: Seconds to wait for a scheduler before giving up with a message.
CONNECT_TIMEOUT = 5.0


class SchedulerError(SimdupError):
    """The Dask scheduler cannot be reached, or the Dask extra is not installed."""


@dataclass(frozen=True)
class Inputs:
    """What a distributed scan reads: the local engine's inputs, named, not read.

    Attributes:
        paths: Files and directories, walked by the client (names only), read by workers.
        jsonl: JSON Lines inputs, one read task each: paths or fsspec URLs (as strings or
            :class:`JsonlPart`), or bytes already read (stdin) as ``JsonlPart(label, data)``.
            Globs are not expanded here: :func:`simdup.jsonl_inputs.expand_jsonl` does it.
        read_options: How files are found and decoded.
        fields: Which fields of a JSON Lines record hold the text and the id.
    """

    paths: Sequence[str] = ()
    jsonl: Sequence[JsonlPart | str] = ()
    read_options: ReadOptions = field(default_factory=ReadOptions)
    fields: JsonlOptions = field(default_factory=JsonlOptions)


#: Documents per partition of texts already in memory (see :func:`document_inputs`).
DOCUMENTS_PER_PARTITION = 2_000


def document_inputs(
    documents: Sequence[Document], workers: int = 1, per_partition: int = DOCUMENTS_PER_PARTITION
) -> Inputs:
    """Return documents already read (names unique) as inputs of :func:`find_duplicates`.

    For callers that hold the texts anyway (``simdup dedupe`` writes the kept lines back):
    the documents travel to the workers as JSON Lines partitions of at most
    ``per_partition`` records, at least :data:`TASKS_PER_WORKER` per worker, and are read
    back to the same names and texts (JSON escapes every character, lone surrogates too).
    """
    spread = -(-len(documents) // (TASKS_PER_WORKER * max(1, workers)))
    step = max(1, min(per_partition, spread))
    parts = []
    for lo in range(0, len(documents), step):
        lines = [json.dumps({"id": d.name, "text": d.text}) for d in documents[lo : lo + step]]
        data = "".join(line + "\n" for line in lines).encode("ascii")
        parts.append(JsonlPart(f"<documents {lo + 1}-{lo + len(lines)}>", data))
    return Inputs(jsonl=parts)


def _distributed() -> Any:
    """Import :mod:`distributed`, or raise a message saying how to install it."""
    try:
        import distributed  # optional: the dask extra
    except ImportError:
        raise SchedulerError(
            "the dask engine needs Dask; install it with: pip install 'simdup[dask]'"
        ) from None
    return distributed


@contextlib.contextmanager
def connect(
    scheduler: str | None = None, *, jobs: int = 0, timeout: float = CONNECT_TIMEOUT
) -> Iterator[Client]:
    """Yield a client of the scheduler at ``scheduler``, or of a local cluster.

    Without an address a :class:`distributed.LocalCluster` of ``jobs`` worker processes
    (0: one per core), one thread each, is started and closed on leaving, also when the
    scan is interrupted.

    Raises:
        SchedulerError: when the scheduler cannot be reached within ``timeout`` seconds.
    """
    distributed = _distributed()
    if scheduler:
        _probe(distributed, scheduler, timeout)
        try:
            client = distributed.Client(scheduler, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise _unreachable(scheduler, exc) from None
        try:
            yield client
        finally:
            client.close()
        return
    with _interrupt_deferred() as interrupted:
        try:
            cluster = distributed.LocalCluster(
                n_workers=check_jobs(jobs),
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",  # a free port: two clusters never clash
                silence_logs=logging.ERROR,
            )
        except RuntimeError:
            # A terminal's Ctrl-C also reaches the starting workers, which then fail
            # the start; the cluster has closed what it started.
            if interrupted:
                raise KeyboardInterrupt from None
            raise
    try:
        if interrupted:
            raise KeyboardInterrupt
        with distributed.Client(cluster, set_as_default=False) as client:
            yield client
    finally:
        cluster.close()


@contextlib.contextmanager
def _interrupt_deferred() -> Iterator[list[int]]:
    """Hold Ctrl-C back while a local cluster starts; yield the interrupts received.

    Interrupted half-way, a starting cluster cannot be closed cleanly; once started (or
    failed), it can, and the caller then closes it and stops. Outside the main thread
    signals cannot be handled, and nothing is deferred.
    """
    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda number, frame: received.append(number))
    try:
        yield received
    finally:
        signal.signal(signal.SIGINT, previous)


def _unreachable(scheduler: str, exc: BaseException | str) -> SchedulerError:
    """Return the one-line error for a scheduler that cannot be used."""
    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return SchedulerError(
        f"cannot reach the Dask scheduler at {scheduler!r} ({reason}); check the address, "
        "and that `dask scheduler` runs there"
    )


def _probe(distributed: Any, scheduler: str, timeout: float) -> None:
    """Open and close one connection to ``scheduler``, or raise :class:`SchedulerError`.

    Done apart from :class:`distributed.Client`, whose failed start leaves a half-made
    client that waits for its own timeout again when collected: a malformed address, a
    closed port or a server that does not speak Dask's protocol fails here, once, within
    ``timeout`` seconds.
    """

    async def attempt() -> None:
        comm = await distributed.comm.connect(scheduler, timeout=timeout)
        await comm.close()

    try:
        asyncio.run(asyncio.wait_for(attempt(), timeout + 1.0))
    # A server speaking another protocol answers with bytes read as a frame length of
    # exabytes: the allocation fails with MemoryError, before anything is allocated.
    except MemoryError:
        raise _unreachable(scheduler, "it answers, but not as a Dask scheduler") from None
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        raise _unreachable(scheduler, exc) from None


def _completed(
    client: Client, futures: Sequence[Future[Any]], progress: Progress, desc: str
) -> list[Any]:
    """Wait for ``futures`` (advancing ``progress``) and return their results in order."""
    distributed = _distributed()
    done = distributed.as_completed(futures, loop=client.loop)
    for _ in progress(done, desc=desc, total=len(futures)):
        pass
    return list(client.gather(list(futures)))  # type: ignore[no-untyped-call]


def _partitions(
    inputs: Inputs, files_per_partition: int, workers: int
) -> tuple[list[Part], list[Skip]]:
    """Return the read partitions in the local engine's input order, and the walk's skips.

    Files are cut into at least :data:`TASKS_PER_WORKER` partitions per worker (so small
    corpora spread too) of at most ``files_per_partition`` files.
    """
    parts: list[Part] = []
    skipped: list[Skip] = []
    if inputs.paths:
        sources, skipped = find_files(inputs.paths, inputs.read_options)
        spread = -(-len(sources) // (TASKS_PER_WORKER * max(1, workers)))
        step = max(1, min(files_per_partition, spread))
        parts += [FilesPart(tuple(sources[lo : lo + step])) for lo in range(0, len(sources), step)]
    parts += [JsonlPart(p) if isinstance(p, str) else p for p in inputs.jsonl]
    return parts, skipped


@dataclass
class _Numbered:
    """Documents numbered as the local engine numbers them."""

    rows: list[npt.NDArray[np.int64]]  # per partition, the global row of each document
    names: list[str]
    lengths: npt.NDArray[np.int64]
    skipped: list[Skip]


def _number(summaries: Sequence[Summary]) -> _Numbered:
    """Drop repeated names (the first kept), sort by name, skip documents without features."""
    skipped = [skip for s in summaries for skip in s.skipped]
    seen: set[str] = set()
    kept: list[tuple[str, int, int, int]] = []  # name, partition, position, length
    for p, summary in enumerate(summaries):
        for k, name in enumerate(summary.names):
            if name in seen:
                skipped.append(Skip(name, "duplicate document name"))
                continue
            seen.add(name)
            kept.append((name, p, k, int(summary.lengths[k])))
    kept.sort(key=lambda item: item[0])
    rows = [np.full(len(s.names), -1, dtype=np.int64) for s in summaries]
    names: list[str] = []
    lengths: list[int] = []
    for name, p, k, length in kept:
        if length == 0:
            skipped.append(Skip(name, NO_FEATURES, unreadable=False))
            continue
        rows[p][k] = len(names)
        names.append(name)
        lengths.append(length)
    return _Numbered(rows, names, np.asarray(lengths, dtype=np.int64), skipped)


def _reduce(client: Client, futures: list[Future[Any]]) -> Future[Any]:
    """Add document-frequency tables pairwise until one is left (a tree reduction)."""
    while len(futures) > 1:
        futures = [
            client.submit(add_frequencies, *futures[lo : lo + 2])
            for lo in range(0, len(futures), 2)
        ]
    return futures[0]


def find_duplicates(
    client: Client,
    inputs: Inputs,
    params: Params | None = None,
    *,
    report_all: bool = False,
    progress: Progress = no_progress,
    files_per_partition: int = FILES_PER_PARTITION,
    jobs: int = 1,
    memory: int | None = None,
) -> ScanResult:
    """Return what :func:`simdup.find_duplicates` returns for the same inputs, from Dask.

    The plan is the local engine's (:func:`simdup.plan.plan` on the gathered
    fingerprints, with the exact scan's work from the reduced document frequencies), so
    the width and the choice of exact mode are the same. Exact mode is only chosen when
    every pair is cheap, that is on small corpora: the weight rows are then gathered to
    the client, which runs the local engine's own :func:`simdup.pipeline.find_pairs` on
    them. Otherwise candidates are shuffled and verified on the workers, and the client
    checks the plan against ``memory`` as the local engine does before any pair work.

    Args:
        client: A connected Dask client (see :func:`connect`).
        inputs: Files, directories and JSON Lines inputs, read by the workers.
        params: Settings (defaults: :class:`Params`).
        report_all: Report every candidate pair, not only those above the threshold.
        progress: Progress hook, advanced as each stage's tasks complete (labels
            ``read``, ``fingerprint``, ``candidates``, ``verify``).
        files_per_partition: Files read by one task.
        jobs: Threads of the client for an exact scan (0: every core).
        memory: Bytes the client may use (default: :func:`simdup.budget.default_memory`).
    """
    params = params or Params()
    wide = widest(params)
    auto = params.scheme == "auto" and params.blocks is None and params.max_distance is None
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    workers = len(client.nthreads())  # type: ignore[no-untyped-call]
    parts, walk_skipped = _partitions(inputs, files_per_partition, workers)
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
    summaries = _completed(client, [client.submit(part_summary, f) for f in read], progress, "read")
    numbered = _number(summaries)
    skipped = [*walk_skipped, *numbered.skipped]
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
    fingerprints = np.zeros((documents, words64(wide.bits)), dtype=np.uint64)
    gathered = _completed(
        client, [client.submit(vector_rows, v) for v in vectors], progress, "fingerprint"
    )
    for rows, part_fingerprints in gathered:
        fingerprints[rows] = part_fingerprints
    del read, frequencies  # the vectors keep their lineage: a lost worker is recomputed
    timings["fingerprint"] = time.perf_counter() - clock

    clock = time.perf_counter()
    chosen = plan(params, fingerprints, work=work)
    if chosen.exact:
        blocks = _completed(
            client, [client.submit(row_block, v) for v in vectors], progress, "gather"
        )
        matrix = gathered_matrix(blocks)
        del blocks, vectors
        return find_pairs(
            numbered.names,
            matrix,
            fingerprints,
            params,
            report_all=report_all,
            skipped=skipped,
            timings=timings,
            jobs=jobs,
            memory=memory,
        )
    budget = default_memory() if memory is None else memory
    check_budget(
        chosen,
        budget,
        workers=1,
        report_all=report_all,
        alternatives=lambda: alternatives(params, None, fingerprints, chosen, budget, 1),
    )
    fingerprints = np.ascontiguousarray(fingerprints[:, : words64(chosen.bits)])
    used = params.replace(bits=chosen.bits) if params.auto_bits else params
    timings["plan"] = time.perf_counter() - clock

    clock = time.perf_counter()
    masks = table_masks(chosen.tables)
    max_hamming = None if report_all else chosen.max_hamming
    shuffles = shuffle_partitions(documents)
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
    summaries_of_candidates = _completed(
        client, [client.submit(candidate_summary, c) for c in candidates], progress, "candidates"
    )
    sizes = [size for size, _, _ in summaries_of_candidates]
    large = duplicate_groups(fingerprints)
    large += [bucket for _, buckets, _ in summaries_of_candidates for bucket in buckets]
    table_candidates = identical_pairs(fingerprints)
    table_candidates += sum(raw for _, _, raw in summaries_of_candidates)
    del splits
    timings["candidates"] = time.perf_counter() - clock

    clock = time.perf_counter()
    verified_futures = []
    for batch in _batches(candidates, sizes, VERIFY_PAIRS):
        joined = client.submit(join_candidates, *batch)
        blocks = [client.submit(select_rows, v, joined) for v in vectors]
        verified_futures.append(client.submit(verify_pairs, joined, used, report_all, *blocks))
    verified: list[Verified] = _completed(client, verified_futures, progress, "verify")
    timings["verify"] = time.perf_counter() - clock
    reported = _concat([v.kept for v in verified])
    stats = {
        "documents": documents,
        "skipped": len(skipped),
        "candidates": sum(v.candidates for v in verified),
        "planned_candidates": chosen.expected_candidates,
        "table_candidates": table_candidates,
        "planned_verified": chosen.expected_verified,
        "above_threshold": sum(v.above_threshold for v in verified),
        "pairs": len(reported),
        "bits": chosen.bits,
    }
    return ScanResult(
        names=numbered.names,
        params=used,
        pairs=canonical_order(numbered.names, reported),
        feature_counts=numbered.lengths,
        fingerprints=fingerprints,
        stats=stats,
        skipped=skipped,
        tables=chosen.tables.description,
        timings=timings,
        plan=chosen.describe(large, numbered.names),
    )


def _batches(items: Sequence[T], sizes: Sequence[int], budget: int) -> list[list[T]]:
    """Group consecutive non-empty items into batches of about ``budget`` in size.

    >>> _batches("abcd", [3, 0, 2, 5], 5)
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


def _concat(parts: Sequence[PairArrays]) -> PairArrays:
    """Join measured pairs of every partition (empty arrays for none)."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return empty_pairs()
    return PairArrays(
        np.concatenate([p.pairs for p in parts]),
        np.concatenate([p.hamming for p in parts]),
        np.concatenate([p.estimated for p in parts]),
        np.concatenate([p.cosine for p in parts]),
    )
