"""Several JSON Lines inputs: globs, gzip, URLs, one name per file, a fixed order."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import fsspec  # type: ignore[import-untyped,unused-ignore]
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from simdup.cli import cli
from simdup.errors import InputError, ParameterError
from simdup.inputs.jsonl import JsonlOptions, expand_jsonl, read_jsonl_input

TEXTS = [
    "the quick brown fox jumps over the lazy dog near the river bank today",
    "the quick brown fox jumps over the lazy dog near the river bank again",
    "a completely different sentence about databases and query planners",
    "a completely different sentence about databases and query optimizers",
    "nothing alike here: sailing boats, harbours and a windy afternoon",
]


def _write(path: Path, records: Sequence[Mapping[str, object]], *, packed: bool = False) -> Path:
    data = "".join(json.dumps(r) + "\n" for r in records).encode()
    path.write_bytes(gzip.compress(data) if packed else data)
    return path


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two shards (one gzip) whose near duplicates cross files, and an id in both."""
    root = tmp_path_factory.mktemp("shards")
    _write(root / "part-a.jsonl", [{"id": f"a{k}", "text": t} for k, t in enumerate(TEXTS[:3])])
    second = [{"id": f"b{k}", "text": t} for k, t in enumerate(TEXTS[3:])]
    second.append({"id": "a0", "text": "an id already used by the first shard"})
    _write(root / "part-b.jsonl.gz", second, packed=True)
    (root / "notes.txt").write_text("not a shard")
    return root


