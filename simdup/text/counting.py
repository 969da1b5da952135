"""Texts to term counts: one chunk of documents, and chunks joined into a corpus.

Workers return compact chunks, not token lists: each chunk's vocabulary in order of first
occurrence plus ``(feature id, count)`` arrays per document. Merging the chunks in
document order assigns global ids in order of first occurrence in the corpus, exactly as
:func:`simdup.fingerprints.weights.weight_matrix` does, so the matrix (and every
fingerprint) is the same however the corpus was cut into chunks.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from simdup.params import StopwordSetting, parse_setting
from simdup.text.bytecount import count_ascii, count_ascii_tallied
from simdup.text.counts import ChunkCounts, CountBuilder, CountMatrix
from simdup.text.languages import drop_guessed_noise, english_evidence, removed_words, stopword_list
from simdup.text.segment import segmentation
from simdup.text.tokens import noise_filter, shingles, text_words


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
    (:func:`simdup.text.bytecount.count_ascii`); everything else document by document. The
    counts are the same either way.
    """
    setting = parse_setting(stopwords)
    segment = segmentation(segment)
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
    :func:`simdup.text.bytecount.count_ascii_tallied` does for a batch.
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


def merge(parts: Iterable[ChunkCounts]) -> CountMatrix:
    """Join chunk counts in order, mapping local ids to global first-occurrence ids.

    Parts are consumed one at a time, so a stream of them is never held whole.
    """
    builder = CountBuilder()
    for part in parts:
        builder.add(part)
    return builder.matrix()
