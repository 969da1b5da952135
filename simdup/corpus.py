"""Inputs to documents: directories, files, path lists and JSON Lines, with reported skips.

A scan meets whatever a disk holds, so every input either becomes a :class:`Document` or a
:class:`Skip` with a one-line reason; nothing here raises for a single bad file. Files are
opened read-only and never written. Names are paths as found under the roots the user gave
(``sample_corpus/doc0.txt``), like ``find`` and ``grep`` print them; bytes that are not
valid UTF-8 in a file name are kept losslessly as Python's surrogate escapes.

Each file is counted once, however it was reached: a directory given twice, nested roots
and hard links all resolve to the same device and inode, and one name is kept: the one
with the fewest path components (the least roundabout way to it), then the first in byte
order. So a file is never reported as its own duplicate.

Reading is defensive: files are opened read-only and non-blocking, checked with ``fstat``
after opening (a FIFO, socket or device is never read, so nothing hangs), read up to
``--max-size`` and no further (gzip streams are decompressed incrementally and stopped at
the limit), and sniffed for binary content before decoding. The table of every case and
what happens to it is in ``docs/robustness.md``.
"""

from __future__ import annotations

import codecs
import errno
import fnmatch
import gzip
import json
import os
import re
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

#: A file whose sniffed characters are more than this fraction control characters or
#: undecodable bytes (U+FFFD after decoding) is binary: random bytes decode as UTF-8 to
#: about half replacement characters, Latin-1 or UTF-8 prose to a few percent at most.
BINARY_CONTROL_FRACTION = 0.3

#: Samples shorter than this many characters are judged by NUL characters alone.
BINARY_MIN_SAMPLE = 32

#: Bytes read at a time (and fed to the gzip decompressor at a time).
CHUNK_BYTES = 1 << 20

#: Characters that do not occur in text: C0 controls other than backspace, the white-space
#: controls (tab, line feed, vertical tab, form feed, carriage return) and escape (coloured
#: logs), and U+FFFD, which stands for an undecodable byte.
_NOT_TEXT = re.compile("[\x00-\x07\x0e-\x1a\x1c-\x1f\ufffd]")

