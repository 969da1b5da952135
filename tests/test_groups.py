"""Clusters around a representative, chains on request, in every format (issue 23, point 1)."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from simdup.cli import cli
from simdup.model import Document
from simdup.params import Params
from simdup.search.groups import clusters


def word(k: int) -> str:
    """Return a made-up word of letters only, one per ``k``."""
    return "zq" + chr(97 + k // 26) + chr(97 + k % 26) + "vex"


def words(lo: int, hi: int) -> str:
    return " ".join(word(k) for k in range(lo, hi))


def chain(tmp_path: Path) -> Path:
    """Write a chain: a~b (0.875), b~c (0.875), but a and c only 0.75 apart."""
    root = tmp_path / "chain"
    root.mkdir()
    (root / "a.txt").write_text(words(0, 40))
    (root / "b.txt").write_text(words(5, 45))
    (root / "c.txt").write_text(words(10, 50))
    return root


def scan(args: list[str], script: str | None = None) -> subprocess.CompletedProcess[str]:
    if script is None:
        result = CliRunner().invoke(cli, ["scan", *args], catch_exceptions=False)
        return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)
    return subprocess.run([script, "scan", *args], capture_output=True, text=True, timeout=120)


def json_clusters(root: Path, *more: str, script: str | None = None) -> list[dict[str, Any]]:
    done = scan([str(root), "--format", "json", "--clusters", *more], script)
    assert done.returncode == 0, done.stderr
    groups: list[dict[str, Any]] = json.loads(done.stdout)["clusters"]
    return groups


def test_a_cluster_never_joins_documents_through_a_chain(
    tmp_path: Path, simdup_script: str
) -> None:
    root = chain(tmp_path)
    for script in (None, simdup_script):
        (group,) = json_clusters(root, script=script)
        assert group["kind"] == "representative"
        assert group["representative"] == str(root / "a.txt")
        assert group["members"] == [str(root / "a.txt"), str(root / "b.txt")]  # not c
        assert group["cosines"] == [1.0, 0.875]
        assert group["min_cosine"] == 0.875
        assert group["least_similar"] == {
            "a": str(root / "a.txt"), "b": str(root / "b.txt"), "cosine": 0.875
        }  # fmt: skip
        assert group["measured_pairs"] == 1


def test_linked_clusters_are_chains_labelled_by_their_weakest_link(
    tmp_path: Path, simdup_script: str
) -> None:
    root = chain(tmp_path)
    for script in (None, simdup_script):
        (group,) = json_clusters(root, "linked", script=script)
        assert group["kind"] == "linked"
        assert group["size"] == 3
        assert group["weakest_link"]["cosine"] == 0.875
        assert group["least_similar"] is None  # a-c was never measured: not claimed
        assert group["measured_pairs"] == 2
    # with every pair measured (--all), the least similar pair is known
    (group,) = json_clusters(root, "linked", "--all")
    assert group["least_similar"] == {
        "a": str(root / "a.txt"), "b": str(root / "c.txt"), "cosine": 0.75
    }  # fmt: skip


def test_a_bare_clusters_before_a_path_takes_the_default(
    tmp_path: Path, simdup_script: str
) -> None:
    root = chain(tmp_path)
    done = scan(["--clusters", str(root)], simdup_script)
    assert done.returncode == 0, done.stderr
    assert "Cluster" in done.stdout
    assert "rep." in done.stdout
    assert "linked" in scan(["--help"], simdup_script).stdout


def test_clusters_come_in_json_lines_and_csv(tmp_path: Path, simdup_script: str) -> None:
    root = chain(tmp_path)
    for script in (None, simdup_script):
        lines = scan([str(root), "--clusters", "--format", "jsonl"], script).stdout.splitlines()
        records = [json.loads(line) for line in lines]
        assert [r.get("cluster") for r in records] == [None, None, 1]
        assert records[-1]["representative"] == str(root / "a.txt")
        rows = list(csv.DictReader(io.StringIO(scan([str(root), "--clusters", "--format", "csv"],
                                                     script).stdout)))  # fmt: skip
        by_pair = {(Path(r["a"]).name, Path(r["b"]).name): r for r in rows}
        assert by_pair["a.txt", "b.txt"]["cluster"] == "1"
        assert by_pair["a.txt", "b.txt"]["representative"] == str(root / "a.txt")
        assert by_pair["b.txt", "c.txt"]["cluster"] == ""  # c is not in a's group


def test_clusters_in_the_table_name_the_representative_and_each_cosine(tmp_path: Path) -> None:
    root = chain(tmp_path)
    out = scan([str(root), "--clusters"]).stdout
    rows = out.splitlines()[-2:]
    assert rows[0].split() == ["1", "2", "0.875", "rep.", str(root / "a.txt")]
    assert rows[1].split() == ["0.875", str(root / "b.txt")]
    chains = scan([str(root), "--clusters", "linked"]).stdout
    assert "Chain" in chains
    assert "Weakest link" in chains


def test_the_library_groups_as_the_command_line() -> None:
    documents = [Document(n, t) for n, t in (("a", words(0, 40)), ("b", words(5, 45)),
                                              ("c", words(10, 50)))]  # fmt: skip
    from simdup.engines.local import find_duplicates

    result = find_duplicates(documents, Params(threshold=0.8))
    assert [g.members for g in clusters(result)] == [("a", "b")]
    assert [g.members for g in clusters(result, "linked")] == [("a", "b", "c")]
