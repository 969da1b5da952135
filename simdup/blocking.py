"""Fingerprints to candidate pairs: documents that agree exactly on some key bits.

Comparing every pair costs O(n²). Blocking looks only at pairs that share a *table key*:
the values of a fixed set of bit positions. Documents are sorted by key within each table
and every pair inside a run of equal keys becomes a candidate.

* **Block schemes** (the seed's demo): split the fingerprint into ``blocks`` contiguous
  blocks, one table per block. By pigeonhole, two fingerprints at Hamming distance
  ``< blocks`` agree on at least one block, so they are always found. strict = 1 block,
  balanced = 4, loose = 8, defined by count so they hold for any width.
* **Distance tables** (Manku, Jain & Das Sarma 2007): split into ``m > k`` blocks and make
  one table per choice of ``m - k`` blocks. A pair within distance ``k`` leaves at least
  ``m - k`` blocks clean, so it is found, with keys much wider than ``bits / (k + 1)``
  and therefore far fewer random candidates than plain pigeonhole.

Block sizes differ by at most one bit: with ``bits = q * blocks + r`` the first ``r``
blocks have ``q + 1`` bits (the convention of ``numpy.array_split``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from simdup.errors import ParameterError
from simdup.simhash import check_bits, int_to_words, unpack_bits

#: Named block schemes and their block counts.
SCHEMES: dict[str, int] = {"strict": 1, "balanced": 4, "loose": 8}

#: Refuse to materialise more candidate pairs than this (16 bytes each before dedup).
MAX_CANDIDATES = 50_000_000


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


def distance_tables(bits: int, max_distance: int, *, max_tables: int = 64) -> Tables:
    """Return tables that find every pair within Hamming distance ``max_distance``.

    Chooses the number of blocks ``m`` (> ``max_distance``) whose ``C(m, k)`` tables have
    the fewest expected random collisions, ``C(m, k) * 2**-(key bits)``, among layouts of
    at most ``max_tables`` tables.

    >>> t = distance_tables(64, 3)
    >>> t.guarantee, len(t.keys), min(t.key_bits)
    (3, 56, 40)
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
        key_bits = min(len(b) for b in np.array_split(np.arange(bits), m)) * (m - k)
        score = math.log2(tables) - key_bits
        if best is None or score < best[0]:
            best = (score, m)
    assert best is not None  # m = k + 1 is always tried
    m = best[1]
    layout = block_layout(bits, m)
    keys = tuple(
        np.sort(np.concatenate([layout[i] for i in chosen]))
        for chosen in itertools.combinations(range(m), m - k)
    )
    return Tables(bits, keys, k, f"{len(keys)} tables of {m - k} of {m} blocks (distance <= {k})")


def table_keys(
    bit_matrix: npt.NDArray[np.uint8], positions: npt.NDArray[np.int64]
) -> npt.NDArray[np.void]:
    """Return each document's key for one table, as fixed-width bytes (n,) for sorting."""
    packed = np.packbits(bit_matrix[:, positions], axis=1, bitorder="little")
    return np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[1])))[:, 0]


def bucket_sizes(keys: npt.NDArray[np.void]) -> npt.NDArray[np.int64]:
    """Return the sizes of the groups of equal keys (any order)."""
    _, counts = np.unique(keys, return_counts=True)
    return counts.astype(np.int64)


