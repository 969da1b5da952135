"""What is read as a document: binary files, too-small documents, markup, recorded features.

Each behaviour is checked through click's runner and through the installed script.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from simdup.cli import cli

TEXT = (
    "Near duplicate detection compares what documents say: the quick brown fox jumps "
    "over the lazy dog while seven wise owls watch the river flow past the old mill.\n"
)


def run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([script, *args], capture_output=True, text=True, timeout=120)


def scan_json(runner: CliRunner, *args: str) -> dict[str, Any]:
    result = runner.invoke(cli, ["scan", "--format", "json", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def skips(data: dict[str, Any]) -> dict[str, str]:
    return {os.path.basename(s["path"]): s["reason"] for s in data["skipped"]}


# -- binary files ---------------------------------------------------------------------------


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """Two copies of a text, a compiled file, a gzip stream of binary, and links."""
    (tmp_path / "a.txt").write_text(TEXT)
    (tmp_path / "b.txt").write_text(TEXT)
    (tmp_path / "mod.pyc").write_bytes(b"\xa7\r\r\n\x00\x00\x00\x00" + TEXT.encode())
    (tmp_path / "blob.gz").write_bytes(gzip.compress(b"\x00\x01" + TEXT.encode()))
    (tmp_path / "text.gz").write_bytes(gzip.compress(TEXT.encode()))
    (tmp_path / "to-pyc.pyc").symlink_to("mod.pyc")
    return tmp_path


def test_binary_files_are_skipped_not_errors(mixed: Path, simdup_script: str) -> None:
    done = run(simdup_script, "scan", "--strict", str(mixed))
    assert done.returncode == 0, done.stderr  # binary files are no failure under --strict
    assert "2 binary file(s) skipped; -v lists them" in done.stderr
    assert "could not be read" not in done.stderr
    verbose = run(simdup_script, "scan", "-v", str(mixed))
    assert "mod.pyc: binary file" in verbose.stderr
    assert "blob.gz: binary file" in verbose.stderr  # judged after gzip decoding
    assert "text.gz: binary" not in verbose.stderr


def test_binary_and_unreadable_counted_apart(mixed: Path, runner: CliRunner) -> None:
    (mixed / "bad.gz").write_bytes(b"not gzip at all")
    result = runner.invoke(cli, ["scan", str(mixed)], catch_exceptions=False)
    assert "1 input(s) could not be read; 2 binary file(s) skipped; -v lists them" in (
        result.stderr
    )
    strict = runner.invoke(cli, ["scan", "--strict", str(mixed)], catch_exceptions=False)
    assert strict.exit_code == 3  # the corrupt gzip file still fails --strict


def test_include_leaves_out_links_it_filters(mixed: Path, runner: CliRunner) -> None:
    data = scan_json(runner, "--include", "*.txt", str(mixed))
    assert data["skipped"] == []  # the .pyc link was never meant to be read
    assert data["stats"]["skipped"] == 0
    linked = scan_json(runner, "--include", "*.pyc", str(mixed))
    assert skips(linked) == {
        "to-pyc.pyc": "symbolic link (use --follow-symlinks)",
        "mod.pyc": "binary file",
    }


# -- match and recorded feature counts --------------------------------------------------------


def test_match_uses_recorded_feature_counts(
    tmp_path: Path, sample_corpus: Path, simdup_script: str
) -> None:
    (tmp_path / "tiny-1.txt").write_text("fox owl\n")
    (tmp_path / "tiny-2.txt").write_text("fox owl\n")
    paths = [
        *sorted(str(p) for p in sample_corpus.glob("*.txt")),
        str(tmp_path / "tiny-1.txt"),
        str(tmp_path / "tiny-2.txt"),
    ]
    listing = tmp_path / "fp.jsonl"
    made = run(simdup_script, "fingerprint", "--min-features", "0", "--format", "jsonl", *paths)
    listing.write_text(made.stdout)
    done = run(simdup_script, "match", "--format", "json", str(listing))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    flagged = {
        (os.path.basename(p["a"]), os.path.basename(p["b"])): p["few_features"]
        for p in data["pairs"]
    }
    assert flagged[("tiny-1.txt", "tiny-2.txt")] is True
    assert flagged[("doc0.txt", "doc6.txt")] is False  # 40 features recorded
    assert data["stats"]["few_features"] == 2
    table = run(simdup_script, "match", str(listing))
    lines = table.stdout.splitlines()
    assert [line.endswith("n/a *") for line in lines if "tiny-1.txt" in line] == [True]
    assert [line.endswith("n/a") for line in lines if "doc0.txt" in line and "doc6" in line] == [
        True
    ]


def test_match_without_recorded_counts_flags_nothing(
    tmp_path: Path, sample_corpus: Path, runner: CliRunner
) -> None:
    paths = sorted(str(p) for p in sample_corpus.glob("*.txt"))
    listing = tmp_path / "fp.txt"
    listing.write_text(runner.invoke(cli, ["fingerprint", *paths]).stdout)
    result = runner.invoke(cli, ["match", str(listing)], catch_exceptions=False)
    assert "*" not in result.stdout
    assert "estimate unreliable" not in result.stderr