#: Codecs that exist but do not decode a text file: they interpret escape sequences or
#: domain-name syntax, or refuse every byte.
_NOT_FILE_ENCODINGS = frozenset(
    {"idna", "punycode", "undefined", "unicode-escape", "raw-unicode-escape", "mbcs", "oem"}
)


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
        leave_out: Files, as (device, inode), that are never read, whatever name reaches
            them: the earlier outputs that this run replaces are not documents.
    """

    hidden: bool = False
    follow_symlinks: bool = False
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_size: int = DEFAULT_MAX_SIZE
    encoding: str = "utf-8"
    encoding_errors: str = "replace"
    leave_out: frozenset[tuple[int, int]] = frozenset()

    def __post_init__(self) -> None:
        if self.max_size < 0:
            raise ParameterError(f"max size must not be negative, got {self.max_size}")
        check_encoding(self.encoding)
        if self.encoding_errors not in ("replace", "strict"):
            raise ParameterError(
                f"encoding errors must be 'replace' or 'strict', got {self.encoding_errors!r}"
            )


def check_encoding(encoding: str) -> None:
    """Refuse a codec that is unknown or does not decode text files.

    Raises:
        ParameterError: naming the codec and suggesting common ones.

    >>> check_encoding("latin-1")
    >>> check_encoding("rot13")
    Traceback (most recent call last):
    ...
    simdup.errors.ParameterError: 'rot13' is not a text file encoding; try utf-8, latin-1 or cp1252
    """
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        raise ParameterError(
            f"unknown encoding {encoding!r}; try utf-8, latin-1 or cp1252"
        ) from None
    try:
        b"a".decode(encoding, errors="replace")
    except LookupError:  # a bytes-to-bytes codec (base64, zlib, rot13)
        name = ""
    except UnicodeError:  # "undefined" refuses every byte; it is refused below
        pass
    if not name or name in _NOT_FILE_ENCODINGS:
        raise ParameterError(
            f"{encoding!r} is not a text file encoding; try utf-8, latin-1 or cp1252"
        )


@dataclass(frozen=True)
class Source:
    """A regular file found by the walk: its display name and the path to open.

    Attributes:
        name: The name shown in results.
        path: The path to open.
        follow_symlinks: Whether the path may be a symbolic link when it is opened. False
            for files met while walking without ``--follow-symlinks``: they were not links
            when listed, and a file swapped for a link before it is read is not followed.
    """

    name: str
    path: str
    follow_symlinks: bool = True


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


@dataclass
class _Frame:
    """A directory being walked: where it is, its identity, and its entries still to visit."""

    directory: str
    relative: str
    key: tuple[int, int]
    entries: Iterator[os.DirEntry[str]]


class _Walker:
    """Collect regular files under roots, remembering skips and visited inodes."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self.sources: list[tuple[Source, tuple[int, int]]] = []
        #: Skips with the (device, inode) of what was skipped, when known: a FIFO or a
        #: broken link reached under two names is reported once.
        self.skipped: list[tuple[Skip, tuple[int, int] | None]] = []
        self._active_dirs: set[tuple[int, int]] = set()

    def skip(self, skip: Skip, key: tuple[int, int] | None = None) -> None:
        self.skipped.append((skip, key))

    def add_root(self, root: str) -> None:
        if "\0" in root:  # from a path list split by lines that was meant for -0
            self.skip(Skip(root, "name contains a NUL byte (NUL-separated list? use -0)"))
            return
        try:
            info = os.stat(root)
        except FileNotFoundError:
            kind = "broken symbolic link" if os.path.islink(root) else "no such file or directory"
            self.skip(Skip(root, kind))
            return
        except OSError as exc:
            self.skip(Skip(root, _os_reason(exc)))
            return
        if stat.S_ISDIR(info.st_mode):
            self._walk(root, info)
        else:
            self._file(root, info, follow_symlinks=True)

    def _file(self, name: str, info: os.stat_result, *, follow_symlinks: bool) -> None:
        if (info.st_dev, info.st_ino) in self.options.leave_out:
            return
        if not stat.S_ISREG(info.st_mode):
            kind = _kind(info.st_mode)
            self.skip(Skip(name, f"not a regular file ({kind})"), (info.st_dev, info.st_ino))
            return
        self.sources.append((Source(name, name, follow_symlinks), (info.st_dev, info.st_ino)))

    def _walk(self, root: str, info: os.stat_result) -> None:
        """Walk a directory tree depth-first in byte order, without recursion.

        An explicit stack, not recursion: a tree thousands of directories deep (which a
        path of 4,096 bytes allows) must not exhaust Python's recursion limit.
        """
        stack: list[_Frame] = []
        self._enter(root, "", info, stack)
        opts = self.options
        while stack:
            frame = stack[-1]
            entry = next(frame.entries, None)
            if entry is None:
                stack.pop()
                self._active_dirs.discard(frame.key)
                continue
            name = os.path.join(frame.directory, entry.name)
            rel = os.path.join(frame.relative, entry.name) if frame.relative else entry.name
            if not opts.hidden and entry.name.startswith("."):
                continue
            if opts.exclude and _matches(opts.exclude, entry.name, rel):
                continue
            entry_key = (frame.key[0], entry.inode())  # the entry itself, not a link's target
            try:
                if entry.is_symlink() and not opts.follow_symlinks:
                    self.skip(
                        Skip(name, "symbolic link (use --follow-symlinks)", unreadable=False),
                        entry_key,
                    )
                    continue
                entry_info = entry.stat(follow_symlinks=True)
            except FileNotFoundError:
                reason = (
                    "broken symbolic link" if os.path.islink(name) else "vanished while listing"
                )
                self.skip(Skip(name, reason), entry_key)
                continue
            except OSError as exc:
                self.skip(Skip(name, _os_reason(exc)), entry_key)
                continue
            if stat.S_ISDIR(entry_info.st_mode):
                self._enter(name, rel, entry_info, stack)
                continue
            if opts.include and not _matches(opts.include, entry.name, rel):
                continue
            self._file(name, entry_info, follow_symlinks=opts.follow_symlinks)

    def _enter(
        self, directory: str, relative: str, info: os.stat_result, stack: list[_Frame]
    ) -> None:
        """List a directory and push it on the walk's stack (unless it is an ancestor)."""
        key = (info.st_dev, info.st_ino)
        if key in self._active_dirs:
            # An ancestor reached again through a link: its files are being read anyway.
            self.skip(
                Skip(directory, "symbolic link loop (directory already scanned)", unreadable=False)
            )
            return
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: os.fsencode(e.name))
        except OSError as exc:
            self.skip(Skip(directory, _os_reason(exc)), key)
            return
        self._active_dirs.add(key)
        stack.append(_Frame(directory, relative, key, iter(entries)))


def _os_reason(exc: OSError) -> str:
    """Return a short reason for an OS error, without the path (the caller shows it)."""
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, FileNotFoundError):
        return "vanished before it could be read"
    if exc.errno == errno.ELOOP:
        return "symbolic link loop"
    return (exc.strerror or type(exc).__name__).lower()


