"""Tokenize and count a batch of ASCII documents at once, over their bytes, with numpy.

Most text is ASCII, and for ASCII text the tokenizer's rules are simple: a word is a run
of ``[A-Za-z0-9]``, lower-cased, cut at :data:`~simdup.text.normalize.MAX_TOKEN_LENGTH`. So a
whole batch can be joined, translated once (letters lower-cased, every other byte to 0)
and cut into words by comparing neighbouring bytes, with no Python object per word.

Words are grouped by a 64-bit hash of their bytes, read eight at a time. A hash can
collide, so every word is then compared with its group's first word, eight bytes at a
time: if two different words ever share a hash, the batch is left to the per-document
tokenizer. The counts are therefore exactly those of :func:`simdup.text.tokens.tokenize`,
whatever the input.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from simdup.text.counts import ChunkCounts
from simdup.text.normalize import MAX_TOKEN_LENGTH

#: ``bytes.translate`` table: ASCII letters to lower case, digits kept, all else to 0.
_TABLE = bytes(
    (c | 0x20 if chr(c).isalpha() else c) if c < 128 and chr(c).isalnum() else 0 for c in range(256)
)

#: Mask of the first ``k`` bytes of a little-endian uint64, for ``k`` in 0..8.
_BYTE_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)

_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
_MIX = np.uint64(0xBF58476D1CE4E5B9)
_TOP = np.uint64(1 << 63)

#: The token id :func:`_vocabulary` gives a removed stop word whose tokens are tallied.
_TALLIED = -2

#: Eight-byte blocks a word can span.
_BLOCKS = -(-MAX_TOKEN_LENGTH // 8)


def _block(
    words8: npt.NDArray[np.uint64],
    starts: npt.NDArray[np.int64],
    lengths: npt.NDArray[np.int64],
    k: int,
) -> npt.NDArray[np.uint64]:
    """Return bytes ``8k`` to ``8k + 7`` of each word, zero past its end."""
    valid = np.clip(lengths - 8 * k, 0, 8)
    out: npt.NDArray[np.uint64] = words8[starts + 8 * k] & _BYTE_MASKS[valid]
    return out


def _long_keys(
    words8: npt.NDArray[np.uint64], starts: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.uint64], list[npt.NDArray[np.int64]]]:
    """Return a hash of each word (multiply-xorshift over its 8-byte blocks), top bit set.

    Also returns, per block ``k``, which words are longer than ``8k`` bytes, for
    :func:`_same_words`.
    """
    h = lengths.astype(np.uint64) * _MULTIPLIER
    spans = [np.arange(len(lengths), dtype=np.int64)]
    for k in range(_BLOCKS):
        longer = spans[k]
        part = h[longer] ^ _block(words8, starts[longer], lengths[longer], k)
        part *= _MIX
        part ^= part >> np.uint64(31)
        part *= _MULTIPLIER
        h[longer] = part
        more = longer[lengths[longer] > 8 * (k + 1)]
        if len(more) == 0:
            break
        spans.append(more)
    return h | _TOP, spans


def _same_words(
    words8: npt.NDArray[np.uint64],
    starts: npt.NDArray[np.int64],
    lengths: npt.NDArray[np.int64],
    spans: list[npt.NDArray[np.int64]],
    first: npt.NDArray[np.int64],
) -> bool:
    """Tell whether word ``i`` equals the word at ``first[i]``, byte for byte, for all ``i``.

    ``starts``, ``lengths`` and ``first`` index the same words; ``spans`` is from
    :func:`_long_keys`.
    """
    if not np.array_equal(lengths, lengths[first]):
        return False
    for k, longer in enumerate(spans):
        mine = _block(words8, starts[longer], lengths[longer], k)
        theirs = _block(words8, starts[first[longer]], lengths[longer], k)
        if not np.array_equal(mine, theirs):
            return False
    return True


def count_ascii(texts: Sequence[str], stop: frozenset[str]) -> ChunkCounts | None:
    """Return the single-word counts of ASCII ``texts``, or None to use the slow path.

    Equal to counting :func:`simdup.text.tokens.tokenize` of each text (stop words removed,
    features per document in order of first occurrence, the vocabulary in order of first
    occurrence in the batch). None when two different words collide in the hash (never
    seen in practice) or the batch is too large to pack its sort keys into 64 bits.
    """
    found = count_ascii_tallied(texts, stop, frozenset())
    return None if found is None else found[0]


def count_ascii_tallied(
    texts: Sequence[str], stop: frozenset[str], tally: frozenset[str]
) -> tuple[ChunkCounts, npt.NDArray[np.int64]] | None:
    """Return :func:`count_ascii` of ``texts`` and, per document, its tokens of ``tally``.

    ``tally`` names stop words whose removed tokens are counted (int64, one per text):
    the language guess weighs the English noise words a document had, and they are
    dropped before the costly sort instead of counted and then dropped.
    """
    n = len(texts)
    empty = np.zeros(0, dtype=np.int64)
    tallies = np.zeros(n, dtype=np.int64)
    joined = "\0".join(texts).encode("ascii").translate(_TABLE)
    words8, starts, lengths = _words(joined)
    if len(starts) == 0:
        return ChunkCounts.of([], np.zeros(n, dtype=np.int64), empty, empty), tallies
    grouped = _groups(words8, starts, lengths)
    if grouped is None:
        return None
    group, group_first = grouped
    vocabulary, token_id = _vocabulary(joined, starts, lengths, group, group_first, stop, tally)
    doc_starts = np.concatenate(([0], np.cumsum([len(t) + 1 for t in texts[:-1]])))
    if tally:  # tokens are in text order: count those before each document's start
        tallied = starts[token_id == _TALLIED]
        tallies = np.diff(np.searchsorted(tallied, doc_starts), append=len(tallied))
    kept = np.flatnonzero(token_id >= 0)
    if len(kept) == 0:
        return ChunkCounts.of([], np.zeros(n, dtype=np.int64), empty, empty), tallies
    token_id = token_id[kept]
    token_doc = np.searchsorted(doc_starts, starts[kept], side="right") - 1
    counts = _counted(vocabulary, token_doc, token_id, n)
    return None if counts is None else (counts, tallies)


def _words(
    joined: bytes,
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Cut translated bytes into words: the bytes as uint64s, and each word's start and length.

    The first array has every byte offset as the start of an unaligned little-endian
    uint64 (padded past the end); lengths are cut at ``MAX_TOKEN_LENGTH``.
    """
    raw = np.frombuffer(joined + bytes(8 * _BLOCKS), dtype=np.uint8)
    is_word = raw[: len(joined)] != 0
    edges = np.flatnonzero(np.diff(np.concatenate(([False], is_word, [False])).view(np.int8)))
    starts, ends = edges[0::2].astype(np.int64), edges[1::2].astype(np.int64)
    lengths = np.minimum(ends - starts, MAX_TOKEN_LENGTH)
    words8: npt.NDArray[np.uint64] = np.ndarray(
        (len(joined) + 1,), dtype="<u8", buffer=raw.data, offset=0, strides=(1,)
    )
    return words8, starts, lengths


