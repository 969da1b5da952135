"""Names packed into columns: a few bytes each instead of an object each.

A scan of ten million JSON Lines records cannot hold a Python object per record: a
record's name and where its line is cost about 330 bytes as objects, 3.3 GB at
10,000,000. :class:`NameColumn` packs names into one buffer (their UTF-8 bytes and an
end offset each), and :func:`first_names` applies the rule of :mod:`simdup.inputs.names`
(the first of each name keeps it) by sorting the packed names, without a set of them.
"""

from __future__ import annotations

import itertools
import operator
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import overload

import numpy as np
import numpy.typing as npt

#: How names are packed: UTF-8, lone surrogates (undecodable file names) passed through.
#: Its bytes sort as the names' code points do, so packed names sort as Python sorts them.
ENCODING = ("utf-8", "surrogatepass")

Positions = npt.NDArray[np.int64]


class NameColumn(Sequence[str]):
    """Names in one buffer: ``data`` holds their bytes, ``ends[k]`` where name ``k`` ends.

    >>> names = NameColumn.of(["b", "", "été"])
    >>> list(names), names[-1], len(names.data)
    (['b', '', 'été'], 'été', 6)
    """

    __slots__ = ("data", "ends")

    def __init__(self, data: bytes | bytearray, ends: npt.NDArray[np.integer]) -> None:
        self.data = data
        self.ends = ends

    @classmethod
    def of(cls, names: Iterable[str]) -> NameColumn:
        """Pack ``names``, in order."""
        packer = NamePacker()
        for name in names:
            packer.add(name)
        return packer.column()

    def __len__(self) -> int:
        return len(self.ends)

    @overload
    def __getitem__(self, key: int) -> str: ...

    @overload
    def __getitem__(self, key: slice) -> list[str]: ...

    def __getitem__(self, key: int | slice) -> str | list[str]:
        if isinstance(key, slice):
            return [self[k] for k in range(*key.indices(len(self)))]
        k = operator.index(key)
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError("name index out of range")
        start = int(self.ends[k - 1]) if k else 0
        return self.data[start : int(self.ends[k])].decode(*ENCODING)

    def __iter__(self) -> Iterator[str]:
        start = 0
        data = self.data
        for end in self.ends.tolist():
            yield data[start:end].decode(*ENCODING)
            start = end

    def lengths(self) -> npt.NDArray[np.int64]:
        """Return each name's length in bytes."""
        return np.diff(self.ends, prepend=0).astype(np.int64)

    def take(self, positions: Positions) -> NameColumn:
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
        return NameColumn(b"".join(parts), _ends(np.cumsum(lengths[positions])))

    @staticmethod
    def joined(columns: Sequence[NameColumn]) -> NameColumn:
        """Return the names of ``columns``, one after the other."""
        if len(columns) == 1:
            return columns[0]
        shifts = np.cumsum([0, *(len(c.data) for c in columns)])
        ends = [c.ends.astype(np.int64) + shift for c, shift in zip(columns, shifts, strict=False)]
        data = b"".join(c.data for c in columns)
        return NameColumn(data, _ends(np.concatenate([np.zeros(0, np.int64), *ends])))


#: Names gathered at a time by :meth:`NameColumn.take` (their byte indices: 8 bytes each).
TAKE_NAMES = 1 << 16


def _ends(ends: npt.NDArray[np.integer]) -> npt.NDArray[np.integer]:
    """Return end offsets in 4 bytes each where they fit (a buffer under 4 GiB), else 8."""
    last = int(ends[-1]) if len(ends) else 0
    return ends.astype(np.uint32 if last < 1 << 32 else np.int64)


class NamePacker:
    """Packs names one at a time into a :class:`NameColumn`."""

    def __init__(self) -> None:
        self._data = bytearray()
        self._ends = array("q")

    def add(self, name: str) -> None:
        """Pack ``name`` after the others."""
        self._data += name.encode(*ENCODING)
        self._ends.append(len(self._data))

    def column(self) -> NameColumn:
        """Return the names packed so far."""
        return NameColumn(self._data, _ends(np.frombuffer(self._ends, dtype=np.int64)))


#: Most bytes of names sorted as one array of fixed-width byte strings; past that (or with
#: a NUL in a name, which such strings cannot tell from their padding) they are sorted as
#: Python strings, which holds them all as objects for the while.
FIXED_WIDTH_BYTES = 512 << 20

#: Names written into the fixed-width array at a time (their byte indices: 16 bytes each).
FILL_NAMES = 1 << 16


def first_names(names: NameColumn) -> tuple[Positions, Positions]:
    """Return the first of each name, in name order, and the later ones, in their order.

    The rule of :func:`simdup.inputs.names.first_named` on packed names: a name met again
    is a repeat of its first. Both are positions in ``names``.

    >>> first, repeats = first_names(NameColumn.of(["b", "a", "b", "c", "a"]))
    >>> first.tolist(), repeats.tolist()
    ([1, 0, 3], [2, 4])
    """
    count = len(names)
    keys = _fixed_width(names)
    if keys is not None:
        order = np.argsort(keys, kind="stable").astype(np.int64)
        same = keys[order[1:]] == keys[order[:-1]]
    else:
        listed = list(names)
        order = np.array(sorted(range(count), key=listed.__getitem__), dtype=np.int64)
        ranked = [listed[k] for k in order.tolist()]
        same = np.array([a == b for a, b in itertools.pairwise(ranked)], dtype=bool)
    first = np.ones(count, dtype=bool)
    first[1:] = ~same
    return order[first], np.sort(order[~first])


def _fixed_width(names: NameColumn) -> npt.NDArray[np.bytes_] | None:
    """Return the names as NUL-padded byte strings of one width (None: too large, or a NUL)."""
    count = len(names)
    lengths = names.lengths()
    width = max(1, int(lengths.max())) if count else 1
    if count * width > FIXED_WIDTH_BYTES or b"\0" in names.data:
        return None
    keys = np.zeros(count, dtype=f"S{width}")
    grid = keys.view(np.uint8).reshape(count, width)
    raw = np.frombuffer(names.data, dtype=np.uint8)
    starts = names.ends.astype(np.int64) - lengths
    for lo in range(0, count, FILL_NAMES):
        hi = min(count, lo + FILL_NAMES)
        sizes = lengths[lo:hi]
        first, stop = int(starts[lo]), int(starts[hi - 1] + sizes[-1])
        rows = np.repeat(np.arange(lo, hi), sizes)
        columns = np.arange(stop - first) - np.repeat(starts[lo:hi] - first, sizes)
        grid[rows, columns] = raw[first:stop]
    return keys
