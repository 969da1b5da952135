"""Read and count documents over worker processes, holding no text for long.

Tokenising is the costliest stage of a scan and each document is independent, so it
spreads over processes. Inputs travel to the workers as names (files, JSON Lines inputs)
or texts (documents already in memory), a chunk at a time; workers read, decode,
tokenise and count them (:func:`read_counts`, which is also a distributed scan's read
task) and send back only the counts, so memory is bounded by the chunks in flight and the
counts, not by the corpus. Callers that keep the texts read over the same workers with
:func:`read_inputs`.

Workers start only for work that one process would take longer to do than they take to
start (:func:`worth_workers`, from the corpus's size in inputs and bytes): this process
reads the first chunk, and hands the rest to workers, which start while it reads the
next, as soon as the inputs ahead are worth it.
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

from simdup.engines.local.stored import CorpusSink, Spill, StoredCounts
from simdup.engines.pool import check_jobs, chunk_bounds, ordered_map, start_method
from simdup.inputs.files import ReadOptions
from simdup.inputs.gather import Input, ReadChunk, read_chunk
from simdup.inputs.jsonl import JsonlOptions
from simdup.inputs.lines import Cut, IndexedPiece, PieceMap, index_piece, index_pieces
from simdup.model import Skip
from simdup.params import parse_setting
from simdup.progress import Meter, Progress, no_meter, no_progress
from simdup.text.counting import count_chunk, merge
from simdup.text.counts import ChunkCounts, CountMatrix, Sender, number_in_process
from simdup.text.segment import load_segmenter, segmentation

#: Documents per chunk handed to a worker (a fixed size keeps the output independent of
#: the worker count; large enough that the per-chunk overhead stays small).
CHUNK_DOCUMENTS = 2_000

#: What reading one input costs (opening, reading and closing a file, its share of a
#: chunk's traffic), in bytes of text counted in the same time: 20-26 us against 55 ns a
#: byte on the 2-core machine of ``python benchmarks/startup.py --break-even``.
INPUT_BYTES = 400

#: Work (bytes of text, and :data:`INPUT_BYTES` per input) below which reading and
#: counting stay in this process: forked workers would start, take their chunks and send
#: back the counts in more time than a second core saves. ``benchmarks/startup.py
#: --break-even`` on the shared 2-core machine: workers lost below about 1.5 MB of text,
#: won in most runs from 2.5-5 MB, and lost everywhere while other work held both cores.
PARALLEL_BYTES = 4_000_000

#: The same where workers are spawned: each starts an interpreter, imports numpy and
#: builds the noise-word tables (about half a second). Spawned workers lost even on 50 MB
#: while the machine was loaded: only corpora of seconds of counting are worth them.
SPAWNED_PARALLEL_BYTES = 64_000_000

R = TypeVar("R")


def worth_workers(inputs: int, size: int, method: str = "fork") -> bool:
    """Tell whether ``inputs`` inputs of ``size`` bytes of text in all are worth workers.

    Args:
        inputs: Inputs (files, JSON Lines inputs or documents) still to read.
        size: Their bytes (characters for documents in memory), known or estimated.
        method: How workers start (:func:`simdup.engines.pool.start_method`).

    >>> worth_workers(100, 50_000), worth_workers(100_000, 0)
    (False, True)
    """
    limit = PARALLEL_BYTES if method == "fork" else SPAWNED_PARALLEL_BYTES
    return size + inputs * INPUT_BYTES >= limit


def count_matrix(
    texts: Sequence[str],
    *,
    stopwords: bool | str = True,
    ngram: int = 1,
    jobs: int = 1,
    chunk_documents: int = CHUNK_DOCUMENTS,
    progress: Progress = no_progress,
    segment: str = "bigrams",
) -> CountMatrix:
    """Return the term counts of every text, tokenised over ``jobs`` processes.

    Args:
        texts: The documents.
        stopwords: As for :func:`simdup.text.tokens.tokenize`.
        ngram: As for :func:`simdup.text.tokens.tokenize`.
        jobs: Worker processes; 1 works in this process, 0 uses every core. Small corpora
            are always counted here. The result never depends on it.
        chunk_documents: Documents per unit of work.
        progress: Progress hook, advanced by the documents of each chunk counted (label
            ``tokenize``).
        segment: As for :func:`simdup.text.tokens.tokenize`.

    >>> m = count_matrix(["red fox", "fox fox", "the"], jobs=2)
    >>> m.vocabulary, m.indptr.tolist(), m.counts.tolist()
    (('red', 'fox'), [0, 2, 3, 3], [1, 1, 2])
    """
    chunks = _chunk_counts(texts, stopwords, ngram, jobs, chunk_documents, segment)
    sized = ((len(chunk.lengths), chunk) for chunk in chunks)
    return merge(_ticking(sized, progress, "tokenize", len(texts)))


def _ticking(
    chunks: Iterable[tuple[int, R]], progress: Progress, desc: str, total: int
) -> Iterator[R]:
    """Yield each chunk's result, advancing ``progress`` by the items of the chunk.

    People count documents, not the chunks they travel in; any :class:`Progress` hook
    counts them when it is driven over one item per document.
    """
    ticks = iter(progress(itertools.repeat(None, total), desc=desc, total=total))
    for items, result in chunks:
        for _ in itertools.islice(ticks, items):
            pass
        yield result
    for _ in ticks:  # let the display finish
        pass


def count_batches(
    batches: Iterable[Sequence[str]],
    *,
    stopwords: bool | str = True,
    ngram: int = 1,
    jobs: int = 1,
    chunk_documents: int = CHUNK_DOCUMENTS,
    segment: str = "bigrams",
) -> CountMatrix:
    """Return the term counts of texts that arrive in batches, one batch held at a time.

    Equal to :func:`count_matrix` of all the texts in order: a reader can hand over a
    corpus larger than memory allows to hold as text, and only its counts are kept.

    >>> m = count_batches([["red fox"], ["fox fox", "the"]])
    >>> m.vocabulary, m.indptr.tolist(), m.counts.tolist()
    (('red', 'fox'), [0, 2, 3, 3], [1, 1, 2])
    """
    return merge(
        itertools.chain.from_iterable(
            _chunk_counts(batch, stopwords, ngram, jobs, chunk_documents, segment)
            for batch in batches
        )
    )


def _chunk_counts(
    texts: Sequence[str],
    stopwords: bool | str,
    ngram: int,
    jobs: int,
    chunk_documents: int,
    segment: str = "bigrams",
) -> Iterator[ChunkCounts]:
    """Yield the counts of consecutive chunks of ``texts``, over ``jobs`` processes."""
    workers = check_jobs(jobs)
    parse_setting(stopwords)
    segment = segmentation(segment)  # once here: every worker cuts alike
    chunk_documents = max(1, chunk_documents)
    bounds = chunk_bounds(len(texts), chunk_documents)
    if workers > 1 and not _worth_starting(len(texts), sum(map(len, texts))):
        workers = 1
    work = functools.partial(count_chunk, stopwords=stopwords, ngram=ngram, segment=segment)
    if workers > 1:
        load_segmenter(segment, texts[: bounds[0][1]] if bounds else ())
    yield from ordered_map(work, texts, bounds, workers, here=1)


#: Most inputs handed to a worker at once: texts of a chunk are in memory together. A
#: chunk's words are looked up once for it, so larger chunks look up fewer (1,000
#: generated files hold about 25,000 words, 4,000 about 35,000): 100,000 files were
#: counted in 3.4-3.6 s against 3.9-4.1 with chunks of 1,000.
MAX_CHUNK_INPUTS = 4_000

#: Bytes of inputs a chunk holds at most, at the bytes per input read so far.
CHUNK_BYTES = 8 << 20

#: Fewest inputs per chunk: smaller chunks cost more to send than they gain in balance.
#: The first chunk, read in this process to tell how large the inputs are, has this many.
MIN_CHUNK_INPUTS = 16


@dataclass(frozen=True)
class CountedChunk:
    """A chunk of inputs read and counted where it was read (a worker's answer).

    Attributes:
        names: Names of the documents read, in input order.
        counts: Their term counts (a chunk-local vocabulary).
        skipped: The inputs that could not be read, with the reason, in input order.
        size: Bytes read (characters for documents already in memory).
        sender: Who numbered the counts' features, if a process numbered them over a
            run (:func:`~simdup.text.counts.number_in_process`); None: the chunk's own.
    """

    names: list[str]
    counts: ChunkCounts
    skipped: list[Skip]
    size: int = 0
    sender: Sender | None = None


def read_counts(
    inputs: Sequence[Input],
    options: ReadOptions,
    fields: JsonlOptions | None,
    stopwords: bool | str,
    ngram: int,
    segment: str = "bigrams",
) -> CountedChunk:
    """Read and count one chunk of inputs (a worker's unit of work); texts are dropped.

    A local worker's chunk and a distributed scan's read partition alike. Only the texts'
    words are read: their lines are not folded.
    """
    chunk = read_chunk(inputs, replace(options, words=True), fields)
    counts = count_chunk([d.text for d in chunk.documents], stopwords, ngram, segment)
    return CountedChunk([d.name for d in chunk.documents], counts, chunk.skipped, chunk.size)


def _read_numbered(
    inputs: Sequence[Input], *, run: tuple[int, int], **settings: Any
) -> CountedChunk:
    """:func:`read_counts`, in a worker with the features numbered by it over ``run``.

    The process that counts (``run[0]``) maps a chunk's own vocabulary as it is: it has
    nothing to send.
    """
    chunk = read_counts(inputs, **settings)
    if run[0] == os.getpid():
        return chunk
    counts, sender = number_in_process(chunk.counts, run)
    return CountedChunk(chunk.names, counts, chunk.skipped, chunk.size, sender)


#: Scans counted by this process so far: with its id, what names a run.
_RUNS = itertools.count()


#: Chunks per worker: the read bar moves a chunk at a time, so a few thousand files should
#: not move it in a few large steps after seconds at zero; fewer, larger chunks look up
#: fewer words (:data:`MAX_CHUNK_INPUTS`: 100,000 files in chunks of 3,125 counted in
#: 3.4-3.6 s, of 1,562 in 3.6-3.9).
CHUNKS_PER_WORKER = 16


def chunk_inputs(count: int, workers: int) -> int:
    """Return inputs per chunk: about :data:`CHUNKS_PER_WORKER` per worker, within bounds.

    >>> chunk_inputs(100_000, 2), chunk_inputs(4_500, 2), chunk_inputs(4_500, 1)
    (3125, 140, 281)
    """
    per_chunk = count // (CHUNKS_PER_WORKER * max(1, workers))
    return max(MIN_CHUNK_INPUTS, min(MAX_CHUNK_INPUTS, per_chunk))


#: Bytes of inputs in flight to the workers at most (as read so far, per input).
#: Results are taken in order, so a slow chunk (an 8 MB page among small ones) keeps
#: those after it waiting; with two chunks per worker in flight the other worker soon
#: stood idle. Eight per worker made the documentation tree's scan 11% faster (19.9
#: to 17.6 s; no change on the manual pages), and this bounds what waits in memory.
AHEAD_BYTES = 64 << 20

#: Chunks in flight per worker at most (and at least two, less one for them all).
AHEAD_PER_WORKER = 8


def chunks_ahead(workers: int, chunk_bytes: int) -> int:
    """Return chunks to keep in flight beyond the one awaited: :data:`AHEAD_BYTES` of them.

    A chunk of unknown size (0: no input read yet) counts as a large one.

    >>> [chunks_ahead(2, size) for size in (1 << 20, 32 << 20, 1 << 30, 0)]
    [16, 3, 3, 3]
    """
    fewest = 2 * workers - 1
    if chunk_bytes <= 0:
        return fewest
    return max(fewest, min(AHEAD_PER_WORKER * workers, AHEAD_BYTES // chunk_bytes))


def _worth_starting(inputs: int, size: int) -> bool:
    """:func:`worth_workers` as workers start here (``multiprocessing`` loads only if near)."""
    return worth_workers(inputs, size) and worth_workers(inputs, size, start_method())


def pieces_over(jobs: int) -> PieceMap:
    """Return how the pieces of a JSON Lines file are indexed: over ``jobs`` processes.

    Parsing each line for its id is most of a large file's indexing; its pieces are
    independent, so forked workers index them when the file is :func:`worth_workers`
    (results in order: the same columns whatever ``jobs``).
    """
    workers = check_jobs(jobs)

    def over(path: str, fields: JsonlOptions, cuts: list[Cut]) -> Iterable[IndexedPiece]:
        size = cuts[-1][1] if cuts else 0
        if workers == 1 or len(cuts) < 2 or not _worth_starting(0, size):
            return index_pieces(path, fields, cuts)
        work = functools.partial(_index_cuts, path=path, fields=fields)
        return ordered_map(work, cuts, chunk_bounds(len(cuts), 1), workers)

    return over


def _index_cuts(cuts: Sequence[Cut], path: str, fields: JsonlOptions) -> IndexedPiece:
    """Index the one piece of a file a worker is given."""
    (cut,) = cuts
    return index_piece(path, fields, cut)


class _Read(Protocol):
    """What reading a chunk tells: the bytes read (characters for documents in memory)."""

    @property
    def size(self) -> int: ...


ReadResult = TypeVar("ReadResult", bound=_Read)


def _over_workers(
    work: Callable[[Sequence[Any]], ReadResult],
    inputs: Sequence[Input],
    jobs: int,
) -> Iterator[tuple[int, ReadResult]]:
    """Yield ``work`` of consecutive chunks of ``inputs``, in order, with each chunk's length.

    Inputs are read where they are counted. This process reads the first chunks; once
    the inputs left, at the bytes per input read so far, are :func:`worth_workers`, the
    rest go to ``jobs`` worker processes in chunks of :func:`chunk_inputs` inputs and
    about :data:`CHUNK_BYTES` at most (see
    :func:`~simdup.engines.pool.ordered_map` for where the first of them is read).
    Workers inherit the segmenter if the chunks read here loaded it (they held Han text).
    """
    workers = check_jobs(jobs)
    size = chunk_inputs(len(inputs), workers)
    first = min(len(inputs), MIN_CHUNK_INPUTS if workers > 1 else size)
    bounds = chunk_bounds(first, first) + chunk_bounds(len(inputs), size, start=first)
    read = 0  # bytes of the inputs read so far, all in this process
    for position, (lo, hi) in enumerate(bounds):
        left = len(inputs) - lo
        estimate = read * left // lo if lo else 0  # bytes left, at the mean read so far
        if workers > 1 and position + 1 < len(bounds) and _worth_starting(left, estimate):
            if read:
                size = min(size, max(MIN_CHUNK_INPUTS, CHUNK_BYTES * lo // read))
            rest = chunk_bounds(len(inputs), size, start=lo)
            ahead = chunks_ahead(workers, read * size // max(lo, 1))
            results = ordered_map(work, inputs, rest, workers, here=1, ahead=ahead)
            yield from zip((b - a for a, b in rest), results, strict=True)
            return
        result = work(inputs[lo:hi])
        read += result.size
        yield hi - lo, result


def read_inputs(
    inputs: Sequence[Input],
    options: ReadOptions,
    fields: JsonlOptions | None = None,
    *,
    state: bool = False,
    jobs: int = 1,
    progress: Progress = no_progress,
) -> Iterator[ReadChunk]:
    """Read inputs over ``jobs`` worker processes, a chunk at a time, in input order.

    For callers that keep the texts; see :func:`simdup.inputs.gather.read_chunk` for
    ``fields`` and ``state``. ``progress`` counts the inputs read (label ``read``).
    """
    work = functools.partial(read_chunk, options=options, fields=fields, state=state)
    yield from _ticking(_over_workers(work, inputs, jobs), progress, "read", len(inputs))


@dataclass(frozen=True)
class CountedInputs:
    """The term counts of a scan's inputs.

    Attributes:
        counts: One row per document read, in input order (or, for a corpus that outgrew
            its share of memory, the store holding them and their names).
        names: The name of each row (none when stored).
        skipped: Inputs that could not be read, in the order their files are listed.
    """

    counts: CountMatrix | StoredCounts
    names: list[str]
    skipped: list[Skip]


def count_inputs(
    inputs: Sequence[Input],
    options: ReadOptions,
    *,
    fields: JsonlOptions | None = None,
    stopwords: bool | str = True,
    ngram: int = 1,
    segment: str = "bigrams",
    jobs: int = 1,
    meter: Meter = no_meter,
    spill: Spill | None = None,
    min_features: int = 1,
) -> CountedInputs:
    """Read, tokenise and count inputs over ``jobs`` processes, holding no text for long.

    Args:
        inputs: Files and documents (see :func:`gather_inputs`).
        options: How files are read and decoded.
        fields: Which fields of a JSON Lines record hold the text and the id.
        stopwords: As for :func:`simdup.text.tokens.tokenize`.
        ngram: As for :func:`simdup.text.tokens.tokenize`.
        segment: As for :func:`simdup.text.tokens.tokenize`.
        jobs: Worker processes (0: every core); the result never depends on it.
        meter: Told the documents and bytes done after each chunk (label ``read+tokenize``).
        spill: Where the counts go once they outgrow their share of memory (None: they
            stay in memory).
        min_features: Documents with fewer features are left out of the store (see
            :class:`~simdup.engines.local.stored.CorpusSink`); those held are left out
            when weighted.
    """
    work = functools.partial(
        _read_numbered,
        run=(os.getpid(), next(_RUNS)),
        options=options,
        fields=fields,
        stopwords=stopwords,
        ngram=ngram,
        segment=segment,
    )
    sink = CorpusSink(spill, len(inputs), min_features)
    skipped: list[Skip] = []
    with meter(desc="read+tokenize", total=len(inputs)) as advance:
        for items, done in _over_workers(work, inputs, jobs):
            sink.add(done.names, done.counts, items, done.sender)
            skipped.extend(done.skipped)
            advance(items, done.size)
    # Unreadable inputs listed as reading file by file lists them: by the bytes of the name.
    skipped.sort(key=lambda s: os.fsencode(s.path))
    counted = sink.finish()
    if isinstance(counted, StoredCounts):
        return CountedInputs(counted, [], skipped)
    return CountedInputs(*counted, skipped)
