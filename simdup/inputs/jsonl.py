"""JSON Lines inputs: records to documents; files, globs, fsspec URLs and stdin.

A corpus kept as JSON Lines is often cut into shards (``part-00.jsonl.gz`` ...), kept
on a shared file system or in an object store. :func:`expand_jsonl` turns the names
given for it into the list of inputs a scan reads, the same list whatever order the
file system lists a directory in, and :func:`read_jsonl_input` reads one of them
(gzip recognised by its magic bytes). URLs (``s3://``, ``gs://``, ``file://``,
``memory://``) need fsspec, which comes with the ``dask`` extra.
"""

from __future__ import annotations

import glob
import json
import os
import tempfile
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from simdup.errors import InputError, ParameterError
from simdup.inputs.columns import NamePacker, first_names
from simdup.inputs.files import decompressed, os_reason
from simdup.inputs.streams import (
    handle_blocks,
    import_fsspec,
    input_blocks,
    is_url,
    numbered_lines,
    opened,
)
from simdup.model import Document, Skip
from simdup.packed import PackedStrings, Positions
from simdup.spill import SpillDir, room

#: Names of JSON Lines files (compressed or not), matched without regard to case.
JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz")


def is_jsonl_name(name: str) -> bool:
    """Tell whether a file name is a JSON Lines file's (by :data:`JSONL_SUFFIXES`).

    >>> is_jsonl_name("shards/part-00.JSONL.gz"), is_jsonl_name("notes.txt")
    (True, False)
    """
    return name.lower().endswith(JSONL_SUFFIXES)


@dataclass(frozen=True)
class JsonlOptions:
    """Which fields of a JSON Lines record hold the text and the id."""

    text_field: str = "text"
    id_field: str | None = "id"


@dataclass(frozen=True)
class JsonlPart:
    """A JSON Lines input read where it is needed: a path, an fsspec URL, or bytes (``data``).

    Attributes:
        label: The path or URL, or how bytes already read are named (``<stdin>``).
        data: The bytes when already read (standard input), else None.
    """

    label: str
    data: bytes | None = None


def _json_error(exc: ValueError) -> str:
    """Say why a line is not JSON, in one short phrase."""
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at column {exc.colno}"
    if isinstance(exc, UnicodeDecodeError):
        return "not valid UTF-8"
    return str(exc).split(";")[0]  # an integer too long to convert


def parse_line(
    line: bytes, number: int, fields: JsonlOptions
) -> tuple[Document, dict[str, Any]] | str:
    """Return a line's document and its record, or the reason it holds no document.

    The document is named by the record's id (JSON text for ids that are not strings), or
    by the line ``number`` when the record has none.

    >>> parse_line(b'{"id": 7, "text": "hi"}', 1, JsonlOptions())
    (Document(name='7', text='hi'), {'id': 7, 'text': 'hi'})
    >>> parse_line(b'[1]', 2, JsonlOptions()), parse_line(b'{"id": 1}', 3, JsonlOptions())
    ('not a JSON object', "text field 'text' is missing")
    """
    try:
        record = json.loads(line)
    except RecursionError:
        return "not valid JSON (nested too deeply)"
    except ValueError as exc:  # also UnicodeDecodeError, and integers too long to convert
        return f"not valid JSON ({_json_error(exc)})"
    if not isinstance(record, dict):
        return "not a JSON object"
    text = record.get(fields.text_field)
    if not isinstance(text, str):
        what = "missing" if fields.text_field not in record else "not a string"
        return f"text field {fields.text_field!r} is {what}"
    return Document(record_name(record_id(record, fields), number), text), record


def record_id(record: dict[str, Any], fields: JsonlOptions) -> Any:
    """Return a record's id as it holds it (None: no id field asked for, or none held)."""
    return record.get(fields.id_field) if fields.id_field else None


def named_by_number(raw_id: Any) -> bool:
    """Tell whether a record with this id is named by its line or row number.

    >>> named_by_number(None), named_by_number({"a": 1}), named_by_number(0)
    (True, True, False)
    """
    return raw_id is None or isinstance(raw_id, (dict, list))


