"""Noise words of many languages, and a cheap guess of each document's language.

Function words ("the", "der", "的") appear in nearly every document of their language, so
they push every fingerprint the same way and make unrelated texts look alike. Removing
them needs to know which language a document is in. The guess here costs almost nothing
once the words are counted: the language whose noise-word list covers the most of a
document's tokens wins, because function words are the most frequent words of any text
and rarely shared between languages. A document needs :data:`MIN_EVIDENCE` such tokens
for a guess other than English, and ties go to the language listed first in
:data:`LANGUAGES`, so the guess is deterministic.

English noise words go whatever the language, so they are removed while counting, as
with the English list alone, and each document keeps only how many of their tokens it
had (:func:`drop_guessed_noise`). Only a document whose other listed words could
outnumber those tokens is tallied language by language, so on English text the guess
adds a set intersection per chunk and a few array operations to the English list's cost.

The lists come from the ``stopwordsiso`` package (the stopwords-iso collection, MIT
licence), read from the data file it installs, never from the network; English keeps the
Glasgow list of :mod:`simdup.text.stopwords`, so English results do not depend on that package.
Each entry is normalised and cut exactly as text is (:func:`simdup.text.normalize.normalize`,
then the same word rules), so ``"Über"`` in a list matches ``"ÜBER"`` in a text. A run of
an unspaced script (Chinese, Japanese) stays whole: it matches a segmented word, or a
character bigram when it is two characters long. Numbers are dropped from the lists:
they carry content, not grammar.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import regex

from simdup.derived import kept, stamp
from simdup.errors import ParameterError
from simdup.params import LANGUAGES, StopwordSetting
from simdup.text.counts import ChunkCounts
from simdup.text.normalize import MAX_TOKEN_LENGTH, UNSPACED, normalize
from simdup.text.stopwords import ENGLISH

#: Noise-word tokens a document needs before a language other than English is guessed:
#: one or two matches are chance (a name, a borrowed word), a few are grammar.
MIN_EVIDENCE = 3

#: The package whose data file holds the lists of every language but English.
DATA_PACKAGE = "stopwordsiso"

#: That data file, inside the package.
DATA_FILE = "stopwords-iso.json"

_BIT = {code: np.uint64(1 << i) for i, code in enumerate(LANGUAGES)}
_BITS = np.array([int(b) for b in _BIT.values()], dtype=np.uint64)
_ENGLISH_BIT = _BIT["en"]
_NUMBER = regex.compile(r"\p{N}+")
_UNSPACED_RE = regex.compile(rf"[{UNSPACED}]")
#: The tokenizer's word rule with runs of unspaced scripts kept whole (tests check that
#: both cut spaced text alike).
_ENTRY_RE = regex.compile(
    rf"[{UNSPACED}]+|[[\p{{L}}\p{{M}}\p{{N}}]--[{UNSPACED}]]+", flags=regex.VERSION1
)


def cut_entry(entry: str) -> list[str]:
    """Return the tokens a list entry stands for, normalised and cut as text is.

    Runs of unspaced scripts stay whole (see the module docstring); numbers are dropped.

    >>> cut_entry("Aujourd'hui"), cut_entry("一个"), cut_entry("10")
    (['aujourd', 'hui'], ['一个'], [])
    """
    return _cut(normalize(entry))


def _cut(normalized: str) -> list[str]:
    """Return the tokens of normalised text, cut as list entries are (numbers dropped)."""
    return [w[:MAX_TOKEN_LENGTH] for w in _ENTRY_RE.findall(normalized) if not _NUMBER.fullmatch(w)]


@functools.cache
def _data_path() -> str | None:
    """Return the installed data file of the lists (None: the package is zipped).

    Found where the package is installed, without importing it (its import costs several
    times the reading).

    Raises:
        ParameterError: when the package is not installed.
    """
    spec = importlib.util.find_spec(DATA_PACKAGE)
    if spec is None:  # pragma: no cover - a required dependency
        raise ParameterError(
            f"stop-word lists need the {DATA_PACKAGE} package: pip install {DATA_PACKAGE}, "
            "or use --stopwords en or --no-stopwords"
        )
    paths = [os.path.join(folder, DATA_FILE) for folder in spec.submodule_search_locations or ()]
    return next((p for p in paths if os.path.isfile(p)), None)


@functools.cache
def _raw_lists() -> dict[str, list[str]]:
    """Return the collection's lists as shipped, read once from the installed data file."""
    path = _data_path()
    if path is None:  # pragma: no cover - a zipped install
        from importlib import resources

        data = resources.files(DATA_PACKAGE).joinpath(DATA_FILE).read_bytes()
    else:
        with open(path, "rb") as handle:
            data = handle.read()
    loaded: dict[str, list[str]] = json.loads(data)
    return loaded


