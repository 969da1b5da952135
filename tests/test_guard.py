"""No output replaces an input: refusals, re-runs and the recognition of simdup's own outputs.

Every test takes a content hash of every file before the run and checks afterwards that no
input changed: a refused run changes nothing at all, a re-run changes only its output.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from simdup.cli import cli
from simdup.cli.commands.eval import CSV_FIELDS
from simdup.cli.guard import (
    RECOGNISERS,
    Kind,
    OutputClash,
    Written,
    protect_inputs,
    written_by_simdup,
)
from simdup.cli.parsed import Inputs
from simdup.report.render import PAIR_FIELDS

TEXT = "The quick brown fox jumps over the lazy dog near the river bank at dawn.\n"


def hashes(root: Path) -> dict[str, str]:
    """Return the SHA-256 of every regular file under ``root`` (links by their target)."""
    state = {}
    for directory, _, files in os.walk(root):
        for name in files:
            path = Path(directory, name)
            if path.is_symlink():
                state[str(path)] = "-> " + os.readlink(path)
            else:
                state[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return state


def run(runner: CliRunner, *args: str, stdin: bytes | None = None) -> Result:
    return runner.invoke(cli, list(args), input=stdin, catch_exceptions=False)


@pytest.fixture
def work(tmp_path: Path, sample_corpus: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory: a corpus, its spellings, a JSON Lines dataset, lists, an index."""
    corpus = tmp_path / "corpus"
    shutil.copytree(sample_corpus, corpus)
    (corpus / "doc7.txt.gz").write_bytes(gzip.compress((corpus / "doc7.txt").read_bytes()))
    (tmp_path / "link.txt").symlink_to("corpus/doc2.txt")
    os.link(corpus / "doc3.txt", tmp_path / "hard.txt")
    data = b'{"id": "a", "text": "hello world again"}\n{"id": "b", "text": "hello world"}\n'
    (tmp_path / "data.jsonl").write_bytes(data)
    (tmp_path / "data.jsonl.gz").write_bytes(gzip.compress(data))
    (tmp_path / "list.txt").write_text("corpus/doc4.txt\ncorpus/doc5.txt\n")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for args in (
        ["index", "add", "corpus", "--db", "idx.db", "-q"],
        ["index", "export", "--db", "idx.db", "-o", "export.jsonl"],
        ["fingerprint", "corpus", "-q", "-o", "prints.txt"],
    ):
        assert run(runner, *args).exit_code == 0
    return tmp_path


@dataclass(frozen=True)
class Clash:
    """A command line whose output is one of its inputs, and the input's name."""

    args: tuple[str, ...]
    output: str
    input: str