def _pairs_within_runs(
    order: npt.NDArray[np.int64], sizes: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """Return all pairs inside consecutive runs of ``order`` of the given sizes, (m, 2).

    Pair ``t`` of a run is mapped to local indices by inverting triangular numbers, so no
    Python loop runs per bucket or per pair.
    """
    per_run = sizes * (sizes - 1) // 2
    total = int(per_run.sum())
    if total == 0:
        return np.zeros((0, 2), dtype=np.int64)
    run_starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    run_of_pair = np.repeat(np.arange(len(sizes)), per_run)
    first_pair = np.concatenate(([0], np.cumsum(per_run)[:-1]))
    t = np.arange(total, dtype=np.int64) - first_pair[run_of_pair]
    hi = ((1 + np.sqrt(1 + 8 * t.astype(np.float64))) / 2).astype(np.int64)
    hi -= (hi * (hi - 1) // 2) > t  # correct float rounding down
    hi += ((hi + 1) * hi // 2) <= t  # and up
    lo = t - hi * (hi - 1) // 2
    base = run_starts[run_of_pair]
    a, b = order[base + lo], order[base + hi]
    return np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1)


def count_candidates(bit_matrix: npt.NDArray[np.uint8], tables: Tables) -> int:
    """Return the number of bucket pairs over all tables (an upper bound on candidates)."""
    total = 0
    for positions in tables.keys:
        sizes = bucket_sizes(table_keys(bit_matrix, positions))
        total += int((sizes * (sizes - 1) // 2).sum())
    return total


def candidate_pairs(
    fingerprints: npt.NDArray[np.uint64],
    tables: Tables,
    *,
    eligible: npt.NDArray[np.bool_] | None = None,
    max_candidates: int = MAX_CANDIDATES,
) -> npt.NDArray[np.int64]:
    """Return the unique pairs ``(i, j)``, ``i < j``, sharing a key in some table.

    Args:
        fingerprints: uint64 (n, words).
        tables: The tables to bucket by.
        eligible: bool (n,); documents marked False (e.g. with no features) never pair.
        max_candidates: Refuse, before allocating, when the buckets hold more pairs.

    Returns:
        int64 (m, 2), sorted lexicographically.

    Raises:
        ParameterError: when the buckets would hold more than ``max_candidates`` pairs.
    """
    n = len(fingerprints)
    rows = np.arange(n, dtype=np.int64) if eligible is None else np.flatnonzero(eligible)
    bit_matrix = unpack_bits(fingerprints[rows], tables.bits)
    found: list[npt.NDArray[np.int64]] = []
    budget = 0
    for positions in tables.keys:
        keys = table_keys(bit_matrix, positions)
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        boundaries = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1
        sizes = np.diff(np.concatenate(([0], boundaries, [len(keys)]))).astype(np.int64)
        budget += int((sizes * (sizes - 1) // 2).sum())
        if budget > max_candidates:
            raise ParameterError(
                f"these blocking tables put {budget:,}+ candidate pairs in shared buckets "
                f"(limit {max_candidates:,}); use fewer blocks, a smaller --max-distance "
                "or more --bits"
            )
        found.append(_pairs_within_runs(order.astype(np.int64), sizes))
    if not found:
        return np.zeros((0, 2), dtype=np.int64)
    local = np.concatenate(found)
    encoded = np.unique(local[:, 0] * max(n, 1) + local[:, 1])
    pairs = np.stack([rows[encoded // max(n, 1)], rows[encoded % max(n, 1)]], axis=1)
    return pairs.astype(np.int64)


def candidates(
    fingerprints: Sequence[int] | npt.NDArray[np.uint64], bits: int, blocks: int
) -> npt.NDArray[np.int64]:
    """Return every pair (i < j) whose fingerprints agree exactly on at least one block.

    Args:
        fingerprints: Int fingerprints, or a uint64 (n, words) array.
        bits: Fingerprint width.
        blocks: Number of contiguous blocks (1 to ``bits``).

    Returns:
        int64 array (m, 2) of index pairs, sorted.

    >>> candidates([0b1111, 0b1110, 0b0001], bits=4, blocks=2).tolist()
    [[0, 1]]
    """
    if isinstance(fingerprints, np.ndarray):
        array = fingerprints
    else:
        array = np.array([int_to_words(f, bits) for f in fingerprints], dtype=np.uint64)
        array = array.reshape(len(fingerprints), -(-bits // 64))
    return candidate_pairs(array, block_tables(bits, blocks))


def found_probability(
    tables: Tables, distances: npt.ArrayLike, *, samples: int = 4000
) -> npt.NDArray[np.float64]:
    """Return P(a pair at each Hamming distance shares a key in some table).

    Differing positions are uniformly random (every bit of a SimHash is an independent
    hyperplane), so the probability depends only on the distance. It is exact (1.0) within
    the guarantee and estimated by a fixed-seed Monte Carlo beyond it.
    """
    d = np.atleast_1d(np.asarray(distances, dtype=np.int64))
    rng = np.random.default_rng(0x5151)
    ranks = np.argsort(rng.random((samples, tables.bits)), axis=1)
    out = np.empty(len(d), dtype=np.float64)
    for idx, dist in enumerate(d.tolist()):
        if dist <= tables.guarantee:
            out[idx] = 1.0
            continue
        differing = ranks < dist
        hit = np.zeros(samples, dtype=bool)
        for positions in tables.keys:
            hit |= ~differing[:, positions].any(axis=1)
        out[idx] = hit.mean()
    return out
