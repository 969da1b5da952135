"""Tables kept between runs: read back when their key matches, built again otherwise."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from simdup import derived
from simdup.text import languages


def _keep(key: str, calls: list[int]) -> dict[str, int]:
    def compute() -> dict[str, int]:
        calls.append(1)
        return {"a": 1, "b": 2}

    return derived.kept("table", key, compute, dict, dict)


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(derived.CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_table_is_built_once_and_read_back(folder: Path) -> None:
    calls: list[int] = []
    assert _keep("k1", calls) == {"a": 1, "b": 2}
    assert _keep("k1", calls) == {"a": 1, "b": 2}
    assert calls == [1]
    assert json.loads((folder / "table.json").read_text())["key"] == "k1"


def test_another_key_builds_it_again(folder: Path) -> None:
    calls: list[int] = []
    _keep("k1", calls)
    _keep("k2", calls)
    assert calls == [1, 1]


@pytest.mark.parametrize("content", ["{not json", '{"key": "k1"}', "[1, 2]", ""])
def test_a_damaged_file_is_built_again(folder: Path, content: str) -> None:
    folder.mkdir()
    (folder / "table.json").write_text(content)
    calls: list[int] = []
    assert _keep("k1", calls) == {"a": 1, "b": 2}
    assert calls == [1]
    assert json.loads((folder / "table.json").read_text())["value"] == {"a": 1, "b": 2}


def test_a_folder_that_cannot_be_written_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv(derived.CACHE_ENV, str(blocked / "cache"))
    calls: list[int] = []
    assert _keep("k1", calls) == {"a": 1, "b": 2}
    assert _keep("k1", calls) == {"a": 1, "b": 2}
    assert calls == [1, 1]
    assert blocked.read_text() == "not a folder"


def test_an_empty_setting_keeps_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(derived.CACHE_ENV, "")
    monkeypatch.chdir(tmp_path)
    assert derived.cache_dir() is None
    calls: list[int] = []
    _keep("k1", calls)
    _keep("k1", calls)
    assert calls == [1, 1]
    assert list(tmp_path.iterdir()) == []


def test_the_default_folder_follows_xdg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(derived.CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere")
    assert derived.cache_dir() == "/somewhere/simdup"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", "/home/u")
    assert derived.cache_dir() == "/home/u/.cache/simdup"


def test_the_kept_table_of_listed_words_is_the_built_one(folder: Path) -> None:
    built = languages._built_table()
    languages._table.cache_clear()
    try:
        first = languages._table()  # built and kept
        languages._table.cache_clear()
        again = languages._table()  # read back
    finally:
        languages._table.cache_clear()
    for table in (first, again):
        assert table.code == built.code
        assert list(table.code) == list(built.code)
        assert table.words == built.words
        for name in languages._TABLE_ARRAYS:
            kept, made = getattr(table, name), getattr(built, name)
            assert kept.dtype == made.dtype
            assert np.array_equal(kept, made)
    assert (folder / "noise-word-table.json").exists()


def test_a_scan_gives_the_same_output_with_and_without_kept_tables(
    tmp_path: Path, sample_corpus: Path, simdup_script: str
) -> None:
    outputs = []
    for setting in ("", str(tmp_path / "c"), str(tmp_path / "c")):  # off, built, read back
        env = {**os.environ, derived.CACHE_ENV: setting}
        done = subprocess.run(
            [simdup_script, "scan", str(sample_corpus), "--format", "jsonl"],
            capture_output=True,
            env=env,
            check=True,
        )
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] == outputs[2]
    assert (tmp_path / "c" / "noise-word-table.json").exists()


@pytest.mark.parametrize(("lo", "hi"), [(0, 0x10000), (0x10000, 0x110000)])
def test_kept_word_ranges_are_the_matched_ones(folder: Path, lo: int, hi: int) -> None:
    from simdup.text import tokens

    matched = tokens._matched_ranges(lo, hi)
    tokens._ranges.cache_clear()
    try:
        first = tokens._ranges(lo, hi)
        tokens._ranges.cache_clear()
        again = tokens._ranges(lo, hi)
    finally:
        tokens._ranges.cache_clear()
    assert first == matched
    assert again == matched
    assert (folder / f"word-ranges-{lo:x}-{hi:x}.json").exists()


def test_a_table_whose_sources_cannot_be_told_is_built_and_not_kept(
    folder: Path, tmp_path: Path
) -> None:
    assert derived.stamp(str(tmp_path / "no-such-module.py")) is None
    calls: list[int] = []

    def compute() -> dict[str, int]:
        calls.append(1)
        return {"a": 1}

    for _ in range(2):
        table: dict[str, int] = derived.kept("table", None, compute, dict, dict)
        assert table == {"a": 1}
    assert calls == [1, 1]
    assert not (folder / "table.json").exists()