CLASHES = [
    # scan, every spelling of the same file
    Clash(("scan", "corpus", "-o", "corpus/doc0.txt"), "-o corpus/doc0.txt", "corpus/doc0.txt"),
    Clash(
        ("scan", "corpus", "-o", "corpus/../corpus/doc1.txt"),
        "-o corpus/../corpus/doc1.txt",
        "corpus/doc1.txt (the same file)",
    ),
    Clash(("scan", "corpus", "-o", "link.txt"), "-o link.txt", "corpus/doc2.txt (the same"),
    Clash(("scan", "corpus", "-o", "hard.txt"), "-o hard.txt", "corpus/doc3.txt (the same"),
    Clash(
        ("scan", "corpus", "-o", "corpus/doc7.txt.gz"),
        "-o corpus/doc7.txt.gz",
        "corpus/doc7.txt.gz",
    ),
    Clash(
        ("scan", "corpus/doc0.txt", "corpus/doc1.txt", "-o", "corpus/doc1.txt"),
        "-o corpus/doc1.txt",
        "corpus/doc1.txt",
    ),
    Clash(
        ("scan", "--files-from", "list.txt", "-o", "list.txt"),
        "-o list.txt",
        "--files-from list.txt",
    ),
    Clash(
        ("scan", "--files-from", "list.txt", "-o", "corpus/doc4.txt"),
        "-o corpus/doc4.txt",
        "corpus/doc4.txt",
    ),
    Clash(
        ("scan", "--jsonl", "data.jsonl", "--format", "jsonl", "-o", "data.jsonl"),
        "-o data.jsonl",
        "--jsonl data.jsonl",
    ),
    Clash(
        ("scan", "--jsonl", "data.jsonl.gz", "-o", "data.jsonl.gz"),
        "-o data.jsonl.gz",
        "--jsonl data.jsonl.gz",
    ),
    Clash(("scan", "corpus", "--html", "corpus/doc1.txt"), "--html corpus/doc1.txt", "doc1.txt"),
    Clash(("scan", "corpus", "--cache", "corpus/doc5.txt"), "--cache corpus/doc5.txt", "doc5"),
    Clash(("scan", "corpus", "--cache", "idx.db", "-o", "idx.db"), "-o idx.db", "--cache idx.db"),
    Clash(("scan", "corpus", "--plan", "-o", "hard.txt"), "-o hard.txt", "corpus/doc3.txt"),
    # the other commands
    Clash(("fingerprint", "corpus", "-o", "link.txt"), "-o link.txt", "corpus/doc2.txt"),
    Clash(
        ("fingerprint", "--jsonl", "data.jsonl", "-o", "data.jsonl"),
        "-o data.jsonl",
        "--jsonl data.jsonl",
    ),
    Clash(("eval", "corpus", "-o", "corpus/doc0.txt"), "-o corpus/doc0.txt", "corpus/doc0.txt"),
    Clash(("eval", "corpus", "--html", "hard.txt"), "--html hard.txt", "corpus/doc3.txt"),
    Clash(
        ("compare", "corpus/doc0.txt", "corpus/doc1.txt", "-o", "corpus/doc1.txt"),
        "-o corpus/doc1.txt",
        "corpus/doc1.txt",
    ),
    Clash(
        ("compare", "corpus/doc0.txt", "corpus/doc2.txt", "--html", "link.txt"),
        "--html link.txt",
        "corpus/doc2.txt",
    ),
    Clash(("match", "prints.txt", "-o", "prints.txt"), "-o prints.txt", "prints.txt"),
    Clash(
        ("index", "add", "corpus", "--db", "corpus/doc0.txt"),
        "--db corpus/doc0.txt",
        "corpus/doc0.txt",
    ),
    Clash(
        ("index", "add", "corpus", "--db", "new.db", "-o", "corpus/../hard.txt"),
        "-o corpus/../hard.txt",
        "corpus/doc3.txt",
    ),
    Clash(
        ("index", "add", "--jsonl", "data.jsonl", "--db", "data.jsonl"),
        "--db data.jsonl",
        "--jsonl data.jsonl",
    ),
    Clash(("index", "add", "corpus", "--db", "idx.db", "-o", "idx.db"), "-o idx.db", "--db idx"),
    Clash(
        ("index", "query", "corpus/doc0.txt", "--db", "idx.db", "-o", "corpus/doc0.txt"),
        "-o corpus/doc0.txt",
        "corpus/doc0.txt",
    ),
    Clash(("index", "query", "-", "--db", "idx.db", "-o", "idx.db"), "-o idx.db", "--db idx.db"),
    Clash(("index", "scan", "--db", "idx.db", "-o", "idx.db"), "-o idx.db", "--db idx.db"),
    Clash(("index", "export", "--db", "idx.db", "-o", "idx.db"), "-o idx.db", "--db idx.db"),
    Clash(
        ("index", "import", "export.jsonl", "--db", "export.jsonl"),
        "--db export.jsonl",
        "export.jsonl",
    ),
]


