"""Turn text into the features a fingerprint is made of.

Near-duplicate detection compares *what a document says*, so the tokenizer removes the
differences that copies of one text pick up on their way around: Unicode compatibility
forms (NFKC folds full-width letters, ligatures and superscripts), letter case (full
Unicode case folding, so ``Straße`` and ``STRASSE`` agree), punctuation and white space.

Words are maximal runs of letters, combining marks and digits. Apostrophes and hyphens
split words: copies of one text disagree about ``'`` versus ``’``, ``e-mail`` versus
``e mail`` and about line-end hyphenation, and splitting makes those copies agree.

Scripts written without spaces between words (Han, Hiragana, Katakana, Hangul, Thai) have
no word boundaries a regular expression can see, so each run of them becomes overlapping
character bigrams (``中文分词`` → ``中文 文分 分词``), the standard trick of CJK search
engines; a run of one character is kept as a unigram. With ``segment="words"`` a run of
Han characters is cut into dictionary words instead (:mod:`simdup.text.segment`).

:func:`words` over :func:`~simdup.text.normalize.normalize` is the definition;
:func:`text_words` computes the same list faster, and is what scans use. ASCII text is
translated and split. Other text is normalised only where it is not NFKC already, its
word class is tested by a numpy lookup table (or plain character classes of the standard
``re`` module for unspaced scripts and characters past U+FFFF), and both are read from
the reference expression itself, character by character, so the two cannot disagree on
any code point.
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import regex

from simdup.derived import kept, stamp
from simdup.errors import ParameterError
from simdup.params import parse_setting
from simdup.text.normalize import MAX_TOKEN_LENGTH, UNSPACED
from simdup.text.stopwords import STOPWORD_LISTS

_TOKEN_RE = regex.compile(
    rf"(?P<unspaced>[{UNSPACED}]+)|(?P<word>[[\p{{L}}\p{{M}}\p{{N}}]--[{UNSPACED}]]+)",
    flags=regex.VERSION1,
)


_HAN_RUN = regex.compile(r"\p{Han}+")


#: A function that cuts a run of Han characters into words (None where it has none to
#: offer), or None for bigrams everywhere.
HanCut = Callable[[str], "list[str] | None"] | None


def _han_cut(segment: str) -> HanCut:
    """Return the Han-run cutter ``segment`` asks for (None for bigrams).

    The segmenter is imported only when asked for, so the core install stays light.
    """
    if segment == "bigrams":
        return None
    from simdup.text.segment import segment_han, segmentation

    return segment_han if segmentation(segment) == "words" else None


def words(text: str, segment: str = "bigrams") -> list[str]:
    """Split normalised text into words and bigrams of unspaced scripts, in text order.

    With ``segment="words"`` (or ``"auto"`` when the ``zh`` extra is installed), runs of
    Han characters are cut into words instead of bigrams.

    >>> words("hello, 世界 and 中文分词!")
    ['hello', '世界', 'and', '中文', '文分', '分词']
    """
    cut = _han_cut(segment)
    out: list[str] = []
    for match in _TOKEN_RE.finditer(text):
        run = match.group()
        if match.lastgroup == "unspaced":
            pieces = cut(run) if cut is not None and _HAN_RUN.fullmatch(run) else None
            if pieces is not None:
                out.extend(w[:MAX_TOKEN_LENGTH] for w in pieces)
            elif len(run) == 1:
                out.append(run)
            else:
                out.extend(run[i : i + 2] for i in range(len(run) - 1))
        else:
            out.append(run[:MAX_TOKEN_LENGTH])
    return out


#: ASCII letters case folded, ASCII digits kept, every other ASCII character a space: for
#: ASCII text NFKC and case folding are the identity and ``lower()``, and the only letters
#: and digits are ``[A-Za-z0-9]``, so translating then splitting cuts the same words.
_ASCII_WORD_TABLE = str.maketrans(
    {c: (chr(c).lower() if chr(c).isascii() and chr(c).isalnum() else " ") for c in range(128)}
)

#: The first code point past the Basic Multilingual Plane.
_ASTRAL = 0x10000

#: The code unit :func:`_plane` maps characters of unspaced scripts and surrogates
#: to (U+FFFF is a noncharacter, so never a word character).
_SPECIAL_UNIT = 0xFFFF


def _class(spans: Iterable[tuple[int, int]]) -> str:
    """Return the inside of a character class of half-open code-point ranges."""
    parts = (f"\\U{lo:08x}" if hi - lo == 1 else f"\\U{lo:08x}-\\U{hi - 1:08x}" for lo, hi in spans)
    return "".join(parts)


@functools.cache
def _ranges(lo: int, hi: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Return the word and the unspaced ranges among code points ``lo`` to ``hi - 1``.

    They are read from :data:`_TOKEN_RE` itself, by matching it over every code point of
    the span, so the plain classes built from them agree with it on every character
    whatever Unicode version the ``regex`` module and the standard library were built
    with. A run of a plain class is then the same run as a run of the reference class.
    Matching a million code points takes longer than a small scan, so the ranges are
    kept between runs (:mod:`simdup.derived`), under a key naming the ``regex`` module's
    version, the pattern and this module (whose file changes with every upgrade).
    """
    stamps = stamp(__file__)
    key = None if stamps is None else "|".join([regex.__version__, _TOKEN_RE.pattern, stamps])
    return kept(
        f"word-ranges-{lo:x}-{hi:x}",
        key,
        functools.partial(_matched_ranges, lo, hi),
        list,
        lambda data: ([(a, b) for a, b in data[0]], [(a, b) for a, b in data[1]]),
    )


