"""Temporary files a large scan spills to, and mapped back into memory a block at a time.

A scan keeps in memory what it needs at random (fingerprints, a few bytes per document);
what it reads in order (term weights, names, pairs waiting to be verified or reported)
goes to files in a private directory (:class:`SpillDir`) under the system's temporary
directory or a chosen one. Files are appended to as their data is made
(:class:`Column`), then mapped read-only (:func:`mapped`): the pages read count in the
process's memory until :func:`release` gives them back to the page cache, so a pass that
releases each block as it goes holds one block, however large the file. The directory is
removed when its ``with`` block ends, on success, on an error and on Ctrl-C; arrays
mapped from its files stay readable after that (the data lives until they are dropped).
A run killed outright (``kill -9``, the kernel out of memory) cannot remove its own: the
next run that spills to the same place removes it (:func:`remove_abandoned`).
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from simdup.errors import SimdupError
from simdup.packed import PackedStrings

#: Errors of a file system that has no room left.
NO_ROOM = (errno.ENOSPC, errno.EDQUOT)

#: The names of spill directories: ``simdup-`` and a random part.
PREFIX = "simdup-"

#: The file in a spill directory that its run holds locked for as long as it (or a worker
#: it forked) lives: the kernel lets the lock go when they end, however they end.
OWNER = "owner.lock"


class SpillError(SimdupError):
    """Temporary files cannot be written: no room left, or the directory is unusable."""


class SpillDir:
    """A private temporary directory, created when first used and removed by :meth:`close`.

    Args:
        parent: Where to create it (None: the system's temporary directory).
    """

    def __init__(self, parent: str | None = None) -> None:
        self.parent = parent or tempfile.gettempdir()
        self._path: str | None = None
        self._owner: int | None = None
        self._columns: list[Column] = []

    @property
    def created(self) -> bool:
        """Tell whether the directory was made (a file was spilled)."""
        return self._path is not None

    @property
    def path(self) -> str:
        """Return the directory, creating it on first use."""
        if self._path is None:
            remove_abandoned(self.parent)
            try:
                path = tempfile.mkdtemp(prefix=PREFIX, dir=self.parent)
                try:
                    self._owner = _own(path)
                except OSError:
                    shutil.rmtree(path, ignore_errors=True)
                    raise
            except OSError as exc:
                raise SpillError(
                    f"cannot create temporary files in {self.parent}: {exc.strerror or exc}; "
                    "choose another directory with --tmp-dir"
                ) from None
            self._path = path
        return self._path

    def free(self) -> int:
        """Return the bytes free on the file system of the directory (0 if it is gone)."""
        try:
            return shutil.disk_usage(self._path or self.parent).free
        except OSError:
            return 0

    def column(self, name: str, dtype: npt.DTypeLike) -> Column:
        """Return a new, empty column file ``name`` in the directory."""
        column = Column(os.path.join(self.path, name), dtype)
        self._columns.append(column)
        return column

    def close(self) -> None:
        """Remove the directory and everything in it (mapped arrays stay readable)."""
        for column in self._columns:
            column.abandon()
        self._columns = []
        if self._path is not None:
            shutil.rmtree(self._path, ignore_errors=True)
            self._path = None
        if self._owner is not None:
            os.close(self._owner)
            self._owner = None

    def __enter__(self) -> SpillDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _own(path: str) -> int | None:
    """Lock a new :data:`OWNER` file in ``path``; return its descriptor, to keep open.

    The file is locked before it takes its name, so that no other run can find it
    unlocked. Where file locks are not to be had (Windows, some network file systems),
    nothing marks the directory and no later run removes it.
    """
    try:
        import fcntl
    except ImportError:
        return None
    descriptor, temporary = tempfile.mkstemp(dir=path, prefix=".owner-")
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
    except OSError:  # a file system without locks (some network ones): left unmarked
        os.close(descriptor)
        os.unlink(temporary)
        return None
    try:
        os.rename(temporary, os.path.join(path, OWNER))
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def remove_abandoned(parent: str) -> list[str]:
    """Remove the spill directories in ``parent`` that no live run owns; return them.

    Only this user's directories named like ours and holding an :data:`OWNER` file that
    nobody holds locked are removed: a run that died without removing its own. A live
    run's, one being made, and anything else stay. Nothing is said: the files were
    temporary, and the run that made them is gone.
    """
    try:
        import fcntl
    except ImportError:
        return []
    removed = []
    try:
        entries = [e for e in os.scandir(parent) if e.name.startswith(PREFIX)]
    except OSError:
        return []
    for entry in entries:
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat().st_uid != os.getuid():
                continue
            descriptor = os.open(os.path.join(entry.path, OWNER), os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:  # not a directory of ours, or gone meanwhile
            continue
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # its run lives
            continue
        else:
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
        finally:
            os.close(descriptor)
    return removed


@contextlib.contextmanager
def room(path: str) -> Iterator[None]:
    """Turn a full disk while writing ``path`` into a :class:`SpillError` naming its place."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in NO_ROOM:
            raise
        where = os.path.dirname(os.path.dirname(path)) or "."
        raise SpillError(
            f"no room left for temporary files in {where} ({exc.strerror}); free some space "
            "there or choose another directory with --tmp-dir"
        ) from None


class Column:
    """An array of one dtype written to a file a part at a time, then mapped to read."""

    def __init__(self, path: str, dtype: npt.DTypeLike) -> None:
        self.path = path
        self.dtype = np.dtype(dtype)
        self.length = 0
        with room(path):
            self._file: BinaryIO | None = open(path, "wb")  # noqa: SIM115 - closed in finish

    def append(self, values: npt.ArrayLike) -> None:
        """Write ``values`` (converted to the column's dtype) after those written so far."""
        array = np.ascontiguousarray(values, dtype=self.dtype)
        if self._file is None:
            raise ValueError(f"{self.path} is finished")
        with room(self.path):
            self._file.write(array.data)
        self.length += len(array)

    def finish(self) -> None:
        """Flush what was written (nothing more can be appended)."""
        if self._file is not None:
            with room(self.path):
                self._file.close()
            self._file = None

    def abandon(self) -> None:
        """Close the file without flushing it (the run ends; the file is removed)."""
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None

    def mapped(self) -> npt.NDArray[Any]:
        """Return everything written, mapped read-only from the file."""
        self.finish()
        return mapped(self.path, self.dtype, self.length)

    def write_at(self, start: int, values: npt.ArrayLike) -> None:
        """Overwrite the entries from ``start`` on with ``values`` (a finished column)."""
        array = np.ascontiguousarray(values, dtype=self.dtype)
        fd = os.open(self.path, os.O_WRONLY)
        try:
            with room(self.path):
                os.pwrite(fd, array.data, start * self.dtype.itemsize)
        finally:
            os.close(fd)

    def read(self, start: int, count: int) -> npt.NDArray[Any]:
        """Return ``count`` entries from ``start`` of a finished column, read into memory."""
        return self.read_spans(np.array([[start, start + count]], dtype=np.int64))

    def read_spans(self, spans: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
        """Return the entries of ``spans`` (rows of ``[start, end)``) one after the other.

        Read, not mapped: reading at random through a mapping would map whole pages (or
        larger folios) around each entry wanted.
        """
        self.finish()
        sizes = (spans[:, 1] - spans[:, 0]).tolist() if len(spans) else []
        out = np.empty(sum(sizes), dtype=self.dtype)
        view = out.data.cast("B")
        width = self.dtype.itemsize
        fd = os.open(self.path, os.O_RDONLY)
        try:
            at = 0
            for start, size in zip(spans[:, 0].tolist(), sizes, strict=True):
                done = os.preadv(fd, [view[at * width : (at + size) * width]], start * width)
                if done != size * width:
                    raise SpillError(f"{self.path} was cut short while the scan ran")
                at += size
        finally:
            os.close(fd)
        return out


def mapped(path: str, dtype: npt.DTypeLike, count: int) -> npt.NDArray[Any]:
    """Return the first ``count`` entries of a file as a read-only array mapped from it."""
    kind = np.dtype(dtype)
    if count == 0:
        return np.zeros(0, kind)
    with open(path, "rb") as handle:
        memory = mmap.mmap(handle.fileno(), count * kind.itemsize, access=mmap.ACCESS_READ)
    return np.frombuffer(memory, dtype=kind, count=count)


def is_mapped(array: npt.NDArray[Any]) -> bool:
    """Tell whether an array's memory is mapped from a file (see :func:`mapped`)."""
    return _mapping(array) is not None


def _mapping(array: npt.NDArray[Any]) -> mmap.mmap | None:
    """Return the mapped file an array's memory belongs to (None: ordinary memory)."""
    base: object = array
    while isinstance(base, (np.ndarray, memoryview)):
        base = base.base if isinstance(base, np.ndarray) else base.obj
    return base if isinstance(base, mmap.mmap) else None


#: A page read from a mapped file comes with the pages of its folio in the page cache
#: (Linux maps up to 2 MiB, aligned, at one fault): those before an array's first byte
#: stayed mapped when only the array's pages were given back, about 3% of a stored
#: corpus's weights after a pass in row order (230 MB at ten million documents).
FOLIO_BYTES = 2 << 20


def release(*arrays: npt.NDArray[Any]) -> None:
    """Give the pages of mapped arrays back to the page cache (ordinary arrays: nothing).

    The whole folios they touch (:data:`FOLIO_BYTES`), a neighbour's pages with them. Read
    again, the pages come back from the page cache or the disk: the values never change
    (every mapping is read-only), only what this process holds.
    """
    advice = getattr(mmap, "MADV_DONTNEED", None)
    for array in arrays:
        memory = _mapping(array)
        if memory is None or advice is None or array.size == 0 or memory.closed:
            continue
        start = np.frombuffer(memory, np.uint8, count=1).ctypes.data
        first = array.ctypes.data - start
        lowest = first // FOLIO_BYTES * FOLIO_BYTES
        highest = -(-(first + array.nbytes) // FOLIO_BYTES) * FOLIO_BYTES
        length = min(len(memory), highest) - lowest
        if length > 0:
            memory.madvise(advice, lowest, length)


class StringColumn:
    """Strings written one part at a time, read back as a :class:`StoredStrings`."""

    def __init__(self, spill: SpillDir, name: str) -> None:
        self.blob = spill.column(f"{name}.utf8", np.uint8)
        self.ends = spill.column(f"{name}.ends", np.int64)
        self._end = 0

    def append(self, strings: Sequence[str]) -> None:
        """Write ``strings`` after those written so far (lone surrogates kept)."""
        packed = PackedStrings.of(strings)
        ends = self._end + packed.ends.astype(np.int64)
        self.blob.append(np.frombuffer(packed.data, np.uint8))
        self.ends.append(ends)
        self._end = int(ends[-1]) if len(ends) else self._end

    def __len__(self) -> int:
        return self.ends.length

    def mapped(self) -> StoredStrings:
        """Return the strings written, mapped from their files."""
        return StoredStrings(self.blob.mapped(), self.ends.mapped())


class StoredStrings(PackedStrings):
    """Packed strings kept in mapped files: a few bytes each in memory.

    Pickled, it becomes a plain list (the files may be gone where it is read).
    """

    @property
    def nbytes(self) -> int:
        """Bytes the strings take in their files (text and ends)."""
        return len(self.data) + self.ends.nbytes

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))


def _bounds(ordered: npt.NDArray[np.int64], keys: npt.NDArray[np.int64]) -> list[list[int]]:
    """Return where each key's run starts and ends in ``ordered`` (two lists)."""
    return [np.searchsorted(ordered, keys, side).tolist() for side in ("left", "right")]


def stable_order(keys: npt.NDArray[np.int64]) -> npt.NDArray[np.intp]:
    """Return the stable sort order of integer keys: a radix sort where they fit 16 bits.

    numpy sorts 16-bit integers by radix, wider ones by merging: four times the time of
    8 million bucket numbers.
    """
    if len(keys) and int(keys.min()) >= 0 and int(keys.max()) < 1 << 15:
        keys = keys.astype(np.int16)
    return np.argsort(keys, kind="stable")


def taken(records: npt.NDArray[Any], order: npt.NDArray[np.intp]) -> npt.NDArray[Any]:
    """Return ``records[order]``, copied as rows of 64-bit words where their size allows.

    numpy copies structured records field by field: twice the time of the same bytes
    taken as rows of words.
    """
    size = records.dtype.itemsize
    if size % 8 or not records.flags.c_contiguous or records.dtype.hasobject:
        return records[order]
    words = records.view(np.int64).reshape(len(records), size // 8)
    return words[order].reshape(-1).view(records.dtype)


class Buckets:
    """Records gathered by bucket: held in memory up to a limit, past it spilled in runs.

    Each run is written sorted by bucket (records of one bucket keep their order), and
    :meth:`take` reads one bucket back from every run, then what is still held: the
    records of a bucket in the order they were added.

    Args:
        spill: Where runs go.
        name: The runs' file name.
        dtype: The records' dtype.
        limit: Records held in memory before they are written as a run.
    """

    def __init__(self, spill: SpillDir, name: str, dtype: npt.DTypeLike, limit: int) -> None:
        self.spill = spill
        self.name = name
        self.dtype = np.dtype(dtype)
        self.limit = max(1, limit)
        self._held: list[tuple[npt.NDArray[np.int64], npt.NDArray[Any]]] = []
        self._count = 0
        self._runs: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]] = []
        self._column: Column | None = None
        self.total = 0

    def add(self, buckets: npt.NDArray[np.int64], records: npt.NDArray[Any]) -> None:
        """Add records, each to its bucket."""
        if len(records) == 0:
            return
        self._held.append((buckets, records))
        self._count += len(records)
        self.total += len(records)
        if self._count >= self.limit:
            self._write_run()

    def _joined(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[Any]]:
        """Return the held records sorted by bucket (stable), and their buckets."""
        if not self._held:
            return np.zeros(0, np.int64), np.zeros(0, self.dtype)
        buckets = np.concatenate([b for b, _ in self._held])
        records = np.concatenate([r for _, r in self._held])
        order = stable_order(buckets)
        return buckets[order], taken(records, order)

    def _write_run(self) -> None:
        buckets, records = self._joined()
        self._held, self._count = [], 0
        if self._column is None:
            self._column = self.spill.column(self.name, self.dtype)
        names, starts = np.unique(buckets, return_index=True)
        ends = np.append(starts[1:], len(buckets))
        self._runs.append((names, np.stack([starts, ends], axis=1) + self._column.length))
        self._column.append(records)

    def drain(self) -> Iterator[tuple[int, npt.NDArray[Any]]]:
        """Yield every bucket that holds records, in order, with its records in added order.

        A bucket comes in parts of at most ``limit`` records (one after another), so
        draining holds no more than adding did.
        """
        if self._column is not None:
            self._column.finish()
        held_buckets, held = self._joined()
        self._held, self._count = [], 0
        # Every run's spans, by bucket then run: one pass over them, not a search per run.
        names = np.concatenate([np.zeros(0, np.int64), *(n for n, _ in self._runs)])
        spans = np.concatenate([np.zeros((0, 2), np.int64), *(s for _, s in self._runs)])
        runs = np.repeat(np.arange(len(self._runs)), [len(n) for n, _ in self._runs])
        order = np.lexsort((runs, names))
        names, spans = names[order], spans[order]
        found = np.unique(np.concatenate([held_buckets, names]))
        first, last = _bounds(names, found)
        low, high = _bounds(held_buckets, found)
        for k, bucket in enumerate(found.tolist()):
            for start, end in spans[first[k] : last[k]].tolist():
                assert self._column is not None  # spans come from written runs
                for lo in range(start, end, self.limit):
                    yield bucket, self._column.read(lo, min(end, lo + self.limit) - lo)
            if high[k] > low[k]:
                yield bucket, held[low[k] : high[k]]
