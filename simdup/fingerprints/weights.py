"""Turn features into weights: per document (a dict) or per corpus (a sparse matrix).

SimHash estimates the *cosine* of two weight vectors, so the weighting decides what
"similar" means. Raw term frequency (``tf``) is the default the design asks for: a
document that repeats a phrase leans its fingerprint towards it. ``log`` (1 + ln tf)
damps repetition, ``tfidf`` down-weights words common across the scanned corpus, and
``binary`` (weight 1 for every present feature) is kept only so its loss of accuracy can
be measured: it turns SimHash into a set signature that cannot see emphasis.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.errors import ParameterError
from simdup.params import Weighting, check_weighting
from simdup.spill import Column
from simdup.text.counts import CountMatrix


def idf(document_frequency: npt.ArrayLike, documents: int) -> npt.NDArray[np.float64]:
    """Return smoothed inverse document frequencies, ``ln((1 + N) / (1 + df)) + 1``.

    The smoothing (as in scikit-learn) keeps every idf positive, so a word present in
    every document still counts a little and no weight becomes zero or negative.

    >>> [round(float(x), 4) for x in idf([1, 3], 3)]
    [1.6931, 1.0]
    """
    df = np.asarray(document_frequency, dtype=np.float64)
    return np.log((1.0 + documents) / (1.0 + df)) + 1.0


def scale_counts(tf: npt.NDArray[np.float64], weighting: Weighting) -> npt.NDArray[np.float64]:
    """Apply the per-document part of a weighting to term counts (tfidf: tf, idf later)."""
    if weighting == "log":
        return 1.0 + np.log(tf)
    if weighting == "binary":
        return np.ones_like(tf)
    return tf


def weigh(
    counts: CountMatrix,
    weighting: str,
    document_frequency: npt.ArrayLike | None = None,
    documents: int | None = None,
) -> WeightMatrix:
    """Return the weight matrix of a corpus's term counts.

    Every way of weighting a corpus (:func:`weight_matrix`, the local and the distributed
    engines) goes through here, so they agree to the last bit.

    Args:
        counts: Term counts in CSR form.
        weighting: ``tf``, ``log``, ``binary`` or ``tfidf``.
        document_frequency: ``tfidf``: documents holding each vocabulary feature; None
            counts them over the rows of ``counts``.
        documents: ``tfidf``: the N of :func:`idf`; None is the rows of ``counts``.
    """
    kind = check_weighting(weighting)
    if kind == "tfidf":
        if document_frequency is None:
            document_frequency = np.bincount(counts.indices, minlength=len(counts.vocabulary))
        if documents is None:
            documents = len(counts.indptr) - 1
    data = entry_weights(counts.counts, counts.indices, kind, document_frequency, documents)
    return WeightMatrix(counts.indptr, counts.indices, data, counts.vocabulary)


def entry_weights(
    counts: npt.NDArray[np.generic],
    indices: npt.NDArray[np.signedinteger[Any]],
    kind: Weighting,
    document_frequency: npt.ArrayLike | None = None,
    documents: int | None = None,
) -> npt.NDArray[np.float64]:
    """Return the weights of term-count entries (of any rows, features ``indices``).

    Each entry's weight depends on its count and, for ``tfidf``, on its feature's
    document frequency among ``documents`` alone, so a corpus can be weighed a block of
    entries at a time to the same bits as :func:`weigh` weighs it whole.
    """
    data = scale_counts(counts.astype(np.float64), kind)
    if kind == "tfidf":
        if document_frequency is None or documents is None:
            raise ParameterError("tfidf weighting needs document frequencies and a count")
        data = data * idf(document_frequency, documents)[indices]
    return data


def term_weights(
    tokens: Iterable[str],
    weighting: str = "tf",
    *,
    idf_of: Mapping[str, float] | None = None,
    unseen_idf: float | None = None,
) -> dict[str, float]:
    """Return one document's feature weights, keyed in order of first occurrence.

    Args:
        tokens: The document's features with repeats (see :func:`simdup.tokenize`).
        weighting: ``tf``, ``log``, ``binary`` or ``tfidf``.
        idf_of: Inverse document frequency per feature; required for ``tfidf`` (a single
            document has no corpus to take it from).
        unseen_idf: Idf of features missing from ``idf_of``; for a corpus of N documents
            :func:`idf` gives ``ln(1 + N) + 1``. Defaults to the largest idf in ``idf_of``
            (the rarest known feature), a lower bound of the unseen value.

    >>> term_weights(["cat", "sat", "cat"])
    {'cat': 2.0, 'sat': 1.0}
    >>> term_weights(["cat", "sat", "cat"], "binary")
    {'cat': 1.0, 'sat': 1.0}
    """
    kind = check_weighting(weighting)
    counts = Counter(tokens)
    keys = list(counts)
    values = scale_counts(np.fromiter(counts.values(), np.float64, len(keys)), kind)
    if kind == "tfidf":
        if idf_of is None:
            raise ParameterError("tfidf weighting needs idf values from a corpus (idf_of)")
        if unseen_idf is None:
            unseen_idf = max(idf_of.values(), default=1.0)
        values = values * np.array([idf_of.get(k, unseen_idf) for k in keys], dtype=np.float64)
    return dict(zip(keys, values.tolist(), strict=True))


@dataclass(frozen=True)
class WeightMatrix:
    """A corpus as a sparse document-by-feature matrix in CSR form.

    Row ``i`` holds document ``i``'s features ``indices[indptr[i]:indptr[i+1]]`` (ids into
    ``vocabulary``) with weights ``data[...]``, in order of first occurrence in the
    document, which is the order the reference sums them in.

    Attributes:
        indptr: int64, shape (n + 1,).
        indices: int32 or int64, shape (nnz,).
        data: float64, shape (nnz,).
        vocabulary: Feature strings, ids in order of first occurrence in the corpus.
    """

    indptr: npt.NDArray[np.int64]
    indices: npt.NDArray[np.signedinteger[Any]]
    data: npt.NDArray[np.float64]
    vocabulary: tuple[str, ...]

    @property
    def rows(self) -> int:
        """Number of documents."""
        return len(self.indptr) - 1

    def row_lengths(self) -> npt.NDArray[np.int64]:
        """Return the number of distinct features of every document, int64 (n,)."""
        return np.diff(self.indptr)

    def row_slice(self, lo: int, hi: int) -> WeightMatrix:
        """Return rows ``lo:hi`` as a matrix of their own (same vocabulary, no copy)."""
        start, stop = int(self.indptr[lo]), int(self.indptr[hi])
        return WeightMatrix(
            self.indptr[lo : hi + 1] - start,
            self.indices[start:stop],
            self.data[start:stop],
            self.vocabulary,
        )

    def row(self, i: int) -> dict[str, float]:
        """Return document ``i``'s weights as a dict, in first-occurrence order."""
        lo, hi = int(self.indptr[i]), int(self.indptr[i + 1])
        names = self.vocabulary
        return {
            names[k]: w
            for k, w in zip(self.indices[lo:hi].tolist(), self.data[lo:hi].tolist(), strict=True)
        }

    def norms(self) -> npt.NDArray[np.float64]:
        """Return the Euclidean norm of every row, float64 (n,); 0 for an empty row."""
        return np.sqrt(self.squared_norms())

    def squared_norms(self) -> npt.NDArray[np.float64]:
        """Return the sum of squared weights of every row, float64 (n,).

        Real weights are summed one entry at a time in row order (``bincount`` adds
        sequentially; ``reduceat`` may not), the order dot products are summed in, so an
        exact copy's cosine is 1.0; sums of integer squares are exact in any order.
        """
        out = np.zeros(self.rows, dtype=np.float64)
        lengths = self.row_lengths()
        # A range of rows at a time, so the squares never take a corpus-sized array.
        for lo, hi in row_ranges(self.indptr, NORM_CHUNK):
            start = int(self.indptr[lo])
            squares = self.data[start : int(self.indptr[hi])] ** 2
            nonempty = lengths[lo:hi] > 0
            if not squares.size:
                continue
            if np.array_equal(squares, np.round(squares)) and squares.sum() < 2**53:
                # Sums of integers below 2**53 are exact in any order: the faster reduceat.
                starts = self.indptr[lo:hi][nonempty] - start
                out[lo:hi][nonempty] = np.add.reduceat(squares, starts)
            else:
                rows = np.repeat(np.arange(hi - lo, dtype=np.int64), lengths[lo:hi])
                out[lo:hi] = np.bincount(rows, weights=squares, minlength=hi - lo)
        return out