def check_refusal(status: int, stderr: str, clash: Clash) -> None:
    assert status == 2, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"Error: refusing to write {clash.output}: it is the input ")
    assert clash.input in lines[0]
    assert "which would be replaced; write the results elsewhere" in lines[0]
    assert "Traceback" not in stderr


@pytest.mark.parametrize("clash", CLASHES, ids=lambda c: " ".join(c.args))
def test_an_output_that_is_an_input_is_refused(work: Path, clash: Clash) -> None:
    before = hashes(work)
    result = CliRunner().invoke(cli, list(clash.args), input=TEXT)
    check_refusal(result.exit_code, result.stderr, clash)
    assert hashes(work) == before


#: Every command, and each spelling of the same file, through the installed script.
SCRIPT_CLASHES = [
    c for i, c in enumerate(CLASHES) if c.args[0] != "scan" or i in (0, 1, 2, 3, 4, 6, 8)
]


@pytest.mark.parametrize("clash", SCRIPT_CLASHES, ids=lambda c: " ".join(c.args))
def test_the_console_script_refuses_too(work: Path, simdup_script: str, clash: Clash) -> None:
    before = hashes(work)
    done = subprocess.run(
        [simdup_script, *clash.args], input=TEXT.encode(), capture_output=True, timeout=120
    )
    check_refusal(done.returncode, done.stderr.decode(), clash)
    assert hashes(work) == before


def test_stdin_redirected_from_the_output_is_refused(work: Path, simdup_script: str) -> None:
    before = hashes(work)
    for args in (
        ["fingerprint", "-", "-o", "corpus/doc0.txt"],
        ["scan", "--files-from", "-", "-o", "list.txt"],
        ["scan", "--jsonl", "-", "-o", "data.jsonl"],
    ):
        with open(args[-1], "rb") as stdin:
            done = subprocess.run(
                [simdup_script, *args], stdin=stdin, capture_output=True, timeout=120
            )
        assert done.returncode == 2, done.stderr
        assert b"it is the input " in done.stderr
        assert b"standard input (the same file)" in done.stderr
    assert hashes(work) == before


def test_the_suggested_exclude_lets_the_run_write_there(work: Path) -> None:
    runner = CliRunner()
    refused = run(runner, "scan", "corpus", "-o", "corpus/doc5.txt")
    assert refused.exit_code == 2
    assert refused.stderr.rstrip().endswith("leave it out with --exclude doc5.txt")
    before = hashes(work)
    done = run(runner, "scan", "corpus", "--exclude", "doc5.txt", "-o", "corpus/doc5.txt")
    assert done.exit_code == 0
    after = hashes(work)
    assert after.pop(str(work / "corpus/doc5.txt")) != before.pop(str(work / "corpus/doc5.txt"))
    assert after == before


def test_an_existing_file_outside_the_inputs_is_still_replaced(work: Path) -> None:
    (work / "notes.txt").write_text("old notes\n")
    before = hashes(work)
    done = run(CliRunner(), "scan", "corpus", "--format", "csv", "-o", "notes.txt")
    assert done.exit_code == 0
    assert (work / "notes.txt").read_text().startswith(",".join(PAIR_FIELDS))
    del before[str(work / "notes.txt")]
    assert {k: v for k, v in hashes(work).items() if not k.endswith("notes.txt")} == before


def test_an_index_that_is_not_sqlite_is_refused_as_before(work: Path) -> None:
    (work / "notes.txt").write_text("old notes\n")
    before = hashes(work)
    for args in (
        ["index", "add", "corpus", "--db", "notes.txt"],
        ["scan", "corpus", "--cache", "notes.txt"],
    ):
        done = run(CliRunner(), *args)
        assert done.exit_code == 4
        assert "notes.txt is not a simdup index (not an SQLite database)" in done.stderr
    assert hashes(work) == before


