"""Reading inputs: walking, decoding, gzip, JSON Lines, and every way a file can be bad."""

from __future__ import annotations

import codecs
import contextlib
import errno
import gzip
import json
import os
import random
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simdup.errors import InputError, ParameterError
from simdup.inputs import files, gather
from simdup.inputs.files import (
    CHUNK_BYTES,
    ReadOptions,
    Source,
    TooLarge,
    check_encoding,
    decode,
    gunzip,
    looks_binary,
    read_bytes,
    read_documents,
)
from simdup.inputs.gather import load_corpus
from simdup.inputs.jsonl import JsonlOptions, read_jsonl, read_jsonl_input
from simdup.inputs.walk import find_files
from simdup.text.normalize import MAX_TOKEN_LENGTH
from simdup.text.tokens import tokenize

DEFAULT = ReadOptions()
TEXT = "The quick brown fox jumps over the lazy dog by the river bank at dawn.\n"


@contextlib.contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Fail instead of hanging: a blocking open() or read() is interrupted by SIGALRM."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"still blocked after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def names(sources: list[Source]) -> list[str]:
    return [s.name for s in sources]


def reasons(skips: list[Any]) -> dict[str, str]:
    return {s.path: s.reason for s in skips}


# --- decoding -------------------------------------------------------------------------------


def test_invalid_utf8_is_replaced_by_default() -> None:
    text = decode(b"caf\xe9 au lait", DEFAULT)
    assert text == "caf\ufffd au lait"
    assert tokenize(text) == ["caf", "au", "lait"]


def test_encoding_option_chooses_the_codec() -> None:
    assert decode(b"caf\xe9", ReadOptions(encoding="latin-1")) == "café"
    assert decode("Grüße".encode("cp1252"), ReadOptions(encoding="cp1252")) == "Grüße"


def test_strict_encoding_errors_name_the_byte_and_offset() -> None:
    with pytest.raises(InputError, match=r"byte 0xe9 at offset 3.*--encoding latin-1"):
        decode(b"caf\xe9 au lait", ReadOptions(encoding_errors="strict"))
    assert decode(b"plain", ReadOptions(encoding_errors="strict")) == "plain"


@pytest.mark.parametrize(
    "codec", ["utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-be"]
)
def test_byte_order_marks_are_honoured(codec: str) -> None:
    bom = {
        "utf-16-le": codecs.BOM_UTF16_LE,
        "utf-16-be": codecs.BOM_UTF16_BE,
        "utf-32-be": codecs.BOM_UTF32_BE,
    }.get(codec, b"")
    data = bom + "Grüße, 世界! naïve text".encode(codec)
    assert data[:2] in (b"\xef\xbb", b"\xff\xfe", b"\xfe\xff", b"\x00\x00")
    # whatever --encoding says, the mark wins, and strict decoding finds nothing wrong
    options = ReadOptions(encoding="latin-1", encoding_errors="strict")
    assert decode(data, options) == "Grüße, 世界! naïve text"


def test_utf16_without_a_mark_is_read_with_encoding_option() -> None:
    data = "plain words in utf sixteen".encode("utf-16-le")
    with pytest.raises(InputError, match="binary"):  # NUL bytes under the default utf-8
        decode(data, DEFAULT)
    assert decode(data, ReadOptions(encoding="utf-16-le")) == "plain words in utf sixteen"
    # "utf-16" without a mark: little-endian on every machine, never a UnicodeError
    assert decode(data, ReadOptions(encoding="utf-16")) == "plain words in utf sixteen"
    with pytest.raises(InputError, match="binary"):
        decode(b"\x00" * 80, ReadOptions(encoding="utf-16"))


def test_strict_error_offset_counts_the_byte_order_mark() -> None:
    with pytest.raises(InputError, match="offset 5"):
        decode(codecs.BOM_UTF8 + b"ab\xff", ReadOptions(encoding_errors="strict"))
    assert decode(b"\xe9t\xe9", DEFAULT) == "\ufffdt\ufffd"  # short Latin-1, not binary