def record_name(raw_id: Any, number: int) -> str:
    """Return how a record is named: its id (JSON text unless a string), else its number.

    One rule for every kind of record (JSON Lines lines, Parquet and Arrow rows): an
    absent, null or nested id names the record by its line or row ``number``.

    >>> record_name("a", 1), record_name(7, 2), record_name(None, 3), record_name([1], 4)
    ('a', '7', '3', '4')
    """
    if named_by_number(raw_id):
        return str(number)
    return raw_id if isinstance(raw_id, str) else json.dumps(raw_id)


@dataclass(frozen=True, slots=True)
class JsonlLine:
    """One record of a local, uncompressed JSON Lines file, named but not held.

    A scan keeps per record only this (its name, where its line is); the worker that
    counts it reads the line again with a :class:`LineReader`, so the texts of a corpus
    are never in this process all at once.

    Attributes:
        path: The file.
        offset: Where the line starts, in bytes.
        size: Its length in bytes, without the line end.
        name: The record's name (its id, or its line number).
        fields: Which fields of the record hold the text and the id.
    """

    path: str
    offset: int
    size: int
    name: str
    fields: JsonlOptions


@dataclass
class ParsedLines:
    """The records of some lines, as :func:`parse_lines` found them.

    Attributes:
        numbers: The line number of each record.
        names: Its name.
        malformed: The line number of each line holding no record, and why.
        lines: The number of the last line, blank or not (0: none).
        by_number: The records named by their line number (positions in ``numbers``).
    """

    numbers: npt.NDArray[np.int64]
    names: PackedStrings
    malformed: list[tuple[int, str]]
    lines: int = 0
    by_number: list[int] = field(default_factory=list)

    def renumbered(self, before: int) -> ParsedLines:
        """Return these records as numbered after ``before`` more lines (names too)."""
        if not before:
            return self
        names = self.names
        if self.by_number:
            listed = list(names)
            for k in self.by_number:
                listed[k] = str(int(self.numbers[k]) + before)
            names = PackedStrings.of(listed)
        malformed = [(number + before, why) for number, why in self.malformed]
        return ParsedLines(
            self.numbers + before, names, malformed, self.lines + before, self.by_number
        )


def parse_lines(
    lines: Iterable[tuple[int, int, bytes]],
    fields: JsonlOptions,
    held: Callable[[Document, int, int], None],
) -> ParsedLines:
    """Hand each record of numbered ``lines`` to ``held``, with its line's offset and length.

    Blank lines are passed over; the others that hold no record are returned with why.
    """
    numbers = array("q")
    malformed: list[tuple[int, str]] = []
    packer = NamePacker()
    by_number: list[int] = []
    number = 0
    for number, offset, line in lines:
        if not line.strip():
            continue
        found = parse_line(line, number, fields)
        if isinstance(found, str):
            malformed.append((number, found))
        else:
            held(found[0], offset, len(line))
            packer.add(found[0].name)
            if named_by_number(record_id(found[1], fields)):
                by_number.append(len(numbers))
            numbers.append(number)
    numbered = np.frombuffer(numbers, dtype=np.int64)
    return ParsedLines(numbered, packer.column(), malformed, number, by_number)


#: The records kept of a file: their positions among those parsed (in line order), and
#: their order by name (positions among those kept).
Kept = tuple[Positions, Positions]


def first_records(label: str, parsed: ParsedLines) -> tuple[Kept, list[Skip]]:
    """Return the records of a file to keep, and the skips of the others, in line order.

    One rule for records read whole and records indexed: lines holding no record are
    skipped as ``label:LINE``, and so is a repeated id after its first.
    """
    numbers, names = parsed.numbers.tolist(), parsed.names
    skipped = [(n, Skip(f"{label}:{n}", reason)) for n, reason in parsed.malformed]
    first, repeats = first_names(names)
    for k in repeats.tolist():
        skipped.append((numbers[k], Skip(f"{label}:{numbers[k]}", f"duplicate id {names[k]!r}")))
    skipped.sort(key=lambda item: item[0])
    positions = np.sort(first)
    by_name = np.searchsorted(positions, first).astype(np.int64)
    return (positions, by_name), [skip for _, skip in skipped]


