"""Chinese word segmentation through the optional ``simdup[zh]`` extra.

Chinese is written without spaces, so its words must be found with a dictionary. The
extra installs ``rjieba``, the Python binding of jieba-rs: the jieba dictionary and
algorithm (the segmenter the seed's procedure names) compiled to native code, with wheels
for Linux, macOS and Windows. It is about twenty times faster than the pure-Python jieba,
and its dictionary is built in about 0.2 s, at the first segmented text, never at start-up.

Without the extra, runs of Han characters become overlapping character bigrams, the
tokenizer's fallback. Kana, Hangul and Thai always become bigrams: no segmenter for
them fits as a small pure wheel. A run of Han characters alone is cut with the Chinese
dictionary whatever the text's language: a Japanese word written in kanji alone, between
spaces or Latin letters, is cut as Chinese would be (runs that mix kana stay bigrams).
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Callable, Iterable

from simdup.params import SEGMENTER_MODULE, check_segment, zh_extra_installed


@functools.cache
def _cut() -> Callable[[str], list[str]] | None:
    """Return the segmenter's cut function, importing it once; None without the extra."""
    try:
        module = importlib.import_module(SEGMENTER_MODULE)
    except ImportError:
        return None
    cut: Callable[[str], list[str]] = module.cut
    return cut


def segmenter_version() -> str | None:
    """Return the installed segmenter's name and version, or None without the extra."""
    if not zh_extra_installed():
        return None
    return _installed_version()


@functools.cache
def _installed_version() -> str:
    """Return the segmenter's name and version (read from its metadata once)."""
    import importlib.metadata  # here: loading it costs more than many a whole run

    return f"{SEGMENTER_MODULE} {importlib.metadata.version(SEGMENTER_MODULE)}"


def load_segmenter(mode: str, texts: Iterable[str]) -> None:
    """Load the segmenter now if ``mode`` cuts Han text into words and ``texts`` hold some.

    Called before worker processes fork with the first texts they will count: they
    inherit it loaded (about 0.1 s and 33 MB, shared). Texts without Han never load it:
    a worker loads it at its first Han text, on its own core.
    """
    if segmentation(mode) == "words" and any(_HAN.search(text) for text in texts):
        _cut()


def segment_han(run: str) -> list[str] | None:
    """Return the words of an unspaced run of Han characters, or None without the extra.

    The segmenter is imported at the first call, so runs without Chinese never pay for
    loading its dictionary.

    >>> segment_han("哈希函数是一种算法") in (None, ["哈希", "函数", "是", "一种", "算法"])
    True
    """
    cut = _cut()
    if cut is None:
        return None
    return [word for word in cut(run) if not word.isspace()]


def segmentation(mode: str) -> str:
    """Return how the setting ``mode`` cuts Han text here: ``"bigrams"`` or ``"words"``.

    Raises:
        ParameterError: for an unknown mode, or ``words`` without the extra.

    >>> segmentation("bigrams")
    'bigrams'
    """
    check_segment(mode)
    return "words" if mode != "bigrams" and zh_extra_installed() else "bigrams"


#: A Han character (the script segmentation is about).
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003ffff]")

#: Whether this process has counted Han text cut into bigrams for want of the extra.
_fell_back: list[bool] = [False]


def note_fallback(mode: str, vocabulary: Iterable[str]) -> None:
    """Remember whether ``auto`` cut Han text into bigrams because the extra is missing.

    The command line says so once, at the end of the run; a corpus without Chinese has
    nothing to say it about. Called with a counted corpus's vocabulary (its distinct
    words: looking at them costs a fraction of counting them).
    """
    if mode != "auto" or _fell_back[0] or zh_extra_installed():
        return
    _fell_back[0] = _HAN.search("\n".join(vocabulary)) is not None  # one search, in C


def fell_back() -> bool:
    """Tell whether :func:`note_fallback` met Han text cut into bigrams in this process."""
    return _fell_back[0]