def test_simdup_output_of_another_command_is_protected(work: Path) -> None:
    """A fingerprint listing is not what ``scan -o`` writes: inside the corpus it is refused."""
    shutil.copy(work / "prints.txt", work / "corpus" / "prints.txt")
    before = hashes(work)
    done = run(CliRunner(), "scan", "corpus", "-o", "corpus/prints.txt")
    assert done.exit_code == 2
    assert "refusing to write -o corpus/prints.txt" in done.stderr
    assert hashes(work) == before


# --- re-running ------------------------------------------------------------------------------


def documents_read(args: list[str], result: Result, outputs: list[str]) -> int | None:
    """Return how many documents a run read, from its summary (None: none printed)."""
    if args[:2] == ["index", "add"]:
        text = Path(outputs[0]).read_text()
        if text.startswith("{"):
            counts = json.loads(text)
            return int(counts["added"] + counts["updated"] + counts["unchanged"])
        found = re.findall(r"([\d,]+) (?:added|updated|unchanged)", text)
        return sum(int(n.replace(",", "")) for n in found)
    match = re.search(r"([\d,]+) documents", result.stderr)
    return int(match.group(1).replace(",", "")) if match else None


RERUNS = [
    ["scan", ".", "--format", "json", "-o", "pairs.json"],
    ["scan", ".", "--format", "jsonl", "-o", "pairs.jsonl"],
    ["scan", ".", "--format", "csv", "-o", "pairs.csv"],
    ["scan", ".", "--clusters", "-o", "pairs.txt", "--html", "report.html"],
    ["scan", ".", "--plan", "-o", "plan.txt"],
    ["scan", ".", "--plan", "--format", "json", "-o", "plan.json"],
    ["scan", ".", "--cache", "cache.db", "--format", "json", "-o", "pairs.json"],
    ["fingerprint", ".", "-o", "prints.txt"],
    ["fingerprint", ".", "--format", "jsonl", "-o", "prints.jsonl"],
    ["eval", ".", "--hash-seeds", "3", "-o", "eval.txt", "--html", "eval.html"],
    ["eval", ".", "--hash-seeds", "3", "--format", "csv", "-o", "eval.csv"],
    ["index", "add", ".", "-o", "added.txt"],
    ["index", "add", ".", "--db", "other.db", "--format", "json", "-o", "added.json"],
    ["match", "../prints.txt", "-o", "matched.txt"],
]