def read_jsonl(label: str, data: bytes, fields: JsonlOptions) -> tuple[list[Document], list[Skip]]:
    """Return one document per JSON Lines record, named by its id (or line number).

    Malformed lines (not JSON, not an object, missing or non-string text, an id used on
    an earlier line) are skipped with ``label:LINE`` and the reason, in line order; the
    rest of the corpus is still read.

    >>> data = b'{"id": "a", "text": "hi"}\\n[1, 2\\n'
    >>> docs, skips = read_jsonl("c.jsonl", data, JsonlOptions())
    >>> [d.name for d in docs], [(s.path, s.reason) for s in skips]
    (['a'], [('c.jsonl:2', "not valid JSON (Expecting ',' delimiter at column 6)")])
    """
    documents: list[Document] = []
    lines = numbered_lines([(0, data)])
    parsed = parse_lines(lines, fields, lambda document, _, __: documents.append(document))
    (kept, _), skipped = first_records(label, parsed)
    return [documents[k] for k in kept.tolist()], skipped


def spool_jsonl(label: str, handle: BinaryIO, directory: SpillDir) -> str:
    """Copy an input that cannot be read by byte ranges to a file in ``directory``.

    For gzip, pipes, URLs and standard input: their bytes (decompressed) are written a
    block at a time, so the file can be indexed (:func:`~simdup.inputs.lines.index_jsonl`)
    and its lines read again where they are counted. Returns the file's path.

    Raises:
        InputError: naming ``label``, when its gzip stream is damaged.
        SpillError: when the disk is full.
    """
    fd, path = tempfile.mkstemp(suffix=".jsonl", dir=directory.path)
    with room(path), os.fdopen(fd, "wb") as out:
        for block in input_blocks(label, handle_blocks(handle)):
            out.write(block)
    return path


class LineReader:
    """Reads the records of :class:`JsonlLine` again, each file opened once; close it after."""

    def __init__(self) -> None:
        self._handles: dict[str, int] = {}

    def read(self, item: JsonlLine) -> Document:
        """Return the document of a record indexed earlier.

        Raises:
            InputError: naming the file, when it cannot be read or changed since.
        """
        try:
            handle = self._handles.get(item.path)
            if handle is None:
                handle = self._handles[item.path] = os.open(item.path, os.O_RDONLY)
            line = os.pread(handle, item.size, item.offset)
        except OSError as exc:
            raise InputError(f"{item.path}: {os_reason(exc)}") from None
        found = parse_line(line, 0, item.fields)
        if isinstance(found, str) or len(line) != item.size:
            raise InputError(f"{item.path}: changed while it was read")
        return Document(item.name, found[0].text)

    def close(self) -> None:
        """Close the files opened."""
        for handle in self._handles.values():
            os.close(handle)
        self._handles.clear()


#: How a command line names standard input, and how its records are labelled.
STDIN, STDIN_LABEL = "-", "<stdin>"

#: Characters that make a name a glob pattern (as :mod:`glob` reads them).
GLOB_CHARACTERS = frozenset("*?[")


def is_glob(name: str) -> bool:
    """Tell whether ``name`` holds glob characters (``*``, ``?``, ``[``).

    >>> is_glob("shards/*.jsonl.gz"), is_glob("corpus.jsonl")
    (True, False)
    """
    return not GLOB_CHARACTERS.isdisjoint(name)


def expand_jsonl(patterns: Iterable[str]) -> list[str]:
    """Return the JSON Lines inputs that ``patterns`` name, each once, in a fixed order.

    See :func:`expand_names`.

    >>> expand_jsonl(["-", "-"])
    ['-']
    """
    return expand_names(patterns, "JSON Lines files", "*.jsonl")