def _scan(runner: CliRunner, *args: str) -> dict[str, Any]:
    result = runner.invoke(cli, ["scan", "--format", "json", "-v", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def test_a_glob_names_the_matching_files_sorted(shards: Path) -> None:
    found = expand_jsonl([str(shards / "part-*")])
    assert found == [str(shards / "part-a.jsonl"), str(shards / "part-b.jsonl.gz")]
    assert expand_jsonl([str(shards / "**" / "*.jsonl")]) == [str(shards / "part-a.jsonl")]


def test_each_file_is_named_once_whatever_the_spelling(
    shards: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(shards)
    found = expand_jsonl(["part-b.jsonl.gz", "./part-a.jsonl", "part-*", "-", "-"])
    assert found == ["./part-a.jsonl", "part-b.jsonl.gz", "-"]


def test_the_order_of_the_names_given_changes_nothing(shards: Path) -> None:
    expected = [str(shards / "part-a.jsonl"), str(shards / "part-b.jsonl.gz"), "-"]

    @given(st.permutations(["part-b.jsonl.gz", "part-a.jsonl", "part-?.jsonl", "-", "part-*"]))
    @settings(max_examples=20, deadline=None)
    def check(order: list[str]) -> None:
        assert expand_jsonl([n if n == "-" else str(shards / n) for n in order]) == expected

    check()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("nothing-*.jsonl", "no file matches"),
        ("missing.jsonl", "does not exist"),
        (".", "is a directory"),
    ],
)
def test_a_name_that_reads_nothing_is_refused(
    name: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ParameterError, match=message):
        expand_jsonl([name])


def test_memory_and_file_urls_read_like_paths(shards: Path) -> None:
    plain = shards / "part-a.jsonl"
    expected = read_jsonl_input(str(plain), JsonlOptions())
    with fsspec.open("memory://simdup-inputs/part-a.jsonl.gz", "wb") as handle:
        handle.write(gzip.compress(plain.read_bytes()))
    assert read_jsonl_input("memory://simdup-inputs/part-a.jsonl.gz", JsonlOptions()) == expected
    assert read_jsonl_input(plain.as_uri(), JsonlOptions())[0] == expected[0]
    globbed = expand_jsonl([f"{shards.as_uri()}/part-*"])
    assert globbed == [(shards / "part-a.jsonl").as_uri(), (shards / "part-b.jsonl.gz").as_uri()]
    assert expand_jsonl(["memory://simdup-inputs/*.gz"]) == [
        "memory:///simdup-inputs/part-a.jsonl.gz"
    ]
    with pytest.raises(ParameterError, match="no file matches"):
        expand_jsonl(["memory://simdup-inputs/*.none"])
    with pytest.raises(InputError, match="memory://simdup-inputs/absent"):
        read_jsonl_input("memory://simdup-inputs/absent.jsonl", JsonlOptions())


def test_several_files_scan_as_their_concatenation(runner: CliRunner, shards: Path) -> None:
    joined = shards.parent / "joined.jsonl"
    joined.write_bytes(
        (shards / "part-a.jsonl").read_bytes()
        + gzip.decompress((shards / "part-b.jsonl.gz").read_bytes())
    )
    several = _scan(
        runner, "--jsonl", str(shards / "part-a.jsonl"), "--jsonl", str(shards / "part-b.jsonl.gz")
    )
    globbed = _scan(runner, "--jsonl", str(shards / "part-*"))
    assert several == globbed
    one = _scan(runner, "--jsonl", str(joined))
    assert several["pairs"] == one["pairs"]
    # A pair inside the first file, and one across the two files.
    assert [(p["a"], p["b"]) for p in several["pairs"]] == [("a0", "a1"), ("a2", "b0")]
    # An id repeated across files is a duplicate document name; within one, a bad line.
    assert several["skipped"] == [{"path": "a0", "reason": "duplicate document name"}]
    assert one["skipped"] == [{"path": f"{joined}:6", "reason": "duplicate id 'a0'"}]
    assert several["params"]["jsonl"] is True


def test_a_glob_matching_nothing_is_one_line_and_status_2(runner: CliRunner, shards: Path) -> None:
    result = runner.invoke(cli, ["scan", "--jsonl", str(shards / "none-*.jsonl")])
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert errors == [
        f"Error: Invalid value for '--jsonl': no file matches '{shards}/none-*.jsonl'"
    ]
    assert "Traceback" not in result.output


def test_the_console_script_expands_a_quoted_glob(shards: Path, simdup_script: str) -> None:
    explicit = [
        simdup_script,
        "scan",
        "--format",
        "csv",
        "--jsonl",
        str(shards / "part-b.jsonl.gz"),
        "--jsonl",
        str(shards / "part-a.jsonl"),
    ]
    globbed = [simdup_script, "scan", "--format", "csv", "--jsonl", str(shards / "part-*")]
    first = subprocess.run(explicit, capture_output=True, check=True)
    second = subprocess.run(globbed, capture_output=True, check=True)
    assert first.stdout == second.stdout
    assert first.stdout.count(b"\n") >= 2  # the header and a pair
    missing = subprocess.run(
        [simdup_script, "scan", "--jsonl", str(shards / "x*")], capture_output=True
    )
    assert missing.returncode == 2
    assert b"no file matches" in missing.stderr
    assert b"Traceback" not in missing.stderr


def test_index_add_reads_every_file(runner: CliRunner, shards: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "prints.db")
    result = runner.invoke(
        cli, ["index", "add", "--db", db, "--jsonl", str(shards / "part-*")], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    exported = runner.invoke(cli, ["index", "export", "--db", db], catch_exceptions=False)
    names = sorted(json.loads(line)["id"] for line in exported.stdout.splitlines())
    assert names == ["a0", "a1", "a2", "b0", "b1"]


def test_dedupe_takes_one_dataset(runner: CliRunner, shards: Path) -> None:
    result = runner.invoke(cli, ["dedupe", "--jsonl", str(shards / "part-*")])
    assert result.exit_code == 2
    assert "give one file" in result.stderr


def test_the_cli_reads_a_memory_url(runner: CliRunner, shards: Path) -> None:
    with fsspec.open("memory://simdup-cli/corpus.jsonl", "wb") as handle:
        handle.write((shards / "part-a.jsonl").read_bytes())
    by_url = _scan(runner, "--jsonl", "memory://simdup-cli/corpus.jsonl")
    by_path = _scan(runner, "--jsonl", str(shards / "part-a.jsonl"))
    assert by_url["pairs"] == by_path["pairs"]
    assert os.path.exists(shards / "part-a.jsonl")


def test_standard_input_joins_the_files(runner: CliRunner, shards: Path) -> None:
    second = gzip.decompress((shards / "part-b.jsonl.gz").read_bytes())
    args = ["scan", "--format", "json", "--jsonl", "-", "--jsonl", str(shards / "part-a.jsonl")]
    result = runner.invoke(cli, args, input=second, catch_exceptions=False)
    both = _scan(runner, "--jsonl", str(shards / "part-*"))
    assert json.loads(result.stdout)["pairs"] == both["pairs"]
    # Standard input comes after the files: its "a0" is the repeated name.
    assert json.loads(result.stdout)["skipped"] == both["skipped"]


@pytest.mark.parametrize("quiet", [False, True])
def test_a_shell_expanded_glob_is_read_as_asked_and_warned_about(
    tmp_path: Path, quiet: bool
) -> None:
    """``--jsonl data/*.jsonl`` unquoted: the second file arrives as a PATH."""
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text(json.dumps({"id": "x", "text": "red fox jumps high"}) + "\n")
    second.write_text(json.dumps({"id": "y", "text": "red fox jumps high"}) + "\n")
    args = ["scan", "--format", "jsonl", "--jsonl", str(first), str(second)]
    result = CliRunner().invoke(cli, [*args, *(["-q"] if quiet else [])])
    assert result.exit_code == 0, result.output
    warned = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    if quiet:
        assert warned == []
    else:
        assert warned == [
            f"warning: {second} is a PATH, read as one text document; to read JSON Lines "
            "files as records, quote the glob (--jsonl 'data/*.jsonl') or repeat --jsonl"
        ]
    # Read as asked: the record "x" and the file b.jsonl as one document.
    names = {
        n
        for line in result.stdout.splitlines()
        for n in (json.loads(line)["a"], json.loads(line)["b"])
    }
    assert "y" not in names


def test_no_warning_without_jsonl_or_for_other_paths(tmp_path: Path) -> None:
    (tmp_path / "notes.jsonl").write_text("plain words here\n")
    (tmp_path / "doc.txt").write_text("plain words here\n")
    record = tmp_path / "r.jsonl"
    record.write_text(json.dumps({"id": "r", "text": "other words"}) + "\n")
    for args in (
        ["scan", str(tmp_path / "notes.jsonl"), str(tmp_path / "doc.txt")],
        ["scan", "--jsonl", str(record), str(tmp_path / "doc.txt")],
    ):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
        assert "warning:" not in result.stderr
