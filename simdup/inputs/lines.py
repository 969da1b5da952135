"""A JSON Lines file indexed by pieces: where each record's line is, and its name.

A scan reads the records of a local file twice: once here, for their names and where
their lines are (:func:`index_jsonl`), and again where they are counted, by byte range
(:class:`~simdup.inputs.jsonl.LineReader`). The file is cut into pieces of whole lines
(:func:`line_cuts`), each indexed on its own (:func:`index_piece`, which can run in a
worker process), and the pieces are joined in order (:func:`join_pieces`). What is kept
is columns (:class:`LineColumns`), never an object per record.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from simdup.errors import InputError
from simdup.inputs.files import GZIP_MAGIC, os_reason
from simdup.inputs.jsonl import (
    JsonlLine,
    JsonlOptions,
    ParsedLines,
    first_records,
    parse_lines,
)
from simdup.inputs.streams import PIECE_BYTES, is_url, line_pieces, numbered_lines
from simdup.model import Skip
from simdup.packed import MadeSequence, PackedStrings, Positions


class LineColumns(MadeSequence[JsonlLine]):
    """The records of one JSON Lines file as columns, in line order: where, and named what.

    What :func:`index_jsonl` keeps of a file: per record its line's offset and length and
    its packed name, about 30 bytes with a short id, where a :class:`JsonlLine` and its
    name take about 330. Items are made as they are asked for.

    Attributes:
        path: The file.
        fields: Which fields of its records hold the text and the id.
        offsets: Where each record's line starts, in bytes.
        sizes: Its length in bytes, without the line end.
        names: Each record's name.
        by_name: The positions of the records in name order (their names are unique).
    """

    __slots__ = ("by_name", "fields", "names", "offsets", "path", "sizes")

    def __init__(
        self,
        path: str,
        fields: JsonlOptions,
        offsets: npt.NDArray[np.int64],
        sizes: npt.NDArray[np.integer],
        names: PackedStrings,
        by_name: Positions,
    ) -> None:
        self.path = path
        self.fields = fields
        self.offsets = offsets
        self.sizes = sizes
        self.names = names
        self.by_name = by_name

    def __len__(self) -> int:
        return len(self.offsets)

    def made(self, position: int) -> JsonlLine:
        """Return the record at ``position``."""
        offset, size = int(self.offsets[position]), int(self.sizes[position])
        return JsonlLine(self.path, offset, size, self.names[position], self.fields)


@dataclass
class IndexedPiece:
    """The records of a piece of a file, numbered from the piece's first line.

    Attributes:
        parsed: Their line numbers (from 1), names, and the lines holding no record.
        offsets: Where each record's line starts in the file, in bytes.
        sizes: Its length in bytes, without the line end.
    """

    parsed: ParsedLines
    offsets: npt.NDArray[np.int64]
    sizes: npt.NDArray[np.int64]


#: A piece of a file: the byte range ``[start, stop)``, whole lines.
Cut = tuple[int, int]


def line_cuts(path: str, piece_bytes: int | None = None) -> list[Cut]:
    """Cut a file into pieces of whole lines, of about ``piece_bytes`` (default 8 MiB) each.

    Each piece but the last ends just after a ``\\n``, so the lines of the pieces, cut as
    :meth:`bytes.splitlines` cuts, are the lines of the file, numbered alike once each
    piece's count of lines is added to the next.

    Raises:
        OSError: when the file cannot be read.
    """
    piece_bytes = max(1, PIECE_BYTES if piece_bytes is None else piece_bytes)
    size = os.path.getsize(path)
    cuts: list[Cut] = []
    start = 0
    with open(path, "rb") as handle:
        while start < size:
            stop = _line_end(handle, start + piece_bytes, size)
            cuts.append((start, stop))
            start = stop
    return cuts


def _line_end(handle: BinaryIO, at: int, size: int) -> int:
    """Return the offset just after the first ``\\n`` at or after ``at - 1`` (or ``size``)."""
    position = at - 1
    while position < size:
        handle.seek(position)
        block = handle.read(1 << 16)
        found = block.find(b"\n")
        if found >= 0:
            return position + found + 1
        position += len(block)
    return size


def index_piece(path: str, fields: JsonlOptions, cut: Cut) -> IndexedPiece:
    """Index the records of one piece of a file: a worker's unit of work.

    Raises:
        InputError: naming ``path``, when it cannot be read.
    """
    start, stop = cut
    offsets, sizes = array("q"), array("q")

    def held(_: object, offset: int, size: int) -> None:
        offsets.append(offset)
        sizes.append(size)

    try:
        with open(path, "rb") as handle:
            handle.seek(start)
            pieces = line_pieces(_limited_blocks(handle, stop - start))
            parsed = parse_lines(numbered_lines((start + at, p) for at, p in pieces), fields, held)
    except OSError as exc:
        raise InputError(f"{path}: {os_reason(exc)}") from None
    as_int64 = np.dtype(np.int64)
    return IndexedPiece(parsed, np.frombuffer(offsets, as_int64), np.frombuffer(sizes, as_int64))


def _limited_blocks(handle: BinaryIO, left: int) -> Iterator[bytes]:
    """Yield the next ``left`` bytes of ``handle``, :data:`PIECE_BYTES` at most at a time."""
    while left > 0 and (block := handle.read(min(left, PIECE_BYTES))):
        left -= len(block)
        yield block


def index_pieces(path: str, fields: JsonlOptions, cuts: Iterable[Cut]) -> Iterator[IndexedPiece]:
    """Index the pieces of a file at ``cuts``, in order, in this process."""
    return (index_piece(path, fields, cut) for cut in cuts)


def join_pieces(
    path: str, fields: JsonlOptions, label: str, pieces: Iterable[IndexedPiece]
) -> tuple[LineColumns, list[Skip]]:
    """Join the pieces of a file, in order: its records, and its skips named ``label:LINE``.

    The same records and skips as :func:`~simdup.inputs.jsonl.read_jsonl` of the file.
    """
    numbers: list[npt.NDArray[np.int64]] = []
    names: list[PackedStrings] = []
    malformed: list[tuple[int, str]] = []
    offsets: list[npt.NDArray[np.int64]] = []
    sizes: list[npt.NDArray[np.int64]] = []
    before = 0  # lines in the pieces before
    for piece in pieces:
        parsed = piece.parsed.renumbered(before)
        numbers.append(parsed.numbers)
        names.append(parsed.names)
        malformed += parsed.malformed
        offsets.append(piece.offsets)
        sizes.append(piece.sizes)
        before = parsed.lines
    empty = np.zeros(0, dtype=np.int64)
    column = PackedStrings.joined(names) if names else PackedStrings.of([])
    joined = ParsedLines(np.concatenate([empty, *numbers]), column, malformed)
    (positions, by_name), skipped = first_records(label, joined)
    kept_sizes = np.concatenate([empty, *sizes])[positions]
    narrow = len(kept_sizes) == 0 or int(kept_sizes.max()) < 1 << 32
    kept_names = column if len(positions) == len(column) else column.take(positions)
    records = LineColumns(
        path,
        fields,
        np.concatenate([empty, *offsets])[positions],
        kept_sizes.astype(np.uint32) if narrow else kept_sizes,
        kept_names,
        by_name,
    )
    return records, skipped


#: How the pieces of a file are indexed: :func:`index_pieces` of the file at the cuts,
#: in order (an engine may spread them over processes).
PieceMap = Callable[[str, JsonlOptions, list[Cut]], Iterable[IndexedPiece]]


def index_jsonl(
    path: str,
    fields: JsonlOptions,
    piece_bytes: int | None = None,
    *,
    label: str | None = None,
    over: PieceMap = index_pieces,
) -> tuple[LineColumns, list[Skip]] | None:
    """Return the records of a local, uncompressed JSON Lines file as :class:`LineColumns`.

    The same records and skips as :func:`~simdup.inputs.jsonl.read_jsonl` of the file,
    read a piece of about ``piece_bytes`` at a time (:func:`line_cuts`), each indexed by
    ``over``: no text is kept. None when the file cannot be read again by byte ranges
    (gzip, a pipe, a URL). Skips name the file as ``label`` (default: ``path``).

    Raises:
        InputError: naming ``path``, when it cannot be read.
    """
    if is_url(path) or not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as handle:
            if handle.read(len(GZIP_MAGIC)) == GZIP_MAGIC:
                return None
        cuts = line_cuts(path, piece_bytes)
    except OSError as exc:
        raise InputError(f"{path}: {os_reason(exc)}") from None
    return join_pieces(path, fields, label or path, over(path, fields, cuts))
