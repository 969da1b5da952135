"""Inputs to documents: directories, files, path lists and JSON Lines, with reported skips.

A scan meets whatever a disk holds, so every input either becomes a :class:`Document` or a
:class:`Skip` with a one-line reason; nothing here raises for a single bad file. Files are
opened read-only and never written. Names are paths as found under the roots the user gave
(``sample_corpus/doc0.txt``), like ``find`` and ``grep`` print them; bytes that are not
valid UTF-8 in a file name are kept losslessly as Python's surrogate escapes.

Each file is counted once, however it was reached: a directory given twice, nested roots
and hard links all resolve to the same device and inode, and the first name in sorted
order is kept. So a file is never reported as its own duplicate.
"""

from __future__ import annotations

import codecs
import fnmatch
import gzip
import json
import os
import stat
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from simdup.errors import InputError, ParameterError
from simdup.model import Document, Skip
from simdup.progress import Progress, no_progress

#: Default largest file read, in bytes (after gzip decompression).
DEFAULT_MAX_SIZE = 8 * 1024 * 1024

#: Bytes inspected to tell text from binary.
SNIFF_BYTES = 8192

#: A file whose sniffed bytes are more than this fraction control characters is binary.
BINARY_CONTROL_FRACTION = 0.3

_TEXT_CONTROLS = frozenset(b"\t\n\r\f\b\x1b")


@dataclass(frozen=True)
class ReadOptions:
    """How inputs are found and decoded.

    Attributes:
        hidden: Descend into and read names starting with ``.``.
        follow_symlinks: Follow symbolic links met while walking.
        include: Globs; when given, only files whose name or path matches one are read.
        exclude: Globs; files and directories whose name or path matches one are skipped.
        max_size: Largest file read, in bytes (after decompression).
        encoding: Codec of files without a byte-order mark.
        encoding_errors: ``replace`` (default) or ``strict`` (undecodable files are skipped).
    """

    hidden: bool = False
    follow_symlinks: bool = False
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_size: int = DEFAULT_MAX_SIZE
    encoding: str = "utf-8"
    encoding_errors: str = "replace"

    def __post_init__(self) -> None:
        if self.max_size < 0:
            raise ParameterError(f"max size must not be negative, got {self.max_size}")
        try:
            codecs.lookup(self.encoding)
        except LookupError:
            raise ParameterError(
                f"unknown encoding {self.encoding!r}; try utf-8, latin-1 or cp1252"
            ) from None
        if self.encoding_errors not in ("replace", "strict"):
            raise ParameterError(
                f"encoding errors must be 'replace' or 'strict', got {self.encoding_errors!r}"
            )


@dataclass(frozen=True)
class Source:
    """A regular file found by the walk: its display name and the path to open."""

    name: str
    path: str


class TooLarge(InputError):
    """A file over ``--max-size``: skipped by policy, not an error."""


def _matches(patterns: Sequence[str], name: str, relative: str) -> bool:
    return any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(relative, p) for p in patterns)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"