@functools.cache
def stopword_list(code: str) -> frozenset[str]:
    """Return the normalised noise words of language ``code`` (English: Glasgow list).

    Raises:
        ParameterError: for a code not in :data:`LANGUAGES`.

    >>> "und" in stopword_list("de"), "die" in stopword_list("en")
    (True, False)
    """
    if code not in _BIT:
        raise ParameterError(f"no stop-word list for {code!r}; choose from: {', '.join(LANGUAGES)}")
    if code == "en":
        return ENGLISH
    # The entries normalised and cut as one text, a line each: neither crosses a line
    # break, so the tokens are those of the entries cut one by one, in a fraction of the time.
    return frozenset(_cut(normalize("\n".join(_raw_lists().get(code, ())))))


def _may_tell(word: str) -> bool:
    """Tell whether a listed word may be evidence of a language: not a lone spaced letter."""
    return len(word) > 1 or _UNSPACED_RE.match(word) is not None


@functools.cache
def _word_masks() -> dict[str, tuple[int, int]]:
    """Return, for every listed word, the languages listing it and those it is evidence for.

    A word is evidence only for English when English lists it ("in", "so" and "was" are
    German too, but tell nothing in an English text), and a single letter of a spaced
    script is evidence for none (initials, variables and "(c)" are in every language).
    """
    return _built_masks()


def _table_key() -> str | None:
    """Return what the table of listed words is derived from: every source that can change it."""
    import unicodedata

    sources = ("simdup.text.languages", "simdup.text.normalize", "simdup.text.stopwords")
    path = _data_path()
    files = [str(importlib.import_module(m).__file__) for m in sources] + ([path] if path else [])
    versions = [unicodedata.unidata_version, regex.__version__]
    stamps = stamp(*files)
    return None if stamps is None else "|".join([*versions, ",".join(LANGUAGES), stamps])


def _built_masks() -> dict[str, tuple[int, int]]:
    """Return the masks of :func:`_word_masks`, built from every list."""
    masks: dict[str, tuple[int, int]] = {}
    for i, code in enumerate(LANGUAGES):
        for word in stopword_list(code):
            listed, _ = masks.get(word, (0, 0))
            masks[word] = (listed | (1 << i), 0)
    for word, (listed, _) in masks.items():
        if not _may_tell(word):
            evidence = 0
        elif word in ENGLISH:
            evidence = int(_ENGLISH_BIT)
        else:
            evidence = listed
        masks[word] = (listed, evidence)
    return masks


@functools.cache
def lists_digest(codes: tuple[str, ...] = LANGUAGES) -> str:
    """Return a short digest of the normalised lists of ``codes``, to record with settings.

    An upgrade of the data package that changes a list changes the digest, so fingerprints
    made before and after it are never mixed in one index.
    """
    content = {code: sorted(stopword_list(code)) for code in codes}
    text = json.dumps(content, ensure_ascii=False, sort_keys=True)
    import hashlib  # here: only settings recorded with fingerprints need the digest

    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def data_version() -> str:
    """Return the installed version of :data:`DATA_PACKAGE` (for messages and params)."""
    import importlib.metadata  # here: loading it costs more than many a whole run

    try:
        return importlib.metadata.version(DATA_PACKAGE)
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - required
        return "missing"


