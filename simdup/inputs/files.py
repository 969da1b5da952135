"""Read one file into one document: open it safely, read within the limit, decode it.

Every file either becomes a :class:`~simdup.model.Document` or a
:class:`~simdup.model.Skip` with a one-line reason; nothing here raises for a single bad
file. Reading is defensive: files are opened read-only and non-blocking, checked with
``fstat`` after opening (a FIFO, socket or device is never read, so nothing hangs), read
up to ``--max-size`` and no further (gzip streams are decompressed incrementally and
stopped at the limit), and sniffed for binary content before decoding; a byte-order mark
chooses the codec. The table of every case and what happens to it is in
``docs/robustness.md``. The files come from the walk (:mod:`simdup.inputs.walk`).
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import stat
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from simdup.errors import InputError, ParameterError
from simdup.model import BINARY, SMALL, Document, Skip
from simdup.params import DEFAULT_MAX_SIZE
from simdup.progress import Progress, no_progress
from simdup.text.markup import check_text_mode, mode_for, read_text

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
#: The bytes of those characters below 128 (ASCII text is judged on its bytes).
_CONTROL_BYTES = bytes([*range(0x00, 0x08), *range(0x0E, 0x1B), *range(0x1C, 0x20)])

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
        min_size: Smallest file read, in bytes (after gzip decompression); smaller files
            are skipped as too small.
        text: How a file's text is read, one of :data:`~simdup.params.TEXT_MODES`
            (:func:`simdup.text.markup.mode_for`); ``auto`` reads markup by the file's name.
        words: Only the words of the texts are kept (a count drops the texts): markup's
            lines are not folded (:func:`simdup.text.markup.read_text`).
    """

    hidden: bool = False
    follow_symlinks: bool = False
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_size: int = DEFAULT_MAX_SIZE
    encoding: str = "utf-8"
    encoding_errors: str = "replace"
    leave_out: frozenset[tuple[int, int]] = frozenset()
    text: str = "auto"
    min_size: int = 0
    words: bool = False

    def __post_init__(self) -> None:
        if self.max_size < 0:
            raise ParameterError(f"max size must not be negative, got {self.max_size}")
        if self.min_size < 0:
            raise ParameterError(f"min size must not be negative, got {self.min_size}")
        check_text_mode(self.text)
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


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, kw_only=True, slots=True)
class FileState(Source):
    """A file as it was read: the source, its size, time and identity, and what it held.

    Read again later, a file whose state differs has changed since (see
    :func:`simdup.dedupe.files.changed`).

    Attributes:
        size: Size in bytes (``st_size``).
        mtime_ns: Modification time in nanoseconds.
        device: Device number, with ``inode`` the file's identity.
        inode: Inode number.
        digest: :func:`digest` of the bytes read (decompressed for ``.gz``).
    """

    size: int
    mtime_ns: int
    device: int
    inode: int
    digest: bytes


def digest(data: bytes) -> bytes:
    """Return the BLAKE2b digest (16 bytes) that tells a file's bytes apart."""
    import hashlib  # here: only indexes and deduplication keep a file's state

    return hashlib.blake2b(data, digest_size=16).digest()


class TooLarge(InputError):
    """A file over ``--max-size``: skipped by policy, not an error."""


class BinaryFile(InputError):
    """A file that is not text (as ``grep -I`` skips it): skipped by policy, not an error."""


def file_kind(mode: int) -> str:
    """Name the kind of a file that is not a regular file, from its ``st_mode``."""
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"


def os_reason(exc: OSError) -> str:
    """Return a short reason for an OS error, without the path (the caller shows it)."""
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, FileNotFoundError):
        return "vanished before it could be read"
    if exc.errno == errno.ELOOP:
        return "symbolic link loop"
    return (exc.strerror or type(exc).__name__).lower()


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
    if head.isascii() and encoding == "utf-8":  # its characters are its bytes
        if b"\0" in head:
            return True
        if len(head) < BINARY_MIN_SAMPLE:
            return False
        controls = len(head) - len(head.translate(None, _CONTROL_BYTES))
        return controls / len(head) > BINARY_CONTROL_FRACTION
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
        raise BinaryFile("binary file")
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


def file_text(name: str, data: bytes, options: ReadOptions) -> str:
    """Return the text of a file's bytes: decoded, and markup read as ``options.text`` says.

    Raises:
        InputError: as :func:`decode` does.

    >>> file_text("a.html", b"<p>caf&eacute;</p>", ReadOptions())
    'café\\n'
    """
    text = decode(data, options)
    return read_text(text, mode_for(name, options.text, text), words=options.words)


def _read_limited(fd: int, limit: int, size: int = 0) -> bytes:
    """Read a file to its end, or to one byte past ``limit``.

    ``size`` (from ``fstat``): a first read asks for one byte more, and a regular file
    that gives fewer is at its end, without another read (one system call a small file,
    not two). A file that grew since goes on being read.
    """
    chunks = []
    remaining = limit + 1
    want = min(remaining, size + 1, 1 << 20) if size else 0
    while remaining > 0:
        ask = want or min(remaining, 1 << 20)
        chunk = os.read(fd, ask)
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
        if want and len(chunk) < want:
            break
        want = 0
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


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
    return _read_file(path, options, follow_symlinks)[0]


