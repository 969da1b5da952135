"""JSON Lines datasets for deduplication: records with their raw bytes, and the outputs.

A deduplicated dataset must hold the kept lines exactly as they were read: re-encoding a
record changes key order, number formats and escapes, and with them every checksum and
diff downstream. So a dataset is kept as the byte range of each line, and the kept output
is cut from the input's bytes, read again a block at a time (kept in memory only when they
cannot be read again, from standard input or a pipe). Lines are separated by ``\\n`` only (the JSON
Lines convention; a ``\\r`` before it belongs to the line and is kept with it).

Every line is either a document or kept as is: a line that is not a JSON object, or whose
text field is missing, is reported and kept, never dropped; blank lines are kept silently.
Ids may repeat: each line is its own document, told apart by its line number.
"""

from __future__ import annotations

import gzip
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, BinaryIO, Protocol

import numpy as np
import numpy.typing as npt

from simdup.dedupe.keep import Entry
from simdup.errors import InputError
from simdup.inputs.jsonl import JsonlOptions, parse_line, read_jsonl_bytes
from simdup.inputs.names import first_named
from simdup.inputs.streams import handle_blocks, input_blocks, is_url, line_pieces, opened
from simdup.model import Document, Skip
from simdup.search.groups import Removal

#: Bytes of the kept output written at a time.
WRITE_BYTES = 1 << 22


class Sink(Protocol):
    """Where bytes are written: a binary file, a gzip writer."""

    def write(self, data: bytes | memoryview, /) -> int:
        """Write ``data``; return how many bytes were written."""
        ...


@dataclass
class Records:
    """The documents of a dataset, one per record (line or row) that holds one.

    The part of a dataset every kind shares (JSON Lines here, tables in
    :mod:`simdup.dedupe.tables`): records are added in order with :meth:`add`, then
    :meth:`finish` notes repeated ids and unreadable times.

    Attributes:
        label: The dataset's name in messages.
        entries: One :class:`Entry` per document, in input order.
        lines: Line (or row) number, 1-based, of each entry.
        skipped: Records kept as they are because they hold no document, with the reason.
        duplicate_ids: Ids found on more than one record, with their numbers.
        warnings: Other problems, one line each (unreadable time fields).
        time_field: The field holding a time for ``newest``/``oldest``, if any.
    """

    label: str
    entries: list[Entry] = field(default_factory=list, kw_only=True)
    lines: list[int] = field(default_factory=list, kw_only=True)
    skipped: list[Skip] = field(default_factory=list, kw_only=True)
    duplicate_ids: dict[str, list[int]] = field(default_factory=dict, kw_only=True)
    warnings: list[str] = field(default_factory=list, kw_only=True)
    time_field: str | None = field(default=None, kw_only=True)
    _bad_times: int = field(default=0, kw_only=True)

    def add(self, number: int, found: tuple[Document, Any] | Skip, size: int, unit: str) -> None:
        """Add record ``number``: its document and raw time value, or why it holds none.

        Args:
            number: The record's number (1-based).
            found: The document and the value of the time field, or the skip.
            size: Bytes saved when the document is removed.
            unit: What a record is called in messages (``line``, ``row``).
        """
        if isinstance(found, Skip):
            self.skipped.append(found)
            return
        document, raw_time = found
        moment = None
        if self.time_field is not None:
            moment = parse_time(raw_time)
            self._bad_times += moment is None
        self.entries.append(Entry(document.name, document.text, moment, size, f"{unit} {number}"))
        self.lines.append(number)

    def __len__(self) -> int:
        """Return how many records (lines or rows) the dataset holds, documents or not."""
        raise NotImplementedError

    def finish(self) -> None:
        """Note the ids on more than one record, and the documents without a readable time."""
        _, repeats = first_named(self.entries, lambda entry: entry.name)
        repeated = {entry.name for entry in repeats}
        for entry, number in zip(self.entries, self.lines, strict=True):
            if entry.name in repeated:
                self.duplicate_ids.setdefault(entry.name, []).append(number)
        if self._bad_times:
            self.warnings.append(
                f"{self.label}: {self._bad_times:,} document(s) without a readable time in "
                f"field {self.time_field!r} (a number or an ISO 8601 date); they are kept last"
            )