@pytest.mark.parametrize(
    "data",
    [
        b"hello world\x00\x00\x00binary tail",
        bytes(range(1, 32)) * 40,
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        bytes(random.Random(5).choice(range(1, 256)) for _ in range(4000)),  # no NUL at all
    ],
    ids=["nul", "controls", "png", "random-bytes-without-nul"],
)
def test_binary_files_are_refused(data: bytes) -> None:
    assert b"\x00" not in data[:0]
    with pytest.raises(InputError, match="binary file"):
        decode(data, DEFAULT)


@pytest.mark.parametrize(
    "data",
    [
        TEXT.encode(),
        ("Ceci est un texte en français: été, déjà, où, garçon. " * 20).encode("latin-1"),
        b"\x1b[31mcoloured\x1b[0m log line\n\ttabbed\r\n\fform feed",
        "日本語のテキストです。".encode() * 30,
        b"",
    ],
    ids=["ascii", "latin1-read-as-utf8", "ansi-log", "cjk", "empty"],
)
def test_text_is_not_mistaken_for_binary(data: bytes) -> None:
    assert not looks_binary(data[:8192], "utf-8", complete=len(data) <= 8192)
    decode(data, DEFAULT)


@given(
    head=st.one_of(
        st.binary(max_size=200).map(lambda b: bytes(x & 0x7F for x in b)),
        st.lists(  # letters, white space and escape among control characters, no NUL
            st.sampled_from([b"a", b" ", b"\n", b"\t", b"\x1b", b"\x01", b"\x0e", b"\x1f"]),
            min_size=24,
            max_size=120,
        ).map(b"".join),
    ),
    complete=st.booleans(),
)
def test_ascii_is_judged_on_its_bytes_as_on_its_decoded_characters(
    head: bytes, complete: bool
) -> None:
    # "utf8" names the same codec and takes the decoding road; "utf-8" judges ASCII bytes.
    assert looks_binary(head, "utf-8", complete=complete) == looks_binary(
        head, "utf8", complete=complete
    )


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 70_000])
def test_a_file_is_read_whole_in_one_read_or_more(tmp_path: Path, size: int) -> None:
    data = bytes(random.Random(size).choice(range(32, 127)) for _ in range(size))
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    assert read_bytes(str(path), DEFAULT) == data
    small = ReadOptions(max_size=max(0, size - 1))
    if size:
        with pytest.raises(TooLarge):
            read_bytes(str(path), small)


def test_a_file_that_grew_since_its_size_was_taken_is_read_to_its_end(tmp_path: Path) -> None:
    path = tmp_path / "grows.txt"
    path.write_bytes(b"a" * 100)
    fd = os.open(path, os.O_RDONLY)
    try:
        with open(path, "ab") as more:
            more.write(b"b" * 50)
        assert files._read_limited(fd, 1000, 100) == b"a" * 100 + b"b" * 50
    finally:
        os.close(fd)
    fd = os.open(path, os.O_RDONLY)
    try:  # one byte past the limit at most, whatever the size said
        assert len(files._read_limited(fd, 120, 100)) == 121
    finally:
        os.close(fd)


def test_a_multibyte_character_cut_by_the_sniff_window_does_not_count() -> None:
    data = ("é" * 10_000).encode()  # the sniff cuts at an odd byte, inside a character
    assert not looks_binary(data[: files.SNIFF_BYTES - 1], "utf-8", complete=False)
    assert decode(data, ReadOptions(encoding_errors="strict")) == "é" * 10_000


@pytest.mark.parametrize("codec", ["rot13", "base64", "hex", "zlib", "idna", "unicode_escape"])
def test_codecs_that_do_not_decode_text_files_are_refused(codec: str) -> None:
    with pytest.raises(ParameterError, match=f"{codec!r} is not a text file encoding"):
        ReadOptions(encoding=codec)


def test_unknown_codec_is_refused_with_suggestions() -> None:
    with pytest.raises(ParameterError, match="unknown encoding 'klingon'; try utf-8"):
        check_encoding("klingon")
    with pytest.raises(ParameterError, match="'sometimes'"):
        ReadOptions(encoding_errors="sometimes")
    with pytest.raises(ParameterError, match="-1"):
        ReadOptions(max_size=-1)