def _read_file(
    path: str, options: ReadOptions, follow_symlinks: bool
) -> tuple[bytes, os.stat_result]:
    """Return :func:`read_bytes` of ``path`` and the ``fstat`` of the file that was read."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if not follow_symlinks and exc.errno == errno.ELOOP:
            raise InputError("became a symbolic link after it was listed (not followed)") from None
        raise InputError(os_reason(exc)) from None
    limit = options.max_size
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"not a regular file ({file_kind(info.st_mode)})")
        if path.lower().endswith(".gz"):
            return gunzip(_chunks(fd), limit), info
        if info.st_size > limit:
            raise TooLarge(f"larger than --max-size ({info.st_size:,} > {limit:,} bytes)")
        data = _read_limited(fd, limit, info.st_size)
    except OSError as exc:
        raise InputError(os_reason(exc)) from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise TooLarge(f"larger than --max-size (grew past {limit:,} bytes while read)")
    return data, info


def _gzip_reader() -> zlib._Decompress:
    return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)


def gunzip(chunks: Iterable[bytes], limit: int | None) -> bytes:
    """Decompress a gzip stream (one or more members), stopping past ``limit`` bytes.

    See :func:`gunzip_blocks`, which this joins.

    >>> import gzip
    >>> gunzip([gzip.compress(b"one "), gzip.compress(b"two")], 100)
    b'one two'
    >>> gunzip([gzip.compress(b"padded"), bytes(512)], 100)
    b'padded'
    >>> gunzip([b"plain text"], 100)
    Traceback (most recent call last):
    ...
    simdup.errors.InputError: not a valid gzip file
    """
    return b"".join(gunzip_blocks(chunks, limit))


def gunzip_blocks(chunks: Iterable[bytes], limit: int | None = None) -> Iterator[bytes]:
    """Yield the decompressed bytes of a gzip stream (one or more members) as they come.

    The one gzip reader of every input, so a damaged stream is described alike wherever
    it is met. Each compressed chunk gives one block at most (more only after the end of
    a member), so small chunks keep the blocks small.

    Args:
        chunks: The compressed bytes, in pieces (read lazily).
        limit: Largest decompressed size accepted (None: no limit).

    Raises:
        TooLarge: the stream decompresses to more than ``limit`` bytes.
        InputError: the stream is empty, not gzip, corrupt or truncated.
    """
    reader = _gzip_reader()
    members = 0
    fed = False
    total = 0
    try:
        for chunk in chunks:
            data = chunk
            while data:
                fed = True
                if reader.eof:  # zero padding (as gzip allows), or another member follows
                    data = data.lstrip(b"\0")
                    if not data:
                        break
                    members += 1
                    reader = _gzip_reader()
                # At most one byte past the limit (0: no limit; never 0 with one).
                out = reader.decompress(data, 0 if limit is None else limit + 1 - total)
                total += len(out)
                if limit is not None and total > limit:
                    raise TooLarge(f"larger than --max-size once decompressed (> {limit:,} bytes)")
                if out:
                    yield out
                data = reader.unused_data if reader.eof else reader.unconsumed_tail
    except zlib.error:
        reason = "corrupt gzip file" if members or total else "not a valid gzip file"
        raise InputError(reason) from None
    if not fed:
        raise InputError("not a valid gzip file (empty)")
    if not reader.eof:
        raise InputError("corrupt gzip file (truncated)")


#: The first bytes of a gzip stream: what tells a compressed JSON Lines input.
GZIP_MAGIC = b"\x1f\x8b"


def decompressed(data: bytes) -> bytes:
    """Return ``data``, decompressed (no size limit) when it starts as a gzip stream does.

    Raises:
        InputError: as :func:`gunzip` does, for a damaged stream.

    >>> import gzip
    >>> decompressed(gzip.compress(b"packed")), decompressed(b"plain")
    (b'packed', b'plain')
    """
    return gunzip([data], None) if data.startswith(GZIP_MAGIC) else data


def read_source(
    source: Source, options: ReadOptions, *, state: bool = False
) -> tuple[Document | Skip, int, FileState | None]:
    """Read and decode one file: its document, or a skip with the reason; and bytes read.

    With ``state``, a file read also gives its :class:`FileState`, taken from that very
    read (the ``fstat`` of the file opened and the digest of the bytes decoded).
    """
    try:
        data, info = _read_file(source.path, options, source.follow_symlinks)
        document = Document(source.name, file_text(source.name, data, options))
        if len(data) < options.min_size:
            reason = f"smaller than --min-size ({len(data):,} < {options.min_size:,} bytes)"
            return Skip(source.name, reason, unreadable=False, kind=SMALL), 0, None
    except TooLarge as exc:
        return Skip(source.name, str(exc), unreadable=False), 0, None
    except BinaryFile as exc:
        return Skip(source.name, str(exc), unreadable=False, kind=BINARY), 0, None
    except InputError as exc:
        return Skip(source.name, str(exc)), 0, None
    if not state:
        return document, len(data), None
    held = FileState(
        source.name,
        source.path,
        source.follow_symlinks,
        size=info.st_size,
        mtime_ns=info.st_mtime_ns,
        device=info.st_dev,
        inode=info.st_ino,
        digest=digest(data),
    )
    return document, len(data), held


def read_documents(
    sources: Sequence[Source], options: ReadOptions, *, progress: Progress = no_progress
) -> tuple[list[Document], list[Skip]]:
    """Read and decode files; each becomes a document or a skip with its reason."""
    documents: list[Document] = []
    skipped: list[Skip] = []
    for source in progress(sources, desc="read", total=len(sources)):
        read, _, _ = read_source(source, options)
        if isinstance(read, Document):
            documents.append(read)
        else:
            skipped.append(read)
    return documents, skipped