def _preference(name: str) -> tuple[int, bytes]:
    """Rank the names of one file: fewest path components first, then byte order."""
    raw = os.fsencode(name)
    return len([part for part in raw.split(b"/") if part not in (b"", b".")]), raw


def find_files(paths: Iterable[str], options: ReadOptions) -> tuple[list[Source], list[Skip]]:
    """Return the regular files under ``paths`` (sorted by name, each file once) and skips.

    A file reached more than once (a root given twice, nested roots, hard links, links
    followed with ``follow_symlinks``) is kept under one name, see the module docstring.
    """
    walker = _Walker(options)
    for root in paths:
        walker.add_root(root)
    unique: dict[tuple[int, int], Source] = {}
    for source, key in sorted(walker.sources, key=lambda item: _preference(item[0].name)):
        unique.setdefault(key, source)
    ordered = sorted(unique.values(), key=lambda s: os.fsencode(s.name))
    once: dict[object, Skip] = {}
    for skip, skip_key in sorted(walker.skipped, key=lambda item: _preference(item[0].path)):
        once.setdefault(skip if skip_key is None else skip_key, skip)
    skipped = sorted(once.values(), key=lambda s: (os.fsencode(s.path), s.reason))
    return ordered, skipped


def _byte_order_mark(data: bytes) -> tuple[str | None, int]:
    """Return the codec a byte-order mark announces (None without one) and the mark's length.

    >>> _byte_order_mark(b"\\xef\\xbb\\xbfhi")
    ('utf-8', 3)
    >>> _byte_order_mark(b"\\xff\\xfeh\\x00")
    ('utf-16-le', 2)
    """
    for mark, codec in (
        (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE: it starts with the same bytes
        (codecs.BOM_UTF32_BE, "utf-32-be"),
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ):
        if data.startswith(mark):
            return codec, len(mark)
    return None, 0


def _without_mark(encoding: str) -> str:
    """Return the codec for text without a byte-order mark: UTF-16/32 as little-endian.

    Python's ``utf-16`` and ``utf-32`` codecs would pick the machine's byte order, and
    their incremental decoders refuse such text outright; little-endian is what Windows
    writes and keeps fingerprints the same on every machine.

    >>> _without_mark("UTF16"), _without_mark("utf_32"), _without_mark("latin-1")
    ('utf-16-le', 'utf-32-le', 'latin-1')
    """
    name = codecs.lookup(encoding).name
    return {"utf-16": "utf-16-le", "utf-32": "utf-32-le"}.get(name, encoding)


def looks_binary(head: bytes, encoding: str, *, complete: bool = True) -> bool:
    """Tell binary from text by decoding the first bytes of a file.

    A file is binary when its decoded sample holds a NUL character, or when it has at least
    :data:`BINARY_MIN_SAMPLE` characters and more than :data:`BINARY_CONTROL_FRACTION` of
    them are control characters (other than white space and escape) or replacement
    characters for undecodable bytes. Judging the
    decoded text rather than raw bytes keeps UTF-16 text, whose bytes are half NULs, text.

    Args:
        head: The first bytes of the file (after any byte-order mark).
        encoding: The codec the file will be decoded with.
        complete: False when ``head`` is a cut-off prefix: a multi-byte character split
            at the cut is then not counted as undecodable.

    >>> looks_binary(b"plain text\\n", "utf-8")
    False
    >>> looks_binary(b"PK\\x03\\x04\\x00\\x00", "utf-8")
    True
    >>> looks_binary("text".encode("utf-16-le"), "utf-16-le")
    False
    """
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
    try:
        sample = decoder.decode(head, final=complete)
    except UnicodeError:  # a codec that fails even when replacing: decoding will say why
        return False
    if not sample:
        return False
    if "\x00" in sample:
        return True
    if len(sample) < BINARY_MIN_SAMPLE:  # "\xe9t\xe9" is a word of Latin-1, not binary
        return False
    return len(_NOT_TEXT.findall(sample)) / len(sample) > BINARY_CONTROL_FRACTION


def decode(data: bytes, options: ReadOptions) -> str:
    """Decode file bytes, honouring a UTF-8, UTF-16 or UTF-32 byte-order mark.

    Without a mark the bytes are decoded with ``options.encoding``; undecodable bytes
    become U+FFFD, or with ``encoding_errors='strict'`` make the file a skip.

    Raises:
        InputError: the bytes are binary, or undecodable with ``encoding_errors='strict'``.

    >>> decode(b"\\xef\\xbb\\xbfcaf\\xc3\\xa9", ReadOptions())
    'café'
    >>> decode(b"caf\\xe9", ReadOptions())
    'caf\\ufffd'
    >>> decode(b"caf\\xe9", ReadOptions(encoding="latin-1"))
    'café'
    """
    encoding, start = _byte_order_mark(data)
    encoding = encoding or _without_mark(options.encoding)
    if looks_binary(
        data[start : start + SNIFF_BYTES], encoding, complete=len(data) <= start + SNIFF_BYTES
    ):
        raise InputError("binary file")
    try:
        return data[start:].decode(encoding, errors=options.encoding_errors)
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not valid {exc.encoding} (byte 0x{exc.object[exc.start]:02x} at offset "
            f"{start + exc.start}); re-run with --encoding latin-1 or --encoding-errors replace"
        ) from None
    except UnicodeError as exc:  # codecs such as utf-7 can fail without a byte position
        raise InputError(
            f"cannot be decoded as {encoding} ({exc}); re-run with another --encoding"
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


def _chunks(fd: int) -> Iterator[bytes]:
    while chunk := os.read(fd, CHUNK_BYTES):
        yield chunk


def read_bytes(path: str, options: ReadOptions, *, follow_symlinks: bool = True) -> bytes:
    """Return the bytes of a regular file (decompressed if ``.gz``), at most ``max_size``.

    The file is opened read-only and non-blocking and checked with ``fstat`` after opening,
    so a file replaced by a FIFO or device between listing and reading is never read, and
    with ``follow_symlinks=False`` a file replaced by a symbolic link is not followed.
    Reading stops one byte past ``max_size``, so a file that grows while it is read, or a
    gzip stream that decompresses to gigabytes, costs no more than the limit.

    Raises:
        InputError: with a one-line reason (:class:`TooLarge` over the size limit).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if not follow_symlinks and exc.errno == errno.ELOOP:
            raise InputError("became a symbolic link after it was listed (not followed)") from None
        raise InputError(_os_reason(exc)) from None
    limit = options.max_size
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"not a regular file ({_kind(info.st_mode)})")
        if path.lower().endswith(".gz"):
            return gunzip(_chunks(fd), limit)
        if info.st_size > limit:
            raise TooLarge(f"larger than --max-size ({info.st_size:,} > {limit:,} bytes)")
        data = _read_limited(fd, limit)
    except OSError as exc:
        raise InputError(_os_reason(exc)) from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise TooLarge(f"larger than --max-size (grew past {limit:,} bytes while read)")
    return data


def _gzip_reader() -> zlib._Decompress:
    return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)


def gunzip(chunks: Iterable[bytes], limit: int) -> bytes:
    """Decompress a gzip stream (one or more members), stopping past ``limit`` bytes.

    Args:
        chunks: The compressed bytes, in pieces (read lazily).
        limit: Largest decompressed size accepted.

    Raises:
        TooLarge: the stream decompresses to more than ``limit`` bytes.
        InputError: the stream is empty, not gzip, corrupt or truncated.

    >>> import gzip
    >>> gunzip([gzip.compress(b"one "), gzip.compress(b"two")], 100)
    b'one two'
    >>> gunzip([b"plain text"], 100)
    Traceback (most recent call last):
    ...
    simdup.errors.InputError: not a valid gzip file
    """
    out = bytearray()
    reader = _gzip_reader()
    members = 0
    fed = False
    try:
        for chunk in chunks:
            data = chunk
            while data:
                fed = True
                if reader.eof:  # another member follows the one just finished
                    members += 1
                    reader = _gzip_reader()
                out += reader.decompress(data, limit + 1 - len(out))
                if len(out) > limit:
                    raise TooLarge(f"larger than --max-size once decompressed (> {limit:,} bytes)")
                data = reader.unused_data if reader.eof else reader.unconsumed_tail
    except zlib.error:
        reason = "corrupt gzip file" if members or out else "not a valid gzip file"
        raise InputError(reason) from None
    if not fed:
        raise InputError("not a valid gzip file (empty)")
    if not reader.eof:
        raise InputError("corrupt gzip file (truncated)")
    return bytes(out)


def read_documents(
    sources: Sequence[Source], options: ReadOptions, *, progress: Progress = no_progress
) -> tuple[list[Document], list[Skip]]:
    """Read and decode files; each becomes a document or a skip with its reason."""
    documents: list[Document] = []
    skipped: list[Skip] = []
    for source in progress(sources, desc="read", total=len(sources)):
        try:
            data = read_bytes(source.path, options, follow_symlinks=source.follow_symlinks)
            documents.append(Document(source.name, decode(data, options)))
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