def test_utf7_decoding_errors_become_input_errors() -> None:
    with pytest.raises(InputError):
        decode(b"+AAA-\x80", ReadOptions(encoding="utf-7", encoding_errors="strict"))


# --- reading files --------------------------------------------------------------------------


def test_max_size_skips_large_files_by_policy(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text(TEXT * 100)
    (tmp_path / "small.txt").write_text(TEXT)
    documents, skipped = load_corpus([str(tmp_path)], ReadOptions(max_size=1000))
    assert [Path(d.name).name for d in documents] == ["small.txt"]
    assert len(skipped) == 1
    assert skipped[0].path.endswith("big.txt")
    assert skipped[0].reason.startswith("larger than --max-size (7,")
    assert skipped[0].unreadable is False  # a policy skip: --strict does not fail on it


def test_a_file_growing_while_read_stops_at_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "growing.txt"
    path.write_text(TEXT * 100)
    real_fstat = os.fstat

    def fstat_when_listed(fd: int) -> os.stat_result:  # the size it had when listed
        info = real_fstat(fd)
        return os.stat_result((info.st_mode, *info[1:6], 10, *info[7:]))

    reads: list[int] = []
    real_read = os.read

    def counting_read(fd: int, size: int) -> bytes:
        reads.append(size)
        return real_read(fd, size)

    monkeypatch.setattr(os, "fstat", fstat_when_listed)
    monkeypatch.setattr(os, "read", counting_read)
    with pytest.raises(TooLarge, match="grew past 1,000 bytes"):
        read_bytes(str(path), ReadOptions(max_size=1000))
    assert sum(reads) <= 1001


def test_a_single_line_of_megabytes_is_read_and_tokenised(tmp_path: Path) -> None:
    words = [f"w{i % 5000}" for i in range(700_000)]
    path = tmp_path / "one-line.txt"
    path.write_text(" ".join(words))  # about 4 MB, no newline
    assert path.stat().st_size > 4_000_000
    started = time.perf_counter()
    documents, skipped = load_corpus([str(path)], DEFAULT)
    tokens = tokenize(documents[0].text)
    assert skipped == []
    assert len(tokens) == 700_000
    assert time.perf_counter() - started < 20


def test_a_million_character_token_is_capped() -> None:
    text = "start " + "x" * 1_000_000 + " end"
    started = time.perf_counter()
    tokens = tokenize(text)
    assert tokens == ["start", "x" * MAX_TOKEN_LENGTH, "end"]
    assert time.perf_counter() - started < 5


def test_permission_denied_is_a_skip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests run as root, which ignores file modes: make the system call itself refuse.
    (tmp_path / "open.txt").write_text(TEXT)
    (tmp_path / "secret.txt").write_text(TEXT)
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "inner.txt").write_text(TEXT)
    real_open, real_scandir = os.open, os.scandir

    def refusing_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if str(path).endswith("secret.txt"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    def refusing_scandir(path: Any) -> Any:
        if str(path).endswith("locked"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "open", refusing_open)
    monkeypatch.setattr(os, "scandir", refusing_scandir)
    documents, skipped = load_corpus([str(tmp_path)], DEFAULT)
    assert [Path(d.name).name for d in documents] == ["open.txt"]
    assert reasons(skipped) == {
        str(tmp_path / "locked"): "permission denied",
        str(tmp_path / "secret.txt"): "permission denied",
    }
    assert all(s.unreadable for s in skipped)


def test_a_file_vanishing_between_listing_and_reading(tmp_path: Path) -> None:
    (tmp_path / "stays.txt").write_text(TEXT)
    (tmp_path / "goes.txt").write_text(TEXT)
    sources, _ = find_files([str(tmp_path)], DEFAULT)
    assert len(sources) == 2
    (tmp_path / "goes.txt").unlink()
    documents, unread = read_documents(sources, DEFAULT)
    assert [Path(d.name).name for d in documents] == ["stays.txt"]
    assert reasons(unread) == {str(tmp_path / "goes.txt"): "vanished before it could be read"}


class _Listing:
    """What os.scandir returns, for a listing taken before a file disappears."""

    def __init__(self, entries: list[os.DirEntry[str]]) -> None:
        self.entries = entries

    def __enter__(self) -> list[os.DirEntry[str]]:
        return self.entries

    def __exit__(self, *exc: object) -> None:
        return None


def test_a_file_vanishing_while_listing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "stays.txt").write_text(TEXT)
    (tmp_path / "goes.txt").write_text(TEXT)
    real_scandir = os.scandir

    def list_then_delete(path: Any) -> _Listing:
        with real_scandir(path) as it:
            entries = list(it)
        (tmp_path / "goes.txt").unlink(missing_ok=True)
        return _Listing(entries)

    monkeypatch.setattr(os, "scandir", list_then_delete)
    sources, skipped = find_files([str(tmp_path)], DEFAULT)
    assert names(sources) == [str(tmp_path / "stays.txt")]
    assert reasons(skipped) == {str(tmp_path / "goes.txt"): "vanished while listing"}


