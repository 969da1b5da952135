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
Han characters is cut into dictionary words instead (:mod:`simdup.segment`).
"""

from __future__ import annotations

import itertools
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import regex

from simdup.errors import ParameterError
from simdup.stopwords import STOPWORD_LISTS

#: Tokens longer than this many characters are truncated. A "word" of a million
#: characters (a base64 blob, a minified line) would otherwise cost a million-character
#: hash per occurrence while carrying no more signal than its first characters.
MAX_TOKEN_LENGTH = 64

_UNSPACED = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\p{Thai}\u30fc"
_TOKEN_RE = regex.compile(
    rf"(?P<unspaced>[{_UNSPACED}]+)|(?P<word>[[\p{{L}}\p{{M}}\p{{N}}]--[{_UNSPACED}]]+)",
    flags=regex.VERSION1,
)


def normalize(text: str) -> str:
    """Return ``text`` in the form tokens are cut from: NFKC, case folded, NFKC again.

    Case folding can leave text that is no longer NFKC (``ẞ`` folds to ``ss`` but some
    folds produce decomposed sequences), so the second NFKC keeps the result a fixed point.

    >>> normalize("ＳＴＲＡẞＥ ﬁne")
    'strasse fine'
    """
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


_HAN_RUN = regex.compile(r"\p{Han}+")


def words(text: str, segment: str = "bigrams") -> list[str]:
    """Split normalised text into words and bigrams of unspaced scripts, in text order.

    With ``segment="words"`` (or ``"auto"`` when the ``zh`` extra is installed), runs of
    Han characters are cut into words instead of bigrams.

    >>> words("hello, 世界 and 中文分词!")
    ['hello', '世界', 'and', '中文', '文分', '分词']
    """
    # -- segmentation hook (simdup.segment): Han runs to words when asked -------------------
    cut = None
    if segment != "bigrams":
        from simdup.segment import resolve, segment_han

        cut = segment_han if resolve(segment) == "words" else None
    # ---------------------------------------------------------------------------------------
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


def text_words(text: str, segment: str = "bigrams") -> list[str]:
    """Return ``words(normalize(text), segment)``, taking a fast path when ``text`` is ASCII.

    Most text is ASCII; for it one ``str.translate`` and ``str.split`` replace NFKC, case
    folding and the Unicode regular expression, at about a fifth of the cost.

    >>> text_words("Hello, World-wide 42!") == words(normalize("Hello, World-wide 42!"))
    True
    """
    if not text.isascii():
        return words(normalize(text), segment)
    out = text.translate(_ASCII_WORD_TABLE).split()
    if out and max(map(len, out)) > MAX_TOKEN_LENGTH:
        out = [w[:MAX_TOKEN_LENGTH] for w in out]
    return out


def stopword_set(stopwords: bool | str) -> frozenset[str]:
    """Return the stop words a fixed setting removes from every document.

    ``True`` means English, ``False`` or ``"none"`` none, ``"de"`` or ``"de,fr"`` those
    languages' lists (:mod:`simdup.languages`).

    Raises:
        ParameterError: if ``stopwords`` names a list simdup does not have, or is
            ``"auto"``, whose words depend on each document (see :func:`noise_filter`).
    """
    if stopwords is True:
        return STOPWORD_LISTS["en"]
    if stopwords is False:
        return STOPWORD_LISTS["none"]
    from simdup.languages import parse_setting, removed_words

    setting = parse_setting(stopwords)
    if setting.auto:
        raise ParameterError("stop words 'auto' depend on each document's language")
    return removed_words(setting, None)


def noise_filter(tokens: list[str], stopwords: bool | str) -> list[str]:
    """Return ``tokens`` without the stop words of ``stopwords``.

    ``"auto"`` guesses the language from the tokens themselves
    (:func:`simdup.languages.guess_language`) and removes its list plus English.

    >>> noise_filter(["der", "hund", "und", "die", "katze", "ist", "the"], "auto")
    ['hund', 'katze']
    """
    from simdup.languages import guess_language, parse_setting, removed_words

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
    from simdup.languages import guess_language, parse_setting, removed_words
    from simdup.segment import resolve

    setting = parse_setting(stopwords)
    tokens = text_words(text, resolve(segment))
    language = guess_language(Counter(tokens)) if setting.auto else None
    stop = removed_words(setting, language)
    return NoiseReport(language, len(tokens), sum(1 for t in tokens if t in stop))
