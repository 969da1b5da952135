"""Texts to a term-count matrix, in chunks, over worker processes when asked.

Tokenising is the costliest stage of a scan and each document is independent, so it
spreads over processes. Workers return compact chunks, not token lists: each chunk's
vocabulary in order of first occurrence plus ``(feature id, count)`` arrays per document.
Merging the chunks in document order assigns global ids in order of first occurrence in
the corpus, exactly as :func:`simdup.weights.weight_matrix` does, so the matrix (and
every fingerprint) is the same whatever the number of workers. Chunks are cut by a fixed
document count, never by the number of workers.
"""

from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import os
import sys
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from simdup.bytecount import count_ascii, count_ascii_tallied
from simdup.counts import ChunkCounts, narrow
from simdup.errors import ParameterError
from simdup.hashing import feature_words_many
from simdup.languages import (
    StopwordSetting,
    drop_guessed_noise,
    english_evidence,
    parse_setting,
    removed_words,
    stopword_list,
)
from simdup.progress import Progress, no_progress
from simdup.segment import resolve
from simdup.simhash import check_bits, check_seed, fingerprint_many, fingerprint_rows
from simdup.tokens import noise_filter, shingles, text_words, tokenize
from simdup.weights import WeightMatrix, check_weighting, idf, scale_counts

R = TypeVar("R")

#: Documents per chunk handed to a worker (a fixed size keeps the output independent of
#: the worker count; large enough that the per-chunk overhead stays small).
CHUNK_DOCUMENTS = 2_000

#: Below this many documents, work stays in this process: starting workers costs more.
MIN_PARALLEL_DOCUMENTS = 8_000


def feature_counts(
    text: str, stop: frozenset[str], ngram: int, segment: str = "bigrams"
) -> dict[str, int]:
    """Return the features of ``text`` and their counts, keyed in first-occurrence order.

    Equal to ``Counter(tokenize(text, ...))``. With single words, stop words are dropped
    from the counts rather than from the token list: the remaining keys keep their order,
    and a set difference over distinct words is cheaper than a test per token.

    >>> dict(feature_counts("The cat saw the other cat", frozenset({"the"}), 1))
    {'cat': 2, 'saw': 1, 'other': 1}
    """
    if ngram != 1:
        tokens = [t for t in text_words(text, segment) if t not in stop]
        return dict(Counter(shingles(tokens, ngram)))
    counts = Counter(text_words(text, segment))
    for word in stop.intersection(counts):
        del counts[word]
    return counts


#: Consecutive ASCII documents counted as one batch over their bytes; shorter runs
#: (between documents in other scripts) go through the per-document tokenizer.
MIN_ASCII_RUN = 32


def count_chunk(
    texts: Sequence[str], stopwords: bool | str, ngram: int, segment: str = "bigrams"
) -> ChunkCounts:
    """Return the term counts of ``texts`` (one worker's unit of work).

    Single words of runs of ASCII documents are counted a batch at a time
    (:func:`simdup.bytecount.count_ascii`); everything else document by document. The
    counts are the same either way.
    """
    setting = parse_setting(stopwords)
    segment = resolve(segment)
    if setting.auto and ngram != 1:
        return _count_each(texts, frozenset(), ngram, segment, setting)
    if setting.auto:
        return _count_guessed(texts, segment)
    stop = removed_words(setting, None)
    if ngram != 1:
        return _count_each(texts, stop, ngram, segment)
    return _join(
        [
            (count_ascii(texts[lo:hi], stop) if batch else None)
            or _count_each(texts[lo:hi], stop, ngram, segment)
            for lo, hi, batch in _ascii_runs(texts)
        ]
    )


def _ascii_runs(texts: Sequence[str]) -> list[tuple[int, int, bool]]:
    """Return ``(lo, hi, batch)`` spans covering ``texts`` in order (one span if empty).

    ``batch`` spans are runs of at least :data:`MIN_ASCII_RUN` ASCII documents, counted
    over their bytes; the documents between them form the other spans.
    """
    spans: list[tuple[int, int, bool]] = []
    slow_from = 0  # documents from here to the current run take the per-document path
    at = 0
    for ascii_run, run in itertools.groupby(t.isascii() for t in texts):
        size = len(list(run))
        if ascii_run and size >= MIN_ASCII_RUN:
            if slow_from < at:
                spans.append((slow_from, at, False))
            spans.append((at, at + size, True))
            slow_from = at + size
        at += size
    if slow_from < len(texts) or not spans:
        spans.append((slow_from, len(texts), False))
    return spans