@dataclass(frozen=True)
class _Table:
    """What the guess and the removal need about every listed word, built once per process.

    Words sharing the same languages share a code (about 600 codes for some 18,000 words),
    so per-entry work is done on small integers, never on strings.

    Attributes:
        code: Each listed word's code, from 1 (an unlisted word has code 0).
        words: The listed words.
        listed: uint64 (codes,), the languages listing the words of each code.
        english: bool (codes,), the words are evidence for English.
        start: int64 (codes,), where each code's other languages begin in ``foreign``.
        count: int64 (codes,), how many other languages the words are evidence for.
        foreign: int64, language indices, ``count[c]`` of them from ``start[c]``.
    """

    code: dict[str, int]
    words: frozenset[str]
    listed: npt.NDArray[np.uint64]
    english: npt.NDArray[np.bool_]
    start: npt.NDArray[np.int64]
    count: npt.NDArray[np.int64]
    foreign: npt.NDArray[np.int64]


@functools.cache
def _table() -> _Table:
    """Return the code table of every listed word (see :class:`_Table`).

    Built once (:func:`_built_table`), then kept between runs (:mod:`simdup.derived`):
    normalising every list takes longer than a small scan, and the table changes only
    with the data file, the Unicode tables or simdup itself, which its key names.
    """
    return kept("noise-word-table", _table_key(), _built_table, _table_data, _table_of)


def _table_data(table: _Table) -> dict[str, Any]:
    """Return ``table`` as JSON-ready lists (words and their codes side by side)."""
    return {
        "words": list(table.code),
        "codes": list(table.code.values()),
        **{name: getattr(table, name).tolist() for name in _TABLE_ARRAYS},
    }


def _table_of(data: dict[str, Any]) -> _Table:
    """Return the table :func:`_table_data` gave."""
    code = dict(zip(data["words"], data["codes"], strict=True))
    arrays: dict[str, Any] = {
        name: np.array(data[name], dtype=kind) for name, kind in _TABLE_ARRAYS.items()
    }
    return _Table(code=code, words=frozenset(code), **arrays)


#: The array fields of :class:`_Table` and their types.
_TABLE_ARRAYS = {
    "listed": np.uint64, "english": np.bool_, "start": np.int64, "count": np.int64,
    "foreign": np.int64,
}  # fmt: skip


def _built_table() -> _Table:
    """Return the table of :func:`_table`, built from every list."""
    masks = _word_masks()
    kinds = sorted(set(masks.values()))
    code_of = {kind: c for c, kind in enumerate(kinds, start=1)}
    english_bit = int(_ENGLISH_BIT)
    # Bit 0, English, is left out: the guess counts English separately.
    bits: list[list[int]] = [[]] + [
        [i for i in range(1, len(LANGUAGES)) if evidence >> i & 1] for _, evidence in kinds
    ]
    count = np.array([len(b) for b in bits], dtype=np.int64)
    return _Table(
        code={word: code_of[kind] for word, kind in masks.items()},
        words=frozenset(masks),
        listed=np.array([0] + [listed for listed, _ in kinds], dtype=np.uint64),
        english=np.array([False] + [bool(e & english_bit) for _, e in kinds], dtype=np.bool_),
        start=np.cumsum(count) - count,
        count=count,
        foreign=np.array([i for b in bits for i in b], dtype=np.int64),
    )


@functools.cache
def english_evidence() -> frozenset[str]:
    """Return the English noise words that count as evidence for English in the guess.

    The English list but its single letters (see :func:`_word_masks`), taken from that
    list alone: the masks of every language cost more than many a small run.
    """
    return frozenset(filter(_may_tell, ENGLISH))


