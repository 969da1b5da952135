"""Inputs read as streams of bytes, a bounded block at a time, and cut into whole lines.

A JSON Lines corpus may be larger than memory: it is read here in blocks (decompressed
as they come when it is gzip, told by its magic bytes), and the blocks are cut into
pieces of whole lines, so a reader holds one piece, never the input. Paths are opened
as they are, URLs (``s3://``, ``gs://``, ``file://``, ``memory://``) through fsspec,
which comes with the ``dask`` extra.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

from simdup.errors import InputError
from simdup.inputs.files import GZIP_MAGIC, gunzip_blocks, os_reason

#: Bytes read at a time: pieces of lines are about this long (longer only by a line
#: longer than it). Read when called, so a test can make it tiny.
PIECE_BYTES = 1 << 23

#: Compressed bytes decompressed at a time: gzip packs text 3-10 times (a crafted stream
#: up to about a thousand), so a block stays small.
GZIP_BYTES = 1 << 16

FSSPEC_HINT = "install it with: pip install 'simdup[dask]'"


def is_url(name: str) -> bool:
    """Tell whether ``name`` is a URL read through fsspec rather than a local path.

    >>> is_url("s3://bucket/part-00.jsonl"), is_url("data/part-00.jsonl")
    (True, False)
    """
    return "://" in name


def import_fsspec(url: str) -> Any:
    """Import fsspec, or raise an error naming ``url`` and how to install it."""
    try:
        import fsspec  # type: ignore[import-untyped,unused-ignore]  # with the dask extra
    except ImportError:
        raise InputError(f"{url}: reading URLs needs fsspec; {FSSPEC_HINT}") from None
    return fsspec


@contextlib.contextmanager
def opened(label: str) -> Iterator[BinaryIO]:
    """Open a path (as it is: a named pipe too) or an fsspec URL for reading bytes.

    Raises:
        InputError: naming ``label``, when it cannot be opened or read.
    """
    if is_url(label):
        fsspec = import_fsspec(label)
        try:
            with fsspec.open(label, "rb") as handle:
                yield handle
        except (OSError, ValueError) as exc:
            raise InputError(f"{label}: {exc}") from None
        return
    try:
        with open(label, "rb") as handle:
            yield handle
    except OSError as exc:
        raise InputError(f"{label}: {os_reason(exc)}") from None


def handle_blocks(handle: BinaryIO, size: int | None = None) -> Iterator[bytes]:
    """Yield the bytes of ``handle``, ``size`` (default :data:`PIECE_BYTES`) at a time."""
    size = max(1, PIECE_BYTES if size is None else size)
    while block := handle.read(size):
        yield block


def input_blocks(label: str, blocks: Iterable[bytes]) -> Iterator[bytes]:
    """Yield the bytes of an input given in ``blocks``, decompressed when they are gzip.

    Raises:
        InputError: naming ``label``, when the gzip stream is damaged (worded as for
            files, see :func:`simdup.inputs.files.gunzip_blocks`).

    >>> import gzip
    >>> b"".join(input_blocks("x", [gzip.compress(b"packed")])), list(input_blocks("y", [b"a"]))
    (b'packed', [b'a'])
    """
    blocks = iter(blocks)
    head = b""
    for block in blocks:
        head += block
        if len(head) >= len(GZIP_MAGIC):
            break
    if not head.startswith(GZIP_MAGIC):
        if head:
            yield head
        yield from blocks
        return
    chunks = (
        block[at : at + GZIP_BYTES]
        for block in itertools.chain([head], blocks)
        for at in range(0, len(block), GZIP_BYTES)
    )
    try:
        yield from gunzip_blocks(chunks)
    except InputError as exc:
        raise InputError(f"{label}: {exc}") from None


def line_pieces(blocks: Iterable[bytes], *, lone_cr: bool = True) -> Iterator[tuple[int, bytes]]:
    """Yield the bytes of ``blocks`` in pieces of whole lines, each with its offset.

    A piece ends after a ``\\n`` or, with ``lone_cr``, a ``\\r`` not last in what was read
    (so a ``\\r\\n`` is never cut): cutting the pieces' lines as :meth:`bytes.splitlines`
    cuts the whole gives the same lines (without ``lone_cr``, lines end at ``\\n`` only).
    A piece is as long as the blocks read for it, longer only by a line longer than one.

    >>> list(line_pieces([b"ab\\nc", b"d\\r", b"\\nef"]))
    [(0, b'ab\\n'), (3, b'cd\\r\\n'), (7, b'ef')]
    """
    offset = 0
    held = b""
    for block in blocks:
        held += block
        end = held.rfind(b"\n") + 1
        if not end and lone_cr:
            end = held.rfind(b"\r", 0, len(held) - 1) + 1
        if end:
            yield offset, held[:end]
            offset += end
            held = held[end:]
    if held:
        yield offset, held


def numbered_lines(pieces: Iterable[tuple[int, bytes]]) -> Iterator[tuple[int, int, bytes]]:
    """Yield each line of the pieces (as :meth:`bytes.splitlines` cuts) with number and offset.

    >>> list(numbered_lines([(0, b"a\\r\\nb\\n"), (5, b"c")]))
    [(1, 0, b'a'), (2, 3, b'b'), (3, 5, b'c')]
    """
    number = 0
    for start, piece in pieces:
        at = 0
        for line in piece.splitlines():
            number += 1
            yield number, start + at, line
            at += len(line)
            at += 2 if piece.startswith(b"\r\n", at) else 1