def _matched_ranges(lo: int, hi: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Return the ranges of :func:`_ranges`, matched over every code point of the span."""
    codes = np.arange(lo, hi, dtype="<u4")
    codes[(codes >= 0xD800) & (codes < 0xE000)] = 0x20  # surrogates: no letters
    every = codes.tobytes().decode("utf-32-le")
    word: list[tuple[int, int]] = []
    unspaced: list[tuple[int, int]] = []
    for match in _TOKEN_RE.finditer(every):
        start, end = match.span()
        (unspaced if match.lastgroup == "unspaced" else word).append((lo + start, lo + end))
    return word, unspaced


@dataclass(frozen=True)
class _Plane:
    """The word class of :data:`_TOKEN_RE` below U+10000, in two fast forms.

    Attributes:
        word_units: uint16 (65536,): each UTF-16 code unit that is a word character
            (letter, mark or digit outside unspaced scripts) mapped to itself, a unit of
            an unspaced script or a surrogate to :data:`_SPECIAL_UNIT`, any other to a
            space. Translating text without special units through it and splitting at
            white space cuts its words.
        tokens: Runs of unspaced characters (group 1) or of word characters (group 2), for
            text below U+10000.
        astral: A character from U+10000.
    """

    word_units: npt.NDArray[np.uint16]
    tokens: re.Pattern[str]
    astral: re.Pattern[str]


@functools.cache
def _plane() -> _Plane:
    """Build the fast forms of the word class below U+10000 (once per process, ~20 ms).

    The ``regex`` module's class, with its set difference and Unicode properties, costs
    about a microsecond and a half per word; a numpy table lookup or a plain class of the
    standard ``re`` module (one bitmap test per character below U+10000) a fraction.
    """
    word, unspaced = _ranges(0, _ASTRAL)
    word_units = np.full(_ASTRAL, ord(" "), dtype=np.uint16)
    for lo, hi in word:
        word_units[lo:hi] = np.arange(lo, hi)
    for lo, hi in [*unspaced, (0xD800, 0xE000)]:
        word_units[lo:hi] = _SPECIAL_UNIT
    return _Plane(
        word_units=word_units,
        tokens=re.compile(f"([{_class(unspaced)}]+)|([{_class(word)}]+)"),
        astral=re.compile(f"[\\U{_ASTRAL:08x}-\\U0010ffff]"),
    )


@functools.cache
def _any_tokens() -> re.Pattern[str]:
    """Return :attr:`_Plane.tokens` for any text (built on first use, ~0.1 s).

    A class of the standard ``re`` module that also holds ranges from U+10000 tests each
    character against every one of those ranges, so they go in a second alternative
    guarded by one range test, and the first keeps its one bitmap test.
    """
    word_low, unspaced_low = _ranges(0, _ASTRAL)
    word_high, unspaced_high = _ranges(_ASTRAL, 0x110000)
    guard = f"(?=[\\U{_ASTRAL:08x}-\\U0010ffff])"
    word = f"(?:[{_class(word_low)}]|{guard}[{_class(word_high)}])"
    unspaced = f"(?:[{_class(unspaced_low)}]|{guard}[{_class(unspaced_high)}])"
    return re.compile(f"({unspaced}+)|({word}+)")


#: Characters per piece that :func:`_nfkc` checks on its own (cut at a line feed).
_NFKC_PIECE = 2048


def _nfkc(text: str) -> str:
    """Return NFKC of ``text``, normalising only the pieces that are not normal already.

    Checking that text is NFKC is an order of magnitude cheaper than normalising it, and
    one ellipsis or micro sign is enough to make a whole document not normal. So the text
    is cut into pieces just before a line feed and each piece is normalised only if it
    needs to be: cutting before an ASCII character changes nothing, since an ASCII
    character starts a new combining sequence and never composes with what precedes it.
    """
    if unicodedata.is_normalized("NFKC", text):
        return text
    pieces = []
    start = 0
    while start < len(text):
        end = text.find("\n", start + _NFKC_PIECE)
        end = len(text) if end < 0 else end
        piece = text[start:end]
        if not unicodedata.is_normalized("NFKC", piece):
            piece = unicodedata.normalize("NFKC", piece)
        pieces.append(piece)
        start = end
    return "".join(pieces)


def _unicode_words(text: str, han: HanCut = None) -> list[str]:
    """Return ``words(normalize(text))`` (without the length cut) for any text."""
    return _cut(_nfkc(_nfkc(text).casefold()), han)


#: Above this share of special code units (unspaced scripts, surrogates), a text is cut by
#: the regular expression as a whole rather than around each special run.
_SPECIAL_SHARE = 1 / 32


def _cut(folded: str, han: HanCut = None) -> list[str]:
    """Return ``words(folded)`` without the length cut, through numpy where it can.

    Text below U+10000 is translated through :attr:`_Plane.word_units` and split. Runs of
    unspaced scripts need bigrams, so the stretches around them, from the separator
    before to the separator after (no word or run crosses a separator), are cut by the
    regular expression, and the rest is split; text with characters past U+FFFF, or
    mostly in unspaced scripts, is cut by the regular expression whole.
    """
    plane = _plane()
    units = np.frombuffer(folded.encode("utf-16-le", "surrogatepass"), dtype="<u2")
    cut = plane.word_units[units]
    special = np.flatnonzero(cut == _SPECIAL_UNIT)
    if not len(special):
        # Every code unit is a whole character mapped to itself or a space, and no word
        # character is white space: splitting cuts the words.
        return _split_units(cut)
    if len(units) != len(folded) or len(special) > len(units) * _SPECIAL_SHARE:
        return _cut_runs(folded, plane, han)
    # One code unit per character here, so unit positions are string positions.
    spaces = np.flatnonzero(cut == ord(" "))
    if not len(spaces):  # no separator at all: the whole text is one stretch
        return _cut_runs(folded, plane, han)
    after = np.searchsorted(spaces, special)  # the first separator after each special unit
    starts = np.where(after > 0, spaces[np.maximum(after - 1, 0)] + 1, 0)
    ends = np.where(after < len(spaces), spaces[np.minimum(after, len(spaces) - 1)], len(cut))
    first = np.flatnonzero(np.concatenate(([True], starts[1:] > ends[:-1])))
    last = np.concatenate((first[1:] - 1, [len(starts) - 1]))
    out: list[str] = []
    done = 0
    for start, end in zip(starts[first].tolist(), ends[last].tolist(), strict=True):
        out += _split_units(cut[done:start])
        out += _cut_runs(folded[start:end], plane, han)
        done = end
    out += _split_units(cut[done:])
    return out


def _split_units(cut: npt.NDArray[np.uint16]) -> list[str]:
    """Return the words of code units mapped through :attr:`_Plane.word_units`."""
    spaced: str = cut.tobytes().decode("utf-16-le")
    return spaced.split()


def _cut_runs(folded: str, plane: _Plane, han: HanCut = None) -> list[str]:
    """Return ``words(folded)`` without the length cut, through the ``re`` module."""
    tokens = _any_tokens() if plane.astral.search(folded) else plane.tokens
    out: list[str] = []
    for run, word in tokens.findall(folded):
        pieces = han(run) if han is not None and run and _HAN_RUN.fullmatch(run) else None
        if word:
            out.append(word)
        elif pieces is not None:
            out.extend(pieces)
        elif len(run) == 1:
            out.append(run)
        else:
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
    return out


def text_words(text: str, segment: str = "bigrams") -> list[str]:
    """Return ``words(normalize(text), segment)``, the same words by a faster road.

    ASCII text (most text) takes one ``str.translate`` and ``str.split``: for it NFKC and
    case folding are ``lower()`` and the only word characters are ``[A-Za-z0-9]``. Other
    text skips NFKC where it is already normal and cuts words with the standard ``re``
    module over plain code-point classes equal to :data:`_TOKEN_RE`'s (see
    :func:`_plane`), several times faster than the ``regex`` module's class.

    >>> from simdup.text.normalize import normalize
    >>> text_words("Hello, World-wide 42!") == words(normalize("Hello, World-wide 42!"))
    True
    >>> text_words("Straße café 中文分词")
    ['strasse', 'café', '中文', '文分', '分词']
    """
    if text.isascii():
        out = text.translate(_ASCII_WORD_TABLE).split()
    else:
        out = _unicode_words(text, _han_cut(segment))
    if out and max(map(len, out)) > MAX_TOKEN_LENGTH:
        out = [w[:MAX_TOKEN_LENGTH] for w in out]
    return out


def stopword_set(stopwords: bool | str) -> frozenset[str]:
    """Return the stop words a fixed setting removes from every document.

    ``True`` means English, ``False`` or ``"none"`` none, ``"de"`` or ``"de,fr"`` those
    languages' lists (:mod:`simdup.text.languages`).

    Raises:
        ParameterError: if ``stopwords`` names a list simdup does not have, or is
            ``"auto"``, whose words depend on each document (see :func:`noise_filter`).
    """
    if stopwords is True:
        return STOPWORD_LISTS["en"]
    if stopwords is False:
        return STOPWORD_LISTS["none"]
    from simdup.text.languages import removed_words

    setting = parse_setting(stopwords)
    if setting.auto:
        raise ParameterError("stop words 'auto' depend on each document's language")
    return removed_words(setting, None)


def noise_filter(tokens: list[str], stopwords: bool | str) -> list[str]:
    """Return ``tokens`` without the stop words of ``stopwords``.

    ``"auto"`` guesses the language from the tokens themselves
    (:func:`simdup.text.languages.guess_language`) and removes its list plus English.

    >>> noise_filter(["der", "hund", "und", "die", "katze", "ist", "the"], "auto")
    ['hund', 'katze']
    """
    from simdup.text.languages import guess_language, removed_words

    setting = parse_setting(stopwords)
    language = guess_language(Counter(tokens)) if setting.auto else None
    stop = removed_words(setting, language)
    return list(itertools.filterfalse(stop.__contains__, tokens)) if stop else tokens


def shingles(tokens: Sequence[str], ngram: int) -> list[str]:
    """Return the word n-grams of ``tokens`` joined by one space (``ngram=1``: the tokens).

    A space never occurs inside a token, so a shingle cannot be confused with a token.
    Texts shorter than ``ngram`` tokens yield one shingle of all their tokens, so a short
    document still has a feature.

    >>> shingles(["a", "b", "c"], 2)
    ['a b', 'b c']
    >>> shingles(["a"], 3)
    ['a']
    """
    if ngram < 1:
        raise ParameterError(f"ngram must be at least 1, got {ngram}")
    if ngram == 1:
        return list(tokens)
    if 0 < len(tokens) < ngram:
        return [" ".join(tokens)]
    return [" ".join(tokens[i : i + ngram]) for i in range(len(tokens) - ngram + 1)]


def tokenize(
    text: str, *, stopwords: bool | str = True, ngram: int = 1, segment: str = "bigrams"
) -> list[str]:
    """Return the features of ``text``: normalised words, CJK bigrams, optional n-grams.

    Args:
        text: Any Unicode text; lone surrogates and control characters are tolerated.
        stopwords: ``True`` removes English stop words, ``False`` keeps every word,
            ``"auto"`` removes the list of the document's guessed language plus English,
            or language codes joined by commas force those lists (``"en"``, ``"de,fr"``).
        ngram: Shingle size; 1 gives single words.
        segment: ``"bigrams"``, ``"words"`` (Han runs cut into words; needs the ``zh``
            extra) or ``"auto"`` (words when the extra is installed).

    Returns:
        Features in text order, repeats included (their counts are the term frequencies).

    >>> tokenize("The cat sat on the mat. The CAT!")
    ['cat', 'sat', 'mat', 'cat']
    """
    tokens = text_words(text, segment)
    return shingles(noise_filter(tokens, stopwords), ngram)


def tokenize_many(
    texts: Iterable[str],
    *,
    stopwords: bool | str = True,
    ngram: int = 1,
    segment: str = "bigrams",
) -> list[list[str]]:
    """Tokenize each text of a corpus with one setting (see :func:`tokenize`)."""
    return [tokenize(t, stopwords=stopwords, ngram=ngram, segment=segment) for t in texts]


@dataclass(frozen=True)
class NoiseReport:
    """What the stop-word step does to one document (for people asking why texts match).

    Attributes:
        language: The guessed language code; None when the setting does not guess.
        tokens: Tokens before noise words are removed.
        removed: Noise-word tokens removed.
    """

    language: str | None
    tokens: int
    removed: int


def noise_report(text: str, stopwords: bool | str, segment: str = "bigrams") -> NoiseReport:
    """Return the guessed language of ``text`` and how many noise words are removed.

    >>> noise_report("Der Hund und die Katze sind nicht hier.", "auto")
    NoiseReport(language='de', tokens=8, removed=6)
    """
    from simdup.text.languages import guess_language, removed_words
    from simdup.text.segment import segmentation

    setting = parse_setting(stopwords)
    tokens = text_words(text, segmentation(segment))
    language = guess_language(Counter(tokens)) if setting.auto else None
    stop = removed_words(setting, language)
    return NoiseReport(language, len(tokens), sum(1 for t in tokens if t in stop))
