"""Shared fixtures: a CliRunner, the sample corpus, and the --update-golden option."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_corpus"

#: Tables kept between runs (simdup.derived) go to a folder of this session's own, for
#: the commands run in subprocesses too: never the user's cache, and empty at the start.
CACHE = tempfile.mkdtemp(prefix="simdup-test-cache-")
os.environ["SIMDUP_CACHE_DIR"] = CACHE


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    shutil.rmtree(CACHE, ignore_errors=True)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="Rewrite golden files from the current output instead of comparing.",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def sample_corpus() -> Path:
    return SAMPLE


@pytest.fixture
def sample_copy(tmp_path: Path) -> Path:
    """A private copy of the sample corpus, safe to add files to."""
    target = tmp_path / "corpus"
    shutil.copytree(SAMPLE, target)
    return target


@pytest.fixture
def simdup_script() -> str:
    """Path of the installed ``simdup`` console script (next to the running Python)."""
    script = Path(sys.executable).parent / "simdup"
    if not script.exists():  # pragma: no cover - the dev install always provides it
        found = shutil.which("simdup")
        assert found, "the simdup console script is not installed; run `make test`"
        return found
    return str(script)


@pytest.fixture(autouse=True)
def _no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep rich output free of colour codes and terminal-width effects in tests."""
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("SIMDUP_DB", raising=False)
    os.environ.setdefault("COLUMNS", "120")
