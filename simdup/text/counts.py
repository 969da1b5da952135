"""Term counts: of a chunk of documents (what a tokenizing worker hands back), and of a corpus.

Their own module so that both ways of counting (document by document, and
:mod:`simdup.text.bytecount`, a batch over bytes) build the same record, and so that
weighting (:func:`simdup.fingerprints.weights.weigh`) takes the corpus's counts without
the tokenizer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class ChunkCounts:
    """Term counts of consecutive documents, with a chunk-local vocabulary.

    Ids and counts are int32 (half the bytes to send back from a worker) unless a count
    needs more.

    Attributes:
        vocabulary: Features in order of first occurrence in the chunk.
        lengths: int64 (documents,), distinct features per document.
        ids: int32 (nnz,), local feature ids, per document in first-occurrence order.
        counts: int32 or int64 (nnz,), occurrences of each feature in its document.
    """

    vocabulary: list[str]
    lengths: npt.NDArray[np.int64]
    ids: npt.NDArray[np.signedinteger[Any]]
    counts: npt.NDArray[np.signedinteger[Any]]

    @classmethod
    def of(
        cls,
        vocabulary: list[str],
        lengths: npt.NDArray[np.int64],
        ids: npt.ArrayLike,
        counts: npt.ArrayLike,
    ) -> ChunkCounts:
        """Build chunk counts, narrowing ids and counts to int32 where they fit."""
        return cls(vocabulary, lengths, np.asarray(ids, dtype=np.int32), narrow(counts))


def narrow(values: npt.ArrayLike) -> npt.NDArray[np.signedinteger[Any]]:
    """Return integers as int32 when all fit, else int64."""
    array = np.asarray(values)
    if array.dtype == np.int32:
        return array
    array = array.astype(np.int64, copy=False)
    if array.size == 0 or (int(array.max()) < 2**31 and int(array.min()) >= -(2**31)):
        return array.astype(np.int32)
    return array


@dataclass(frozen=True)
class CountMatrix:
    """Term counts of a corpus in CSR form, global ids in order of first occurrence.

    Attributes:
        indptr: int64 (n + 1,).
        indices: int32 (nnz,): a corpus never has 2**31 distinct features.
        counts: int32 or int64 (nnz,), see :class:`ChunkCounts`.
        vocabulary: Feature strings.
    """

    indptr: npt.NDArray[np.int64]
    indices: npt.NDArray[np.signedinteger[Any]]
    counts: npt.NDArray[np.signedinteger[Any]]
    vocabulary: tuple[str, ...]

    def row_lengths(self) -> npt.NDArray[np.int64]:
        """Return the number of distinct features of every document."""
        return np.diff(self.indptr)

    def select(self, keep: npt.NDArray[np.bool_]) -> CountMatrix:
        """Return the rows in ``keep`` (the same vocabulary: no id changes).

        Weighting the rows with features (:func:`simdup.fingerprints.weights.weigh`) equals
        weighting the tokens of those documents alone: rows without features hold no id.
        """
        if bool(np.all(keep)):
            return self
        lengths = self.row_lengths()
        entry_keep = np.repeat(keep, lengths)
        indptr = np.concatenate(([0], np.cumsum(lengths[keep]))).astype(np.int64)
        return CountMatrix(
            indptr, self.indices[entry_keep], self.counts[entry_keep], self.vocabulary
        )


class CountBuilder:
    """Chunk counts joined in order into a corpus's counts, one chunk at a time.

    Local ids map to global ids in order of first occurrence in the corpus, so the
    counts are the same however the corpus was cut into chunks; a chunk's own vocabulary
    is dropped once mapped. The parts can also be taken away as they come
    (:meth:`add` returns them), for a caller that keeps the counts elsewhere.
    """

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self.indices: list[npt.NDArray[np.int32]] = []
        self.counts: list[npt.NDArray[np.signedinteger[Any]]] = []
        self.lengths: list[npt.NDArray[np.int64]] = []

    @property
    def vocabulary(self) -> tuple[str, ...]:
        """Every feature seen so far, in order of first occurrence."""
        return tuple(self._ids)

    def __len__(self) -> int:
        """Return how many distinct features were seen so far."""
        return len(self._ids)

    def global_ids(self, part: ChunkCounts) -> npt.NDArray[np.int32]:
        """Return the global id of every entry of ``part`` (new features get new ids)."""
        ids = self._ids
        mapping = np.fromiter(
            (ids.setdefault(f, len(ids)) for f in part.vocabulary),
            dtype=np.int32,
            count=len(part.vocabulary),
        )
        found: npt.NDArray[np.int32] = mapping[part.ids]
        return found

    def add(self, part: ChunkCounts) -> None:
        """Append a chunk's counts after those added so far."""
        self.indices.append(self.global_ids(part))
        self.counts.append(part.counts)
        self.lengths.append(part.lengths)

    def matrix(self) -> CountMatrix:
        """Return the counts of every chunk added, as one matrix."""
        lengths = np.concatenate(self.lengths) if self.lengths else np.zeros(0, np.int64)
        return CountMatrix(
            np.concatenate(([0], np.cumsum(lengths))).astype(np.int64),
            np.concatenate(self.indices) if self.indices else np.zeros(0, np.int32),
            narrow(np.concatenate(self.counts)) if self.counts else np.zeros(0, np.int32),
            self.vocabulary,
        )