def test_a_file_replaced_by_a_fifo_after_listing_is_not_opened_for_reading(
    tmp_path: Path,
) -> None:
    (tmp_path / "swapped.txt").write_text(TEXT)
    sources, _ = find_files([str(tmp_path)], DEFAULT)
    (tmp_path / "swapped.txt").unlink()
    os.mkfifo(tmp_path / "swapped.txt")
    with deadline(5):
        documents, unread = read_documents(sources, DEFAULT)
    assert documents == []
    assert reasons(unread) == {
        str(tmp_path / "swapped.txt"): "not a regular file (named pipe (FIFO))"
    }


def test_a_file_replaced_by_a_link_after_listing_is_not_followed(tmp_path: Path) -> None:
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "key.txt").write_text("private words only the owner should see")
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "a.txt").write_text(TEXT)
    sources, _ = find_files([str(tmp_path / "tree")], DEFAULT)
    (tmp_path / "tree" / "a.txt").unlink()
    (tmp_path / "tree" / "a.txt").symlink_to(tmp_path / "secret" / "key.txt")
    documents, unread = read_documents(sources, DEFAULT)
    assert documents == []
    assert "symbolic link" in unread[0].reason
    # with --follow-symlinks a link is what the user asked to read
    follow = ReadOptions(follow_symlinks=True)
    sources, _ = find_files([str(tmp_path / "tree")], follow)
    assert [d.text for d in read_documents(sources, follow)[0]] == [
        "private words only the owner should see"
    ]


def test_special_files_are_never_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")  # opening a FIFO without a writer would block
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "sock"))
    (tmp_path / "text.txt").write_text(TEXT)
    try:
        with deadline(5):
            documents, skipped = load_corpus(
                [str(tmp_path), str(tmp_path / "pipe"), "/dev/null"], DEFAULT
            )
    finally:
        server.close()
    assert [Path(d.name).name for d in documents] == ["text.txt"]
    assert reasons(skipped) == {
        str(tmp_path / "pipe"): "not a regular file (named pipe (FIFO))",
        str(tmp_path / "sock"): "not a regular file (socket)",
        "/dev/null": "not a regular file (device)",
    }


def test_a_directory_opened_as_a_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"not a regular file \(directory\)"):
        read_bytes(str(tmp_path), DEFAULT)


# --- walking --------------------------------------------------------------------------------


def make_tree(root: Path) -> None:
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "z.txt").write_text(TEXT)  # sorts after sub/: the short name must win on its own
    (root / "sub" / "b.txt").write_text(TEXT + "more")
    (root / "sub" / "deeper" / "c.txt").write_text(TEXT + "else")


def test_directories_given_twice_or_nested_yield_each_file_once(tmp_path: Path) -> None:
    make_tree(tmp_path)
    once, _ = find_files([str(tmp_path)], DEFAULT)
    for roots in (
        [tmp_path, tmp_path],
        [tmp_path, tmp_path / "sub"],
        [tmp_path / "sub" / "deeper", tmp_path, tmp_path / "sub"],
        [tmp_path / "z.txt", tmp_path, tmp_path / "z.txt"],
    ):
        again, skipped = find_files([str(r) for r in roots], DEFAULT)
        assert names(again) == names(once)
        assert skipped == []


