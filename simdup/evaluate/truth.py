"""Eval stage 1, truth: the exact cosine of every pair, and which pairs are truly similar.

Everything else is scored against this: an estimate's error is its distance from the
true cosine, and blocking's recall is the share of pairs at or above the threshold that
become candidates. The true cosines come from a Gram matrix summed over the features
shared by two or more documents only (no other feature adds to a dot product), in
column chunks that bound its memory. Identical weight vectors are labelled too: every
estimator is exact on them, so they are left out of the similar-pairs error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from simdup.fingerprints.weights import WeightMatrix

#: Columns of the dense Gram chunk: bounds its memory to ``documents * GRAM_CHUNK`` floats.
GRAM_CHUNK = 2048


@dataclass(frozen=True)
class Truth:
    """The exact similarity of every pair of documents, in :func:`pair_index` order.

    Attributes:
        documents: Rows of the matrix.
        a: int64 (pairs,), first row of each pair.
        b: int64 (pairs,), second row of each pair (``a < b``).
        cosines: float64 (pairs,), true cosines.
        identical: bool (pairs,), the two rows have the same weights.
        similar: bool (pairs,), true cosine >= threshold.
        similar_rows: int64, positions of the similar pairs that are not identical
            (where the error of an estimator says something).
    """

    documents: int
    a: npt.NDArray[np.int64]
    b: npt.NDArray[np.int64]
    cosines: npt.NDArray[np.float64]
    identical: npt.NDArray[np.bool_]
    similar: npt.NDArray[np.bool_]
    similar_rows: npt.NDArray[np.int64]


def truth(matrix: WeightMatrix, threshold: float) -> Truth:
    """Return the true cosine of every pair of rows and which pairs are truly similar.

    >>> from simdup.fingerprints.weights import weights_to_matrix
    >>> t = truth(weights_to_matrix([{"a": 1.0}, {"a": 2.0}, {"b": 1.0}]), 0.8)
    >>> t.cosines.tolist(), t.similar.tolist(), t.identical.tolist(), t.similar_rows.tolist()
    ([1.0, 0.0, 0.0], [True, False, False], [False, False, False], [0])
    """
    a, b = pair_index(matrix.rows)
    cosines = all_pair_cosines(matrix)
    labels = identical_rows(matrix)
    identical = labels[a] == labels[b]
    similar = cosines >= threshold
    informative = similar & ~identical
    return Truth(matrix.rows, a, b, cosines, identical, similar, np.flatnonzero(informative))


def pair_index(n: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Return the rows ``(a, b)`` of every pair ``a < b`` of ``n`` documents, in order.

    Pair ``(i, j)`` is at position ``i n - i (i + 1) / 2 + j - i - 1``.

    >>> [x.tolist() for x in pair_index(3)]
    [[0, 0, 1], [1, 2, 2]]
    """
    a, b = np.triu_indices(n, 1)
    return a.astype(np.int64), b.astype(np.int64)


def pair_positions(
    n: int, a: npt.NDArray[np.int64], b: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """Return the position of pairs ``a < b`` in :func:`pair_index` order.

    >>> pair_positions(3, np.array([0, 1]), np.array([2, 2])).tolist()
    [1, 2]
    """
    return a * n - a * (a + 1) // 2 + b - a - 1


def all_pair_cosines(matrix: WeightMatrix) -> npt.NDArray[np.float64]:
    """Return the true cosine of every pair of rows, float64 (n (n - 1) / 2,), pair order.

    Only features present in two or more rows can contribute to a dot product, so the Gram
    matrix is summed over those columns alone, :data:`GRAM_CHUNK` columns at a time.
    Identical rows score exactly 1.0; rows without features score 0.0.
    """
    n = matrix.rows
    lengths = matrix.row_lengths()
    rows = np.repeat(np.arange(n, dtype=np.int64), lengths)
    frequency = np.bincount(matrix.indices, minlength=len(matrix.vocabulary))
    shared = np.flatnonzero(frequency >= 2)
    column = np.full(len(matrix.vocabulary), -1, dtype=np.int64)
    column[shared] = np.arange(len(shared))
    keep = column[matrix.indices] >= 0
    entry_rows, entry_cols, entry_data = rows[keep], column[matrix.indices[keep]], matrix.data[keep]
    gram = np.zeros((n, n), dtype=np.float64)
    for lo in range(0, len(shared), GRAM_CHUNK):
        inside = (entry_cols >= lo) & (entry_cols < lo + GRAM_CHUNK)
        dense = np.zeros((n, min(GRAM_CHUNK, len(shared) - lo)), dtype=np.float64)
        dense[entry_rows[inside], entry_cols[inside] - lo] = entry_data[inside]
        gram += dense @ dense.T
    a, b = pair_index(n)
    squares = matrix.squared_norms()
    denominator = np.sqrt(squares[a] * squares[b])
    with np.errstate(invalid="ignore", divide="ignore"):
        cosines = np.where(
            denominator > 0, gram[a, b] / np.where(denominator > 0, denominator, 1), 0
        )
    cosines = np.clip(cosines, -1.0, 1.0)
    same = identical_rows(matrix)
    cosines[(same[a] == same[b]) & (denominator > 0)] = 1.0
    return np.asarray(cosines, dtype=np.float64)


def identical_rows(matrix: WeightMatrix) -> npt.NDArray[np.int64]:
    """Return a label per row; rows with the same weights (in any order) share it."""
    labels: dict[bytes, int] = {}
    out = np.empty(matrix.rows, dtype=np.int64)
    for i in range(matrix.rows):
        lo, hi = int(matrix.indptr[i]), int(matrix.indptr[i + 1])
        order = np.argsort(matrix.indices[lo:hi], kind="stable")
        key = matrix.indices[lo:hi][order].tobytes() + b"|" + matrix.data[lo:hi][order].tobytes()
        out[i] = labels.setdefault(key, len(labels))
    return out