def _groups(
    words8: npt.NDArray[np.uint64], starts: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """Return each word's group of equal words and each group's earliest word.

    None when two different words share a hash.
    """
    # A word of at most 8 bytes is its own key: its bytes, zero-padded (no byte of a word
    # is 0, and none has its top bit set). Longer words are keyed by a hash with the top
    # bit set, so the two kinds never meet, and checked against their group's first word.
    keys = _block(words8, starts, lengths, 0)
    long_words = np.flatnonzero(lengths > 8)
    if len(long_words):
        long_keys, spans = _long_keys(words8, starts[long_words], lengths[long_words])
        keys[long_words] = long_keys
    order = np.argsort(keys)
    ordered = keys[order]
    new_group = np.concatenate(([True], ordered[1:] != ordered[:-1]))
    group = np.empty(len(order), dtype=np.int64)
    group[order] = np.cumsum(new_group) - 1
    group_first = np.minimum.reduceat(order, np.flatnonzero(new_group))  # earliest token
    if len(long_words):
        first = group_first[group[long_words]]
        # Positions of each long word's group-first among the long words.
        where = np.searchsorted(long_words, first)
        if not np.array_equal(long_words[where], first) or not _same_words(
            words8, starts[long_words], lengths[long_words], spans, where
        ):
            return None
    return group, group_first


def _vocabulary(
    joined: bytes,
    starts: npt.NDArray[np.int64],
    lengths: npt.NDArray[np.int64],
    group: npt.NDArray[np.int64],
    group_first: npt.NDArray[np.int64],
    stop: frozenset[str],
    tally: frozenset[str] = frozenset(),
) -> tuple[list[str], npt.NDArray[np.int64]]:
    """Return the batch vocabulary in order of first occurrence, without stop words.

    Also returns each word's id in it (-1 for a stop word, :data:`_TALLIED` for a stop
    word of ``tally``).
    """
    by_first = np.argsort(group_first)
    text = joined.decode("ascii")
    words = [
        text[s : s + length]
        for s, length in zip(
            starts[group_first[by_first]].tolist(),
            lengths[group_first[by_first]].tolist(),
            strict=True,
        )
    ]
    keep_word = np.fromiter((w not in stop for w in words), dtype=bool, count=len(words))
    vocabulary = [w for w, k in zip(words, keep_word.tolist(), strict=True) if k]
    local_id = np.full(len(words), -1, dtype=np.int64)
    local_id[by_first[keep_word]] = np.arange(len(vocabulary))
    dropped = np.flatnonzero(~keep_word)
    tallied_word = np.fromiter((words[i] in tally for i in dropped.tolist()), dtype=bool)
    local_id[by_first[dropped[tallied_word]]] = _TALLIED
    return vocabulary, local_id[group]


def _counted(
    vocabulary: list[str],
    token_doc: npt.NDArray[np.int64],
    token_id: npt.NDArray[np.int64],
    n: int,
) -> ChunkCounts | None:
    """Count (document, word) of the tokens, in document order; None if keys do not fit.

    One plain sort of (document, word, position) packed into 64 bits; each pair is then
    listed at its first position: tokens are in document order, so that orders each
    document's words by first occurrence.
    """
    tokens = len(token_id)
    doc_bits = max(1, (n - 1).bit_length())
    id_bits = max(1, (len(vocabulary) - 1).bit_length())
    pos_bits = max(1, (tokens - 1).bit_length())
    if doc_bits + id_bits + pos_bits > 63:
        return None
    packed = (token_doc << (id_bits + pos_bits)) | (token_id << pos_bits)
    packed |= np.arange(tokens, dtype=np.int64)
    packed.sort()
    pair = packed >> pos_bits
    run_start = np.flatnonzero(np.concatenate(([True], pair[1:] != pair[:-1])))
    first_pos = packed[run_start] & ((1 << pos_bits) - 1)
    count_at = np.zeros(tokens, dtype=np.int64)
    count_at[first_pos] = np.diff(np.concatenate((run_start, [len(pair)])))
    firsts = np.flatnonzero(count_at)
    return ChunkCounts.of(
        vocabulary,
        np.bincount(token_doc[firsts], minlength=n).astype(np.int64),
        token_id[firsts],
        count_at[firsts],
    )
