"""Inputs to documents: directories, files, path lists and JSON Lines, with reported skips.

A scan meets whatever a disk holds, so every input either becomes a :class:`Document` or a
:class:`Skip` with a one-line reason; nothing here raises for a single bad file. Files are
opened read-only and never written. The input stage has three parts: the walk finds the
files under the roots (:mod:`simdup.walk`: names, each file once, what is skipped and
why), reading turns each file into text (:mod:`simdup.files`: size limit, gzip,
binary sniffing, byte-order marks, decoding), and this module adds the other inputs
(``--files-from`` path lists, JSON Lines records) and :func:`load_corpus`, which runs the
walk and the reading. Every name of the input stage is importable from here.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from simdup.errors import InputError
from simdup.files import (
    BINARY_CONTROL_FRACTION,
    BINARY_MIN_SAMPLE,
    CHUNK_BYTES,
    DEFAULT_MAX_SIZE,
    SNIFF_BYTES,
    ReadOptions,
    Source,
    TooLarge,
    check_encoding,
    decode,
    gunzip,
    looks_binary,
    os_reason,
    read_bytes,
    read_documents,
    read_source,
)
from simdup.model import Document, Skip
from simdup.progress import Progress, no_progress
from simdup.walk import find_files

__all__ = [
    "BINARY_CONTROL_FRACTION",
    "BINARY_MIN_SAMPLE",
    "CHUNK_BYTES",
    "DEFAULT_MAX_SIZE",
    "SNIFF_BYTES",
    "JsonlOptions",
    "ReadOptions",
    "Source",
    "TooLarge",
    "check_encoding",
    "decode",
    "find_files",
    "gunzip",
    "load_corpus",
    "looks_binary",
    "read_bytes",
    "read_documents",
    "read_jsonl",
    "read_jsonl_file",
    "read_path_list",
    "read_source",
]


def read_path_list(data: bytes, *, null: bool = False) -> list[str]:
    """Split a ``--files-from`` list: NUL-separated with ``null``, else one path per line.

    Empty entries are ignored; paths are decoded like file names (surrogate escapes).

    >>> read_path_list(b"a.txt\\nb c.txt\\n\\n")
    ['a.txt', 'b c.txt']
    """
    parts = data.split(b"\0") if null else data.splitlines()
    return [os.fsdecode(p) for p in parts if p]


@dataclass(frozen=True)
class JsonlOptions:
    """Which fields of a JSON Lines record hold the text and the id."""

    text_field: str = "text"
    id_field: str | None = "id"


def _records(lines: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    for number, line in enumerate(lines, start=1):
        if line.strip():
            yield number, line


def read_jsonl(label: str, data: bytes, fields: JsonlOptions) -> tuple[list[Document], list[Skip]]:
    """Return one document per JSON Lines record, named by its id (or line number).

    Malformed lines (not JSON, not an object, missing or non-string text, duplicate id)
    are skipped with ``label:LINE`` and the reason; the rest of the corpus is still read.

    >>> data = b'{"id": "a", "text": "hi"}\\n[1, 2\\n'
    >>> docs, skips = read_jsonl("c.jsonl", data, JsonlOptions())
    >>> [d.name for d in docs], [(s.path, s.reason) for s in skips]
    (['a'], [('c.jsonl:2', "not valid JSON (Expecting ',' delimiter at column 6)")])
    """
    documents: list[Document] = []
    skipped: list[Skip] = []
    seen: set[str] = set()
    for number, line in _records(data.splitlines()):
        where = f"{label}:{number}"
        try:
            record = json.loads(line)
        except RecursionError:
            skipped.append(Skip(where, "not valid JSON (nested too deeply)"))
            continue
        except ValueError as exc:  # also UnicodeDecodeError, and integers too long to convert
            if isinstance(exc, json.JSONDecodeError):
                reason = f"{exc.msg} at column {exc.colno}"
            elif isinstance(exc, UnicodeDecodeError):
                reason = "not valid UTF-8"
            else:
                reason = str(exc).split(";")[0]
            skipped.append(Skip(where, f"not valid JSON ({reason})"))
            continue
        if not isinstance(record, dict):
            skipped.append(Skip(where, "not a JSON object"))
            continue
        text = record.get(fields.text_field)
        if not isinstance(text, str):
            what = "missing" if fields.text_field not in record else "not a string"
            skipped.append(Skip(where, f"text field {fields.text_field!r} is {what}"))
            continue
        raw_id = record.get(fields.id_field) if fields.id_field else None
        if raw_id is None or isinstance(raw_id, (dict, list)):
            name = str(number)
        else:
            name = raw_id if isinstance(raw_id, str) else json.dumps(raw_id)
        if name in seen:
            skipped.append(Skip(where, f"duplicate id {name!r}"))
            continue
        seen.add(name)
        documents.append(Document(name, text))
    return documents, skipped


def read_jsonl_file(path: str, fields: JsonlOptions) -> tuple[list[Document], list[Skip]]:
    """Read a JSON Lines corpus from a file (gzip-compressed or not; no size limit).

    Raises:
        InputError: when the file cannot be opened or is a corrupt gzip stream.
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
    except OSError as exc:
        if isinstance(exc, gzip.BadGzipFile):
            raise InputError(f"{path}: corrupt gzip file") from None
        raise InputError(f"{path}: {os_reason(exc)}") from None
    except (EOFError, zlib.error):
        raise InputError(f"{path}: corrupt gzip file") from None
    return read_jsonl(path, data, fields)


def load_corpus(
    paths: Sequence[str],
    options: ReadOptions,
    *,
    progress: Progress = no_progress,
) -> tuple[list[Document], list[Skip]]:
    """Find and read every file under ``paths``: documents sorted by name, and skips."""
    sources, skipped = find_files(paths, options)
    documents, unread = read_documents(sources, options, progress=progress)
    return documents, skipped + unread
