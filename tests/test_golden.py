"""The sample corpus scanned to exact JSON; regenerate with ``make golden`` and review the diff.

Any change to tokenizing, weighting, hashing, blocking or rendering that alters results
shows up here as a diff, so output stability is a decision, never an accident.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from simdup.cli import cli

GOLDEN = Path(__file__).parent / "data" / "golden_scan"

RUNS = {
    "default.json": ["scan", "--format", "json", "--clusters"],
    "bits128_log_all.json": [
        "scan", "--format", "json", "--bits", "128", "--weighting", "log", "--all",
        "--max-distance", "127",
    ],
    "bigrams.jsonl": ["scan", "--format", "jsonl", "--ngram", "2", "--threshold", "0.5"],
    "fingerprints.txt": ["fingerprint", "--bits", "32"],
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(RUNS))
def test_sample_corpus_output_is_stable(
    name: str, runner: CliRunner, update_golden: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(__file__).parent.parent)
    result = runner.invoke(cli, [*RUNS[name], "sample_corpus"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    path = GOLDEN / name
    if update_golden:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(result.stdout_bytes)
    assert result.stdout_bytes == path.read_bytes()