def expand_names(
    patterns: Iterable[str], what: str, example: str, *, stdin: bool = True
) -> list[str]:
    """Return the inputs that ``patterns`` name, each once, in a fixed order.

    A pattern is ``-`` (standard input), an existing file, a glob of local files
    (``**`` crosses directories) or a URL, globbed through fsspec when it holds glob
    characters. Inputs come sorted by name (code-point order, so neither the file
    system's listing order nor the locale changes a scan), standard input last. A file
    named twice, by two spellings or by two patterns, is read once under the first of
    its names in that order.

    Args:
        patterns: The names given.
        what: What the inputs are, for messages (``JSON Lines files``).
        example: A glob of such files, suggested for a directory (``*.jsonl``).
        stdin: Whether ``-`` names standard input (else it is refused).

    Raises:
        ParameterError: for a pattern that matches nothing, a missing file or a directory.
    """
    names: set[str] = set()
    read_stdin = False
    for pattern in patterns:
        if pattern == STDIN and stdin:
            read_stdin = True
        elif pattern == STDIN:
            raise ParameterError(f"{what} cannot be read from standard input; name the files")
        elif is_url(pattern):
            names.update(_url_matches(pattern) if is_glob(pattern) else [pattern])
        else:
            names.update(_path_matches(pattern, what, example))
    unique: list[str] = []
    seen: set[object] = set()
    for name in sorted(names):
        identity = _identity(name)
        if identity not in seen:
            seen.add(identity)
            unique.append(name)
    return [*unique, STDIN] if read_stdin else unique


def _path_matches(pattern: str, what: str, example: str) -> list[str]:
    """Return the file ``pattern`` names, or the files its glob matches."""
    if os.path.isdir(pattern):
        raise ParameterError(
            f"{pattern!r} is a directory; give {what} or a glob such as "
            f"'{os.path.join(pattern, example)}'"
        )
    if os.path.exists(pattern):
        return [pattern]
    if not is_glob(pattern):
        raise ParameterError(f"{pattern!r} does not exist")
    found = [p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p)]
    if not found:
        raise ParameterError(f"no file matches {pattern!r}")
    return found


def _url_matches(pattern: str) -> list[str]:
    """Return the URLs that an fsspec glob matches."""
    url_to_fs = import_fsspec(pattern).core.url_to_fs
    try:
        fs, path = url_to_fs(pattern)
        found = [fs.unstrip_protocol(p) for p in fs.glob(path) if fs.isfile(p)]
    except (OSError, ValueError) as exc:
        raise ParameterError(f"cannot list {pattern!r}: {exc}") from None
    if not found:
        raise ParameterError(f"no file matches {pattern!r}")
    return [str(url) for url in found]


def _identity(name: str) -> object:
    """Return what tells two names of one input apart: the file itself, else the name."""
    if is_url(name):
        return name
    try:
        info = os.stat(name)
    except OSError:
        return os.path.normpath(name)
    return (info.st_dev, info.st_ino)


def read_jsonl_bytes(label: str, data: bytes | None = None) -> bytes:
    """Return the bytes of a JSON Lines input, decompressed when they are gzip.

    A path is opened as it is (a named pipe such as ``<(zcat x.gz)`` is read too, and no
    size limit applies: a corpus is meant to be large), a URL through fsspec, and bytes
    already read (standard input) are taken as they are. gzip is told by its magic bytes,
    whatever the name.

    Raises:
        InputError: naming ``label``, when the input cannot be read or its gzip stream
            is damaged (worded as for files, see :func:`simdup.inputs.files.gunzip`).
    """
    if data is None:
        with opened(label) as handle:
            data = bytes(handle.read())
    try:
        return decompressed(data)
    except InputError as exc:
        raise InputError(f"{label}: {exc}") from None


def read_jsonl_input(
    label: str, fields: JsonlOptions, data: bytes | None = None
) -> tuple[list[Document], list[Skip]]:
    """Read the records of a JSON Lines file, URL or given bytes (see :func:`read_jsonl_bytes`).

    Raises:
        InputError: when the input cannot be read or is a damaged gzip stream.
    """
    return read_jsonl(label, read_jsonl_bytes(label, data), fields)
