"""``dedupe`` as ``scan`` plans and lists (--plan, --memory, --limit, --all, the width) and --link.

Each behaviour is checked through click's runner and through the installed script.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from simdup.cli import cli
from simdup.dedupe.files import FileState, link_files, replace_with_link
from simdup.inputs.files import ReadOptions, read_source
from simdup.inputs.files import Source as FileSource

TEXT = (
    "Near duplicate detection compares what documents say: the quick brown fox jumps "
    "over the lazy dog while seven wise owls watch the river flow past the old mill.\n"
)


def run(script: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([script, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def dedupe_json(runner: CliRunner, *args: str) -> dict[str, Any]:
    result = runner.invoke(cli, ["dedupe", "--format", "json", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


# -- what scan has ---------------------------------------------------------------------------


def test_dedupe_plan_prints_the_plan(sample_corpus: Path, simdup_script: str) -> None:
    done = run(simdup_script, "dedupe", "--plan", str(sample_corpus))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("mode: exact")
    assert "removed" not in done.stdout + done.stderr
    as_json = run(simdup_script, "dedupe", "--plan", "--format", "json", str(sample_corpus))
    assert json.loads(as_json.stdout)["documents"] == 9


def test_dedupe_plan_refuses_actions(sample_corpus: Path, runner: CliRunner) -> None:
    result = runner.invoke(cli, ["dedupe", "--plan", "--script", "x.sh", str(sample_corpus)])
    assert result.exit_code == 2
    assert "--plan prints the plan and stops; it takes no --script" in result.output


def test_dedupe_memory_is_a_budget(sample_corpus: Path, simdup_script: str) -> None:
    done = run(simdup_script, "dedupe", "--memory", "1M", str(sample_corpus))
    assert done.returncode == 4
    assert "budget 1 MiB" in done.stderr
    assert "Traceback" not in done.stderr
    bad = run(simdup_script, "dedupe", "--memory", "lots", str(sample_corpus))
    assert bad.returncode == 2


def test_dedupe_chooses_the_width_as_scan_does(sample_corpus: Path, runner: CliRunner) -> None:
    data = dedupe_json(runner, str(sample_corpus))
    assert data["params"]["bits"] == "auto"
    fixed = dedupe_json(runner, "--bits", "64", str(sample_corpus))
    assert fixed["params"]["bits"] == 64
    assert fixed["removed"] == data["removed"]


def test_dedupe_limit_lists_fewer_and_says_so(sample_corpus: Path, simdup_script: str) -> None:
    done = run(simdup_script, "dedupe", "--limit", "1", "--format", "jsonl", str(sample_corpus))
    assert len(done.stdout.splitlines()) == 1
    assert "listed 1 of 3 removals (--limit)" in done.stderr
    assert "3 removed" in done.stderr


def test_dedupe_limit_does_not_limit_the_script(
    sample_copy: Path, runner: CliRunner, tmp_path: Path
) -> None:
    script = tmp_path / "rm.sh"
    result = runner.invoke(
        cli, ["dedupe", "--limit", "1", "--script", str(script), str(sample_copy)]
    )
    assert result.exit_code == 0, result.output
    assert script.read_text().count("\nrm -- ") == 3


def test_dedupe_all_lists_candidate_pairs(sample_corpus: Path, simdup_script: str) -> None:
    every = ["--max-distance", "63", "--bits", "64"]  # every pair a candidate
    done = run(simdup_script, "dedupe", "--all", *every, "--format", "json", str(sample_corpus))
    data = json.loads(done.stdout)
    assert len(data["removed"]) == 3
    below = [p for p in data["pairs"] if not p["above_threshold"]]
    assert below  # every candidate pair, those below the threshold too
    scan = run(simdup_script, "scan", "--all", *every, "--format", "json", str(sample_corpus))
    assert data["pairs"] == json.loads(scan.stdout)["pairs"]
    assert "pairs" not in json.loads(
        run(simdup_script, "dedupe", "--format", "json", str(sample_corpus)).stdout
    )
    table = run(simdup_script, "dedupe", "--all", str(sample_corpus))
    assert "Document A" in table.stdout
    assert "Removed" in table.stdout


def test_dedupe_all_refuses_formats_without_pairs(sample_corpus: Path, runner: CliRunner) -> None:
    result = runner.invoke(cli, ["dedupe", "--all", "--format", "csv", str(sample_corpus)])
    assert result.exit_code == 2
    assert "not in csv" in result.output


# -- --link -----------------------------------------------------------------------------------


def test_link_is_a_dry_run_without_apply(sample_copy: Path, runner: CliRunner) -> None:
    result = runner.invoke(cli, ["dedupe", "--link", "hard", str(sample_copy)])
    assert result.exit_code == 2
    assert "--link needs --script FILE (to review the links) or --apply" in result.output
    both = runner.invoke(
        cli, ["dedupe", "--link", "hard", "--move-to", "x", "--apply", str(sample_copy)]
    )
    assert both.exit_code == 2
    assert "give one" in both.output
    assert not any(p.is_symlink() for p in sample_copy.iterdir())


def test_link_hard_apply(sample_copy: Path, simdup_script: str) -> None:
    before = (sample_copy / "doc1.txt").stat().st_ino
    done = run(simdup_script, "dedupe", "--link", "hard", "--apply", str(sample_copy))
    assert done.returncode == 0, done.stderr
    assert "linked 3 file(s) to their kept files (hard links)" in done.stderr
    kept, removed = sample_copy / "doc0.txt", sample_copy / "doc1.txt"
    assert removed.stat().st_ino == kept.stat().st_ino != before
    assert (sample_copy / "doc6.txt").stat().st_ino == kept.stat().st_ino
    assert sorted(p.name for p in sample_copy.iterdir() if p.name.startswith(".")) == []


def test_link_symbolic_apply_is_relative(sample_copy: Path, simdup_script: str) -> None:
    done = run(simdup_script, "dedupe", "--link", "symbolic", "--apply", str(sample_copy))
    assert done.returncode == 0, done.stderr
    link = sample_copy / "doc3.txt"
    assert link.is_symlink()
    assert os.readlink(link) == "doc2.txt"
    assert link.read_text() == (sample_copy / "doc2.txt").read_text()


def test_link_script_links_when_run(sample_copy: Path, runner: CliRunner, tmp_path: Path) -> None:
    script = tmp_path / "link.sh"
    result = runner.invoke(
        cli, ["dedupe", "--link", "symbolic", "--script", str(script), str(sample_copy)]
    )
    assert result.exit_code == 0, result.output
    assert not (sample_copy / "doc1.txt").is_symlink()  # the script only says what it would do
    text = script.read_text()
    assert "ln -s -- 'doc0.txt'" in text
    assert "mv -f -- " in text
    subprocess.run(["sh", str(script)], check=True, timeout=60)
    assert os.readlink(sample_copy / "doc1.txt") == "doc0.txt"
    assert sorted(p.name for p in sample_copy.iterdir() if p.name.startswith(".")) == []


SHM = Path("/dev/shm")


@pytest.mark.skipif(
    not SHM.is_dir()
    or not os.access(SHM, os.W_OK)
    or SHM.stat().st_dev == Path("/tmp").stat().st_dev,
    reason="needs /dev/shm on another file system than /tmp",
)
def test_hard_links_across_real_file_systems(simdup_script: str, tmp_path: Path) -> None:
    here = tmp_path / "here"
    here.mkdir()
    (here / "a.txt").write_text(TEXT)
    with tempfile.TemporaryDirectory(dir=SHM) as there:
        (Path(there) / "b.txt").write_text(TEXT)
        done = run(simdup_script, "dedupe", "--link", "hard", "--apply", str(here), there)
        assert done.returncode == 4
        refused = [line for line in done.stderr.splitlines() if line.startswith("not linked")]
        assert len(refused) == 1
        assert refused[0].endswith("hard links cannot cross file systems (use --link symbolic)")
        assert (Path(there) / "b.txt").read_text() == TEXT
        assert "linked 0 file(s)" in done.stderr


def _state(path: Path) -> FileState:
    _, _, state = read_source(FileSource(str(path), str(path)), ReadOptions(), state=True)
    assert state is not None
    return state


def test_hard_links_across_file_systems_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "kept.txt").write_text("same words here\n")
    (tmp_path / "copy.txt").write_text("same words here\n")
    kept, copy = _state(tmp_path / "kept.txt"), _state(tmp_path / "copy.txt")

    def cross(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", cross)
    (outcome,) = link_files([(copy, kept)], "hard", ReadOptions())
    assert outcome.refused is not None
    assert "hard links cannot cross file systems (use --link symbolic)" in outcome.refused
    assert "\n" not in outcome.refused
    assert (tmp_path / "copy.txt").read_text() == "same words here\n"
    assert not (tmp_path / "copy.txt").is_symlink()


def test_a_changed_file_is_not_linked(tmp_path: Path) -> None:
    (tmp_path / "kept.txt").write_text("same words here\n")
    (tmp_path / "copy.txt").write_text("same words here\n")
    kept, copy = _state(tmp_path / "kept.txt"), _state(tmp_path / "copy.txt")
    (tmp_path / "copy.txt").write_text("edited since it was read\n")
    (outcome,) = link_files([(copy, kept)], "symbolic", ReadOptions())
    assert outcome.refused is not None
    assert "changed since it was read" in outcome.refused
    assert (tmp_path / "copy.txt").read_text() == "edited since it was read\n"


def test_a_failed_link_leaves_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "copy.txt").write_text("kept safe\n")

    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "rename", refuse)
    with pytest.raises(PermissionError):
        replace_with_link(str(tmp_path / "copy.txt"), str(tmp_path / "missing.txt"), "symbolic")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.txt"]
    assert (tmp_path / "copy.txt").read_text() == "kept safe\n"


def test_link_needs_files(tmp_path: Path, runner: CliRunner) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "a", "text": "x"}\n')
    result = runner.invoke(cli, ["dedupe", "--jsonl", str(corpus), "--link", "hard", "--apply"])
    assert result.exit_code == 2
    assert "--link act on files" in result.output
    assert shutil.which("sh")
