"""Shared fixtures: a CliRunner, the sample corpus, and the --update-golden option."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_corpus"

#: Tables kept between runs (simdup.derived) go to a folder of this session's own, for
#: the commands run in subprocesses too: never the user's cache, and empty at the start.
CACHE = tempfile.mkdtemp(prefix="simdup-test-cache-")
os.environ["SIMDUP_CACHE_DIR"] = CACHE

#: The commands the tests interrupt are run as from a terminal, where Ctrl-C is heard: a
#: suite started in the background by a script (``make test &``) inherits Ctrl-C ignored,
#: and would pass that on to every command it runs.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


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


def _ctrl_c_state() -> tuple[object, str]:
    """Return this process's Ctrl-C handler, and whether the system ignores or blocks it."""
    flags = ""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                name, _, value = line.partition(":")
                if name in ("SigIgn", "SigBlk") and int(value, 16) & (1 << (signal.SIGINT - 1)):
                    flags += name
    except OSError:
        pass
    return signal.getsignal(signal.SIGINT), flags


@pytest.fixture(autouse=True)
def _ctrl_c_is_left_as_found(request: pytest.FixtureRequest) -> Any:
    """Fail a test that leaves this process's Ctrl-C handling changed.

    Commands run in subprocesses inherit an ignored or blocked Ctrl-C: a test that left it
    so would make later tests of Ctrl-C fail, far from the cause.
    """
    before = _ctrl_c_state()
    yield
    after = _ctrl_c_state()
    if after != before:
        signal.signal(signal.SIGINT, before[0])  # type: ignore[arg-type]
        pytest.fail(f"{request.node.nodeid} left Ctrl-C handling changed: {before} -> {after}")
