"""Blocking tables: which bit positions key each table, and what a set of tables finds.

Comparing every pair costs O(n²). Blocking looks only at pairs that share a *table key*:
the values of a fixed set of bit positions (:mod:`simdup.search.candidates` streams those pairs).

* **Block schemes** (the seed's demo): split the fingerprint into ``blocks`` contiguous
  blocks, one table per block. By pigeonhole, two fingerprints at Hamming distance
  ``< blocks`` agree on at least one block, so they are always found. strict = 1 block,
  balanced = 4, loose = 8, defined by count so they hold for any width.
* **Distance tables** (Manku, Jain & Das Sarma 2007): split into ``m > k`` blocks and make
  one table per choice of ``m - k`` blocks. A pair within distance ``k`` leaves at least
  ``m - k`` blocks clean, so it is found, with keys much wider than ``bits / (k + 1)``
  and therefore far fewer random candidates than plain pigeonhole.
* **Sampled tables** (bit-sampling LSH, Indyk & Motwani 1998, on permuted bits as in Manku
  et al.): each table keys on ``r`` bit positions cut from a seeded random permutation. A
  pair at distance ``d`` survives one table with probability about ``(1 - d/bits)**r``;
  enough tables find it with any wanted probability, at wider keys than any guarantee
  allows. :mod:`simdup.search.plan.planner` chooses ``r`` and the table count from the threshold.

Block sizes differ by at most one bit: with ``bits = q * blocks + r`` the first ``r``
blocks have ``q + 1`` bits (the convention of ``numpy.array_split``).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.errors import ParameterError
from simdup.fingerprints.simhash import words64
from simdup.params import SCHEMES, check_bits

#: Seed of the permutations behind sampled tables: fixed, so plans are reproducible.
TABLE_SEED = 0x51D0

#: Multiplier of the key mixer for keys spanning several words (splitmix64's golden gamma).
KEY_MIX = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True)
class Tables:
    """A set of blocking tables: each table is the sorted bit positions forming its key.

    Attributes:
        bits: Fingerprint width.
        keys: One int64 array of bit positions per table.
        guarantee: Every pair at Hamming distance <= this is found (-1: none).
        description: How the tables were made, for people and for JSON ``params``.
    """

    bits: int
    keys: tuple[npt.NDArray[np.int64], ...]
    guarantee: int
    description: str

    @property
    def key_bits(self) -> list[int]:
        """Width of each table's key in bits."""
        return [len(k) for k in self.keys]


def block_layout(bits: int, blocks: int) -> list[npt.NDArray[np.int64]]:
    """Return the bit positions of each of ``blocks`` contiguous, near-equal blocks.

    >>> [b.tolist() for b in block_layout(10, 4)]
    [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]
    """
    check_bits(bits)
    if isinstance(blocks, bool) or not isinstance(blocks, int) or not 1 <= blocks <= bits:
        raise ParameterError(
            f"blocks must be an integer from 1 to bits ({bits}), got {blocks!r}; "
            "use fewer blocks or more bits"
        )
    return [a.astype(np.int64) for a in np.array_split(np.arange(bits), blocks)]


def block_tables(bits: int, blocks: int) -> Tables:
    """Return one table per contiguous block: pairs within ``blocks - 1`` are found."""
    return Tables(bits, tuple(block_layout(bits, blocks)), blocks - 1, f"{blocks} blocks")


def scheme_tables(bits: int, scheme: str) -> Tables:
    """Return the tables of a named scheme (strict, balanced, loose).

    A scheme with more blocks than bits uses one block per bit.
    """
    if scheme not in SCHEMES:
        raise ParameterError(f"unknown scheme {scheme!r}; choose one of: {', '.join(SCHEMES)}")
    return block_tables(bits, min(SCHEMES[scheme], bits))


