"""What a new user meets first: a terminal of readable size, marked copies, no silent option.

Issue 23: each behaviour is checked through the installed ``simdup`` script (and CliRunner).
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from simdup.cli import cli
from simdup.engines.local.counting import count_inputs
from simdup.inputs.files import ReadOptions
from simdup.model import Document
from simdup.progress import Advance

ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def word(k: int) -> str:
    return "zq" + chr(97 + k // 26) + chr(97 + k % 26) + "vex"


def near_copies(root: Path, count: int, folders: tuple[str, ...] = ("",)) -> list[Path]:
    """Write ``count`` documents of 40 words that differ in one word each (cosine 0.975)."""
    paths = []
    for k in range(count):
        folder = root / folders[k % len(folders)]
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"doc{k:02d}.txt"
        path.write_text(" ".join([word(j) for j in range(39)] + [word(100 + k)]))
        paths.append(path)
    return paths


def on_terminal(script: str, *args: str, columns: int = 100) -> str:
    """Run the installed script with stdout on a terminal; return what it showed."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": str(columns), "NO_COLOR": "1"}
    proc = subprocess.Popen([script, *args], stdout=follower, stderr=subprocess.DEVNULL, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the terminal closed: the run is over
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert proc.wait(timeout=120) == 0
    return ESCAPES.sub("", b"".join(chunks).decode().replace("\r\n", "\n"))


def invoke(*args: str) -> subprocess.CompletedProcess[str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)


def run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([script, *args], capture_output=True, text=True, timeout=120)


# -- a terminal shows what a person reads --------------------------------------------------------
def test_a_terminal_shows_the_strongest_pairs_and_says_how_to_see_the_rest(
    tmp_path: Path, simdup_script: str
) -> None:
    near_copies(tmp_path, 12)  # 66 pairs
    shown = on_terminal(simdup_script, "scan", str(tmp_path))
    rows = [line for line in shown.splitlines() if "doc" in line and "paths under" not in line]
    assert len(rows) == 50
    assert "… and 16 more: --limit 0 for all, or --format jsonl -o FILE" in shown
    everything = on_terminal(simdup_script, "scan", str(tmp_path), "--limit", "0")
    assert len([line for line in everything.splitlines() if "doc" in line]) == 66
    assert "more:" not in everything
    piped = run(simdup_script, "scan", str(tmp_path))
    assert len(piped.stdout.splitlines()) == 1 + 66  # a pipe gets every pair
    assert "66 pairs shown" in piped.stderr


def test_terminal_names_are_relative_and_wrap_only_after_a_slash(
    tmp_path: Path, simdup_script: str
) -> None:
    folders = ("alpha-component-one/beta-component-two", "gamma-component-three/delta-four")
    near_copies(tmp_path, 4, folders)
    shown = on_terminal(simdup_script, "scan", str(tmp_path), columns=100)
    assert f"paths under {tmp_path}/" in shown
    table = shown.split("\n", 1)[1]
    assert str(tmp_path) not in table  # names are shown under their common folder
    for part in ("alpha-component-one/", "beta-component-two/", "gamma-component-three/",
                 "delta-four/", "doc00.txt", "doc01.txt"):  # fmt: skip
        assert part in table  # never cut inside a name


def test_no_pairs_is_one_line(tmp_path: Path, simdup_script: str) -> None:
    (tmp_path / "a.txt").write_text("red fox jumps over the lazy dog")
    (tmp_path / "b.txt").write_text("quantum chromodynamics of heavy quarks")
    for done in (invoke("scan", str(tmp_path)), run(simdup_script, "scan", str(tmp_path))):
        assert done.stdout == "No pairs at or above cosine 0.8.\n"


# -- exact copies, and the width --------------------------------------------------------------
def test_exact_copies_are_marked_in_every_format(sample_corpus: Path, simdup_script: str) -> None:
    corpus = str(sample_corpus)
    for done in (invoke("scan", corpus, "--format", "json"),
                 run(simdup_script, "scan", corpus, "--format", "json")):  # fmt: skip
        pairs = {
            (Path(p["a"]).name, Path(p["b"]).name): p for p in json.loads(done.stdout)["pairs"]
        }
        assert pairs["doc0.txt", "doc6.txt"]["identical"] is True  # doc6 is a byte copy
        assert pairs["doc0.txt", "doc1.txt"]["identical"] is False
    table = run(simdup_script, "scan", corpus).stdout.splitlines()
    assert table[1].rstrip().endswith("1.000 (copy)")
    assert "(copy)" not in table[2]
    assert " 0/64 " in table[1]  # the Hamming distance of the width
    rows = run(simdup_script, "scan", corpus, "--format", "csv").stdout.splitlines()
    assert rows[0].endswith(",few_features,identical")
    assert rows[1].endswith(",true,false,true")  # booleans as in JSON, not True/False


def test_a_near_copy_shown_as_one_is_not_marked_a_copy(tmp_path: Path, simdup_script: str) -> None:
    text = [word(k % 600) for k in range(3000)]
    (tmp_path / "a.txt").write_text(" ".join(text))
    (tmp_path / "b.txt").write_text(" ".join([*text[:-1], word(650)]))
    row = run(simdup_script, "scan", str(tmp_path)).stdout.splitlines()[1]
    assert row.rstrip().endswith(" 1.000")  # 0.9999...: rounded, and not a copy
    record = json.loads(run(simdup_script, "scan", str(tmp_path), "--format", "jsonl").stdout)
    assert record["cosine"] < 1.0
    assert record["identical"] is False


def test_compare_uses_and_names_the_width_scan_would_choose(
    sample_corpus: Path, simdup_script: str
) -> None:
    a, b = str(sample_corpus / "doc0.txt"), str(sample_corpus / "doc1.txt")
    shown = run(simdup_script, "compare", a, b).stdout
    assert "64 bits: the width scan would choose for these two documents (--bits auto)" in shown
    record = json.loads(run(simdup_script, "compare", a, b, "--format", "json").stdout)
    assert record["bits_chosen"] == "auto"
    given = json.loads(
        run(simdup_script, "compare", a, b, "--bits", "128", "--format", "json").stdout
    )
    assert given["bits_chosen"] == "given"
    assert len(given["agreement"]) == 128


def test_compare_says_why_a_term_list_is_empty(sample_corpus: Path, simdup_script: str) -> None:
    a, copy = str(sample_corpus / "doc0.txt"), str(sample_corpus / "doc6.txt")
    shown = run(simdup_script, "compare", a, copy).stdout
    assert "none: both have the same terms and weights" in shown
    assert run(simdup_script, "compare", a, copy, "--top", "0").stdout.count("(--top 0)") == 2


# -- what was cut is said --------------------------------------------------------------------
def test_the_html_report_says_what_was_cut(
    sample_corpus: Path, tmp_path: Path, simdup_script: str
) -> None:
    page = tmp_path / "r.html"
    run(simdup_script, "scan", str(sample_corpus), "--limit", "1", "--html", str(page), "-q")
    text = page.read_text()
    assert "1 of 4 pairs" in text
    assert "0/64</td>" in text  # the Hamming distance of the width


# -- no option silently does nothing ---------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--plan", "--all"], "--plan and --all cannot be given together"),
        (["--plan", "--clusters"], "--plan and --clusters cannot be given together"),
        (["--timings"], "--timings adds seconds to JSON stats: give --format json"),
        (["--recall", "0.5", "--scheme", "strict"], "--recall plans the tables of --scheme auto"),
        (["--blocks", "4", "--max-distance", "3"], "--blocks and --max-distance cannot"),
        (["-0"], "-0 splits the list of --files-from FILE"),
        (["--text-field", "body"], "--text-field names a JSON Lines field: give --jsonl FILE"),
    ],
)
def test_options_that_cannot_work_together_are_refused(
    sample_corpus: Path, simdup_script: str, args: list[str], said: str
) -> None:
    done = run(simdup_script, "scan", str(sample_corpus), *args)
    assert done.returncode == 2
    assert said in done.stderr
    assert invoke("scan", str(sample_corpus), *args).returncode == 2


