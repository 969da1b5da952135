"""The reference feature hash: FNV-1a 32 over UTF-16 code units, then xorshift32.

Each feature stands for its coordinates on ``bits`` random hyperplanes (Charikar 2002).
Rather than storing hyperplanes, the reference derives a feature's signs from a
pseudo-random stream seeded by a hash of the feature: FNV-1a (32-bit) over the UTF-16 code
units of ``feature + ":" + str(seed)`` seeds a xorshift32 generator (shifts 13, 17, 5; a
zero hash becomes 1, the generator's only forbidden state), and successive 32-bit outputs
supply the sign bits least-significant bit first.

Fingerprints made by simdup are bit-identical to the JavaScript reference, so every detail
above is load-bearing: UTF-16 (an emoji is two code units), no normalisation inside the
hash, the zero fallback, LSB-first bit order. The scalar functions here are the executable
specification; the ``_many`` forms compute the same values for a whole vocabulary at once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

FNV_OFFSET_BASIS = 0x811C9DC5  # FNV-1a 32-bit offset basis
FNV_PRIME = 0x01000193  # FNV-1a 32-bit prime
MASK32 = 0xFFFFFFFF


def salted(feature: str, seed: int) -> str:
    """Return the string the reference hashes for ``feature``: ``feature + ":" + seed``."""
    return f"{feature}:{seed}"


def utf16_units(text: str) -> npt.NDArray[np.uint16]:
    """Return the UTF-16 code units of ``text`` as JavaScript sees them.

    Lone surrogates (legal in Python and JavaScript strings alike) are kept as the single
    code unit they are, which is what ``charCodeAt`` returns for them.

    >>> utf16_units("a😀").tolist()
    [97, 55357, 56832]
    """
    raw = text.encode("utf-16-le", errors="surrogatepass")
    return np.frombuffer(raw, dtype="<u2")


def fnv1a32(text: str) -> int:
    """Return FNV-1a 32 of the UTF-16 code units of ``text``.

    >>> hex(fnv1a32(""))
    '0x811c9dc5'
    """
    h = FNV_OFFSET_BASIS
    for unit in utf16_units(text).tolist():
        h = ((h ^ unit) * FNV_PRIME) & MASK32
    return h


def xorshift32_words(state: int, count: int) -> list[int]:
    """Return the next ``count`` outputs of xorshift32 (13/17/5) from ``state``.

    A zero state is replaced by 1, as in the reference (``seed >>> 0 || 1``).

    >>> xorshift32_words(1, 2)
    [270369, 67634689]
    """
    s = state & MASK32 or 1
    out = []
    for _ in range(count):
        s ^= (s << 13) & MASK32
        s ^= s >> 17
        s ^= (s << 5) & MASK32
        out.append(s)
    return out


def feature_words(feature: str, seed: int, words: int) -> list[int]:
    """Return the 32-bit words holding ``feature``'s sign bits (bit i = word i//32, LSB first)."""
    return xorshift32_words(fnv1a32(salted(feature, seed)), words)


def fnv1a32_many(texts: Sequence[str], suffix: str = "") -> npt.NDArray[np.uint32]:
    """Return :func:`fnv1a32` of every ``text + suffix``, computed column by column.

    The texts are encoded in one piece (each followed by ``suffix``, so a salted feature
    needs no string of its own) and hashed longest first: the texts still being hashed at
    code-unit position ``i`` are a prefix of that order, so each position is one
    vectorised step, not one step per character.
    """
    n = len(texts)
    if n == 0:
        return np.zeros(0, dtype=np.uint32)
    flat = utf16_units(suffix.join(texts) + suffix).astype(np.uint32)
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=n) + len(suffix)
    if int(lengths.sum()) != len(flat):  # characters past U+FFFF take two code units
        units = (len(utf16_units(t)) for t in texts)
        lengths = np.fromiter(units, dtype=np.int64, count=n) + len(utf16_units(suffix))
    order = np.argsort(-lengths, kind="stable")
    sorted_lengths = lengths[order]
    starts = (np.cumsum(lengths) - lengths)[order]
    h = np.full(n, FNV_OFFSET_BASIS, dtype=np.uint32)
    prime = np.uint32(FNV_PRIME)
    # active[i] = how many (longest-first) texts are longer than i
    active_counts = np.searchsorted(-sorted_lengths, -np.arange(int(sorted_lengths[0])), "left")
    for pos, active in enumerate(active_counts.tolist()):
        units = flat[starts[:active] + pos]
        h[:active] = (h[:active] ^ units) * prime
    out = np.empty(n, dtype=np.uint32)
    out[order] = h
    return out


def xorshift32_many(states: npt.NDArray[np.uint32], words: int) -> npt.NDArray[np.uint32]:
    """Return ``words`` successive xorshift32 outputs for every state, uint32 (n, words)."""
    s = np.where(states == 0, np.uint32(1), states).astype(np.uint32)
    out = np.empty((len(s), words), dtype=np.uint32)
    for w in range(words):
        s ^= s << np.uint32(13)
        s ^= s >> np.uint32(17)
        s ^= s << np.uint32(5)
        out[:, w] = s
    return out


def feature_words_many(features: Sequence[str], seed: int, words: int) -> npt.NDArray[np.uint32]:
    """Return :func:`feature_words` for a whole vocabulary, uint32 (len(features), words)."""
    return xorshift32_many(fnv1a32_many(features, salted("", seed)), words)
