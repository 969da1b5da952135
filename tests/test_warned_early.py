"""A plan's warnings are told before the pair work they warn of, and once."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from simdup.cli.app import cli
from simdup.engines.local import scan_inputs
from simdup.inputs.files import ReadOptions
from simdup.inputs.gather import gather_inputs
from simdup.model import Document
from simdup.progress import Advance
from simdup.search.plan import planner

#: The start of the warning of a plan expected to take minutes.
LONG = "this plan is expected to take about"


@pytest.fixture
def every_plan_is_long(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(planner, "LONG_SECONDS", 0.0)


def documents() -> list[Document]:
    base = " ".join(f"word{k}" for k in range(40))
    return [Document(f"d{k}", f"{base} extra{k}") for k in range(12)]


def test_the_library_tells_the_warning_before_the_pair_stage(every_plan_is_long: None) -> None:
    events: list[tuple[str, str]] = []

    @contextlib.contextmanager
    def meter(*, desc: str, total: int | None = None, unit: str = "doc") -> Iterator[Advance]:
        events.append(("stage", desc))
        yield lambda documents, size=0: None

    found = gather_inputs([], ReadOptions(), documents())
    # Every candidate (``--all``): tables are planned, and priced in seconds.
    tell = lambda w: events.append(("told", w))  # noqa: E731
    result = scan_inputs(found, report_all=True, meter=meter, tell=tell)
    told = [message for kind, message in events if kind == "told"]
    assert len(told) == 1
    assert told[0].startswith(LONG)
    assert told == [w for w in result.plan["warnings"] if w.startswith(LONG)]
    assert events.index(("told", told[0])) < events.index(("stage", "pairs"))


def test_the_command_line_prints_it_once_before_the_summary(
    every_plan_is_long: None, tmp_path: Path
) -> None:
    for doc in documents():
        (tmp_path / f"{doc.name}.txt").write_text(doc.text)
    result = CliRunner().invoke(cli, ["scan", str(tmp_path), "--all", "--format", "jsonl"])
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    warned = [k for k, line in enumerate(lines) if line.startswith(f"warning: {LONG}")]
    summary = [k for k, line in enumerate(lines) if "documents," in line]
    assert len(warned) == 1
    assert len(summary) == 1
    assert warned[0] < summary[0]
    quiet = CliRunner().invoke(cli, ["scan", str(tmp_path), "--all", "--format", "jsonl", "-q"])
    assert quiet.stderr == ""
    assert quiet.stdout == result.stdout
