"""Output files that appear whole or not at all.

A deduplicated dataset replaces work that took hours to produce; a run stopped half way
(Ctrl-C, a full disk, a killed process) must not leave half a dataset under the name the
next step reads. Each output is written to a temporary file in the target's directory and
renamed into place only when everything has been written, flushed and synced. Several
outputs of one run are renamed together at the end (:func:`atomic_files`), so one is
never left newer than the other after a failure; a single output is one call of
:func:`write_atomic`.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from typing import BinaryIO


class AtomicFile:
    """A file written under a temporary name and renamed into place by :meth:`commit`.

    A symbolic link is written through (the link stays, its target is replaced), and an
    existing special file (``/dev/null``, a FIFO) is written in place, never replaced.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.target = os.path.realpath(path)
        try:
            mode: int | None = os.stat(self.target).st_mode
        except FileNotFoundError:
            mode = None
        self._temporary: str | None = None
        if mode is not None and not stat.S_ISREG(mode):
            self.handle: BinaryIO = open(self.target, "wb")  # noqa: SIM115 - closed in commit
            return
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        fd, self._temporary = tempfile.mkstemp(
            prefix=".simdup-", suffix=".tmp", dir=os.path.dirname(self.target)
        )
        self.handle = os.fdopen(fd, "wb")
        os.fchmod(fd, stat.S_IMODE(mode))

    def finish(self) -> None:
        """Flush and sync the data (the last step before :meth:`commit`)."""
        self.handle.flush()
        if self._temporary is not None:
            os.fsync(self.handle.fileno())
        self.handle.close()

    def commit(self) -> None:
        """Rename the finished file into place."""
        if self._temporary is not None:
            os.replace(self._temporary, self.target)
            self._temporary = None

    def discard(self) -> None:
        """Close and delete the temporary file (nothing is left behind)."""
        self.handle.close()
        if self._temporary is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._temporary)
            self._temporary = None


@contextlib.contextmanager
def atomic_files(paths: list[str]) -> Iterator[list[BinaryIO]]:
    """Open ``paths`` for writing; rename them all into place only if the block succeeds.

    On any exception (including ``KeyboardInterrupt``) every temporary file is removed
    and the existing files are left as they were.
    """
    files: list[AtomicFile] = []
    try:
        for path in paths:
            files.append(AtomicFile(path))
        yield [f.handle for f in files]
        for f in files:
            f.finish()
        for f in files:
            f.commit()
    finally:
        for f in files:
            f.discard()


def write_pieces(handle: BinaryIO, data: bytes | Iterable[bytes]) -> None:
    """Write ``data``, or each of its pieces in turn (a long result need not be one string)."""
    if isinstance(data, bytes):
        handle.write(data)
        return
    for piece in data:
        handle.write(piece)


def write_atomic(path: str, data: bytes | Iterable[bytes]) -> None:
    """Write ``data`` (bytes, or pieces of them in order) to ``path``, whole or not at all.

    See :class:`AtomicFile`: a symbolic link is written through, a special file in place,
    and a new file gets the mode the umask gives.

    Raises:
        OSError: the file cannot be written; whatever was at ``path`` is left as it was.
    """
    with atomic_files([path]) as (handle,):
        write_pieces(handle, data)
