"""Strings packed into one buffer: a few bytes each instead of an object each.

Millions of names (JSON Lines ids, the store's document names) cannot each be a Python
string in a process meant to stay within a budget: :class:`PackedStrings` keeps their
UTF-8 bytes in one buffer and where each ends.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Sequence
from typing import TypeVar, overload

import numpy as np
import numpy.typing as npt

#: How names are packed: UTF-8, lone surrogates (undecodable file names) passed through.
#: Its bytes sort as the names' code points do, so packed names sort as Python sorts them.
ENCODING = ("utf-8", "surrogatepass")

Positions = npt.NDArray[np.int64]

T = TypeVar("T")


class MadeSequence(Sequence[T]):
    """A sequence whose items are made when asked for, from columns it holds.

    Subclasses say how many items there are and how the one at a position is made
    (:meth:`made`); indexing (negative positions, slices, out of range) is done here.
    """

    __slots__ = ()

    def made(self, position: int) -> T:
        """Return the item at ``position`` (``0 <= position < len(self)``)."""
        raise NotImplementedError

    def made_many(self, positions: range) -> list[T]:
        """Return the items at ``positions`` (a slice's)."""
        return [self.made(k) for k in positions]

    @overload
    def __getitem__(self, key: int) -> T: ...

    @overload
    def __getitem__(self, key: slice) -> list[T]: ...

    def __getitem__(self, key: int | slice) -> T | list[T]:
        positions = range(len(self))
        if isinstance(key, slice):
            return self.made_many(positions[key])
        return self.made(positions[operator.index(key)])


class PackedStrings(MadeSequence[str]):
    """Strings in one buffer: ``data`` holds their bytes, ``ends[k]`` where string ``k`` ends.

    About 8 bytes each beyond their text, where a Python string takes about 50. ``data``
    may be bytes, a bytearray or a uint8 array (mapped from a file).

    >>> names = PackedStrings.of(["b", "", "été"])
    >>> list(names), names[-1], len(names.data)
    (['b', '', 'été'], 'été', 6)
    """

    __slots__ = ("data", "ends")

    def __init__(
        self, data: bytes | bytearray | npt.NDArray[np.uint8], ends: npt.NDArray[np.integer]
    ) -> None:
        self.data = data
        self.ends = ends

    @classmethod
    def of(cls, names: Iterable[str]) -> PackedStrings:
        """Pack ``names``, in order."""
        encoded = [name.encode(*ENCODING) for name in names]
        ends = np.cumsum([len(e) for e in encoded], dtype=np.int64)
        return cls(b"".join(encoded), packed_ends(ends))

    def __len__(self) -> int:
        return len(self.ends)

    def made(self, position: int) -> str:
        """Return the string at ``position``."""
        start = int(self.ends[position - 1]) if position else 0
        return bytes(self.data[start : int(self.ends[position])]).decode(*ENCODING)

    def __iter__(self) -> Iterator[str]:
        start = 0
        data = self.data
        for end in self.ends.tolist():
            yield bytes(data[start:end]).decode(*ENCODING)
            start = end

    def lengths(self) -> npt.NDArray[np.int64]:
        """Return each name's length in bytes."""
        return np.diff(self.ends, prepend=0).astype(np.int64)

    def take(self, positions: Positions) -> PackedStrings:
        """Return the names at ``positions``, in that order (a few at a time, to bound memory)."""
        lengths = self.lengths()
        raw = np.frombuffer(self.data, dtype=np.uint8)
        starts = self.ends.astype(np.int64) - lengths
        parts: list[bytes] = []
        for lo in range(0, len(positions), TAKE_NAMES):
            picked = positions[lo : lo + TAKE_NAMES]
            sizes = lengths[picked]
            firsts = np.cumsum(sizes) - sizes
            where = np.repeat(starts[picked] - firsts, sizes) + np.arange(int(sizes.sum()))
            parts.append(raw[where].tobytes())
        return PackedStrings(b"".join(parts), packed_ends(np.cumsum(lengths[positions])))

    @staticmethod
    def joined(columns: Sequence[PackedStrings]) -> PackedStrings:
        """Return the names of ``columns``, one after the other."""
        if len(columns) == 1:
            return columns[0]
        shifts = np.cumsum([0, *(len(c.data) for c in columns)])
        ends = [c.ends.astype(np.int64) + shift for c, shift in zip(columns, shifts, strict=False)]
        data = b"".join(
            c.data.tobytes() if isinstance(c.data, np.ndarray) else c.data for c in columns
        )
        return PackedStrings(data, packed_ends(np.concatenate([np.zeros(0, np.int64), *ends])))


#: Names gathered at a time by :meth:`PackedStrings.take` (their byte indices: 8 bytes each).
TAKE_NAMES = 1 << 16


def packed_ends(ends: npt.NDArray[np.integer]) -> npt.NDArray[np.integer]:
    """Return end offsets in 4 bytes each where they fit (a buffer under 4 GiB), else 8."""
    last = int(ends[-1]) if len(ends) else 0
    return ends.astype(np.uint32 if last < 1 << 32 else np.int64)