#: Entries squared at a time by :meth:`WeightMatrix.squared_norms`.
NORM_CHUNK = 1 << 22


def order_of(
    major: npt.NDArray[np.int64], minor: npt.NDArray[np.int64], minors: int
) -> npt.NDArray[np.int64]:
    """Return the positions that sort entries by ``major``, then ``minor`` (stably).

    ``np.lexsort((minor, major))``, for ``0 <= minor < minors``: one int64 key
    (``major * minors + minor``) sorts several times faster than two keys do.

    >>> order_of(np.array([1, 0, 1, 0]), np.array([0, 2, 1, 1]), 3).tolist()
    [3, 1, 0, 2]
    """
    key = major.astype(np.int64) * minors
    key += minor
    return np.argsort(key, kind="stable")


def row_ranges(indptr: npt.NDArray[np.int64], per_chunk: int) -> list[tuple[int, int]]:
    """Split CSR rows into consecutive ranges of about ``per_chunk`` entries each.

    A row longer than ``per_chunk`` is a range of its own.

    >>> row_ranges(np.array([0, 2, 3, 9, 10]), 3)
    [(0, 2), (2, 3), (3, 4)]
    """
    rows = len(indptr) - 1
    bounds = np.searchsorted(indptr, np.arange(0, int(indptr[-1]), per_chunk), "right") - 1
    cuts = sorted({0, rows, *np.clip(bounds, 0, rows).tolist()})
    return [(a, b) for a, b in itertools.pairwise(cuts) if b > a] or [(0, rows)]


