"""The pairs a report shows: their order and limit, made into :class:`Pair` a batch at a time.

A report of millions of pairs is written as it is made (:mod:`simdup.report.render`), from
the result's arrays: no format holds every pair as an object, a record or text.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from simdup.errors import ParameterError
from simdup.fingerprints.weights import order_of
from simdup.model import Pair, PairFields, ScanResult
from simdup.params import CLUSTER_KINDS, SORT_KEYS, ClusterKind, SortKey


@dataclass(frozen=True)
class ReportOptions:
    """Which pairs are shown and how.

    Attributes:
        report_all: Show every candidate pair, marking those below the threshold.
        clusters: Also report groups of near-duplicates: ``representative`` (each member
            at or above the threshold with the group's representative) or ``linked``
            (single-link chains); None: no groups.
        limit: Show at most this many pairs (None: all).
        sort: ``cosine`` (default, highest first), ``hamming`` (lowest first) or ``path``.
        timings: Include per-stage seconds in JSON ``stats`` (makes output vary by run).
    """

    report_all: bool = False
    clusters: ClusterKind | None = None
    limit: int | None = None
    sort: SortKey = "cosine"
    timings: bool = False

    def __post_init__(self) -> None:
        if self.sort not in SORT_KEYS:
            raise ParameterError(f"unknown sort {self.sort!r}; choose one of {SORT_KEYS}")
        if self.limit is not None and self.limit < 0:
            raise ParameterError(f"limit must not be negative, got {self.limit}")
        if self.clusters not in (None, *CLUSTER_KINDS):
            raise ParameterError(
                f"unknown clusters {self.clusters!r}; choose one of {CLUSTER_KINDS}"
            )

    def as_dict(self) -> dict[str, Any]:
        """Return the options that shape the report, for JSON ``params``."""
        return {
            "all": self.report_all,
            "clusters": self.clusters or False,
            "limit": self.limit,
            "sort": self.sort,
        }


#: Pairs made into objects, rendered and written at a time: a report of millions of pairs
#: is never held whole, as objects or as text.
BATCH_PAIRS = 8192


class ShownPairs(Sequence[Pair]):
    """The pairs a report shows, in order: rows of a result made into pairs a batch at a time.

    Held as :class:`Pair` objects a report took about 250 bytes a pair, and its JSON text
    as much again: a scan reporting 16.5 million pairs went past 11 GiB while rendering.
    Here only the order of the rows shown is held (none for the stored order), and each
    pass over the pairs makes them anew, :data:`BATCH_PAIRS` at a time.
    """

    def __init__(self, result: ScanResult, order: npt.NDArray[np.int64] | None, count: int):
        self.result = result
        self._order = order
        self._count = count

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> Pair: ...

    @overload
    def __getitem__(self, index: slice) -> list[Pair]: ...

    def __getitem__(self, index: int | slice) -> Pair | list[Pair]:
        if isinstance(index, slice):
            return self.result.pairs_at(self._positions(range(self._count)[index]))
        if not -self._count <= index < self._count:
            raise IndexError(index)
        at = range(self._count)[index]
        return self.result.pairs_at(self._positions(range(at, at + 1)))[0]

    def _positions(self, shown: range) -> npt.NDArray[np.int64]:
        """Return the positions in ``result.pairs`` of the pairs shown at ``shown``."""
        picked = np.arange(shown.start, shown.stop, shown.step, dtype=np.int64)
        return picked if self._order is None else self._order[picked]

    def __iter__(self) -> Iterator[Pair]:
        for batch in self.batches():
            yield from batch

    def _spans(self, size: int) -> Iterator[slice | npt.NDArray[np.int64]]:
        """Yield the positions in ``result.pairs`` of the pairs shown, ``size`` at a time."""
        for start in range(0, self._count, size):
            stop = min(start + size, self._count)
            yield slice(start, stop) if self._order is None else self._order[start:stop]

    def batches(self, size: int | None = None) -> Iterator[list[Pair]]:
        """Yield the pairs in order, ``size`` (:data:`BATCH_PAIRS`) at a time."""
        for fields in self.field_batches(size):
            yield fields.pairs()

    def field_batches(self, size: int | None = None) -> Iterator[PairFields]:
        """Yield the fields of the pairs in order, ``size`` (:data:`BATCH_PAIRS`) at a time."""
        for rows in self._spans(size or BATCH_PAIRS):
            yield self.result.fields_at(rows)
            if isinstance(rows, slice):  # the stored order: pairs read once, in order
                self.result.pairs.release(rows)

    def marks(self) -> tuple[bool, bool]:
        """Tell whether any pair shown is an exact copy, and whether any has few features."""
        result = self.result
        few = result.few_features()
        identical = flagged = False
        for rows in self._spans(BATCH_PAIRS * 64):  # a few megabytes of rows at a time
            identical = identical or bool((result.pairs.cosine[rows] == 1.0).any())
            flagged = flagged or bool(few[result.pairs.pairs[rows]].any())
            if isinstance(rows, slice):
                result.pairs.release(rows)
            if identical and flagged:
                break
        return identical, flagged


def selected_pairs(result: ScanResult, options: ReportOptions) -> ShownPairs:
    """Return the pairs to show, sorted and limited (made a batch at a time as they are read).

    ``hamming`` sorts by distance, then by the names (``a``, then ``b``); ``path`` by the
    names; ``cosine`` keeps the result's own order.
    """
    count = len(result.pairs)
    if options.limit is not None:
        count = min(options.limit, count)
    if options.sort == "cosine":  # the stored order
        return ShownPairs(result, None, count)
    rows = len(result.names)
    ranks = np.empty(rows, dtype=np.int64)
    ranks[result.name_order()] = np.arange(rows, dtype=np.int64)
    ends = ranks[result.pairs.pairs]
    if options.sort == "path":
        return ShownPairs(result, order_of(ends[:, 0], ends[:, 1], rows), count)
    names = ends[:, 0] * rows + ends[:, 1]
    return ShownPairs(result, np.lexsort((names, result.pairs.hamming)), count)


def field_batches(pairs: Sequence[Pair]) -> Iterator[PairFields]:
    """Yield the fields of ``pairs`` in order, :data:`BATCH_PAIRS` at a time.

    Shown pairs are read from the result's columns without making :class:`Pair` objects.
    """
    if isinstance(pairs, ShownPairs):
        yield from pairs.field_batches()
        return
    for batch in pair_batches(pairs):
        yield PairFields.of(batch)


def pair_batches(pairs: Sequence[Pair]) -> Iterator[Sequence[Pair]]:
    """Yield ``pairs`` in order, :data:`BATCH_PAIRS` at a time."""
    if isinstance(pairs, ShownPairs):
        yield from pairs.batches()
        return
    for start in range(0, len(pairs), BATCH_PAIRS):
        yield pairs[start : start + BATCH_PAIRS]