def distance_blocks(bits: int, max_distance: int, *, max_tables: int = 64) -> int:
    """Return how many blocks :func:`distance_tables` cuts the bits into.

    The number ``m`` (> ``max_distance``) whose ``C(m, k)`` tables have the fewest
    expected random collisions, ``C(m, k) * 2**-(key bits)``, among layouts of at most
    ``max_tables`` tables.

    >>> distance_blocks(64, 3)
    8
    """
    check_bits(bits)
    k = max_distance
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < bits:
        raise ParameterError(
            f"max distance must be an integer from 0 to bits - 1 ({bits - 1}), got {k!r}"
        )
    best: tuple[float, int] | None = None
    for m in range(k + 1, bits + 1):
        tables = math.comb(m, k)
        if tables > max_tables and m > k + 1:
            break
        key_bits = bits // m * (m - k)  # the smallest of m blocks has bits // m bits
        score = math.log2(tables) - key_bits
        if best is None or score < best[0]:
            best = (score, m)
    assert best is not None  # m = k + 1 is always tried
    return best[1]


def distance_tables(bits: int, max_distance: int, *, max_tables: int = 64) -> Tables:
    """Return tables that find every pair within Hamming distance ``max_distance``.

    Each table keys ``m - k`` of ``m`` contiguous blocks (:func:`distance_blocks`).

    >>> t = distance_tables(64, 3)
    >>> t.guarantee, len(t.keys), min(t.key_bits)
    (3, 56, 40)
    """
    k = max_distance
    m = distance_blocks(bits, k, max_tables=max_tables)
    layout = block_layout(bits, m)
    keys = tuple(
        np.sort(np.concatenate([layout[i] for i in chosen]))
        for chosen in itertools.combinations(range(m), m - k)
    )
    return Tables(bits, keys, k, f"{len(keys)} tables of {m - k} of {m} blocks (distance <= {k})")


def sampled_tables(bits: int, key_bits: int, count: int, *, seed: int = TABLE_SEED) -> Tables:
    """Return ``count`` tables of ``key_bits`` positions cut from seeded random permutations.

    Each permutation of the bit positions gives ``bits // key_bits`` disjoint tables, so
    every group of tables from one permutation also keeps the pigeonhole guarantee. The
    tables of a smaller ``count`` are a prefix of those of a larger one, which is what lets
    the planner grow a plan one table at a time.

    >>> t = sampled_tables(64, 16, 6)
    >>> t.key_bits, t.guarantee
    ([16, 16, 16, 16, 16, 16], 3)
    >>> sampled_tables(64, 16, 6).keys[5].tolist() == t.keys[5].tolist()
    True
    """
    check_bits(bits)
    if not 1 <= key_bits <= bits or count < 1:
        raise ParameterError(
            f"sampled tables need 1 <= key bits <= bits ({bits}) and at least one table, "
            f"got {key_bits} key bits and {count} tables"
        )
    per_permutation = bits // key_bits
    rng = np.random.default_rng([seed, bits, key_bits])
    keys: list[npt.NDArray[np.int64]] = []
    while len(keys) < count:
        permutation = rng.permutation(bits).astype(np.int64)
        take = min(per_permutation, count - len(keys))
        keys.extend(np.sort(permutation[: take * key_bits].reshape(take, key_bits), axis=1))
    guarantee = per_permutation - 1 if count >= per_permutation else -1
    return Tables(
        bits, tuple(keys), guarantee, f"{count} sampled tables of {key_bits} bits (seed {seed})"
    )


def table_masks(tables: Tables) -> npt.NDArray[np.uint64]:
    """Return each table's bit positions as a mask over fingerprint words, uint64 (L, words).

    >>> [hex(int(m)) for m in table_masks(block_tables(8, 2))[:, 0]]
    ['0xf', '0xf0']
    """
    out = np.zeros((len(tables.keys), words64(tables.bits)), dtype=np.uint64)
    for t, positions in enumerate(tables.keys):
        np.bitwise_or.at(
            out[t], positions // 64, np.left_shift(np.uint64(1), (positions % 64).astype(np.uint64))
        )
    return out


