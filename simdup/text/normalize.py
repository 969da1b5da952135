"""The form text is cut from, and what every cut of it shares.

Text and the noise-word lists are normalised and cut by the same rules, so a listed word
matches the word of a text; both cutters (:mod:`simdup.text.tokens` for text,
:mod:`simdup.text.languages` for list entries) take them from here.
"""

from __future__ import annotations

import unicodedata

#: Tokens longer than this many characters are truncated. A "word" of a million
#: characters (a base64 blob, a minified line) would otherwise cost a million-character
#: hash per occurrence while carrying no more signal than its first characters.
MAX_TOKEN_LENGTH = 64

#: Scripts written without spaces between words, as the inside of a ``regex`` character
#: class: their runs are cut into bigrams or dictionary words, never at spaces.
UNSPACED = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\p{Thai}\u30fc"


def normalize(text: str) -> str:
    """Return ``text`` in the form tokens are cut from: NFKC, case folded, NFKC again.

    Case folding can leave text that is no longer NFKC (``ẞ`` folds to ``ss`` but some
    folds produce decomposed sequences), so the second NFKC keeps the result a fixed point.

    >>> normalize("ＳＴＲＡẞＥ ﬁne")
    'strasse fine'
    """
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