def test_a_tree_deeper_than_the_recursion_limit(tmp_path: Path) -> None:
    depth = 1200  # deeper than Python's default recursion limit of 1000
    parent = os.open(tmp_path, os.O_RDONLY)
    for _ in range(depth):  # relative to the parent: no path lookup of 1,200 components
        os.mkdir("d", dir_fd=parent)
        child = os.open("d", os.O_RDONLY, dir_fd=parent)
        os.close(parent)
        parent = child
    bottom = os.open("bottom.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=parent)
    os.write(bottom, TEXT.encode())
    os.close(bottom)
    os.close(parent)
    try:
        documents, skipped = load_corpus([str(tmp_path)], DEFAULT)
    finally:  # pytest's own clean-up recurses, and would fail on this tree
        subprocess.run(["rm", "-rf", str(tmp_path / "d")], check=True)
    assert skipped == []
    assert [d.name.count("/d") for d in documents] == [depth]
    assert documents[0].text == TEXT


def test_one_file_under_two_names_is_kept_once(tmp_path: Path) -> None:
    make_tree(tmp_path)
    os.link(tmp_path / "z.txt", tmp_path / "sub" / "hard-link.txt")
    sources, _ = find_files([str(tmp_path)], DEFAULT)
    kept = [s.name for s in sources if s.name.endswith(("z.txt", "hard-link.txt"))]
    assert kept == [str(tmp_path / "z.txt")]  # the shorter path wins


def test_symlink_loops_with_follow_symlinks_end(tmp_path: Path) -> None:
    make_tree(tmp_path)
    (tmp_path / "sub" / "deeper" / "up").symlink_to("../..")  # back to the root
    (tmp_path / "self").symlink_to("self")  # a link to itself
    follow = ReadOptions(follow_symlinks=True)
    with deadline(10):
        sources, skipped = find_files([str(tmp_path), str(tmp_path / "sub")], follow)
    assert names(sources) == [
        str(tmp_path / "sub" / "b.txt"),
        str(tmp_path / "sub" / "deeper" / "c.txt"),
        str(tmp_path / "z.txt"),  # not sub/deeper/up/z.txt, which sorts first
    ]
    found = reasons(skipped)
    assert found[str(tmp_path / "self")] == "symbolic link loop"
    assert found[str(tmp_path / "sub" / "deeper" / "up")].startswith("symbolic link loop")
    loops = [s for s in skipped if s.path.endswith("up")]
    assert all(not s.unreadable for s in loops)  # the directory is read anyway


def test_links_are_skipped_unless_followed(tmp_path: Path) -> None:
    make_tree(tmp_path)
    (tmp_path / "link.txt").symlink_to(tmp_path / "z.txt")
    (tmp_path / "broken").symlink_to(tmp_path / "nowhere")
    sources, skipped = find_files([str(tmp_path)], DEFAULT)
    assert str(tmp_path / "link.txt") not in names(sources)
    assert reasons(skipped)[str(tmp_path / "link.txt")] == "symbolic link (use --follow-symlinks)"
    followed, skipped = find_files([str(tmp_path)], ReadOptions(follow_symlinks=True))
    assert len(followed) == 3  # z.txt once: under link.txt, equally short and first in order
    assert str(tmp_path / "link.txt") in names(followed)
    assert str(tmp_path / "z.txt") not in names(followed)
    assert reasons(skipped) == {str(tmp_path / "broken"): "broken symbolic link"}
    _, skipped = find_files([str(tmp_path / "broken")], DEFAULT)
    assert reasons(skipped) == {str(tmp_path / "broken"): "broken symbolic link"}


def test_a_fifo_reached_twice_is_reported_once(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    os.mkfifo(tmp_path / "d" / "pipe")
    _, skipped = find_files([str(tmp_path), str(tmp_path / "d"), str(tmp_path)], DEFAULT)
    assert [s.path for s in skipped] == [str(tmp_path / "d" / "pipe")]


def test_a_name_with_a_nul_byte_is_a_skip(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(TEXT)
    listed = gather.read_path_list(os.fsencode(tmp_path / "a.txt") + b"\0other\n")  # not -0
    sources, skipped = find_files(listed, DEFAULT)
    assert sources == []
    assert [s.reason for s in skipped] == ["name contains a NUL byte (NUL-separated list? use -0)"]


def test_undecodable_file_names_are_kept_losslessly(tmp_path: Path) -> None:
    raw = os.fsencode(tmp_path) + b"/caf\xe9-\xff\x80.txt"
    with open(raw, "wb") as handle:
        handle.write(TEXT.encode())
    documents, skipped = load_corpus([str(tmp_path)], DEFAULT)
    assert skipped == []
    assert os.fsencode(documents[0].name) == raw
    assert "\udce9" in documents[0].name


# --- gzip -----------------------------------------------------------------------------------


def test_gzip_files_are_decompressed(tmp_path: Path) -> None:
    path = tmp_path / "a.txt.gz"
    path.write_bytes(gzip.compress(TEXT.encode()) + gzip.compress(b"second member"))
    assert read_bytes(str(path), DEFAULT) == TEXT.encode() + b"second member"


def test_zero_padding_after_a_gzip_member_is_ignored_as_gzip_ignores_it(tmp_path: Path) -> None:
    path = tmp_path / "padded.txt.gz"
    path.write_bytes(gzip.compress(TEXT.encode()) + bytes(1024) + gzip.compress(b" more"))
    assert read_bytes(str(path), DEFAULT) == gzip.decompress(path.read_bytes())
    records = tmp_path / "padded.jsonl.gz"
    line = json.dumps({"id": "a", "text": TEXT}) + "\n"
    records.write_bytes(gzip.compress(line.encode()) + bytes(512))
    documents, skipped = read_jsonl_input(str(records), JsonlOptions())
    assert [(d.name, d.text) for d in documents] == [("a", TEXT)]
    assert skipped == []


BAD_GZIP = [
    (b"this is not gzip at all", "not a valid gzip file"),
    (gzip.compress(TEXT.encode() * 50)[:40], "corrupt gzip file (truncated)"),
    (b"", "not a valid gzip file (empty)"),
    (b"\x1f\x8b\x08\x00" + b"\xff" * 100, "not a valid gzip file"),
    (gzip.compress(TEXT.encode()) + b"trailing junk", "corrupt gzip file"),
]
BAD_GZIP_IDS = ["not-gzip", "truncated", "empty", "bad-deflate", "trailing-garbage"]


@pytest.mark.parametrize(("data", "reason"), BAD_GZIP, ids=BAD_GZIP_IDS)
def test_bad_gzip_files_are_skipped(tmp_path: Path, data: bytes, reason: str) -> None:
    path = tmp_path / "bad.txt.gz"
    path.write_bytes(data)
    documents, skipped = load_corpus([str(path)], DEFAULT)
    assert documents == []
    assert reasons(skipped) == {str(path): reason}


def test_a_gzip_bomb_stops_at_the_limit() -> None:
    bomb = gzip.compress(b"\0" * (64 * CHUNK_BYTES), compresslevel=9)  # ~64 KiB -> 64 MiB
    pieces = [bomb[i : i + 4096] for i in range(0, len(bomb), 4096)]
    consumed = 0

    def lazily() -> Iterator[bytes]:
        nonlocal consumed
        for piece in pieces:
            consumed += 1
            yield piece

    with pytest.raises(TooLarge, match="once decompressed"):
        gunzip(lazily(), 1_000_000)
    assert consumed < len(pieces) // 4  # stopped early, not after inflating everything


# --- JSON Lines -----------------------------------------------------------------------------


def test_malformed_jsonl_lines_are_reported_by_line_and_the_rest_read() -> None:
    lines = [
        json.dumps({"id": "first", "text": TEXT}),
        "",
        "{not json",
        json.dumps(["a", "list"]),
        json.dumps({"id": "no-text"}),
        json.dumps({"id": "number", "text": 42}),
        "[" * 100_000,
        '{"id": ' + "9" * 5000 + ', "text": "x"}',
        b"\xff\xfe not utf-8".decode("latin-1"),
        json.dumps({"id": "first", "text": "again"}),
        json.dumps({"id": "last", "text": TEXT}),
    ]
    data = "\n".join(lines).encode("latin-1")
    documents, skipped = read_jsonl("c.jsonl", data, JsonlOptions())
    assert [d.name for d in documents] == ["first", "last"]
    found = reasons(skipped)
    assert list(found) == [f"c.jsonl:{n}" for n in (3, 4, 5, 6, 7, 8, 9, 10)]
    assert found["c.jsonl:3"].startswith("not valid JSON (Expecting property name")
    assert found["c.jsonl:4"] == "not a JSON object"
    assert found["c.jsonl:5"] == "text field 'text' is missing"
    assert found["c.jsonl:6"] == "text field 'text' is not a string"
    assert found["c.jsonl:7"] == "not valid JSON (nested too deeply)"
    assert found["c.jsonl:8"].startswith("not valid JSON (Exceeds the limit")
    assert found["c.jsonl:9"].startswith("not valid JSON")
    assert found["c.jsonl:10"] == "duplicate id 'first'"
    assert all(s.unreadable for s in skipped)


def test_jsonl_with_a_byte_order_mark_and_crlf_line_ends() -> None:
    data = codecs.BOM_UTF8 + b'{"id": "a", "text": "x"}\r\n{"id": "b", "text": "y"}\r\n'
    documents, skipped = read_jsonl("x", data, JsonlOptions())
    assert [(d.name, d.text) for d in documents] == [("a", "x"), ("b", "y")]
    assert skipped == []


def test_jsonl_ids_of_other_types_and_missing_ids() -> None:
    data = b'{"id": 7, "text": "a"}\n{"text": "b"}\n{"id": null, "text": "c"}\n'
    data += b'{"id": [1], "text": "d"}'
    documents, skipped = read_jsonl("x", data, JsonlOptions())
    assert [d.name for d in documents] == ["7", "2", "3", "4"]
    assert skipped == []


@pytest.mark.parametrize(("data", "reason"), BAD_GZIP, ids=BAD_GZIP_IDS)
def test_a_damaged_gzip_json_lines_input_is_worded_as_a_file_is(
    tmp_path: Path, data: bytes, reason: str
) -> None:
    """JSON Lines inputs are gzip when they start as gzip does, whatever their name."""
    path = tmp_path / "c.jsonl"
    path.write_bytes(data)
    if not data.startswith(b"\x1f\x8b"):
        assert read_jsonl_input(str(path), JsonlOptions())[0] == []
        return
    with pytest.raises(InputError) as caught:
        read_jsonl_input(str(path), JsonlOptions())
    assert str(caught.value) == f"{path}: {reason}"


def test_corrupt_gzip_jsonl_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"text": "a"}\n' * 100)[:30])
    with pytest.raises(InputError, match="corrupt gzip file"):
        read_jsonl_input(str(path), JsonlOptions())


# --- generated inputs -----------------------------------------------------------------------

ENCODINGS = st.sampled_from(
    ["utf-8", "latin-1", "cp1252", "utf-16", "utf-16-le", "utf-7", "gb18030"]
)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=400), encoding=ENCODINGS, strict=st.booleans())
def test_any_bytes_decode_or_are_refused_with_a_reason(
    data: bytes, encoding: str, strict: bool
) -> None:
    options = ReadOptions(encoding=encoding, encoding_errors="strict" if strict else "replace")
    try:
        text = decode(data, options)
    except InputError as exc:
        reason = str(exc)
    else:
        assert decode(data, options) == text
        assert tokenize(text) == tokenize(text)
        return
    assert reason
    assert "\n" not in reason


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=300))
def test_any_bytes_as_jsonl_give_documents_or_skips(data: bytes) -> None:
    documents, skipped = read_jsonl("x", data, JsonlOptions())
    assert len(documents) + len(skipped) <= max(1, data.count(b"\n") + data.count(b"\r") + 1)
    assert all(s.path.startswith("x:") for s in skipped)


@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=200), cut=st.integers(0, 300), flip=st.integers(0, 300))
def test_damaged_gzip_streams_only_raise_input_errors(body: bytes, cut: int, flip: int) -> None:
    stream = bytearray(gzip.compress(body))
    if flip < len(stream):
        stream[flip] ^= 0x55
    try:
        out = gunzip([bytes(stream[:cut])], 1000)
    except InputError as exc:
        reason = str(exc)
    else:
        assert len(out) <= 1000
        return
    assert reason