class SharedKeys:
    """Which pairs share some table's key, from their fingerprints' XOR: a byte at a time.

    A pair shares a table's key when its XOR clears the table's mask. Rather than test
    every mask (a comparison per table and pair), each byte of the XOR is looked up in a
    table of the masks it misses, as bit sets, and the sets of a pair's bytes are
    intersected: 8 lookups a pair at 64 bits, whatever the number of tables (155 tables:
    a third of the time, the XOR included). Only bytes some mask uses are looked up.

    >>> shared = SharedKeys(table_masks(block_tables(16, 2)))
    >>> shared(np.array([[0x0F00], [0x0101], [0]], dtype=np.uint64)).tolist()
    [True, False, True]
    """

    def __init__(self, masks: npt.NDArray[np.uint64]) -> None:
        tables, words = masks.shape
        self.tables = tables
        width = max(1, -(-tables // 64))
        mask_bytes = np.ascontiguousarray(masks).view(np.uint8).reshape(tables, words * 8)
        self.used = np.flatnonzero(mask_bytes.any(axis=0)).tolist()
        values = np.arange(256, dtype=np.uint8)[:, None]
        bit = np.left_shift(np.uint64(1), (np.arange(tables) % 64).astype(np.uint64))
        self.sets = np.zeros((words * 8, 256, width), dtype=np.uint64)
        for b in self.used:
            missed = np.where((values & mask_bytes[None, :, b]) == 0, bit, np.uint64(0))
            for w in range(width):
                self.sets[b, :, w] = np.bitwise_or.reduce(missed[:, w * 64 : w * 64 + 64], axis=1)

    def __call__(self, differ: npt.NDArray[np.uint64]) -> npt.NDArray[np.bool_]:
        """Tell, per row of ``differ`` (uint64 (m, words), pairs' XOR), whether a key is shared."""
        if self.tables == 0:
            return np.zeros(len(differ), dtype=bool)
        if not self.used:  # a table of no bits: every pair shares its key
            return np.ones(len(differ), dtype=bool)
        bytes_per_row = 8 * differ.shape[1]
        columns = np.ascontiguousarray(differ).view(np.uint8).reshape(len(differ), bytes_per_row)
        first, *rest = self.used
        meet = self.sets[first].take(columns[:, first], axis=0)
        for b in rest:
            meet &= self.sets[b].take(columns[:, b], axis=0)
        shared: npt.NDArray[np.bool_] = meet.any(axis=1)
        return shared


def masked_keys(
    fingerprints: npt.NDArray[np.uint64], mask: npt.NDArray[np.uint64]
) -> npt.NDArray[np.uint64]:
    """Return every fingerprint's key in the table of ``mask``, uint64 (n,).

    Grouping by ``fingerprint & mask`` groups by the table's bits without moving them. A
    table spanning several words mixes the masked words into one 64-bit key; a collision
    of that mix can only add a candidate (every candidate is verified), never lose one.
    """
    return _column_keys([fingerprints[:, w] for w in range(fingerprints.shape[1])], mask)


def table_keys(
    fingerprints: npt.NDArray[np.uint64], masks: npt.NDArray[np.uint64]
) -> npt.NDArray[np.uint64]:
    """Return every fingerprint's key in every table, uint64 (n, L): :func:`masked_keys` of each.

    Tables within one word (every table at 64 bits) take one gather and one ``&`` for all
    of them: an index stores a document's 155 keys in microseconds, not a call per table.
    """
    used = masks != 0
    single = used.sum(axis=1) == 1
    out = np.empty((len(fingerprints), len(masks)), dtype=np.uint64)
    if single.any():
        tables = np.flatnonzero(single)
        words = used[tables].argmax(axis=1)
        out[:, tables] = fingerprints[:, words] & masks[tables, words]
    for t in np.flatnonzero(~single).tolist():
        out[:, t] = masked_keys(fingerprints, masks[t])
    return out


def _column_keys(
    columns: Sequence[npt.NDArray[np.uint64]], mask: npt.NDArray[np.uint64]
) -> npt.NDArray[np.uint64]:
    """Return :func:`masked_keys` from the fingerprints' words, one array per word."""
    used = np.flatnonzero(mask)
    if len(used) == 1:
        w = int(used[0])
        return np.asarray(columns[w] & mask[w], dtype=np.uint64)
    key = np.zeros(len(columns[0]), dtype=np.uint64)
    for w in used.tolist():
        key ^= columns[w] & mask[w]
        key *= KEY_MIX
        key ^= key >> np.uint64(29)
    return key


def _rotations(mask: npt.NDArray[np.uint64]) -> list[tuple[int, int]] | None:
    """Return a left rotation per used word that makes the words' masks disjoint, or None.

    The rotated masked words can then be OR-ed into one key that loses nothing.
    """
    occupied = 0
    out = []
    for w in np.flatnonzero(mask).tolist():
        bits = int(mask[w])
        for r in range(64):
            turned = ((bits << r) | (bits >> (64 - r))) & 0xFFFFFFFFFFFFFFFF if r else bits
            if not turned & occupied:
                occupied |= turned
                out.append((w, r))
                break
        else:
            return None
    return out


def exact_keys(
    columns: Sequence[npt.NDArray[np.uint64]], mask: npt.NDArray[np.uint64]
) -> npt.NDArray[np.uint64]:
    """Return a table's keys for bucketing: equal iff the fingerprints agree on its bits.

    A table of at most 64 bits (every planned table) packs its masked words, rotated
    apart, into one uint64. A wider one falls back to :func:`masked_keys`, whose 64-bit mix
    of the words can only rarely join two keys (an extra candidate, never a lost one).
    """
    rotations = _rotations(mask)
    if rotations is None:
        return _column_keys(columns, mask)
    key = np.zeros(len(columns[0]), dtype=np.uint64)
    for w, r in rotations:
        part = columns[w] & mask[w]
        if r:
            part = (part << np.uint64(r)) | (part >> np.uint64(64 - r))
        key |= part
    return key


def bucket_sizes(keys: npt.NDArray[np.generic]) -> npt.NDArray[np.int64]:
    """Return the sizes of the groups of equal keys (any order)."""
    ordered = np.sort(keys)
    edges = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
    bounds = np.concatenate(([0], edges, [len(ordered)])).astype(np.int64)
    return np.diff(bounds) if len(ordered) else np.zeros(0, dtype=np.int64)


def bucket_pairs(keys: npt.NDArray[np.generic]) -> int:
    """Return the number of pairs sharing a key, ``sum(size * (size - 1) / 2)``.

    >>> bucket_pairs(np.array([3, 1, 3, 3, 2, 1], dtype=np.uint64))
    4
    """
    sizes = bucket_sizes(keys)
    return int((sizes * (sizes - 1) // 2).sum())


@functools.lru_cache(maxsize=8)
def _random_ranks(bits: int, samples: int, seed: int) -> npt.NDArray[np.integer[Any]]:
    """Return ``samples`` fixed-seed random orders of the bit positions (read-only, cached)."""
    rng = np.random.default_rng(seed)
    ranks = np.argsort(rng.random((samples, bits)), axis=1).astype(
        np.int16 if bits < 2**15 else np.int64
    )
    ranks.setflags(write=False)
    return ranks


def clean_ranks(
    tables: Tables, *, samples: int = 4000, seed: int = 0x5151
) -> npt.NDArray[np.int64]:
    """Return, per random bit order and table, the first rank at which the table is hit.

    A pair at Hamming distance ``d`` differs on a uniformly random set of ``d`` positions
    (every SimHash bit is an independent hyperplane); model it as the first ``d`` positions
    of a random order. Entry ``[s, t]`` is the smallest rank, in order ``s``, of a position
    of table ``t``: the table keeps the pair together iff ``d <= entry``. So a pair at
    distance ``d`` is found iff ``d <= max_t entry[s, t]``.

    Returns:
        int64 (samples, tables), values in ``[0, bits]`` (``bits`` for a table without bits).
    """
    ranks = _random_ranks(tables.bits, samples, seed)
    out = np.full((samples, len(tables.keys)), tables.bits, dtype=np.int64)
    widths = np.array([len(k) for k in tables.keys], dtype=np.int64)
    for width in np.unique(widths[widths > 0]).tolist():
        chosen = np.flatnonzero(widths == width)
        positions = np.stack([tables.keys[t] for t in chosen.tolist()])  # (tables, width)
        for lo in range(0, len(chosen), 64):  # bounds the (samples, 64, width) temporary
            part = ranks[:, positions[lo : lo + 64]].min(axis=2)
            out[:, chosen[lo : lo + 64]] = part
    return out


def layered_best(
    bits: int, blocks: int, kept: int, *, samples: int = 4000, seed: int = 0x5151
) -> npt.NDArray[np.int64]:
    """Return ``clean_ranks(tables).max(axis=1)`` for every table of ``kept`` of ``blocks`` blocks.

    A table of whole contiguous blocks is first hit where the earliest of its blocks is,
    so the best of all ``C(blocks, kept)`` of them is the ``kept``-th latest first hit of
    a block: the same ranks, without making a table. Block tables keep 1 of ``blocks``;
    :func:`distance_tables` keep ``blocks - k``.

    >>> bool((layered_best(64, 8, 5) == clean_ranks(distance_tables(64, 3)).max(axis=1)).all())
    True
    """
    ranks = _random_ranks(bits, samples, seed)
    starts = [int(block[0]) for block in block_layout(bits, blocks)]
    firsts = np.minimum.reduceat(ranks, starts, axis=1)
    return np.partition(firsts, blocks - kept, axis=1)[:, blocks - kept].astype(np.int64)


def sampled_ranks(
    bits: int, key_bits: int, count: int, *, samples: int = 4000, seed: int = 0x5151
) -> npt.NDArray[np.int64]:
    """Return ``clean_ranks(sampled_tables(bits, key_bits, count), ...)`` without the tables.

    The tables of one permutation are consecutive runs of it, so a table's first hit is
    the minimum over its run of the ranks taken in the permutation's order: one pass
    over each permutation instead of a gather per table.

    >>> t = sampled_tables(64, 10, 20)
    >>> bool((sampled_ranks(64, 10, 20) == clean_ranks(t)).all())
    True
    """
    ranks = _random_ranks(bits, samples, seed)
    per_permutation = bits // key_bits
    rng = np.random.default_rng([TABLE_SEED, bits, key_bits])  # as sampled_tables draws
    out = np.empty((samples, count), dtype=np.int64)
    done = 0
    while done < count:
        permutation = rng.permutation(bits)
        take = min(per_permutation, count - done)
        runs = ranks[:, permutation[: take * key_bits]]
        starts = np.arange(0, take * key_bits, key_bits)
        out[:, done : done + take] = np.minimum.reduceat(runs, starts, axis=1)
        done += take
    return out


def found_probability(
    tables: Tables, distances: npt.ArrayLike, *, samples: int = 4000
) -> npt.NDArray[np.float64]:
    """Return P(a pair at each Hamming distance shares a key in some table).

    Differing positions are uniformly random (every bit of a SimHash is an independent
    hyperplane), so the probability depends only on the distance. It is exact (1.0) within
    the guarantee and estimated by a fixed-seed Monte Carlo beyond it (:func:`clean_ranks`).

    >>> found_probability(block_tables(64, 4), [0, 3]).tolist()
    [1.0, 1.0]
    """
    d = np.atleast_1d(np.asarray(distances, dtype=np.int64))
    if not tables.keys:
        return np.zeros(len(d), dtype=np.float64)
    best = clean_ranks(tables, samples=samples).max(axis=1)
    hits = (best[None, :] >= d[:, None]).mean(axis=1)
    return np.where(d <= tables.guarantee, 1.0, hits)