@dataclass
class Dataset(Records):
    """A JSON Lines file split into lines, with one entry per document line.

    Attributes:
        data: The (decompressed) bytes when they could not be read again (standard
            input), else None: the kept lines are then cut from ``source`` read again.
        starts: int64 (lines,), byte offset of each line.
        ends: int64 (lines,), byte offset just past each line (its ``\\n`` included).
        source: The file or URL the lines are read from again (None: ``data``).
    """

    data: bytes | None
    starts: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    ends: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    source: str | None = None

    def __len__(self) -> int:
        return len(self.starts)

    def blocks(self) -> Iterator[bytes]:
        """Yield the dataset's bytes again, in order, a bounded block at a time.

        Raises:
            InputError: naming the input, when it can no longer be read.
        """
        if self.data is not None or self.source is None:
            yield self.data or b""
            return
        with opened(self.source) as handle:
            yield from input_blocks(self.source, handle_blocks(handle))


def line_bounds(data: bytes) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Return the start and end offsets of the ``\\n``-terminated lines of ``data``.

    A last line without ``\\n`` is a line too; empty data has no lines.

    >>> [(int(s), int(e)) for s, e in zip(*line_bounds(b"a\\nbc\\nd"))]
    [(0, 2), (2, 5), (5, 6)]
    """
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == ord("\n")).astype(np.int64) + 1
    if data and not data.endswith(b"\n"):
        ends = np.append(ends, np.int64(len(data)))
    starts = np.concatenate([np.zeros(1, dtype=np.int64), ends[:-1]])[: len(ends)]
    return starts, ends


def parse_time(value: Any) -> float | None:
    """Return seconds since the epoch from a number or an ISO 8601 string (None if neither).

    A time without a zone is taken as UTC, so the order never depends on the machine.

    >>> parse_time(86400), parse_time("1970-01-02T00:00:00Z"), parse_time("1970-01-02")
    (86400.0, 86400.0, 86400.0)
    >>> [parse_time(v) for v in ("yesterday", True, float("nan"), 10**400, "9999-99-99")]
    [None, None, None, None, None]
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            seconds = float(value)
        except OverflowError:  # an integer beyond any float
            return None
        return seconds if math.isfinite(seconds) else None
    if not isinstance(value, str):
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def parse_dataset(
    label: str, data: bytes, fields: JsonlOptions, *, time_field: str | None = None
) -> Dataset:
    """Split JSON Lines bytes into lines and documents; see the module docstring.

    Args:
        label: The file's name, used in skip reasons (``label:LINE``).
        data: The bytes (already decompressed).
        fields: Which fields hold the text and the id.
        time_field: Field holding a time for ``newest``/``oldest`` (number or ISO 8601).

    >>> ds = parse_dataset("in.jsonl", b'{"id": "a", "text": "hi"}\\nnope\\n\\n', JsonlOptions())
    >>> [(e.name, e.tag) for e in ds.entries], [(s.path, s.reason) for s in ds.skipped]
    ([('a', 'line 1')], [('in.jsonl:2', 'not valid JSON (Expecting value at column 1)')])
    """
    dataset = Dataset(label, data, time_field=time_field)
    return _parsed(dataset, [(0, data)], fields)


