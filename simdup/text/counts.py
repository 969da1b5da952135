"""Term counts: of a chunk of documents (what a tokenizing worker hands back), and of a corpus.

Their own module so that both ways of counting (document by document, and
:mod:`simdup.text.bytecount`, a batch over bytes) build the same record, and so that
weighting (:func:`simdup.fingerprints.weights.weigh`) takes the corpus's counts without
the tokenizer.
"""

from __future__ import annotations

import os
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


@dataclass(frozen=True)
class Sender:
    """Who numbered a chunk's features, when a process numbers them over a whole run.

    A worker that sends each chunk's whole vocabulary sends most words again and again,
    and this process maps each of them again (2.6 s of the 4 s 100,000 generated files
    took to count, on a core the workers need). Numbered in the worker over the run, a
    chunk carries only the words new to that worker.

    Attributes:
        process: The process that numbered the features (its id).
        epoch: How many times it started its numbering again (it holds a bounded number
            of words: see :data:`KNOWN_WORDS`).
        before: Words it had numbered before this chunk, in this epoch.
    """

    process: int
    epoch: int
    before: int


#: Words a process keeps numbered over a run at most; past them it starts again. About
#: 15 MB of words a worker; a chunk's common words are among the first ones met.
KNOWN_WORDS = 1 << 17

#: This process's numbering: the run, the process, the epoch, and the words numbered.
_known: tuple[object, int, int, dict[str, int]] | None = None


def numbers(ids: dict[str, int], words: list[str]) -> npt.NDArray[np.int32]:
    """Return the number of each of ``words`` in ``ids``, numbering new ones as they come."""
    return np.fromiter(
        (ids.setdefault(f, len(ids)) for f in words), dtype=np.int32, count=len(words)
    )


#: Words of a chunk from which it is numbered over the run: a smaller one (a few pages)
#: costs the worker more to number than it saves the process that maps it, which is
#: waiting for the workers anyway (1,000 manual pages in chunks of 16: 2% slower).
NUMBERED_FROM = 4_096


def number_in_process(part: ChunkCounts, run: object) -> tuple[ChunkCounts, Sender | None]:
    """Return ``part`` numbered as this process numbers features over ``run``, and how.

    The chunk's vocabulary becomes the words new to this process (in the chunk's order of
    first occurrence) and its ids this process's numbers; :meth:`CountBuilder.add` given
    the :class:`Sender` maps them to the same global ids as the chunk itself. A chunk of
    fewer than :data:`NUMBERED_FROM` words is returned as it is (no sender).
    """
    global _known
    if len(part.vocabulary) < NUMBERED_FROM:
        return part, None
    pid = os.getpid()
    if _known is None or _known[:2] != (run, pid):  # a new run, or a process forked since
        _known = (run, pid, 0, {})
    epoch, ids = _known[2], _known[3]
    if ids and len(ids) + len(part.vocabulary) > KNOWN_WORDS:
        epoch, ids = epoch + 1, {}
        _known = (run, pid, epoch, ids)
    before = len(ids)
    mapping = numbers(ids, part.vocabulary)
    new = [part.vocabulary[k] for k in np.flatnonzero(mapping >= before).tolist()]
    numbered = ChunkCounts(new, part.lengths, mapping[part.ids], part.counts)
    return numbered, Sender(pid, epoch, before)


class _SenderIds:
    """The global id of each number a sender gave, in a buffer that grows by doubling."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.size = 0
        self.ids = np.zeros(1024, dtype=np.int32)

    def extend(self, more: npt.NDArray[np.int32]) -> None:
        """Append the global ids of the sender's next numbers."""
        end = self.size + len(more)
        if end > len(self.ids):
            grown = np.zeros(max(end, 2 * len(self.ids)), dtype=np.int32)
            grown[: self.size] = self.ids[: self.size]
            self.ids = grown
        self.ids[self.size : end] = more
        self.size = end


class CountBuilder:
    """Chunk counts joined in order into a corpus's counts, one chunk at a time.

    Local ids map to global ids in order of first occurrence in the corpus, so the
    counts are the same however the corpus was cut into chunks; a chunk's own vocabulary
    is dropped once mapped. The parts can also be taken away as they come
    (:meth:`add` returns them), for a caller that keeps the counts elsewhere.
    """

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._senders: dict[int, _SenderIds] = {}
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

    def global_ids(self, part: ChunkCounts, sender: Sender | None = None) -> npt.NDArray[np.int32]:
        """Return the global id of every entry of ``part`` (new features get new ids).

        With ``sender``, ``part`` was numbered by :func:`number_in_process`: its sender's
        chunks must come in the order it numbered them (as in input order they do).
        """
        mapping = numbers(self._ids, part.vocabulary)
        if sender is not None:
            known = self._senders.get(sender.process)
            if known is None or known.epoch != sender.epoch:
                known = self._senders[sender.process] = _SenderIds(sender.epoch)
            if known.size != sender.before:
                raise RuntimeError("a worker's chunks were taken out of the order it counted them")
            known.extend(mapping)
            mapping = known.ids[: known.size]
        found: npt.NDArray[np.int32] = mapping[part.ids]
        return found

    def add(self, part: ChunkCounts, sender: Sender | None = None) -> None:
        """Append a chunk's counts after those added so far (see :meth:`global_ids`)."""
        self.indices.append(self.global_ids(part, sender))
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