class _Walker:
    """Collect regular files under roots, remembering skips and visited inodes."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self.sources: list[Source] = []
        self.skipped: list[Skip] = []
        self._seen_files: dict[tuple[int, int], str] = {}
        self._active_dirs: set[tuple[int, int]] = set()

    def add_root(self, root: str) -> None:
        try:
            info = os.stat(root)
        except FileNotFoundError:
            kind = "broken symbolic link" if os.path.islink(root) else "no such file or directory"
            self.skipped.append(Skip(root, kind))
            return
        except OSError as exc:
            self.skipped.append(Skip(root, _os_reason(exc)))
            return
        if stat.S_ISDIR(info.st_mode):
            self._walk(root, "", info)
        else:
            self._file(root, info)

    def _file(self, name: str, info: os.stat_result) -> None:
        if not stat.S_ISREG(info.st_mode):
            self.skipped.append(Skip(name, f"not a regular file ({_kind(info.st_mode)})"))
            return
        self.sources.append(Source(name, name))
        key = (info.st_dev, info.st_ino)
        self._seen_files.setdefault(key, name)

    def _walk(self, directory: str, relative: str, info: os.stat_result) -> None:
        key = (info.st_dev, info.st_ino)
        if key in self._active_dirs:
            self.skipped.append(Skip(directory, "symbolic link loop"))
            return
        self._active_dirs.add(key)
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: os.fsencode(e.name))
        except OSError as exc:
            self.skipped.append(Skip(directory, _os_reason(exc)))
            self._active_dirs.discard(key)
            return
        opts = self.options
        for entry in entries:
            name = os.path.join(directory, entry.name)
            rel = os.path.join(relative, entry.name) if relative else entry.name
            if not opts.hidden and entry.name.startswith("."):
                continue
            if opts.exclude and _matches(opts.exclude, entry.name, rel):
                continue
            try:
                is_link = entry.is_symlink()
                if is_link and not opts.follow_symlinks:
                    self.skipped.append(
                        Skip(name, "symbolic link (use --follow-symlinks)", unreadable=False)
                    )
                    continue
                entry_info = entry.stat(follow_symlinks=True)
            except FileNotFoundError:
                reason = "broken symbolic link" if entry.is_symlink() else "vanished while listing"
                self.skipped.append(Skip(name, reason))
                continue
            except OSError as exc:
                self.skipped.append(Skip(name, _os_reason(exc)))
                continue
            if stat.S_ISDIR(entry_info.st_mode):
                self._walk(name, rel, entry_info)
                continue
            if opts.include and not _matches(opts.include, entry.name, rel):
                continue
            self._file(name, entry_info)
        self._active_dirs.discard(key)


def _os_reason(exc: OSError) -> str:
    """Return a short reason for an OS error, without the path (the caller shows it)."""
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, FileNotFoundError):
        return "vanished before it could be read"
    if exc.errno is not None and exc.errno == 40:  # ELOOP
        return "symbolic link loop"
    return (exc.strerror or type(exc).__name__).lower()


def find_files(paths: Iterable[str], options: ReadOptions) -> tuple[list[Source], list[Skip]]:
    """Return the regular files under ``paths`` (sorted by name, each file once) and skips."""
    walker = _Walker(options)
    for root in paths:
        walker.add_root(root)
    unique: dict[tuple[int, int] | str, Source] = {}
    for source in sorted(walker.sources, key=lambda s: os.fsencode(s.name)):
        try:
            info = os.stat(source.path)
            key: tuple[int, int] | str = (info.st_dev, info.st_ino)
        except OSError:
            key = source.path
        unique.setdefault(key, source)
    ordered = sorted(unique.values(), key=lambda s: os.fsencode(s.name))
    skipped = sorted(set(walker.skipped), key=lambda s: (os.fsencode(s.path), s.reason))
    return ordered, skipped


def _looks_binary(head: bytes) -> bool:
    """Tell binary from text by NUL bytes or a high share of control characters."""
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return False
    if b"\x00" in head:
        return True
    if not head:
        return False
    controls = sum(1 for b in head if b < 32 and b not in _TEXT_CONTROLS)
    return controls / len(head) > BINARY_CONTROL_FRACTION


def decode(data: bytes, options: ReadOptions) -> str:
    """Decode file bytes, honouring a UTF-8 or UTF-16 byte-order mark.

    Raises:
        InputError: the bytes are binary, or undecodable with ``encoding_errors='strict'``.
    """
    if _looks_binary(data[:SNIFF_BYTES]):
        raise InputError("binary file")
    if data.startswith(codecs.BOM_UTF8):
        encoding, data = "utf-8", data[len(codecs.BOM_UTF8) :]
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        encoding = "utf-16"
    else:
        encoding = options.encoding
    try:
        return data.decode(encoding, errors=options.encoding_errors)
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not valid {exc.encoding} (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "re-run with --encoding latin-1 or --encoding-errors replace"
        ) from None


def _read_limited(fd: int, limit: int) -> bytes:
    chunks = []
    remaining = limit + 1
    while remaining > 0:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_bytes(path: str, options: ReadOptions) -> bytes:
    """Return the bytes of a regular file (decompressed if ``.gz``), at most ``max_size``.

    The file is opened read-only and non-blocking and checked with ``fstat`` after opening,
    so a file replaced by a FIFO or device between listing and reading is never read.

    Raises:
        InputError: with a one-line reason.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise InputError(_os_reason(exc)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"not a regular file ({_kind(info.st_mode)})")
        limit = options.max_size
        if not path.endswith(".gz") and info.st_size > limit:
            raise TooLarge(f"larger than --max-size ({info.st_size:,} > {limit:,} bytes)")
        data = _read_limited(fd, limit if not path.endswith(".gz") else limit * 64 + 1024)
    except OSError as exc:
        raise InputError(_os_reason(exc)) from None
    finally:
        os.close(fd)
    if path.endswith(".gz"):
        data = _gunzip(data, options.max_size)
    elif len(data) > options.max_size:
        raise TooLarge(f"larger than --max-size (grew past {options.max_size:,} bytes)")
    return data


def _gunzip(data: bytes, limit: int) -> bytes:
    decompressor = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    out = bytearray()
    try:
        while data:
            out += decompressor.decompress(data, limit + 1 - len(out))
            if len(out) > limit:
                raise TooLarge(f"larger than --max-size once decompressed (> {limit:,} bytes)")
            if decompressor.eof:
                data = decompressor.unused_data  # concatenated members
                if data:
                    decompressor = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
                continue
            data = decompressor.unconsumed_tail
            if not data:
                break
        if not decompressor.eof:
            raise InputError("corrupt gzip file (truncated)")
    except zlib.error:
        raise InputError("not a valid gzip file") from None
    return bytes(out)


def read_documents(
    sources: Sequence[Source], options: ReadOptions, *, progress: Progress = no_progress
) -> tuple[list[Document], list[Skip]]:
    """Read and decode files; each becomes a document or a skip with its reason."""
    documents: list[Document] = []
    skipped: list[Skip] = []
    for source in progress(sources, desc="read", total=len(sources)):
        try:
            documents.append(
                Document(source.name, decode(read_bytes(source.path, options), options))
            )
        except TooLarge as exc:
            skipped.append(Skip(source.name, str(exc), unreadable=False))
        except InputError as exc:
            skipped.append(Skip(source.name, str(exc)))
    return documents, skipped


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
    """
    documents: list[Document] = []
    skipped: list[Skip] = []
    seen: set[str] = set()
    for number, line in _records(data.splitlines()):
        where = f"{label}:{number}"
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "not valid UTF-8"
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
        raise InputError(f"{path}: {_os_reason(exc)}") from None
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
