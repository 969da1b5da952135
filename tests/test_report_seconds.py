"""``--plan`` says how long writing the report takes: the pairs it lists, as it lists them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from simdup.cli import pairs as cli_pairs
from simdup.cli.app import cli
from simdup.cli.options import TERMINAL_ROWS
from simdup.engines.local import mean_length
from simdup.report import seconds
from simdup.report.seconds import report_seconds
from simdup.spill import SpillDir, StringColumn

#: Twelve copies of one text (66 pairs, more than a terminal shows) and two others.
COPIES = 12


@pytest.fixture
def copies(tmp_path: Path) -> Path:
    root = tmp_path / "copies"
    root.mkdir()
    for k in range(COPIES):
        (root / f"copy-{k:02d}.txt").write_text(text(0))
    (root / "other.txt").write_text(text(1))
    (root / "third.txt").write_text(text(2))
    return root


def text(seed: int) -> str:
    """Return a text of sixty words of its own."""
    return " ".join(f"word{seed}x{k}" for k in range(60)) + "\n"


def planned(runner: CliRunner, *args: str) -> dict[str, Any]:
    result = runner.invoke(cli, ["scan", "--plan", "--format", "json", *args])
    assert result.exit_code == 0, result.output
    described: dict[str, Any] = json.loads(result.stdout)
    return described


def test_the_plan_prices_every_pair_it_expects(runner: CliRunner, copies: Path) -> None:
    described = planned(runner, str(copies))
    report = described["report"]
    assert described["expected_reported"] == COPIES * (COPIES - 1) // 2
    assert report["format"] == "json"
    assert report["pairs"] == described["expected_reported"]
    # The names are the files' paths: the folder's, a separator and ``copy-00.txt``.
    assert described["name_length"] == pytest.approx(len(str(copies)) + 12, abs=0.5)
    expected = report_seconds("json", report["pairs"], described["name_length"])
    assert report["estimated_seconds"] == round(expected, 3)
    assert expected > 0


def test_a_terminal_prices_the_pairs_it_shows(
    runner: CliRunner, copies: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert planned(runner, "--format", "jsonl", str(copies))["report"]["format"] == "jsonl"
    into_file = runner.invoke(cli, ["scan", "--plan", str(copies)]).stdout
    assert f"to write about {COPIES * (COPIES - 1) // 2:,} pairs as table" in into_file
    monkeypatch.setattr(cli_pairs, "stdout_is_terminal", lambda path: path in (None, "-"))
    text = runner.invoke(cli, ["scan", "--plan", str(copies)]).stdout
    assert f"to write about {TERMINAL_ROWS:,} pairs as table" in text


def test_a_long_report_is_warned_of(
    runner: CliRunner, copies: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    quiet = runner.invoke(cli, ["scan", "--plan", "--format", "csv", str(copies)]).stdout
    assert "writing its report" not in quiet
    monkeypatch.setitem(seconds.PAIR_SECONDS, "csv", (60.0, 0.0))  # a minute a pair
    text = runner.invoke(cli, ["scan", "--plan", "--format", "csv", str(copies)]).stdout
    warning = next(line for line in text.splitlines() if "writing its report" in line)
    assert warning.startswith("warning: writing its report, about 66 pairs as csv")
    assert "66 minutes" in warning


def test_report_seconds_grow_with_pairs_and_names() -> None:
    for fmt in seconds.PAIR_SECONDS:
        assert report_seconds(fmt, 0, 40.0) == 0.0
        assert report_seconds(fmt, 2_000, 40.0) == pytest.approx(
            2 * report_seconds(fmt, 1_000, 40.0)
        )
        assert report_seconds(fmt, 1_000, 80.0) > report_seconds(fmt, 1_000, 10.0)
    assert report_seconds("html", 1_000, 40.0) == 0.0  # not a pair listing


def test_mean_length_reads_names_spread_over_a_stored_column(tmp_path: Path) -> None:
    names = [f"{'x' * (k % 7)}-{k}" for k in range(10_000)]
    with SpillDir(str(tmp_path)) as spill:
        column = StringColumn(spill, "names")
        column.append(names)
        stored = column.mapped()
        assert mean_length(stored) == mean_length(names)
        assert mean_length(names, most=len(names)) == round(sum(map(len, names)) / len(names), 1)
        assert abs(mean_length(names) - sum(map(len, names)) / len(names)) < 0.1
