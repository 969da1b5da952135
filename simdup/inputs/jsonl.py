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
import gzip
import json
import os
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from simdup.errors import InputError, ParameterError
from simdup.inputs.files import (
    os_reason,
)
from simdup.model import Document, Skip


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


#: How a command line names standard input, and how its records are labelled.
STDIN, STDIN_LABEL = "-", "<stdin>"

#: Characters that make a name a glob pattern (as :mod:`glob` reads them).
GLOB_CHARACTERS = frozenset("*?[")

FSSPEC_HINT = "install it with: pip install 'simdup[dask]'"


def is_url(name: str) -> bool:
    """Tell whether ``name`` is a URL read through fsspec rather than a local path.

    >>> is_url("s3://bucket/part-00.jsonl"), is_url("data/part-00.jsonl")
    (True, False)
    """
    return "://" in name


def is_glob(name: str) -> bool:
    """Tell whether ``name`` holds glob characters (``*``, ``?``, ``[``).

    >>> is_glob("shards/*.jsonl.gz"), is_glob("corpus.jsonl")
    (True, False)
    """
    return not GLOB_CHARACTERS.isdisjoint(name)


def expand_jsonl(patterns: Iterable[str]) -> list[str]:
    """Return the JSON Lines inputs that ``patterns`` name, each once, in a fixed order.

    A pattern is ``-`` (standard input), an existing file, a glob of local files
    (``**`` crosses directories) or a URL, globbed through fsspec when it holds glob
    characters. Inputs come sorted by name (code-point order, so neither the file
    system's listing order nor the locale changes a scan), standard input last. A file
    named twice, by two spellings or by two patterns, is read once under the first of
    its names in that order.

    Raises:
        ParameterError: for a pattern that matches nothing, a missing file or a directory.

    >>> expand_jsonl(["-", "-"])
    ['-']
    """
    names: set[str] = set()
    stdin = False
    for pattern in patterns:
        if pattern == STDIN:
            stdin = True
        elif is_url(pattern):
            names.update(_url_matches(pattern) if is_glob(pattern) else [pattern])
        else:
            names.update(_path_matches(pattern))
    unique: list[str] = []
    seen: set[object] = set()
    for name in sorted(names):
        identity = _identity(name)
        if identity not in seen:
            seen.add(identity)
            unique.append(name)
    return [*unique, STDIN] if stdin else unique


def _path_matches(pattern: str) -> list[str]:
    """Return the file ``pattern`` names, or the files its glob matches."""
    if os.path.isdir(pattern):
        raise ParameterError(
            f"{pattern!r} is a directory; give JSON Lines files or a glob such as "
            f"'{os.path.join(pattern, '*.jsonl')}'"
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
    url_to_fs = _fsspec(pattern).core.url_to_fs
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


def _fsspec(url: str) -> Any:
    """Import fsspec, or raise an error naming ``url`` and how to install it."""
    try:
        import fsspec  # type: ignore[import-untyped,unused-ignore]  # with the dask extra
    except ImportError:
        raise InputError(f"{url}: reading URLs needs fsspec; {FSSPEC_HINT}") from None
    return fsspec


def read_jsonl_input(
    label: str, fields: JsonlOptions, data: bytes | None = None
) -> tuple[list[Document], list[Skip]]:
    """Read a JSON Lines file, URL or given bytes as the local engine reads a file.

    Paths go through :func:`simdup.inputs.jsonl.read_jsonl_file`; URLs are opened with fsspec
    and bytes (standard input, read by the caller) are decoded the same way.

    Raises:
        InputError: when the input cannot be opened or is a corrupt gzip stream.
    """
    if data is None and not is_url(label):
        return read_jsonl_file(label, fields)
    if data is None:
        data = read_url(label)
    try:
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
    except (OSError, EOFError, zlib.error):
        raise InputError(f"{label}: corrupt gzip file") from None
    return read_jsonl(label, data, fields)


def read_url(url: str) -> bytes:
    """Return the bytes behind an fsspec URL, or raise :class:`InputError` naming it."""
    fsspec = _fsspec(url)
    try:
        with fsspec.open(url, "rb") as handle:
            return bytes(handle.read())
    except (OSError, ValueError) as exc:
        raise InputError(f"{url}: {exc}") from None