def _parsed(dataset: Dataset, pieces: Iterable[tuple[int, bytes]], fields: JsonlOptions) -> Dataset:
    """Add the lines of ``pieces`` (whole lines, each with its offset) to ``dataset``."""
    starts: list[npt.NDArray[np.int64]] = [dataset.starts]
    ends: list[npt.NDArray[np.int64]] = [dataset.ends]
    number = 0
    for offset, piece in pieces:
        begins, stops = line_bounds(piece)
        for begin, stop in zip(begins.tolist(), stops.tolist(), strict=True):
            number += 1
            line = piece[begin:stop]
            if not line.strip():
                continue
            found = parse_line(line, number, fields)
            if isinstance(found, str):
                dataset.add(number, Skip(f"{dataset.label}:{number}", found), len(line), "line")
            else:
                document, record = found
                field_name = dataset.time_field
                raw_time = record.get(field_name) if field_name is not None else None
                dataset.add(number, (document, raw_time), len(line), "line")
        starts.append(begins + offset)
        ends.append(stops + offset)
    dataset.starts, dataset.ends = np.concatenate(starts), np.concatenate(ends)
    dataset.finish()
    return dataset


def read_dataset(
    path: str, fields: JsonlOptions, *, time_field: str | None = None, data: bytes | None = None
) -> Dataset:
    """Read a JSON Lines file, URL or given bytes as a :class:`Dataset`.

    The bytes are read as a scan reads them (gzip told by its magic bytes), a piece of
    whole lines at a time, and not kept: the kept lines are written from the input read
    again (:meth:`Dataset.blocks`). Bytes that cannot be read again (standard input, a
    pipe) are kept.

    Args:
        path: The file or URL (its name is the label in messages).
        fields: Which fields hold the text and the id.
        time_field: See :func:`parse_dataset`.
        data: The file's bytes when already read (standard input).

    Raises:
        InputError: when the input cannot be read or is a damaged gzip stream.
    """
    if data is not None or not (is_url(path) or os.path.isfile(path)):
        return parse_dataset(path, read_jsonl_bytes(path, data), fields, time_field=time_field)
    dataset = Dataset(path, None, source=path, time_field=time_field)
    with opened(path) as handle:
        blocks = input_blocks(path, handle_blocks(handle))
        return _parsed(dataset, line_pieces(blocks, lone_cr=False), fields)


def removed_lines(dataset: Records, removals: Iterable[Removal]) -> npt.NDArray[np.bool_]:
    """Return a mask over the dataset's lines: True for lines of removed documents."""
    mask = np.zeros(len(dataset), dtype=bool)
    for removal in removals:
        mask[dataset.lines[removal.index] - 1] = True
    return mask


def write_kept(dataset: Dataset, removed: npt.NDArray[np.bool_], handle: Sink) -> int:
    """Write every line not ``removed``, byte for byte and in input order; return bytes.

    Runs of consecutive kept lines are written as slices of the input, read again a
    block at a time (:meth:`Dataset.blocks`).

    Raises:
        InputError: when the input can no longer be read, or is shorter than it was.
    """
    # Boundaries of runs of kept lines: where the mask changes.
    kept = ~removed
    change = np.flatnonzero(np.diff(np.concatenate([[False], kept, [False]]).astype(np.int8)))
    runs = iter(
        (int(dataset.starts[begin]), int(dataset.ends[end - 1]))
        for begin, end in zip(change[0::2].tolist(), change[1::2].tolist(), strict=True)
    )
    run = next(runs, None)
    written = at = 0
    for block in dataset.blocks():
        view = memoryview(block)
        end = at + len(block)
        while run is not None and run[0] < end:
            for offset in range(max(run[0], at), min(run[1], end), WRITE_BYTES):
                chunk = view[offset - at : min(run[1], end, offset + WRITE_BYTES) - at]
                handle.write(chunk)
                written += len(chunk)
            if run[1] > end:
                break
            run = next(runs, None)
        at = end
    if run is not None:
        raise InputError(f"{dataset.label}: changed while it was read")
    return written


def compressed(handle: BinaryIO) -> gzip.GzipFile:
    """Return a gzip writer over ``handle``: no file name, time zero (same bytes every run)."""
    return gzip.GzipFile(filename="", mode="wb", fileobj=handle, mtime=0)
