"""Candidate pairs to measured pairs: Hamming distance, estimated and true cosine.

Blocking only proposes pairs; verification measures them. The Hamming distance ``d`` of two
``b``-bit fingerprints estimates the angle between the weight vectors as ``π d / b``
(Charikar 2002), hence the estimated cosine ``cos(π d / b)``. The true cosine comes from
the weight vectors themselves, so every reported pair is checked against the user's
threshold exactly, not by the estimate.

Cosines are computed as ``dot / sqrt(|u|² |v|²)``: for identical vectors the two sums are
equal and ``sqrt(x * x) == x`` in IEEE arithmetic, so an exact copy scores exactly 1.0.
The cosine of a zero vector (a document with no features) is defined as 0.0: it is
similar to nothing, and nothing is divided by zero.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from simdup.weights import WeightMatrix

#: Pairs verified per vectorised step when computing true cosines.
CHUNK_PAIRS = 1 << 16


def hamming(a: int, b: int) -> int:
    """Return the number of bits in which two int fingerprints differ.

    >>> hamming(0b1011101, 0b1001001)
    2
    """
    return (a ^ b).bit_count()


def estimate_cosine(a: int, b: int, bits: int) -> float:
    """Return ``cos(π · hamming(a, b) / bits)``, the SimHash estimate of the cosine.

    >>> estimate_cosine(5, 5, 64)
    1.0
    """
    return math.cos(math.pi * hamming(a, b) / bits)


def cosine(u: Mapping[str, float], v: Mapping[str, float]) -> float:
    """Return the true cosine of two sparse weight vectors (0.0 if either is all zero).

    >>> cosine({"a": 1, "b": 1}, {"a": 1})
    0.7071067811865475
    >>> cosine({}, {"a": 1})
    0.0
    """
    if len(u) > len(v):
        u, v = v, u
    dot = math.fsum(w * v[k] for k, w in u.items() if k in v)
    squares = math.fsum(w * w for w in u.values()) * math.fsum(w * w for w in v.values())
    if squares == 0.0:
        return 0.0
    return max(-1.0, min(1.0, dot / math.sqrt(squares)))


def hamming_many(
    fingerprints: npt.NDArray[np.uint64], pairs: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """Return the Hamming distance of every pair, int64 (m,)."""
    if len(pairs) == 0:
        return np.zeros(0, dtype=np.int64)
    diff = fingerprints[pairs[:, 0]] ^ fingerprints[pairs[:, 1]]
    distances: npt.NDArray[np.int64] = np.bitwise_count(diff).sum(axis=1, dtype=np.int64)
    return distances


def estimate_cosine_many(distances: npt.NDArray[np.int64], bits: int) -> npt.NDArray[np.float64]:
    """Return ``cos(π d / bits)`` for every distance, float64 (m,)."""
    return np.cos(np.pi * distances.astype(np.float64) / bits)


class CosineIndex:
    """A corpus matrix prepared for many :func:`cosine_many` calls (built once per scan).

    Holds every entry sorted by ``row * vocabulary + feature`` and the squared row norms,
    the parts of a cosine that do not depend on the pairs: verifying candidates chunk by
    chunk then costs only the look-ups.
    """

    def __init__(self, matrix: WeightMatrix) -> None:
        self.matrix = matrix
        self.vocab = max(len(matrix.vocabulary), 1)
        self.lengths = matrix.row_lengths()
        rows = np.repeat(np.arange(matrix.rows, dtype=np.int64), self.lengths)
        keys = rows * self.vocab + matrix.indices
        order = np.argsort(keys, kind="stable")
        self.sorted_keys = keys[order]
        self.sorted_data = matrix.data[order]
        self.squares = matrix.squared_norms()


def cosine_many(
    matrix: WeightMatrix, pairs: npt.NDArray[np.int64], *, index: CosineIndex | None = None
) -> npt.NDArray[np.float64]:
    """Return the true cosine of every pair of rows, float64 (m,).

    Each row's entries are looked up in the other row through one sorted array of
    ``row * vocabulary + feature`` keys, walking the shorter row of each pair.

    Args:
        matrix: The corpus weights.
        pairs: int64 (m, 2) row numbers.
        index: ``CosineIndex(matrix)``, to reuse across calls.
    """
    m = len(pairs)
    out = np.zeros(m, dtype=np.float64)
    if m == 0:
        return out
    if index is None or index.matrix is not matrix:
        index = CosineIndex(matrix)
    vocab, lengths, squares = index.vocab, index.lengths, index.squares
    sorted_keys, sorted_data = index.sorted_keys, index.sorted_data
    for lo in range(0, m, CHUNK_PAIRS):
        chunk = pairs[lo : lo + CHUNK_PAIRS]
        short_first = lengths[chunk[:, 0]] <= lengths[chunk[:, 1]]
        walk = np.where(short_first, chunk[:, 0], chunk[:, 1])
        other = np.where(short_first, chunk[:, 1], chunk[:, 0])
        counts = lengths[walk]
        pair_of_entry = np.repeat(np.arange(len(chunk)), counts)
        starts = matrix.indptr[walk]
        first = np.concatenate(([0], np.cumsum(counts)[:-1]))
        entry = starts[pair_of_entry] + (np.arange(int(counts.sum())) - first[pair_of_entry])
        wanted = other[pair_of_entry] * vocab + matrix.indices[entry]
        at = np.searchsorted(sorted_keys, wanted)
        at_clipped = np.minimum(at, len(sorted_keys) - 1)
        hit = (at < len(sorted_keys)) & (sorted_keys[at_clipped] == wanted)
        products = np.where(hit, matrix.data[entry] * sorted_data[at_clipped], 0.0)
        dots = np.bincount(pair_of_entry, weights=products, minlength=len(chunk))
        denom = np.sqrt(squares[chunk[:, 0]] * squares[chunk[:, 1]])
        with np.errstate(invalid="ignore", divide="ignore"):
            values = np.where(denom > 0, dots / np.where(denom > 0, denom, 1.0), 0.0)
        out[lo : lo + len(chunk)] = np.clip(values, -1.0, 1.0)
    return out


def components(n: int, pairs: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Return a component label per node (the smallest node index in its component).

    Label propagation with pointer jumping, all in numpy: each round every edge pulls both
    ends to the smaller label, then labels jump to their label's label.

    >>> components(5, np.array([[0, 3], [3, 4]])).tolist()
    [0, 1, 2, 0, 0]
    """
    labels = np.arange(n, dtype=np.int64)
    if len(pairs) == 0:
        return labels
    a, b = pairs[:, 0], pairs[:, 1]
    while True:
        low = np.minimum(labels[a], labels[b])
        before = labels.copy()
        np.minimum.at(labels, a, low)
        np.minimum.at(labels, b, low)
        labels = labels[labels]
        if np.array_equal(labels, before):
            return labels