def test_all_reports_the_pairs_below_the_threshold_with_the_default_plan(
    sample_corpus: Path, simdup_script: str
) -> None:
    done = run(simdup_script, "scan", str(sample_corpus), "--all", "--format", "json")
    pairs = json.loads(done.stdout)["pairs"]
    assert any(not p["above_threshold"] for p in pairs)
    assert sum(p["above_threshold"] for p in pairs) == 4


def test_an_include_glob_matching_nothing_is_warned_about(
    sample_corpus: Path, simdup_script: str
) -> None:
    done = run(
        simdup_script, "scan", str(sample_corpus), "--include", "*.md", "--include", "nope/*"
    )
    assert "warning: --include nope/* matched no file" in done.stderr
    assert "*.md matched" not in done.stderr


def test_every_jsonl_path_beside_jsonl_is_warned_about(tmp_path: Path, simdup_script: str) -> None:
    for name in ("s1.jsonl", "s2.jsonl", "s3.ndjson"):
        (tmp_path / name).write_text('{"id": "x", "text": "red fox"}\n')
    s1, s2, s3 = (str(tmp_path / n) for n in ("s1.jsonl", "s2.jsonl", "s3.ndjson"))
    done = run(simdup_script, "scan", "--jsonl", s1, s2, s3)
    assert f"warning: {s2}, {s3} are 2 PATHs, each read as one text document" in done.stderr