def vocabulary_codes(vocabulary: Sequence[str]) -> npt.NDArray[np.int64]:
    """Return each word's code in the table of listed words (0: no list has it).

    One set look-up per distinct word, never per token, and in C: the look-ups fill a
    byte string, whose nonzero bytes are the few listed words.
    """
    table = _table()
    found = bytes(map(table.words.__contains__, vocabulary))
    where = np.flatnonzero(np.frombuffer(found, dtype=np.uint8))
    codes = np.zeros(len(vocabulary), dtype=np.int64)
    codes[where] = [table.code[vocabulary[i]] for i in where.tolist()]
    return codes


def guess_many(
    codes: npt.NDArray[np.int64],
    docs: npt.NDArray[np.int64],
    counts: npt.NDArray[Any],
    documents: int,
    english_tokens: npt.NDArray[np.int64] | None = None,
) -> npt.NDArray[np.int64]:
    """Return each document's guessed language, as an index into :data:`LANGUAGES`.

    Args:
        codes: int64 (m,), the word code (:func:`vocabulary_codes`) of (document, word)
            entries; entries of unlisted words (code 0) may be left out.
        docs: int64 (m,), the document of each entry.
        counts: integers (m,), the word's count in its document.
        documents: Number of documents.
        english_tokens: int64 (documents,), tokens of :func:`english_evidence` words each
            document had before they were removed from its entries (None: none were).

    Returns:
        int64 (documents,): the language whose words make up most tokens (the first in
        :data:`LANGUAGES` on ties); English unless the winner has at least
        :data:`MIN_EVIDENCE` different words in the document.

    Only a document whose tokens of other languages' words, all together, outnumber its
    English ones and come from :data:`MIN_EVIDENCE` different words can leave English, so
    the tally per language is made for those documents alone: English text costs two
    counts per document.
    """
    table = _table()
    weights = np.asarray(counts, dtype=np.float64)
    english = table.english[codes]
    tokens_en = np.bincount(docs[english], weights=weights[english], minlength=documents)
    if english_tokens is not None:
        tokens_en += english_tokens
    foreign = np.flatnonzero(table.count[codes])
    foreign_docs = docs[foreign]
    tokens_other = np.bincount(foreign_docs, weights=weights[foreign], minlength=documents)
    distinct_other = np.bincount(foreign_docs, minlength=documents)
    maybe = (distinct_other >= MIN_EVIDENCE) & (tokens_other > tokens_en)
    guessed = np.zeros(documents, dtype=np.int64)
    candidates = np.flatnonzero(maybe)
    if len(candidates) == 0:
        return guessed
    # One row per (entry, language it is evidence for), for the candidates' entries.
    slot = np.zeros(documents, dtype=np.int64)
    slot[candidates] = np.arange(len(candidates))
    entries = foreign[maybe[foreign_docs]]
    code = codes[entries]
    repeat = table.count[code]
    total = int(repeat.sum())
    shift = np.repeat(table.start[code] - (np.cumsum(repeat) - repeat), repeat)
    language = table.foreign[np.arange(total) + shift]
    languages = len(LANGUAGES)
    key = np.repeat(slot[docs[entries]] * languages, repeat) + language
    size = len(candidates) * languages
    weight = np.repeat(weights[entries], repeat)
    tally = np.bincount(key, weights=weight, minlength=size).reshape(-1, languages)
    tally[:, 0] = tokens_en[candidates]  # LANGUAGES[0] is English
    distinct = np.bincount(key, minlength=size).reshape(-1, languages)
    best = np.argmax(tally, axis=1)  # the first maximum: LANGUAGES order breaks ties
    enough = distinct[np.arange(len(candidates)), best] >= MIN_EVIDENCE
    guessed[candidates] = np.where(enough, best, 0)
    return guessed


