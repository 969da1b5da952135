"""``simdup dedupe DIR``: plans, shell scripts safe for any name, checked moves."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from simdup.cli import cli
from simdup.dedupe.files import (
    Step,
    changed,
    move_files,
    move_target,
    read_files,
    shell_script,
)
from simdup.engines.local import counting
from simdup.inputs.files import ReadOptions

TEXT = "the quick brown fox jumps over the lazy dog near the river bank at noon"
OTHER = "a blue whale sings under the grey northern sea at dawn every winter"

# Names a shell would mangle if they were not quoted exactly.
NASTY = [
    b"it's.txt",
    b"new\nline.txt",
    b"$HOME.txt",
    b"`touch pwned`.txt",
    b"$(touch pwned2).txt",
    b"-rf.txt",
    b"\xff\xfe latin.txt",
    b"a  b\t.txt",
    b"back\\slash.txt",
    b'double".txt',
]


def run(runner: CliRunner, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(cli, ["dedupe", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def listing(root: Path) -> list[bytes]:
    out = []
    for folder, _, files in os.walk(os.fsencode(root)):
        out += [os.path.relpath(os.path.join(folder, f), os.fsencode(root)) for f in files]
    return sorted(out)


@pytest.fixture
def nasty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A corpus of copies of one text under hostile names, plus the original and another."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in NASTY:
        with open(os.fsencode(corpus) + b"/" + name, "w") as handle:
            handle.write(TEXT)
    (corpus / "zz-original.txt").write_text(TEXT)
    (corpus / "other.txt").write_text(OTHER)
    monkeypatch.chdir(tmp_path)
    return corpus


def test_plan_only_touches_nothing(runner: CliRunner, nasty: Path) -> None:
    before = listing(nasty)
    code, out, err = run(runner, "corpus", "--format", "json", "--prefer", "zz-*")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["stats"]["removed"] == len(NASTY)
    assert plan["stats"]["kept"] == 2
    assert {r["kept"] for r in plan["removed"]} == {"corpus/zz-original.txt"}
    assert {os.fsencode(r["id"]) for r in plan["removed"]} == {b"corpus/" + n for n in NASTY}
    assert listing(nasty) == before
    assert f"{len(NASTY) + 2} input, 2 kept, {len(NASTY)} removed" in err


def test_rm_script_is_safe_for_any_byte_in_a_name(runner: CliRunner, nasty: Path) -> None:
    code, _, err = run(runner, "corpus", "--prefer", "zz-*", "--script", "dedupe.sh", "-q")
    assert code == 0, err
    script = Path("dedupe.sh").read_bytes()
    assert script.count(b"\nrm -- ") == len(NASTY)
    assert b"# kept file: corpus/zz-original.txt (cosine 1.000000)" in script
    # Run from elsewhere: the script changes to the directory it was made in.
    subprocess.run(["sh", str(Path("dedupe.sh").resolve())], check=True, cwd="/")
    assert listing(nasty) == [b"other.txt", b"zz-original.txt"]
    assert not Path("pwned").exists()
    assert not Path("pwned2").exists()


def test_move_script_keeps_paths_and_never_overwrites(runner: CliRunner, nasty: Path) -> None:
    taken = Path("dupes/corpus")
    taken.mkdir(parents=True)
    (taken / "it's.txt").write_text("already here")
    code, _, _ = run(
        runner, "corpus", "--prefer", "zz-*", "--move-to", "dupes", "--script", "m.sh", "-q"
    )
    assert code == 0
    assert Path("m.sh").read_bytes().count(b" || mv -- ") == len(NASTY)
    subprocess.run(["sh", "m.sh"], check=True)
    assert (taken / "it's.txt").read_text() == "already here"
    assert listing(nasty) == [b"it's.txt", b"other.txt", b"zz-original.txt"]
    moved = set(listing(taken))
    assert moved == set(NASTY)
    assert (Path(os.fsdecode(os.fsencode(taken) + b"/" + NASTY[1]))).read_text() == TEXT


def test_apply_moves_and_reports_refusals(runner: CliRunner, nasty: Path) -> None:
    taken = Path("dupes/corpus")
    taken.mkdir(parents=True)
    (taken / "-rf.txt").write_text("already here")
    code, _, err = run(runner, "corpus", "--prefer", "zz-*", "--move-to", "dupes", "--apply")
    assert code == 4
    assert "not moved corpus/-rf.txt: dupes/corpus/-rf.txt already exists" in err
    assert (taken / "-rf.txt").read_text() == "already here"
    assert listing(nasty) == [b"-rf.txt", b"other.txt", b"zz-original.txt"]
    assert len(listing(taken)) == len(NASTY)


def test_moves_wait_for_unchanged_files(nasty: Path) -> None:
    options = ReadOptions()
    _, states, _ = read_files(["corpus"], options)
    by_name = {s.name: s for s in states}
    kept = by_name["corpus/zz-original.txt"]
    first, second = by_name["corpus/it's.txt"], by_name["corpus/-rf.txt"]
    # The kept file changes (same size, so only the hash and mtime tell).
    Path("corpus/zz-original.txt").write_text(TEXT.upper())
    outcomes = move_files([(first, kept)], "dupes", options)
    assert outcomes[0].refused is not None
    assert "kept file corpus/zz-original.txt changed" in outcomes[0].refused
    # The removed file changes, size and mtime kept: the hash tells.
    Path("corpus/zz-original.txt").write_text(TEXT)
    kept_state = read_files(["corpus/zz-original.txt"], options)[1][0]
    Path("corpus/-rf.txt").write_text(TEXT.upper())
    os.utime("corpus/-rf.txt", ns=(second.mtime_ns, second.mtime_ns))
    outcomes = move_files([(second, kept_state)], "dupes", options)
    assert outcomes[0].refused == "changed since it was read (modified)"
    assert Path("corpus/it's.txt").exists()
    assert Path("corpus/-rf.txt").exists()
    assert not Path("dupes").exists() or listing(Path("dupes")) == []


def test_hard_and_symbolic_links_are_never_their_own_duplicate(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("d").mkdir()
    Path("d/a.txt").write_text(TEXT)
    os.link("d/a.txt", "d/hard.txt")
    os.symlink("a.txt", "d/soft.txt")
    for extra in ([], ["-L"]):
        code, out, err = run(runner, "d", *extra, "--format", "json")
        assert code == 0, err
        plan = json.loads(out)
        assert plan["removed"] == []
        assert plan["stats"]["input"] == 1


def test_reference_directory_wins_and_is_never_moved(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("old").mkdir()
    Path("new").mkdir()
    Path("old/a.txt").write_text(TEXT)
    Path("new/a-copy.txt").write_text(TEXT)
    Path("new/b.txt").write_text(OTHER)
    code, out, err = run(
        runner, "new", "--reference", "old", "--format", "jsonl", "--move-to", "d", "--apply"
    )
    assert code == 0, err
    assert [json.loads(line) for line in out.splitlines()] == [
        {
            "id": "new/a-copy.txt",
            "line": None,
            "kept": "old/a.txt",
            "kept_line": None,
            "kept_reference": True,
            "cosine": 1.0,
            "hamming": 0,
            "estimated_cosine": 1.0,
            "bytes": len(TEXT),
        }
    ]
    assert Path("old/a.txt").read_text() == TEXT
    assert Path("d/new/a-copy.txt").read_text() == TEXT
    assert "1 reference documents" in err
    # A file given both as input and as reference is left alone.
    code, out, _ = run(runner, "old", "new", "--reference", "old", "--format", "json")
    assert json.loads(out)["stats"]["input"] == 1


def test_csv_plan_and_fail_on_match(runner: CliRunner, nasty: Path) -> None:
    code, out, _ = run(runner, "corpus", "--format", "csv", "--fail-on-match", "-q")
    assert code == 1
    assert (
        out.splitlines()[0]
        == "id,line,kept,kept_line,kept_reference,cosine,hamming,estimated_cosine,bytes"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--apply"], "--apply moves files: give --move-to DIR"),
        (["--move-to", "x"], "--move-to needs --script FILE"),
        (["--time-field", "t"], "--time-field reads JSON Lines"),
        (["-o", "corpus/other.txt"], "is the input"),
        (["--script", "corpus/other.txt"], "is the input"),
    ],
)
def test_usage_errors(runner: CliRunner, nasty: Path, args: list[str], message: str) -> None:
    code, _, err = run(runner, "corpus/other.txt", *args)
    assert code == 2
    assert message in err
    assert Path("corpus/other.txt").read_text() == OTHER


def test_move_target_stays_inside_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert move_target("a/../b.txt", "d") == "d/b.txt"
    assert move_target("../x/y.txt", "d") == "d" + os.path.join(str(tmp_path.parent), "x/y.txt")


def test_console_script_prints_the_plan(simdup_script: str, nasty: Path) -> None:
    done = subprocess.run(
        [simdup_script, "dedupe", "corpus", "--format", "jsonl", "--prefer", "zz-*"],
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    removed = [json.loads(line) for line in done.stdout.splitlines()]
    assert {os.fsencode(r["id"]) for r in removed} == {b"corpus/" + n for n in NASTY}
    assert b"bytes saved" in done.stderr


def test_index_reference_wins_and_other_settings_are_refused(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("old").mkdir()
    Path("new").mkdir()
    Path("old/a.txt").write_text(TEXT)
    Path("new/a-copy.txt").write_text(TEXT)
    Path("new/b.txt").write_text(OTHER)
    added = runner.invoke(cli, ["index", "add", "old", "--db", "old.db", "-q"])
    assert added.exit_code == 0, added.stderr
    code, out, err = run(runner, "new", "--reference", "old.db", "--format", "jsonl")
    assert code == 0, err
    assert [
        (r["id"], r["kept"], r["kept_reference"]) for r in map(json.loads, out.splitlines())
    ] == [("new/a-copy.txt", "old/a.txt", True)]
    code, _, err = run(runner, "new", "--reference", "old.db", "--bits", "128")
    assert code == 2
    assert "bits=64" in err
    assert "bits=128" in err


def test_html_report_shows_groups_and_escapes_names(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("d").mkdir()
    Path("d/<img src=x onerror=alert(1)>.txt").write_text(TEXT)
    Path("d/copy.txt").write_text(TEXT)
    Path("d/other.txt").write_text(OTHER)
    code, _, err = run(runner, "d", "--html", "report.html", "--prefer", "copy*", "-q")
    assert code == 0, err
    html = Path("report.html").read_text()
    assert "<img" not in html
    assert "Kept: d/copy.txt</h2>" in html
    assert "d/&lt;img src=x onerror=alert(1)&gt;.txt</td><td class='num'>1.000</td>" in html
    code, _, err = run(runner, "d/other.txt", "--html", "d/other.txt")
    assert code == 2
    assert "--html d/other.txt: it is the input d/other.txt" in err


def test_keep_newest_and_oldest_by_modification_time(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("d").mkdir()
    for name, when in (("a.txt", 3_000), ("b.txt", 1_000), ("c.txt", 2_000)):
        Path("d", name).write_text(TEXT)
        os.utime(Path("d", name), (when, when))

    def kept(policy: str) -> set[str]:
        code, out, err = run(runner, "d", "--keep", policy, "--format", "jsonl")
        assert code == 0, err
        return {json.loads(line)["kept"] for line in out.splitlines()}

    assert kept("newest") == {"d/a.txt"}
    assert kept("oldest") == {"d/b.txt"}
    assert kept("last") == {"d/c.txt"}
    assert kept("first") == {"d/a.txt"}


NAME = st.binary(min_size=1, max_size=24).filter(
    lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b"..")
)


@settings(max_examples=25, deadline=None)
@given(names=st.lists(NAME, min_size=1, max_size=6, unique=True), move=st.booleans())
def test_scripts_reach_exactly_the_named_files(names: list[bytes], move: bool) -> None:
    with tempfile.TemporaryDirectory() as work:
        root = os.fsencode(work)
        os.mkdir(root + b"/in")
        for name in [*names, b"keep me"]:
            with open(root + b"/in/" + name, "wb") as handle:
                handle.write(b"x")
        steps = [Step(os.fsdecode(b"in/" + n), "in/keep me", 1.0) for n in names]
        here = os.getcwd()
        os.chdir(work)
        try:
            script = shell_script(steps, move_to="out" if move else None)
        finally:
            os.chdir(here)
        with open(root + b"/s.sh", "wb") as handle:
            handle.write(script)
        subprocess.run(["sh", root + b"/s.sh"], check=True, cwd="/")
        assert os.listdir(root + b"/in") == [b"keep me"]
        if move:
            assert sorted(os.listdir(root + b"/out/in")) == sorted(names)
        assert sorted(os.listdir(root)) == sorted([b"in", b"s.sh", *([b"out"] if move else [])])


def test_every_removal_is_a_pair_scan_reports(runner: CliRunner, sample_corpus: Path) -> None:
    scanned = runner.invoke(cli, ["scan", str(sample_corpus), "--format", "jsonl", "-q"])
    pairs = {
        frozenset((p["a"], p["b"])): p["cosine"]
        for p in map(json.loads, scanned.stdout.splitlines())
    }
    for policy in ("first", "last", "longest", "shortest"):
        code, out, err = run(runner, str(sample_corpus), "--keep", policy, "--format", "jsonl")
        assert code == 0, err
        removed = [json.loads(line) for line in out.splitlines()]
        assert removed
        for r in removed:
            assert pairs[frozenset((r["id"], r["kept"]))] == r["cosine"]
        assert not {r["id"] for r in removed} & {r["kept"] for r in removed}


@pytest.mark.parametrize("jobs", [1, 2])
def test_files_are_read_over_workers_with_their_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    """Each file's size, time, identity and digest come from the read that decoded it."""
    monkeypatch.setattr(counting, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(counting, "MIN_CHUNK_INPUTS", 1)
    monkeypatch.setattr(counting, "MAX_CHUNK_INPUTS", 2)
    corpus, references = tmp_path / "corpus", tmp_path / "references"
    corpus.mkdir()
    references.mkdir()
    (references / "ref.txt").write_text(OTHER)
    os.link(references / "ref.txt", corpus / "c-also-ref.txt")
    (corpus / "a.txt").write_text(TEXT)
    (corpus / "b.txt.gz").write_bytes(gzip.compress(OTHER.encode()))
    (corpus / "d.bin").write_bytes(bytes(range(256)))
    (corpus / "e.txt").write_text(TEXT + " again")
    options = ReadOptions()
    _, held, _ = read_files([str(references)], options)
    entries, states, skipped = read_files([str(corpus)], options, exclude=held, jobs=jobs)
    names = [str(corpus / n) for n in ("a.txt", "b.txt.gz", "e.txt")]
    assert [e.name for e in entries] == [s.name for s in states] == names
    assert [e.text for e in entries] == [TEXT, OTHER, TEXT + " again"]
    assert [(s.path, s.reason) for s in skipped] == [
        (str(corpus / "c-also-ref.txt"), "also a reference file"),
        (str(corpus / "d.bin"), "binary file"),
    ]
    for entry, state in zip(entries, states, strict=True):
        info = os.stat(state.path)
        assert (state.size, state.mtime_ns) == (info.st_size, info.st_mtime_ns)
        assert (state.device, state.inode) == (info.st_dev, info.st_ino)
        assert (entry.size, entry.time) == (info.st_size, info.st_mtime_ns / 1e9)
        assert changed(state, options) is None
    assert states[1].digest == hashlib.blake2b(OTHER.encode(), digest_size=16).digest()
    (corpus / "e.txt").write_text(TEXT + " edited")
    assert changed(states[2], options) == "modified"
