"""A corpus too large to hold: its counts and names spilled to temporary files as counted.

Counting hands each chunk's counts, in input order, to a :class:`CorpusSink`. While the
corpus's entries stay below their share of the budget (:class:`SpillLimits`) they are held
in memory, as a :class:`~simdup.text.counts.CountMatrix`; past it the counts so far, and
every later chunk's as it comes, go to the store: feature ids and counts (the weights to
be) of the documents with features, and their names. This process then keeps per
document only its number of features, and per feature its document frequency.

The stored entries are the ones the matrix in memory would hold, in the same order, so
every later stage computes the same bits from them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from simdup.fingerprints.weights import StoredWeights
from simdup.search.verify import StoredShared
from simdup.spill import Column, SpillDir, SpillError, StringColumn
from simdup.text.counts import ChunkCounts, CountBuilder, CountMatrix, Sender

if TYPE_CHECKING:
    from simdup.search.plan.budget import HeldSpill, SpillLimits


@dataclass(frozen=True)
class Spill:
    """Where a scan may spill, and past what.

    Attributes:
        directory: The scan's temporary directory (created only if something spills).
        limits: What is held in memory before it spills.
    """

    directory: SpillDir
    limits: SpillLimits

    def held_spill(self) -> HeldSpill:
        """Return where a corpus held in memory may write reported pairs past their share."""
        from simdup.search.plan.budget import HeldSpill

        directory = self.directory
        return HeldSpill(self.limits.held_pairs, directory.free(), directory.parent)


@dataclass
class StoredCounts:
    """A corpus's term counts in the store, and what this process keeps of them.

    Attributes:
        vocabulary: Feature strings, global ids in order of first occurrence.
        lengths: int64 (documents,), distinct features of every document read.
        frequencies: int64 (features,), documents holding each feature.
        indices: Feature ids (int32) of the entries of the documents with features.
        data: Their counts (float64).
        names: Names of the documents kept (at least ``min_features`` features), in order.
        featureless: Each document left out, in order: its name and number of features.
        spill: Where the store lives.
        largest: The largest count of a feature in a document.
    """

    vocabulary: tuple[str, ...]
    lengths: npt.NDArray[np.int64]
    frequencies: npt.NDArray[np.int64]
    indices: Column
    data: Column
    names: StringColumn
    featureless: list[tuple[str, int]]
    spill: Spill
    largest: int = 0


class CorpusSink:
    """Counted chunks, in order, held in memory up to a limit and stored past it.

    Args:
        spill: Where to spill and past what (None: everything stays in memory).
        inputs: Inputs to read in all, to estimate the store's size when it starts.
        min_features: Documents with fewer features are left out of the store (as a
            corpus held in memory leaves them out when it is weighted), and so from its
            document frequencies.
    """

    def __init__(self, spill: Spill | None, inputs: int = 0, min_features: int = 1) -> None:
        self.spill = spill
        self.inputs = inputs
        self.min_features = max(1, min_features)
        self.builder = CountBuilder()
        self.names: list[str] = []
        self.entries = 0
        self.read = 0
        self.stored: StoredCounts | None = None
        self._lengths: list[npt.NDArray[np.int64]] = []
        self._frequencies = np.zeros(0, dtype=np.int64)

    def add(
        self, names: Sequence[str], part: ChunkCounts, items: int, sender: Sender | None = None
    ) -> None:
        """Add the counts of the next chunk (``items`` inputs read for it).

        ``sender``: who numbered its features (:meth:`CountBuilder.global_ids`).
        """
        self.read += items
        self.entries += len(part.ids)
        if self.stored is None:
            self.builder.add(part, sender)
            self.names.extend(names)
            if self.spill is not None and self.entries > self.spill.limits.corpus_entries:
                self._start(self.spill)
            return
        self._store(names, self.builder.global_ids(part, sender), part.counts, part.lengths)

    def _start(self, spill: Spill) -> None:
        """Move what is held to the store; every later chunk goes there too."""
        from simdup.search.plan.budget import STORED_ENTRY_BYTES
        from simdup.sizes import format_size

        done = max(1, self.read)
        needed = self.entries * max(self.inputs, done) // done * STORED_ENTRY_BYTES
        free = spill.directory.free()
        if needed > free:
            raise SpillError(
                f"the corpus's temporary store needs about {format_size(needed)} in "
                f"{spill.directory.parent}, which has {format_size(free)} free; free some "
                "space there or choose another directory with --tmp-dir"
            )
        directory = spill.directory
        self.stored = StoredCounts(
            vocabulary=(),
            lengths=np.zeros(0, np.int64),
            frequencies=self._frequencies,
            indices=directory.column("indices.i32", np.int32),
            data=directory.column("weights.f64", np.float64),
            names=StringColumn(directory, "names"),
            featureless=[],
            spill=spill,
        )
        held, names = self.builder, self.names
        self.names = []
        at = 0
        for indices, counts, lengths in zip(held.indices, held.counts, held.lengths, strict=True):
            self._store(names[at : at + len(lengths)], indices, counts, lengths)
            at += len(lengths)
        held.indices, held.counts, held.lengths = [], [], []

    def _store(
        self,
        names: Sequence[str],
        indices: npt.NDArray[np.int32],
        counts: npt.NDArray[np.signedinteger[Any]],
        lengths: npt.NDArray[np.int64],
    ) -> None:
        """Write one chunk's counts and names to the store, but those of documents left out.

        A document left out keeps its place in ``lengths`` with none.
        """
        stored = self.stored
        assert stored is not None
        present = lengths >= self.min_features
        if not bool(np.all(present)):
            entries = np.repeat(present, lengths)
            indices, counts = indices[entries], counts[entries]
            stored.featureless += [
                (names[k], int(lengths[k])) for k in np.flatnonzero(~present).tolist()
            ]
            names = [names[k] for k in np.flatnonzero(present).tolist()]
            lengths = np.where(present, lengths, 0)
        stored.indices.append(indices)
        stored.data.append(counts.astype(np.float64))
        if counts.size:
            stored.largest = max(stored.largest, int(counts.max()))
        self._lengths.append(lengths)
        stored.names.append(names)
        if len(self._frequencies) < len(self.builder):
            grown = np.zeros(len(self.builder), dtype=np.int64)
            grown[: len(self._frequencies)] = self._frequencies
            self._frequencies = grown
        features, documents = np.unique(indices, return_counts=True)
        self._frequencies[features] += documents

    def finish(self) -> tuple[CountMatrix, list[str]] | StoredCounts:
        """Return the counts and names held, or the store's counts if they were spilled."""
        if self.stored is None:
            return self.builder.matrix(), self.names
        stored = self.stored
        stored.indices.finish()
        stored.data.finish()
        stored.vocabulary = self.builder.vocabulary
        stored.lengths = (
            np.concatenate(self._lengths) if self._lengths else np.zeros(0, dtype=np.int64)
        )
        stored.frequencies = self._frequencies
        return stored


@dataclass(frozen=True)
class StoredCorpus:
    """A stored corpus after weighting: its weights, and the rows verification reads.

    Attributes:
        weights: The weight matrix, mapped from the store (read in row order) or read by
            rows at random.
        shared: Each row's shared entries, length and squared norm.
        names: Bytes of the names in the store.
    """

    weights: StoredWeights
    shared: StoredShared
    names: int


def exactness(weighting: str, largest: int) -> tuple[bool, bool]:
    """Return whether a stored corpus's weights are all exact float32s, and small integers.

    Term counts are integers, exact in float32 below 2**24 and with products below 2**24
    when under 4,096; binary weights are all 1; other weightings are taken as neither
    (which changes no cosine, only the memory and speed of verification).

    >>> exactness("tf", 3), exactness("tf", 5000), exactness("log", 1)
    ((True, True), (True, False), (False, False))
    """
    if weighting == "binary":
        return True, True
    if weighting == "tf":
        return largest < 2**24, largest**2 < 2**24
    return False, False