def weight_matrix(documents: Sequence[Sequence[str]], weighting: str = "tf") -> WeightMatrix:
    """Build the corpus matrix from tokenized documents (``tfidf`` takes idf from them).

    Feature ids are assigned in order of first occurrence across the corpus, so the same
    documents in the same order always give the same matrix.
    """
    vocab: dict[str, int] = {}
    indptr = np.zeros(len(documents) + 1, dtype=np.int64)
    ids: list[int] = []
    counts: list[int] = []
    for row, tokens in enumerate(documents):
        tf = Counter(tokens)
        for feature, count in tf.items():
            ids.append(vocab.setdefault(feature, len(vocab)))
            counts.append(count)
        indptr[row + 1] = len(ids)
    matrix = CountMatrix(
        indptr, np.asarray(ids, dtype=np.int64), np.asarray(counts, dtype=np.int64), tuple(vocab)
    )
    return weigh(matrix, weighting)


def weights_to_matrix(rows: Sequence[Mapping[str, float]]) -> WeightMatrix:
    """Build a corpus matrix from ready-made weight dicts (keys kept in their order)."""
    vocab: dict[str, int] = {}
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    ids: list[int] = []
    values: list[float] = []
    for r, weights in enumerate(rows):
        for feature, w in weights.items():
            ids.append(vocab.setdefault(feature, len(vocab)))
            values.append(float(w))
        indptr[r + 1] = len(ids)
    return WeightMatrix(
        indptr, np.asarray(ids, dtype=np.int64), np.asarray(values, dtype=np.float64), tuple(vocab)
    )


# Rows of a CSR matrix taken out in any order (the distributed engine moves rows between
# partitions; the verifier walks the entries of chosen rows).


def row_entries(
    indptr: npt.NDArray[np.int64], rows: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Return the ``indptr`` of ``rows`` taken in that order, and the entries they hold.

    The second array numbers the entries of the taken rows, row after row, each row's in
    its order: indexing a matrix's ``indices`` and ``data`` with it gives the taken rows.

    >>> [a.tolist() for a in row_entries(np.array([0, 2, 3, 6]), np.array([2, 0]))]
    [[0, 3, 5], [3, 4, 5, 0, 1]]
    """
    sizes = np.diff(indptr)[rows]
    first = np.cumsum(sizes) - sizes
    entries = np.repeat(indptr[:-1][rows] - first, sizes) + np.arange(int(sizes.sum()))
    return np.concatenate(([0], np.cumsum(sizes))).astype(np.int64), entries


def take_rows(matrix: WeightMatrix, rows: npt.NDArray[np.int64]) -> WeightMatrix:
    """Return ``rows`` of ``matrix`` in that order, as a matrix of the same vocabulary."""
    indptr, entries = row_entries(matrix.indptr, rows)
    return WeightMatrix(indptr, matrix.indices[entries], matrix.data[entries], matrix.vocabulary)


#: Entries between two rows wanted at random below which both are read in one span (the
#: entries between are read and dropped: cheaper than another read).
READ_GAP = 2048


@dataclass(frozen=True)
class StoredWeights:
    """A weight matrix kept in files: mapped to be read in row order, read by rows at random.

    A pass in row order reads :attr:`matrix` (arrays mapped from the files) a range of
    rows at a time and gives each range back when done (:func:`simdup.spill.release`);
    rows wanted at random are read with :meth:`take`, which copies them alone.

    Attributes:
        matrix: The weights, ``indices`` and ``data`` mapped from the columns.
        indices: The column of feature ids (int32).
        data: The column of weights (float64).
    """

    matrix: WeightMatrix
    indices: Column
    data: Column

    def take(self, rows: npt.NDArray[np.int64]) -> WeightMatrix:
        """Return ``rows`` as :func:`take_rows` returns them, read from the files.

        Rows close together in the files are read in one span. Nothing is mapped, so
        this process keeps only the rows it asked for: a mapped read keeps the pages of
        every row read, and the kernel maps the pages around each with it.
        """
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows) > 1 and bool((rows[1:] < rows[:-1]).any()):
            order = np.argsort(rows, kind="stable")
            back = np.empty_like(order)
            back[order] = np.arange(len(order))
            return take_rows(self.take(rows[order]), back)
        indptr = self.matrix.indptr
        starts, ends = indptr[rows], indptr[rows + 1]
        if len(rows) == 0:
            return take_rows(self.matrix, rows)
        first = np.concatenate(([True], starts[1:] - ends[:-1] > READ_GAP))
        last = np.append(first[1:], True)
        spans = np.stack([starts[first], ends[last]], axis=1)
        # Where each row's entries begin among those read: its span's place, plus its offset.
        span_of = np.cumsum(first) - 1
        placed = np.cumsum(spans[:, 1] - spans[:, 0]) - (spans[:, 1] - spans[:, 0])
        begin = placed[span_of] + starts - spans[span_of, 0]
        sizes = ends - starts
        local = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        entries = np.repeat(begin - local[:-1], sizes) + np.arange(int(local[-1]))
        return WeightMatrix(
            local,
            self.indices.read_spans(spans)[entries],
            self.data.read_spans(spans)[entries],
            self.matrix.vocabulary,
        )
