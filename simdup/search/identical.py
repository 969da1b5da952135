"""Groups of identical fingerprints, one representative each, and the buckets reported.

Identical fingerprints share every key, so the tables bucket one representative per
distinct fingerprint and a pair of representatives stands for every pair across their two
groups (:mod:`simdup.search.candidates`). The representatives are read in place from the
rows' own fingerprints: at ten million fingerprints of 512 bits a copy of them is 640 MB.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.search.buckets import Prints, locate, row_groups, run_positions

__all__ = ["Groups", "LargeBucket"]


@dataclass(frozen=True)
class LargeBucket:
    """A bucket past :data:`~simdup.search.candidates.LARGE_BUCKET`: paired in chunks, reported.

    Attributes:
        table: Index of the table (-1: a group of identical fingerprints).
        size: Documents in the bucket.
        pairs: Pairs the bucket holds.
        sample: Row numbers of a few members.
    """

    table: int
    size: int
    pairs: int
    sample: tuple[int, ...]


@dataclass(frozen=True)
class Groups:
    """Groups of identical fingerprints among some rows, one representative each.

    Groups are numbered in the order of their first rows, so that where every fingerprint
    is distinct the representatives are the rows themselves, read in place. Indices are
    4 bytes where they fit (ten million rows: 40 MB an array).

    Attributes:
        names: int64 (m,), the row number of each position (None: the position itself).
        prints: Each group's first member's fingerprint (the tables' keys are read from
            them).
        size: (g,), members of each group.
        members: (m,), positions, group by group, the groups in the order of their
            fingerprints.
        start: (g,), where each group's members start in ``members``: also the rank of
            its fingerprint among the groups'.
    """

    names: npt.NDArray[np.int64] | None
    prints: Prints
    size: npt.NDArray[np.integer[Any]]
    members: npt.NDArray[np.integer[Any]]
    start: npt.NDArray[np.integer[Any]]

    @classmethod
    def of(
        cls,
        fingerprints: npt.NDArray[np.uint64],
        *,
        keep: npt.NDArray[np.bool_] | None = None,
        names: npt.NDArray[np.int64] | None = None,
    ) -> Groups:
        """Group the positions of ``fingerprints`` that ``keep`` marks (None: all).

        Temporaries are let go as soon as they are used: at ten million rows each is
        40 to 80 MB, and the tables that follow need the room.
        """
        order, starts = row_groups(fingerprints, keep)
        count, dtype = len(order), np.int32 if len(fingerprints) < 2**31 else np.int64
        members = order.astype(dtype)
        del order
        if keep is None and len(starts) == count:  # every row its own group: in row order
            del starts
            start = np.empty(count, dtype=dtype)  # each row's rank among the fingerprints
            start[members] = np.arange(count, dtype=dtype)
            return cls(names, Prints(fingerprints), np.ones(count, np.uint8), members, start)
        first = members[starts]  # each group's first position (the sort is stable)
        by_first = np.argsort(first, kind="stable")
        size = np.diff(starts, append=count)[by_first].astype(dtype)
        start = starts[by_first].astype(dtype)
        del starts
        first = first[by_first].astype(np.int64)
        del by_first
        if fingerprints.shape[1] == 1:  # a copy of one word costs no more than a row number
            return cls(names, Prints(fingerprints.take(first, axis=0)), size, members, start)
        return cls(names, Prints(fingerprints, first), size, members, start)

    def rows_of(self, positions: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.int64]:
        """Return the row numbers of ``positions``."""
        return positions.astype(np.int64) if self.names is None else self.names[positions]

    def emit(
        self, x: npt.NDArray[np.integer[Any]], y: npt.NDArray[np.integer[Any]]
    ) -> npt.NDArray[np.int64]:
        """Return the row pairs of positions ``x`` and ``y``, smaller row first."""
        ra, rb = self.rows_of(x), self.rows_of(y)
        return np.stack([np.minimum(ra, rb), np.maximum(ra, rb)], axis=1)

    def identical_pairs(self) -> int:
        """Return the pairs of rows inside the groups."""
        size = self.size.astype(np.int64)
        return int((size * (size - 1) // 2).sum())

    def oversized(self, large_bucket: int) -> list[LargeBucket]:
        """Describe the groups of more than ``large_bucket`` members, in fingerprint order."""
        out = []
        big = np.flatnonzero(self.size > large_bucket)
        for g in big[np.argsort(self.start[big])].tolist():
            start, size = int(self.start[g]), int(self.size[g])
            sample = tuple(self.rows_of(self.members[start : start + min(5, size)]).tolist())
            out.append(LargeBucket(-1, size, size * (size - 1) // 2, sample))
        return out

    def duplicates(self, chunk_pairs: int) -> Iterator[npt.NDArray[np.int64]]:
        """Yield every pair inside a group, once."""
        dup = self.size > 1
        starts, sizes = self.start[dup].astype(np.int64), self.size[dup].astype(np.int64)
        for i, j in run_positions(starts, sizes, chunk_pairs):
            yield self.emit(self.members[i], self.members[j])

    def expand(
        self, a: npt.NDArray[np.int64], b: npt.NDArray[np.int64], chunk_pairs: int
    ) -> Iterator[npt.NDArray[np.int64]]:
        """Expand representative pairs to all pairs across their groups."""
        size, start, members = self.size, self.start, self.members
        weight = size[a].astype(np.int64) * size[b]
        if len(weight) == 0 or int(weight.max()) == 1:
            for lo in range(0, len(a), chunk_pairs):
                hi = lo + chunk_pairs
                yield self.emit(members[start[a[lo:hi]]], members[start[b[lo:hi]]])
            return
        expanded = int(weight.sum())
        for elo in range(0, expanded, chunk_pairs):
            item, local = locate(weight, np.arange(elo, min(expanded, elo + chunk_pairs)))
            width = size[b[item]]
            x = members[start[a[item]] + local // width]
            y = members[start[b[item]] + local % width]
            yield self.emit(x, y)

    def large_bucket(
        self, table: int, order: npt.NDArray[np.int64], start: int, size: int
    ) -> LargeBucket:
        """Describe a table's bucket of ``size`` representatives from ``start`` in ``order``.

        Its sample is the first rows of the groups of the smallest fingerprints, whatever
        order the table's sort left them in.
        """
        groups = order[start : start + size]
        firsts = np.sort(self.start[groups])[:5]
        sample = tuple(self.rows_of(self.members[firsts]).tolist())
        size = int(self.size[groups].sum(dtype=np.int64))
        return LargeBucket(table, size, size * (size - 1) // 2, sample)