def _count_guessed(texts: Sequence[str], segment: str) -> ChunkCounts:
    """Return the term counts of ``texts`` without the noise words of each one's language.

    English noise words are removed while counting, as with ``stopwords="en"``, and only
    their tokens per document are kept for the guess (:func:`drop_guessed_noise`): on
    English text the guess then costs little more than the English list alone.
    """
    stop, tally = stopword_list("en"), english_evidence()
    parts = [
        (count_ascii_tallied(texts[lo:hi], stop, tally) if batch else None)
        or _count_each_tallied(texts[lo:hi], stop, tally, segment)
        for lo, hi, batch in _ascii_runs(texts)
    ]
    counts = _join([found for found, _ in parts])
    return drop_guessed_noise(counts, np.concatenate([tallies for _, tallies in parts]))


def _count_each(
    texts: Sequence[str],
    stop: frozenset[str],
    ngram: int,
    segment: str = "bigrams",
    setting: StopwordSetting | None = None,
) -> ChunkCounts:
    """Return the term counts of ``texts``, tokenizing one document at a time.

    With an ``auto`` ``setting``, each document's noise words are removed before its
    n-grams are formed.
    """
    # A missing feature gets the next id: the dict's length before it is inserted.
    vocab: defaultdict[str, int] = defaultdict()
    vocab.default_factory = vocab.__len__
    lookup = vocab.__getitem__
    lengths = np.zeros(len(texts), dtype=np.int64)
    ids: list[int] = []
    counts: list[int] = []
    for row, text in enumerate(texts):
        if setting is not None:
            tokens = noise_filter(text_words(text, segment), setting.name)
            found: dict[str, int] = Counter(shingles(tokens, ngram))
        else:
            found = feature_counts(text, stop, ngram, segment)
        lengths[row] = len(found)
        ids.extend(map(lookup, found))
        counts.extend(found.values())
    return ChunkCounts.of(list(vocab), lengths, ids, counts)


def _count_each_tallied(
    texts: Sequence[str], stop: frozenset[str], tally: frozenset[str], segment: str
) -> tuple[ChunkCounts, npt.NDArray[np.int64]]:
    """Return the single-word counts of ``texts`` without ``stop``, one document at a time.

    Also returns each document's tokens of ``tally`` words (stop words), as
    :func:`simdup.bytecount.count_ascii_tallied` does for a batch.
    """
    vocab: defaultdict[str, int] = defaultdict()
    vocab.default_factory = vocab.__len__
    lookup = vocab.__getitem__
    lengths = np.zeros(len(texts), dtype=np.int64)
    tallies: list[int] = []
    ids: list[int] = []
    counts: list[int] = []
    for row, text in enumerate(texts):
        found = Counter(text_words(text, segment))
        removed = stop.intersection(found)
        tallies.append(sum([found[word] for word in tally.intersection(removed)]))
        for word in removed:
            del found[word]
        lengths[row] = len(found)
        ids.extend(map(lookup, found))
        counts.extend(found.values())
    return ChunkCounts.of(list(vocab), lengths, ids, counts), np.array(tallies, dtype=np.int64)


def _join(parts: Sequence[ChunkCounts]) -> ChunkCounts:
    """Join the counts of consecutive runs of documents into one chunk's counts."""
    if len(parts) == 1:
        return parts[0]
    joined = merge(parts)
    return ChunkCounts.of(
        list(joined.vocabulary), joined.row_lengths(), joined.indices, joined.counts
    )


