"""``simdup fingerprint`` reads as a scan reads, and lists in the order its inputs were given.

Files in name order, then each record input's records in line order, then ``-``; the
same lines whatever the worker count, and from the store when the corpus outgrows its
share of memory (documents under ``--min-features`` left out alike).
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

import simdup.cli.commands.fingerprints as fingerprint_commands
import simdup.search.plan.budget as budget_module
from simdup.cli import cli
from simdup.fingerprints.simhash import fingerprint, to_hex
from simdup.fingerprints.weights import term_weights
from simdup.search.plan.budget import SpillLimits
from simdup.text.tokens import tokenize

WORDS = [f"w{k}" for k in range(60)]


def make_inputs(root: Path, seed: int) -> tuple[list[str], dict[str, str]]:
    """Files and two JSON Lines inputs with ids in no order; return the arguments and texts.

    Some texts have fewer than eight features (left out by ``--min-features 8``), one
    record repeats a file's name, one has no text at all.
    """
    rng = random.Random(seed)
    texts: dict[str, str] = {}

    def text() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 30)))

    (root / "d").mkdir()
    for k in rng.sample(range(100), 12):
        path = root / "d" / f"f{k:02d}.txt"
        texts[str(path)] = text()
        path.write_text(texts[str(path)])
    arguments = ["--min-features", "8", str(root / "d")]
    for part in ("one", "two"):
        lines = []
        for k in rng.sample(range(1000), 40):
            texts[f"{part}-{k}"] = text()
            lines.append({"id": f"{part}-{k}", "text": texts[f"{part}-{k}"]})
        lines.append({"id": "", "text": ""})  # no id: named by its line
        if part == "one":
            lines.append({"id": str(root / "d" / sorted(p.name for p in (root / "d").iterdir())[0]),
                          "text": "a record named like a file"})  # fmt: skip
        path = root / f"{part}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        arguments += ["--jsonl", str(path)]
    return arguments, texts


def expected_lines(arguments: list[str], texts: dict[str, str], stdin: str | None) -> list[str]:
    """The listing, from the library's own tokenizer and fingerprint."""
    lines = []
    for name, text in texts.items():
        features = term_weights(tokenize(text))
        if len(features) >= 8:
            kind = 0 if name.endswith(".txt") else 1
            lines.append((kind, name, to_hex(fingerprint(features), 64)))
    files = sorted(line for line in lines if line[0] == 0)
    records = [line for line in lines if line[0] == 1]
    ordered = [*files, *records]
    if stdin is not None:
        ordered.append((2, "-", to_hex(fingerprint(term_weights(tokenize(stdin))), 64)))
    return [f"{hexes}  {name}" for _, name, hexes in ordered]


def record_order(root: Path) -> list[str]:
    """The ids of the records, input by input, in line order."""
    ids = []
    for part in ("one", "two"):
        for line in (root / f"{part}.jsonl").read_text().splitlines():
            ids.append(json.loads(line)["id"])
    return ids


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_files_then_records_in_line_order_then_stdin(tmp_path: Path, seed: int) -> None:
    arguments, texts = make_inputs(tmp_path, seed)
    stdin = "from standard input " + " ".join(WORDS[:20])
    result = CliRunner().invoke(cli, ["fingerprint", *arguments, "-"], input=stdin)
    assert result.exit_code == 0, result.output
    listed = result.stdout.splitlines()
    assert listed == expected_lines(arguments, texts, stdin)
    names = [line.split("  ", 1)[1] for line in listed]
    records = [name for name in names if not name.endswith(".txt") and name != "-"]
    assert records == [name for name in record_order(tmp_path) if name in records]
    assert len(records) > 40
    assert "duplicate document name" in result.stderr


def test_the_same_lines_over_workers_and_from_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    arguments, _ = make_inputs(tmp_path, 4)
    runner = CliRunner()
    for fmt in ("text", "jsonl"):
        held = runner.invoke(cli, ["fingerprint", "-j", "1", "--format", fmt, *arguments])
        assert held.exit_code == 0, held.output
        workers = runner.invoke(cli, ["fingerprint", "-j", "2", "--format", fmt, *arguments])
        assert workers.stdout == held.stdout
        with monkeypatch.context() as patch:  # every part of the corpus goes to the store
            patch.setattr(budget_module, "spill_limits", lambda size: SpillLimits(0, 1, 1, 1))
            work = tmp_path / f"work-{fmt}"
            work.mkdir()
            stored = runner.invoke(
                cli, ["fingerprint", "--tmp-dir", str(work), "--format", fmt, *arguments]
            )
            assert stored.exit_code == 0, stored.output
            assert stored.stdout == held.stdout
            assert stored.stderr == held.stderr  # the same skips, small documents included
            assert list(work.iterdir()) == []
        with monkeypatch.context() as patch:  # written a few lines at a time
            patch.setattr(fingerprint_commands, "LISTING_BATCH", 3)
            out = tmp_path / f"listing-{fmt}"
            command = ["fingerprint", "-o", str(out), "--format", fmt, *arguments]
            batched = runner.invoke(cli, command)
            assert batched.exit_code == 0, batched.output
            assert out.read_text() == held.stdout
    assert "fewer than --min-features 8" in held.stderr


def test_the_console_script_lists_in_the_order_given(tmp_path: Path, simdup_script: str) -> None:
    arguments, texts = make_inputs(tmp_path, 5)
    stdin = "standard input " + " ".join(WORDS[10:30])
    done = subprocess.run(
        [simdup_script, "fingerprint", "-q", *arguments, "-"],
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.splitlines() == expected_lines(arguments, texts, stdin)
    assert done.stderr == ""
