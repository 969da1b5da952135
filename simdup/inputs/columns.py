"""Names packed as they are read, and the first of each name found among them.

A scan of ten million JSON Lines records cannot hold a Python object per record: a
record's name and where its line is cost about 330 bytes as objects, 3.3 GB at
10,000,000. :class:`NamePacker` packs names into a :class:`~simdup.packed.PackedStrings`
as they are read, and :func:`first_names` applies the rule of :mod:`simdup.inputs.names`
(the first of each name keeps it) by sorting the packed names, without a set of them.
"""

from __future__ import annotations

import itertools
from array import array

import numpy as np
import numpy.typing as npt

from simdup.packed import ENCODING, PackedStrings, Positions, packed_ends


class NamePacker:
    """Packs names one at a time into a :class:`PackedStrings`."""

    def __init__(self) -> None:
        self._data = bytearray()
        self._ends = array("q")

    def add(self, name: str) -> None:
        """Pack ``name`` after the others."""
        self._data += name.encode(*ENCODING)
        self._ends.append(len(self._data))

    def column(self) -> PackedStrings:
        """Return the names packed so far."""
        return PackedStrings(self._data, packed_ends(np.frombuffer(self._ends, dtype=np.int64)))


#: Most bytes of names sorted as one array of fixed-width byte strings; past that (or with
#: a NUL in a name, which such strings cannot tell from their padding) they are sorted as
#: Python strings, which holds them all as objects for the while.
FIXED_WIDTH_BYTES = 512 << 20

#: Names written into the fixed-width array at a time (their byte indices: 16 bytes each).
FILL_NAMES = 1 << 16


def first_names(names: PackedStrings) -> tuple[Positions, Positions]:
    """Return the first of each name, in name order, and the later ones, in their order.

    The rule of :func:`simdup.inputs.names.first_named` on packed names: a name met again
    is a repeat of its first. Both are positions in ``names``.

    >>> first, repeats = first_names(PackedStrings.of(["b", "a", "b", "c", "a"]))
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


def _fixed_width(names: PackedStrings) -> npt.NDArray[np.bytes_] | None:
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