@dataclass(frozen=True)
class NoiseRemoval:
    """Which (document, word) entries a stop-word setting keeps, and why.

    Attributes:
        keep: bool (nnz,), True for entries that stay.
        languages: int64 (documents,), guessed language index per document (-1 when the
            setting does not guess).
        removed: int64 (documents,), noise-word tokens removed per document.
        listed: bool (words,), True for vocabulary words some list has.
    """

    keep: npt.NDArray[np.bool_]
    languages: npt.NDArray[np.int64]
    removed: npt.NDArray[np.int64]
    listed: npt.NDArray[np.bool_]


def _entry_documents(
    entries: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """Return the document of each entry position, given the entries per document."""
    return np.searchsorted(np.cumsum(lengths), entries, side="right").astype(np.int64)


@dataclass(frozen=True)
class _Listed:
    """The entries of a chunk's counts whose word some list has.

    Attributes:
        words: int64 (words,), each vocabulary word's code (0: unlisted).
        entries: int64 (m,), positions of the entries of listed words.
        codes: int64 (m,), their words' codes.
        docs: int64 (m,), their documents.
        counts: integers (m,), their counts.
    """

    words: npt.NDArray[np.int64]
    entries: npt.NDArray[np.int64]
    codes: npt.NDArray[np.int64]
    docs: npt.NDArray[np.int64]
    counts: npt.NDArray[Any]


def _listed(
    vocabulary: Sequence[str],
    lengths: npt.NDArray[np.int64],
    ids: npt.NDArray[Any],
    counts: npt.NDArray[Any],
) -> _Listed:
    """Return the entries of listed words of a chunk's counts (see :func:`removal`)."""
    words = vocabulary_codes(vocabulary)
    entries = np.flatnonzero((words != 0)[ids])
    return _Listed(
        words, entries, words[ids[entries]], _entry_documents(entries, lengths), counts[entries]
    )


def _removal(
    listed: _Listed, languages: npt.NDArray[np.int64], remove: npt.NDArray[np.uint64], nnz: int
) -> NoiseRemoval:
    """Return the removal of the listed entries whose lists are in ``remove`` (per document)."""
    documents = len(languages)
    dropped = (_table().listed[listed.codes] & remove[listed.docs]) != 0
    keep = np.ones(nnz, dtype=np.bool_)
    keep[listed.entries[dropped]] = False
    weights = np.where(dropped, listed.counts, 0).astype(np.float64)
    removed = np.bincount(listed.docs, weights=weights, minlength=documents).astype(np.int64)
    return NoiseRemoval(keep, languages, removed, listed.words != 0)


def removal(
    setting: StopwordSetting,
    vocabulary: Sequence[str],
    lengths: npt.NDArray[np.int64],
    ids: npt.NDArray[Any],
    counts: npt.NDArray[Any],
) -> NoiseRemoval:
    """Return which entries of a chunk's counts ``setting`` keeps.

    Args:
        setting: The parsed stop-word setting.
        vocabulary: The chunk's distinct words.
        lengths: int64 (documents,), entries per document.
        ids: integers (nnz,), each entry's index into ``vocabulary``.
        counts: integers (nnz,), each entry's count.
    """
    documents = len(lengths)
    listed = _listed(vocabulary, lengths, ids, counts)
    if setting.auto:
        languages = guess_many(listed.codes, listed.docs, listed.counts, documents)
        remove = _BITS[languages] | _ENGLISH_BIT
    else:
        languages = np.full(documents, -1, dtype=np.int64)
        constant = np.uint64(sum(int(_BIT[c]) for c in setting.languages))
        remove = np.full(documents, constant, dtype=np.uint64)
    return _removal(listed, languages, remove, len(ids))


def guess_language(counts: Mapping[str, int]) -> str:
    """Return the guessed language of a document given its token counts.

    >>> guess_language({"der": 2, "hund": 1, "und": 1, "die": 1, "katze": 1})
    'de'
    >>> guess_language({"hund": 1, "katze": 1})
    'en'
    """
    codes = vocabulary_codes(list(counts))
    values = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
    index = guess_many(codes, np.zeros(len(counts), dtype=np.int64), values, 1)
    return LANGUAGES[int(index[0])]


@functools.cache
def removed_words(setting: StopwordSetting, language: str | None) -> frozenset[str]:
    """Return the words ``setting`` removes from a document guessed as ``language``."""
    codes = (("en", language) if language else ("en",)) if setting.auto else setting.languages
    return frozenset().union(*(stopword_list(c) for c in codes))


def drop_noise(counts: ChunkCounts, setting: StopwordSetting) -> tuple[ChunkCounts, NoiseRemoval]:
    """Return a chunk's counts without the noise words ``setting`` removes, and the removal.

    Equal to counting the documents with those words removed before counting: the
    vocabulary is renumbered in order of first occurrence among the kept entries (a word
    removed from a German document but kept in a later Spanish one first occurs there).
    """
    found = removal(setting, counts.vocabulary, counts.lengths, counts.ids, counts.counts)
    return _kept(counts, found), found


def drop_guessed_noise(counts: ChunkCounts, english_tokens: npt.NDArray[np.int64]) -> ChunkCounts:
    """Return counts counted without English noise words, also without their language's.

    Equal to :func:`drop_noise` with ``auto`` of the counts of every word: English noise
    words go whatever the language, so removing them while counting saves carrying them
    (most tokens of English text) through the count. What the guess needs of them is
    ``english_tokens``, int64 (documents,): each document's tokens of
    :func:`english_evidence` words. A chunk guessed all English comes back as it is.
    """
    documents = len(counts.lengths)
    listed = _listed(counts.vocabulary, counts.lengths, counts.ids, counts.counts)
    languages = guess_many(listed.codes, listed.docs, listed.counts, documents, english_tokens)
    if not languages.any():
        return counts
    remove = _BITS[languages] | _ENGLISH_BIT
    return _kept(counts, _removal(listed, languages, remove, len(counts.ids)))


def _kept(counts: ChunkCounts, found: NoiseRemoval) -> ChunkCounts:
    """Return the entries of ``counts`` that ``found`` keeps, words renumbered (see above)."""
    if bool(found.keep.all()):
        return counts
    documents = len(counts.lengths)
    entry_doc = np.repeat(np.arange(documents, dtype=np.int64), counts.lengths)
    all_ids = counts.ids.astype(np.int64)
    ids = all_ids[found.keep]
    lengths = np.bincount(entry_doc[found.keep], minlength=documents).astype(np.int64)
    # Words are numbered in order of first occurrence, so a word's first entry is where the
    # running maximum of the ids grows. Only listed words can lose entries: their first
    # kept entry may come later, or never.
    first = np.flatnonzero(np.diff(np.maximum.accumulate(all_ids), prepend=-1) > 0)
    if len(first) != len(counts.vocabulary) or not np.array_equal(
        all_ids[first], np.arange(len(first))
    ):  # not numbered in order of first occurrence: find each word's first entry
        first = np.full(len(counts.vocabulary), len(all_ids), dtype=np.int64)
        np.minimum.at(first, all_ids, np.arange(len(all_ids)))
    first[found.listed] = len(all_ids)
    kept_listed = np.flatnonzero(found.keep & found.listed[all_ids])
    np.minimum.at(first, all_ids[kept_listed], kept_listed)
    used = np.flatnonzero(first < len(all_ids))
    order = used[np.argsort(first[used], kind="stable")]
    renumber = np.zeros(len(counts.vocabulary), dtype=np.int64)
    renumber[order] = np.arange(len(order))
    vocabulary = [counts.vocabulary[i] for i in order.tolist()]
    return ChunkCounts.of(vocabulary, lengths, renumber[ids], counts.counts[found.keep])