@pytest.mark.parametrize("args", RERUNS, ids=" ".join)
def test_running_twice_replaces_its_own_output_and_never_reads_it(
    work: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    monkeypatch.chdir(work / "corpus")
    outputs = [args[i + 1] for i, a in enumerate(args) if a in ("-o", "--html")]
    runner = CliRunner()
    first = run(runner, *args)
    assert first.exit_code == 0, first.output
    written = [Path(o).read_text() for o in outputs]
    before = {k: v for k, v in hashes(work).items() if Path(k).name not in outputs}
    second = run(runner, *args)
    assert second.exit_code == 0, second.output
    assert {k: v for k, v in hashes(work).items() if Path(k).name not in outputs} == before
    assert documents_read(args, second, outputs) == documents_read(args, first, outputs)
    if args[0] != "eval" and args[:2] != ["index", "add"]:  # times; "added", then "unchanged"
        assert [Path(o).read_text() for o in outputs] == written
    for text in written:
        assert not any(f"./{output}" in text for output in outputs)


def test_a_rerun_reads_the_same_documents_as_the_first_run(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(work / "corpus")
    runner = CliRunner()
    args = ["scan", ".", "--all", "--format", "json", "-v"]
    run_1 = run(runner, *args, "-o", "pairs.json")
    first = Path("pairs.json").read_text()
    run_2 = run(runner, *args, "-o", "pairs.json")
    assert Path("pairs.json").read_text() == first
    assert run_1.stderr.splitlines()[:-1] == run_2.stderr.splitlines()[:-1]  # same skips
    assert "pairs.json" not in run_2.stderr
    assert '"./pairs.json"' not in first


def test_the_default_index_in_the_scanned_directory_is_not_a_document(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(work / "corpus")
    runner = CliRunner()
    assert run(runner, "index", "add", ".", "-q").exit_code == 0
    before = hashes(work / "corpus")
    again = run(runner, "index", "add", ".", "-v", "--format", "json")
    assert again.exit_code == 0
    assert '"unchanged": 10' in again.stdout
    assert "simdup.db" not in again.stderr.replace("simdup.db: ", "")  # no skip of the index
    assert {k: v for k, v in hashes(work / "corpus").items() if "simdup.db" not in k} == {
        k: v for k, v in before.items() if "simdup.db" not in k
    }


def test_an_empty_file_is_replaced_and_never_read(work: Path) -> None:
    """An empty file holds nothing to lose; a scan with no pairs writes one, and re-runs."""
    (work / "corpus" / "empty.jsonl").write_bytes(b"")
    before = hashes(work)
    done = run(CliRunner(), "scan", "corpus", "-v", "--format", "jsonl", "-o", "corpus/empty.jsonl")
    assert done.exit_code == 0
    assert "empty.jsonl" not in done.stderr  # not skipped as a document without features
    assert (work / "corpus" / "empty.jsonl").read_text().count("\n") == 5
    after = hashes(work)
    del before[str(work / "corpus/empty.jsonl")], after[str(work / "corpus/empty.jsonl")]
    assert after == before


def test_console_script_reruns(work: Path, simdup_script: str) -> None:
    command = [simdup_script, "scan", ".", "-q", "--format", "json", "-o", "pairs.json"]
    outputs = []
    for _ in range(2):
        before = {k: v for k, v in hashes(work).items() if not k.endswith("pairs.json")}
        done = subprocess.run(command, capture_output=True, timeout=120, cwd=work / "corpus")
        assert done.returncode == 0, done.stderr
        assert {k: v for k, v in hashes(work).items() if not k.endswith("pairs.json")} == before
        outputs.append((work / "corpus" / "pairs.json").read_text())
    assert outputs[0] == outputs[1]


# --- recognising simdup's own outputs -------------------------------------------------------

DB = ["--db", "idx.db"]
KINDS: dict[Kind, list[list[str]]] = {
    "pairs": [
        *(["scan", "corpus", "--format", fmt] for fmt in ("table", "json", "jsonl", "csv")),
        ["scan", "corpus", "--plan"],
        ["scan", "corpus", "--plan", "--format", "json"],
        ["scan", "corpus", "--clusters"],
        ["scan", "corpus/doc4.txt", "corpus/doc5.txt"],
        ["match", "prints.txt"],
        ["index", "scan", *DB, "--format", "csv"],
        ["index", "query", "corpus/doc0.txt", *DB],
    ],
    "fingerprints": [["fingerprint", "corpus"], ["fingerprint", "corpus", "--format", "jsonl"]],
    "eval": [
        ["eval", "corpus", "--hash-seeds", "2", "--format", fmt] for fmt in ("table", "json", "csv")
    ],
    "compare": [
        ["compare", "corpus/doc0.txt", "corpus/doc1.txt", "--format", fmt]
        for fmt in ("table", "json")
    ],
    "added": [["index", "add", "corpus", *DB, "--format", fmt] for fmt in ("text", "json")],
    "export": [["index", "export", *DB], ["index", "export", *DB, "--no-weights"]],
}


@pytest.mark.parametrize(("kind", "args"), [(k, a) for k, cases in KINDS.items() for a in cases])
def test_every_output_of_a_command_is_recognised_as_its_own(
    work: Path, kind: Kind, args: list[str]
) -> None:
    done = run(CliRunner(), *args, "-o", "out")
    assert done.exit_code == 0, done.output
    assert written_by_simdup("out", kind)
    assert not written_by_simdup("out", "html")
    assert not written_by_simdup("out", "index")
    if kind == "fingerprints":
        assert not written_by_simdup("out", "pairs")
    if kind == "pairs":
        assert not written_by_simdup("out", "fingerprints")


def test_html_pages_and_indexes_are_recognised(work: Path) -> None:
    runner = CliRunner()
    for args in (
        ["scan", "corpus"],
        ["eval", "corpus", "--hash-seeds", "2"],
        ["compare", "corpus/doc0.txt", "corpus/doc1.txt"],
    ):
        assert run(runner, *args, "-q", "--html", "page.html").exit_code == 0
        assert written_by_simdup("page.html", "html")
        assert not written_by_simdup("page.html", "pairs")
    assert written_by_simdup("idx.db", "index")
    assert not written_by_simdup("idx.db", "pairs")


def test_eval_csv_header_is_the_one_recognised() -> None:
    assert ",".join(CSV_FIELDS).startswith("table,bits,mae,")


FOREIGN = {
    "prose.txt": TEXT.encode(),
    "object.json": b'{"a": 1, "b": 2}\n',
    "other.csv": b"a,b,hamming\n1,2,3\n",
    "sums.txt": b"d41d8cd98f00b204e9800998ecf8427e  empty.txt\n",
    "page.html": b"<!DOCTYPE html>\n<html><head><title>notes</title></head></html>\n",
    "records.jsonl": b'{"id": 1, "text": "hello"}\n',
    "binary.bin": b"\x00\x01\x02" * 10,
    "data.jsonl.gz": gzip.compress(b'{"a": "x", "b": "y", "hamming": 1}\n'),
}


@pytest.mark.parametrize("name", sorted(FOREIGN))
def test_other_files_are_not_recognised(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(FOREIGN[name])
    recognised = [kind for kind in RECOGNISERS if written_by_simdup(str(path), kind)]
    assert recognised == (["fingerprints"] if name == "sums.txt" else [])


def test_an_sqlite_database_of_another_program_is_not_an_index(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE t (x)")
    connection.commit()
    connection.close()
    assert not written_by_simdup(str(path), "index")
    assert written_by_simdup(str(tmp_path / "absent"), "index") is False


def test_empty_files_count_as_replaceable(tmp_path: Path) -> None:
    (tmp_path / "empty").write_bytes(b"")
    assert all(written_by_simdup(str(tmp_path / "empty"), kind) for kind in RECOGNISERS)


def _inputs(paths: list[str], **changes: Any) -> Inputs:
    """Return the inputs of ``simdup scan PATHS`` with the option defaults, then ``changes``."""
    command = cli.get_command(click.Context(cli), "scan")
    assert isinstance(command, click.Command)
    context = command.make_context("scan", list(paths))
    return replace(Inputs.parsed(paths, context.params), **changes)


def test_the_guard_returns_what_it_decided(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's own earlier output is left out, and a --files-from list it read is kept."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text(TEXT)
    (tmp_path / "earlier.json").write_text('{"simdup": "0", "pairs": []}\n')
    (tmp_path / "notes.txt").write_text("mine\n")
    (tmp_path / "list.txt").write_text("a.txt\n")
    inputs = _inputs(["a.txt"], files_from="list.txt")
    again = protect_inputs(Written("pairs", "earlier.json"), inputs)
    earlier = os.stat("earlier.json")
    assert again.read.leave_out == {(earlier.st_dev, earlier.st_ino)}
    assert again.listed is None  # nothing foreign to look for: the list is read later
    assert inputs.read.leave_out == frozenset()  # the value given is left as it was
    checked = protect_inputs(Written("pairs", "notes.txt"), inputs)
    assert checked.read.leave_out == frozenset()
    assert checked.listed == ("a.txt",)
    with pytest.raises(OutputClash, match=re.escape("refusing to write -o notes.txt")):
        protect_inputs(Written("pairs", "notes.txt"), _inputs(["."]))