def check_jobs(jobs: int) -> int:
    """Return the worker count for ``jobs`` (0 = every core), or raise naming the value."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 0:
        raise ParameterError(f"jobs must be an integer >= 0 (0 = all cores), got {jobs!r}")
    return jobs or (os.cpu_count() or 1)


@dataclass(frozen=True)
class CountMatrix:
    """Term counts of a corpus in CSR form, global ids in order of first occurrence.

    Attributes:
        indptr: int64 (n + 1,).
        indices: int32 (nnz,): a corpus never has 2**31 distinct features.
        counts: int32 or int64 (nnz,), see :class:`ChunkCounts`.
        vocabulary: Feature strings.
    """

    indptr: npt.NDArray[np.int64]
    indices: npt.NDArray[np.signedinteger[Any]]
    counts: npt.NDArray[np.signedinteger[Any]]
    vocabulary: tuple[str, ...]

    def row_lengths(self) -> npt.NDArray[np.int64]:
        """Return the number of distinct features of every document."""
        return np.diff(self.indptr)

    def weights(self, weighting: str, keep: npt.NDArray[np.bool_] | None = None) -> WeightMatrix:
        """Return the weight matrix of the rows in ``keep`` (all rows when None).

        Equal to :func:`simdup.weights.weight_matrix` of the kept documents' tokens:
        dropping rows without features changes no id, since they contribute none.
        """
        kind = check_weighting(weighting)
        lengths = self.row_lengths()
        if keep is not None and not bool(np.all(keep)):
            lengths = lengths[keep]
            entry_keep = np.repeat(keep, self.row_lengths())
            indices, counts = self.indices[entry_keep], self.counts[entry_keep]
        else:
            indices, counts = self.indices, self.counts
        indptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        data = scale_counts(counts.astype(np.float64), kind)
        if kind == "tfidf":
            df = np.bincount(indices, minlength=len(self.vocabulary))
            data = data * idf(df, len(lengths))[indices]
        return WeightMatrix(indptr, indices, data, self.vocabulary)


def merge(parts: Iterable[ChunkCounts]) -> CountMatrix:
    """Join chunk counts in order, mapping local ids to global first-occurrence ids.

    Parts are consumed one at a time, so a stream of them is never held whole.
    """
    vocab: dict[str, int] = {}
    indices: list[npt.NDArray[np.int32]] = []
    counts: list[npt.NDArray[np.signedinteger[Any]]] = []
    lengths: list[npt.NDArray[np.int64]] = []
    for part in parts:
        mapping = np.fromiter(
            (vocab.setdefault(f, len(vocab)) for f in part.vocabulary),
            dtype=np.int32,
            count=len(part.vocabulary),
        )
        indices.append(mapping[part.ids])
        counts.append(part.counts)
        lengths.append(part.lengths)
    all_lengths = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
    return CountMatrix(
        np.concatenate(([0], np.cumsum(all_lengths))).astype(np.int64),
        np.concatenate(indices) if indices else np.zeros(0, np.int32),
        narrow(np.concatenate(counts)) if counts else np.zeros(0, np.int32),
        tuple(vocab),
    )


def start_method() -> str:
    """Return how to start workers: ``fork`` where it is cheap and quiet, else ``spawn``.

    Forking shares the already imported modules (no start-up cost) but is unsafe once
    other threads run, which Python 3.12+ warns about (numpy's BLAS runs threads); a
    spawned worker starts a fresh interpreter, and like any ``multiprocessing`` program
    a script using it needs the ``if __name__ == "__main__":`` guard.
    """
    if sys.version_info < (3, 12) and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return "spawn"


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
        stopwords: As for :func:`simdup.tokens.tokenize`.
        ngram: As for :func:`simdup.tokens.tokenize`.
        jobs: Worker processes; 1 works in this process, 0 uses every core. Small corpora
            are always counted here. The result never depends on it.
        chunk_documents: Documents per unit of work.
        progress: Progress hook, advanced by the documents of each chunk counted (label
            ``tokenize``).
        segment: As for :func:`simdup.tokens.tokenize`.

    >>> m = count_matrix(["red fox", "fox fox", "the"], jobs=2)
    >>> m.vocabulary, m.indptr.tolist(), m.counts.tolist()
    (('red', 'fox'), [0, 2, 3, 3], [1, 1, 2])
    """
    chunks = _chunk_counts(texts, stopwords, ngram, jobs, chunk_documents, segment)
    return merge(_ticking(chunks, progress, len(texts)))


def _ticking(
    chunks: Iterable[ChunkCounts], progress: Progress, total: int
) -> Iterator[ChunkCounts]:
    """Yield ``chunks``, advancing ``progress`` by the documents of each.

    People count documents, not the chunks they travel in; any :class:`Progress` hook
    counts them when it is driven over one item per document.
    """
    ticks = iter(progress(itertools.repeat(None, total), desc="tokenize", total=total))
    for chunk in chunks:
        for _ in itertools.islice(ticks, len(chunk.lengths)):
            pass
        yield chunk
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
    segment = resolve(segment)  # once here: every worker cuts alike
    chunk_documents = max(1, chunk_documents)
    bounds = [
        (lo, min(lo + chunk_documents, len(texts))) for lo in range(0, len(texts), chunk_documents)
    ]
    if workers == 1 or len(bounds) < 2 or len(texts) < MIN_PARALLEL_DOCUMENTS:
        yield from (count_chunk(texts[lo:hi], stopwords, ngram, segment) for lo, hi in bounds)
        return
    method = start_method()
    workers = min(workers, len(bounds))
    # Forked workers read the texts they inherit; spawned ones are sent their chunk.
    with _pool(workers, method, texts) as pool:
        window: deque[Future[ChunkCounts]] = deque()
        for lo, hi in bounds:
            if method == "fork":
                window.append(pool.submit(_count_forked, lo, hi, stopwords, ngram, segment))
            else:
                window.append(pool.submit(count_chunk, texts[lo:hi], stopwords, ngram, segment))
            # A bounded window: chunks in flight and results waiting stay few.
            if len(window) >= 2 * workers:
                yield window.popleft().result()
        while window:
            yield window.popleft().result()


#: What the workers of a forked pool inherit from their parent (set while the pool runs):
#: the texts being counted, or the matrix and sign words being fingerprinted.
_INHERITED: Any = None


@contextlib.contextmanager
def _pool(workers: int, method: str, inherited: object) -> Iterator[ProcessPoolExecutor]:
    """Run a process pool whose forked workers find ``inherited`` in :data:`_INHERITED`."""
    global _INHERITED
    _INHERITED = inherited if method == "fork" else None
    try:
        context = multiprocessing.get_context(method)
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            yield pool
    finally:
        _INHERITED = None


def _count_forked(
    lo: int, hi: int, stopwords: bool | str, ngram: int, segment: str = "bigrams"
) -> ChunkCounts:
    """Count documents ``lo:hi`` of the corpus inherited from the parent process."""
    return count_chunk(_INHERITED[lo:hi], stopwords, ngram, segment)


#: Below this many documents, fingerprints are computed in this process.
MIN_PARALLEL_FINGERPRINTS = 20_000


def fingerprint_matrix(
    matrix: WeightMatrix, bits: int, seed: int, *, jobs: int = 1
) -> npt.NDArray[np.uint64]:
    """Return :func:`simdup.simhash.fingerprint_many` of ``matrix``, over ``jobs`` processes.

    Each row's fingerprint depends on that row alone, so ranges of rows are fingerprinted
    in forked workers, which inherit the matrix instead of receiving it; the result is the
    same array whatever ``jobs``. Where workers cannot be forked, or the corpus is small,
    the work stays in this process.
    """
    workers = check_jobs(jobs)
    if workers == 1 or matrix.rows < MIN_PARALLEL_FINGERPRINTS or start_method() != "fork":
        return fingerprint_many(matrix, bits, seed)
    check_bits(bits)
    check_seed(seed)
    signs = feature_words_many(matrix.vocabulary, seed, -(-bits // 32))  # once, for all
    bounds = np.linspace(0, matrix.rows, workers + 1).astype(int).tolist()
    with _pool(workers, "fork", (matrix, signs)) as pool:
        parts = pool.map(
            _fingerprint_forked, bounds[:-1], bounds[1:], [bits] * workers, [seed] * workers
        )
        return np.concatenate(list(parts))


def _fingerprint_forked(lo: int, hi: int, bits: int, seed: int) -> npt.NDArray[np.uint64]:
    """Fingerprint rows ``lo:hi`` of the matrix inherited from the parent process."""
    matrix, signs = _INHERITED
    return fingerprint_rows(matrix.row_slice(lo, hi), signs, bits, seed)


def tokenized_counts(
    texts: Sequence[str], stopwords: bool | str, ngram: int, segment: str = "bigrams"
) -> CountMatrix:
    """Return the term counts through the reference :func:`tokenize` (slow; for tests)."""
    parts = []
    for text in texts:
        found = Counter(tokenize(text, stopwords=stopwords, ngram=ngram, segment=segment))
        parts.append(
            ChunkCounts.of(
                list(found),
                np.array([len(found)], dtype=np.int64),
                np.arange(len(found)),
                np.fromiter(found.values(), dtype=np.int64, count=len(found)),
            )
        )
    return merge(parts)


def chunk_bounds(count: int, size: int) -> list[tuple[int, int]]:
    """Return ``(lo, hi)`` of consecutive chunks of ``size`` items covering ``count`` items.

    >>> chunk_bounds(5, 2)
    [(0, 2), (2, 4), (4, 5)]
    """
    size = max(1, size)
    return [(lo, min(lo + size, count)) for lo in range(0, count, size)]


def ordered_map(
    function: Callable[[Sequence[Any]], R],
    items: Sequence[Any],
    bounds: Sequence[tuple[int, int]],
    jobs: int,
) -> Iterator[R]:
    """Yield ``function(items[lo:hi])`` for each of ``bounds`` in order, over processes.

    Forked workers inherit ``items`` and are sent only the bounds; spawned ones are sent
    their slice, so ``function`` must be a module-level function (or a
    :func:`functools.partial` of one). Results are taken in order from a bounded window of
    chunks in flight, so few wait in memory. With one job or one chunk, the work stays in
    this process.
    """
    workers = min(check_jobs(jobs), len(bounds))
    if workers <= 1:
        yield from (function(items[lo:hi]) for lo, hi in bounds)
        return
    method = start_method()
    with _pool(workers, method, items) as pool:
        window: deque[Future[R]] = deque()
        for lo, hi in bounds:
            if method == "fork":
                window.append(pool.submit(_call_forked, function, lo, hi))
            else:
                window.append(pool.submit(function, items[lo:hi]))
            if len(window) >= 2 * workers:
                yield window.popleft().result()
        while window:
            yield window.popleft().result()


def _call_forked(function: Callable[[Sequence[Any]], R], lo: int, hi: int) -> R:
    """Apply ``function`` to items ``lo:hi`` inherited from the parent process."""
    return function(_INHERITED[lo:hi])
