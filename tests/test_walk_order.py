"""The walk lists files in the byte order of their names, whatever they hold, once each."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from simdup.inputs.files import ReadOptions
from simdup.inputs.walk import find_files

NAMES = [
    b"a.txt",
    b"a/b.txt",
    b"a/c/d.txt",
    b"a-b.txt",
    b"B.txt",
    b"caf\xc3\xa9.txt",
    b"cafe.txt",
    b"\xe4\xb8\xad.txt",
    b"z/\xef\xbf\xbd.txt",
    b"z/y.txt",
]


def write(root: Path, names: list[bytes]) -> None:
    for raw in names:
        path = os.fsencode(root) + b"/" + raw
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(b"some words here")


@pytest.mark.parametrize("undecodable", [False, True])
def test_files_are_listed_in_the_byte_order_of_their_names(
    tmp_path: Path, undecodable: bool
) -> None:
    # Undecodable bytes become surrogate escapes, which sort after U+FFFD as text but
    # before it (0xEF) as bytes: the order must be the bytes'.
    names = [*NAMES, b"z/\xff.txt", b"\xff\xfe/x.txt"] if undecodable else NAMES
    write(tmp_path, names)
    sources, skipped = find_files([str(tmp_path)], ReadOptions())
    assert skipped == []
    listed = [os.fsencode(s.name) for s in sources]
    assert listed == sorted(os.fsencode(tmp_path) + b"/" + raw for raw in names)


def test_globs_match_the_name_or_the_path_under_the_root(tmp_path: Path) -> None:
    write(tmp_path, NAMES)
    options = ReadOptions(exclude=("a/c/*", "cafe.*", "[B]*"))
    sources, _ = find_files([str(tmp_path)], options)
    kept = {os.path.relpath(s.name, tmp_path) for s in sources}
    assert kept == {"a.txt", "a/b.txt", "a-b.txt", "café.txt", "中.txt", "z/\ufffd.txt", "z/y.txt"}
    only = find_files([str(tmp_path)], ReadOptions(include=("z/*", "a.txt")))[0]
    assert [os.path.relpath(s.name, tmp_path) for s in only] == ["a.txt", "z/y.txt", "z/\ufffd.txt"]


def test_a_file_under_two_roots_is_listed_once_by_its_shorter_name(tmp_path: Path) -> None:
    write(tmp_path, NAMES)
    sources, _ = find_files([str(tmp_path / "a"), str(tmp_path)], ReadOptions())
    names = [os.path.relpath(s.name, tmp_path) for s in sources]
    assert len(names) == len(NAMES)
    assert names.count("a/b.txt") == 1
