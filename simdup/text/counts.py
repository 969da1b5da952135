"""Term counts of a chunk of documents: what a tokenizing worker hands back.

Its own module so that both ways of counting (:mod:`simdup.parallel`, document by
document, and :mod:`simdup.text.bytecount`, a batch over bytes) build the same record.
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
