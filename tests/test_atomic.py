"""Outputs appear whole or not at all, through links, in place for special files."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from simdup.atomic import atomic_files, write_atomic


def test_a_file_is_written_from_bytes_or_pieces(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    write_atomic(str(target), b"whole")
    assert target.read_bytes() == b"whole"
    write_atomic(str(target), iter([b"in ", b"pieces"]))
    assert target.read_bytes() == b"in pieces"
    assert os.listdir(tmp_path) == ["out.txt"]


def test_an_existing_file_keeps_its_mode_and_a_link_stays_a_link(tmp_path: Path) -> None:
    target = tmp_path / "real.txt"
    target.write_bytes(b"old")
    target.chmod(0o640)
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    write_atomic(str(link), b"new")
    assert link.is_symlink()
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_failure_half_way_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_bytes(b"old")

    def pieces() -> Iterator[bytes]:
        yield b"half"
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomic(str(target), pieces())
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["out.txt"]


def test_a_special_file_is_written_in_place(tmp_path: Path) -> None:
    write_atomic(os.devnull, b"discarded")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_a_missing_directory_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        write_atomic(str(tmp_path / "absent" / "out.txt"), b"x")


def _write_both(first: Path, second: Path, *, fail: bool) -> None:
    with atomic_files([str(first), str(second)]) as (one, two):
        one.write(b"1")
        two.write(b"2")
        if fail:
            raise RuntimeError("stopped")


def test_several_files_are_renamed_together(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    with pytest.raises(RuntimeError, match="stopped"):
        _write_both(first, second, fail=True)
    assert os.listdir(tmp_path) == []
    _write_both(first, second, fail=False)
    assert (first.read_bytes(), second.read_bytes()) == (b"1", b"2")