def test_dedupe_refuses_a_format_it_would_not_write(tmp_path: Path, simdup_script: str) -> None:
    data = tmp_path / "in.jsonl"
    data.write_text('{"id": "a", "text": "red fox"}\n')
    done = run(simdup_script, "dedupe", "--jsonl", str(data), "--format", "csv",
               "-o", str(tmp_path / "plan.csv"))  # fmt: skip
    assert done.returncode == 2
    assert "--format csv: with --jsonl, -o writes the kept JSON Lines" in done.stderr
    assert not (tmp_path / "plan.csv").exists()


# -- small things ------------------------------------------------------------------------------
def test_fail_on_match_counts_pairs_not_shown(sample_corpus: Path, simdup_script: str) -> None:
    shown = " ".join(run(simdup_script, "scan", "--help").stdout.split())
    assert "reaches --threshold (shown or not)" in shown
    done = run(simdup_script, "scan", str(sample_corpus), "--fail-on-match", "--limit", "1",
               "--sort", "path", "--all")  # fmt: skip
    assert done.returncode == 1


def test_index_query_labels_its_columns(
    sample_corpus: Path, tmp_path: Path, simdup_script: str
) -> None:
    db = str(tmp_path / "i.db")
    run(simdup_script, "index", "add", "--db", db, str(sample_corpus / "doc1.txt"), "-q")
    done = run(simdup_script, "index", "query", "--db", db, str(sample_corpus / "doc0.txt"))
    assert done.stdout.split()[:2] == ["Query", "Match"]


def test_a_memory_budget_too_small_names_the_least_that_fits(
    sample_corpus: Path, simdup_script: str
) -> None:
    done = run(simdup_script, "scan", str(sample_corpus), "--memory", "10")
    assert done.returncode == 4
    assert "budget 10 bytes" in done.stderr
    need = re.search(r"these settings need --memory (\d+)M or more", done.stderr)
    assert need is not None
    again = run(simdup_script, "scan", str(sample_corpus), "--memory", f"{int(need[1]) + 8}M")
    assert again.returncode == 0


def test_the_read_bar_moves_in_small_steps() -> None:
    documents = [Document(f"d{k:04d}", f"word{k} text") for k in range(2000)]
    steps: list[int] = []

    @contextlib.contextmanager
    def meter(*, desc: str, total: int | None = None, unit: str = "doc") -> Iterator[Advance]:
        def advance(documents: int, size: int = 0) -> None:
            steps.append(documents)

        yield advance

    count_inputs(documents, ReadOptions(), jobs=1, meter=meter)
    assert sum(steps) == 2000
    assert max(steps) <= 2000 // 16 + 1  # sixteen steps at least, not 1,000 at a time
