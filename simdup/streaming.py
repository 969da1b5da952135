"""Scan files without holding their texts: names go to the workers, counts come back.

Reading a whole tree first would hold the text of every file until the end. Here inputs
travel as names (a :class:`~simdup.corpus.Source` per file; documents already in memory,
such as JSON Lines records, as themselves), a chunk at a time, to worker processes that
read, decode, tokenise and count them and send back only the counts: each text is
dropped as soon as its chunk is counted, so memory is bounded by the chunks in flight
and the counts, not by the corpus. Reading also spreads over the workers with the rest.

Rows are the inputs in name order, as :func:`simdup.pipeline.find_duplicates` orders
documents, and the merged counts do not depend on how inputs are cut into chunks, so a
scan here reports exactly what reading every text first and calling
:func:`~simdup.pipeline.find_duplicates` reports.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from simdup.corpus import ReadOptions, Source, find_files, read_source
from simdup.counts import ChunkCounts
from simdup.model import Document, Params, ScanResult, Skip
from simdup.parallel import (
    CountMatrix,
    check_jobs,
    chunk_bounds,
    count_chunk,
    merge,
    ordered_map,
    start_method,
)
from simdup.pipeline import Fingerprinted, find_pairs, fingerprint_counts, widest
from simdup.progress import Meter, no_meter

#: An input of a scan: a file to read, or a document already in memory.
Input = Source | Document

#: Most inputs handed to a worker at once: texts of a chunk are in memory together.
MAX_CHUNK_INPUTS = 1_000

#: Fewest inputs per chunk: smaller chunks cost more to send than they gain in balance.
MIN_CHUNK_INPUTS = 16

#: Below this many inputs, reading and counting stay in this process (forked workers
#: start in milliseconds).
MIN_PARALLEL_INPUTS = 200

#: The same where workers are spawned: each starts a fresh interpreter and imports numpy.
MIN_SPAWNED_INPUTS = 2_000


@dataclass(frozen=True)
class InputSet:
    """What a scan reads: inputs in name order, and what was skipped before reading.

    Attributes:
        inputs: Files and documents, each name once, sorted by name.
        skipped: Inputs left out while walking (links, special files, unreadable roots).
        duplicates: Documents left out for sharing a name with an earlier input.
    """

    inputs: list[Input]
    skipped: list[Skip]
    duplicates: list[Skip]


def gather_inputs(
    paths: Iterable[str],
    options: ReadOptions,
    documents: Iterable[Document] = (),
    *,
    meter: Meter = no_meter,
) -> InputSet:
    """Return the files under ``paths`` and the given ``documents``, in name order.

    A document named like a file, or like an earlier document, is skipped as a duplicate.
    ``meter`` is told each file found while walking (label ``walk``).
    """
    sources, skipped = find_files(paths, options, meter=meter)
    kept, duplicates = unique_names(documents, {s.name for s in sources})
    inputs: list[Input] = [*sources, *kept]
    inputs.sort(key=lambda item: item.name)
    return InputSet(inputs, skipped, duplicates)


def unique_names(
    documents: Iterable[Document], taken: set[str] | None = None
) -> tuple[list[Document], list[Skip]]:
    """Return the documents whose name is not ``taken`` or earlier, and skips for the rest.

    >>> kept, skipped = unique_names([Document("a", "x"), Document("a", "y")])
    >>> [d.text for d in kept], [s.reason for s in skipped]
    (['x'], ['duplicate document name'])
    """
    names = set() if taken is None else set(taken)
    kept: list[Document] = []
    duplicates: list[Skip] = []
    for doc in documents:
        if doc.name in names:
            duplicates.append(Skip(doc.name, "duplicate document name"))
            continue
        names.add(doc.name)
        kept.append(doc)
    return kept, duplicates


@dataclass(frozen=True)
class _Counted:
    """A worker's answer for one chunk of inputs.

    Attributes:
        counts: Term counts of the inputs that were read, in order.
        read: Positions in the chunk of the inputs that were read.
        skipped: The inputs that could not be read, with the reason.
        size: Bytes read (characters for documents already in memory).
    """

    counts: ChunkCounts
    read: list[int]
    skipped: list[Skip]
    size: int


def _count_inputs(
    inputs: Sequence[Input],
    *,
    options: ReadOptions,
    stopwords: bool | str,
    ngram: int,
    segment: str,
) -> _Counted:
    """Read and count one chunk of inputs (a worker's unit of work); texts are dropped."""
    texts: list[str] = []
    read: list[int] = []
    skipped: list[Skip] = []
    size = 0
    for position, item in enumerate(inputs):
        if isinstance(item, Document):
            found: Document | Skip = item
            size += len(item.text)
        else:
            found, length = read_source(item, options)
            size += length
        if isinstance(found, Skip):
            skipped.append(found)
            continue
        texts.append(found.text)
        read.append(position)
    return _Counted(count_chunk(texts, stopwords, ngram, segment), read, skipped, size)


def chunk_inputs(count: int, workers: int) -> int:
    """Return inputs per chunk: about eight chunks per worker, within set bounds.

    >>> chunk_inputs(100_000, 2), chunk_inputs(1_000, 2), chunk_inputs(10, 1)
    (1000, 62, 1000)
    """
    if workers <= 1:
        return MAX_CHUNK_INPUTS
    return max(MIN_CHUNK_INPUTS, min(MAX_CHUNK_INPUTS, count // (8 * workers)))


@dataclass(frozen=True)
class CountedInputs:
    """The term counts of a scan's inputs.

    Attributes:
        counts: One row per input read, in input order.
        rows: For each row, its position among the inputs.
        skipped: Inputs that could not be read, in the order their files are listed.
    """

    counts: CountMatrix
    rows: list[int]
    skipped: list[Skip]


def count_inputs(
    inputs: Sequence[Input],
    options: ReadOptions,
    *,
    stopwords: bool | str = True,
    ngram: int = 1,
    segment: str = "bigrams",
    jobs: int = 1,
    meter: Meter = no_meter,
) -> CountedInputs:
    """Read, tokenise and count inputs over ``jobs`` processes, holding no text for long.

    Args:
        inputs: Files and documents (see :func:`gather_inputs`).
        options: How files are read and decoded.
        stopwords: As for :func:`simdup.tokens.tokenize`.
        ngram: As for :func:`simdup.tokens.tokenize`.
        segment: As for :func:`simdup.tokens.tokenize`.
        jobs: Worker processes (0: every core); the result never depends on it.
        meter: Told the documents and bytes done after each chunk (label ``read+tokenize``).
    """
    fewest = MIN_PARALLEL_INPUTS if start_method() == "fork" else MIN_SPAWNED_INPUTS
    workers = check_jobs(jobs) if len(inputs) >= fewest else 1
    bounds = chunk_bounds(len(inputs), chunk_inputs(len(inputs), workers))
    work = functools.partial(
        _count_inputs, options=options, stopwords=stopwords, ngram=ngram, segment=segment
    )
    rows: list[int] = []
    skipped: list[Skip] = []

    def parts() -> Iterator[ChunkCounts]:
        with meter(desc="read+tokenize", total=len(inputs)) as advance:
            counted = ordered_map(work, inputs, bounds, workers)
            for (lo, hi), done in zip(bounds, counted, strict=True):
                rows.extend(lo + k for k in done.read)
                skipped.extend(done.skipped)
                advance(hi - lo, done.size)
                yield done.counts

    counts = merge(parts())
    # Unreadable inputs listed as reading file by file lists them: by the bytes of the name.
    skipped.sort(key=lambda s: os.fsencode(s.path))
    return CountedInputs(counts, rows, skipped)


def fingerprint_inputs(
    inputs: Sequence[Input],
    params: Params,
    options: ReadOptions,
    *,
    jobs: int = 1,
    meter: Meter = no_meter,
) -> tuple[Fingerprinted, list[Skip]]:
    """Read, count, weight and fingerprint inputs; return them and the unreadable inputs.

    Equal to :func:`simdup.pipeline.fingerprint_documents` of the inputs that can be read.
    """
    counted = count_inputs(
        inputs,
        options,
        stopwords=params.stopwords,
        ngram=params.ngram,
        segment=params.segment,
        jobs=jobs,
        meter=meter,
    )
    names = [inputs[i].name for i in counted.rows]
    return fingerprint_counts(counted.counts, names, params, jobs=jobs), counted.skipped


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
) -> ScanResult:
    """Return the near-duplicate pairs among inputs, reading each file once, in a worker.

    The same result as :func:`simdup.pipeline.find_duplicates` of the documents read (with
    the same ``memory`` budget), with the skips in the same order: those of the walk,
    unreadable files, then ``skipped`` (inputs the caller left out), duplicate names, and
    documents without features.

    >>> from simdup.model import Document
    >>> docs = [Document("a", "red fox jumps"), Document("b", "red fox jumps")]
    >>> result = scan_inputs(gather_inputs([], ReadOptions(), docs))
    >>> [(p.a, p.b, p.cosine) for p in result.pair_list()]
    [('a', 'b', 1.0)]
    """
    params = params or Params()
    options = options or ReadOptions()
    clock = time.perf_counter()
    corpus, unread = fingerprint_inputs(
        found.inputs, widest(params), options, jobs=jobs, meter=meter
    )
    timings = {"fingerprint": time.perf_counter() - clock}
    return find_pairs(
        corpus.names,
        corpus.matrix,
        corpus.fingerprints,
        params,
        report_all=report_all,
        skipped=[*found.skipped, *unread, *skipped, *found.duplicates, *corpus.skipped],
        timings=timings,
        jobs=jobs,
        memory=memory,
        meter=meter,
    )


def read_named(
    inputs: Iterable[Input], names: Iterable[str], options: ReadOptions
) -> list[Document]:
    """Return the documents of the inputs named ``names``, reading those files again.

    For reports that show a few texts (the HTML pair views) after a scan that kept none.
    A file that can no longer be read is left out.
    """
    wanted = set(names)
    out = []
    for item in inputs:
        if item.name not in wanted:
            continue
        found = item if isinstance(item, Document) else read_source(item, options)[0]
        if isinstance(found, Document):
            out.append(found)
    return out
