"""Start-up: a command loads what it needs when it needs it, and workers start only to gain.

How fast that is lives in ``benchmarks/startup.py``; these tests keep the rules that make
it fast: which modules a run of the installed command imports, and when counting starts
worker processes (never for a small corpus; for a large one, while this process reads
the first chunk), with the same counts either way.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from simdup.cli import GC_THRESHOLDS
from simdup.engines import pool
from simdup.engines.local import counting
from simdup.engines.pool import chunk_bounds, ordered_map
from simdup.inputs.files import ReadOptions
from simdup.inputs.gather import gather_inputs
from simdup.text.counts import CountMatrix

SAMPLE = Path(__file__).resolve().parent.parent / "sample_corpus"


def imported(command: Sequence[str], **env: str) -> set[str]:
    """Return the modules a run of ``command`` imported, from Python's import-time report."""
    done = subprocess.run(
        command,
        capture_output=True,
        env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1", **env},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    lines = done.stderr.decode(errors="replace").splitlines()
    return {line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time:")}


def loaded(modules: set[str], *names: str) -> list[str]:
    """Return those of ``names`` (packages included: ``numpy`` means ``numpy.*`` too) loaded."""
    return sorted(m for m in modules for n in names if m == n or m.startswith(n + "."))


@pytest.mark.parametrize(
    "args", [["--version"], ["--help"], ["scan", "--help"], ["index", "add", "--help"]]
)
def test_version_and_help_load_neither_numpy_nor_rich(simdup_script: str, args: list[str]) -> None:
    modules = imported([simdup_script, *args])
    assert "simdup.cli.app" in modules  # the report is read
    assert loaded(modules, "numpy", "rich") == []


@pytest.mark.parametrize(
    "words",
    [
        "simdup sc",
        "simdup scan --jsonl 'x*.jsonl' --memory 2G --format ",
        "simdup index add --st",
        "simdup compare a b --",
    ],
)
def test_shell_completion_loads_neither_numpy_nor_rich(simdup_script: str, words: str) -> None:
    modules = imported(
        [simdup_script],
        _SIMDUP_COMPLETE="bash_complete",
        COMP_WORDS=words,
        COMP_CWORD=str(len(words.split()) - (0 if words.endswith(" ") else 1)),
    )
    assert "simdup.cli.app" in modules
    assert loaded(modules, "numpy", "rich") == []


def test_version_loads_no_command(simdup_script: str) -> None:
    assert loaded(imported([simdup_script, "--version"]), "simdup.cli.commands") == []


def test_compare_of_two_files_loads_no_planner_and_starts_no_worker(simdup_script: str) -> None:
    modules = imported(
        [simdup_script, "compare", str(SAMPLE / "doc0.txt"), str(SAMPLE / "doc1.txt")]
    )
    assert "numpy" in modules
    unwanted = ("simdup.search.plan", "multiprocessing", "concurrent.futures.process", "tqdm")
    assert loaded(modules, *unwanted, "simdup.index", "simdup.engines.dask") == []


def test_scan_of_a_small_tree_loads_only_its_engine(simdup_script: str) -> None:
    modules = imported([simdup_script, "scan", str(SAMPLE)])
    assert "simdup.engines.local" in modules
    unwanted = ("simdup.engines.dask", "simdup.index", "simdup.report.html", "simdup.evaluate")
    assert loaded(modules, *unwanted, "simdup.dedupe", "multiprocessing") == []
    assert loaded(modules, "numpy.random") == []  # the plan's sample keeps every pair


def _in_process(items: Sequence[int]) -> tuple[int, list[int]]:
    """Where a chunk was worked on, and its items."""
    return os.getpid(), list(items)


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_leading_chunks_are_worked_here_while_spawned_workers_start(
    method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"{method} is not a start method on this platform")
    monkeypatch.setattr(pool, "start_method", lambda: method)
    items = list(range(20))
    bounds = chunk_bounds(len(items), 4)
    done = list(ordered_map(_in_process, items, bounds, 2, here=1))
    assert [part for _, part in done] == [items[lo:hi] for lo, hi in bounds]
    worked_here = [pid == os.getpid() for pid, _ in done]
    # Forked workers start at once: this process working would leave them idle.
    assert worked_here == [method == "spawn"] + [False] * (len(bounds) - 1)


def test_worth_workers_weighs_bytes_and_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(counting, "INPUT_BYTES", 100)
    monkeypatch.setattr(counting, "PARALLEL_BYTES", 10_000)
    monkeypatch.setattr(counting, "SPAWNED_PARALLEL_BYTES", 100_000)
    assert not counting.worth_workers(10, 8_000)
    assert counting.worth_workers(20, 8_000)  # 20 inputs cost 2,000 bytes more
    assert counting.worth_workers(1, 10_000)
    assert not counting.worth_workers(1, 10_000, "spawn")


def write_tree(root: Path, files: int, size: int) -> None:
    """Write ``files`` files of about ``size`` bytes of distinct words."""
    root.mkdir()
    for k in range(files):
        words = " ".join(f"w{k}x{j}" for j in range(size // 8))
        (root / f"f{k:03d}.txt").write_text(words + " shared common text")


def started_workers(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the worker pools started (their sizes) from now on."""
    started: list[int] = []
    real = pool.worker_pool

    def recording(workers: int, method: str, inherited: object) -> Any:
        started.append(workers)
        return real(workers, method, inherited)

    monkeypatch.setattr(pool, "worker_pool", recording)
    return started


def counted(root: Path, jobs: int) -> counting.CountedInputs:
    options = ReadOptions()
    return counting.count_inputs(gather_inputs([str(root)], options).inputs, options, jobs=jobs)


def same_counts(a: counting.CountedInputs, b: counting.CountedInputs) -> None:
    assert isinstance(a.counts, CountMatrix)  # held in memory: no budget was given
    assert isinstance(b.counts, CountMatrix)
    assert a.names == b.names
    assert a.counts.vocabulary == b.counts.vocabulary
    assert a.counts.indptr.tolist() == b.counts.indptr.tolist()
    assert a.counts.indices.tolist() == b.counts.indices.tolist()
    assert a.counts.counts.tolist() == b.counts.counts.tolist()


def test_a_small_corpus_is_counted_in_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_tree(tmp_path / "small", 60, 400)  # 60 files, 24 KB: far below the break-even
    started = started_workers(monkeypatch)
    serial = counted(tmp_path / "small", 1)
    same_counts(counted(tmp_path / "small", 2), serial)
    assert started == []


def test_workers_start_once_the_first_chunk_shows_the_corpus_is_large(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Few inputs but many bytes: the first chunk, read here, tells; workers take the rest."""
    write_tree(tmp_path / "large", 80, 4_000)
    monkeypatch.setattr(counting, "INPUT_BYTES", 1)
    monkeypatch.setattr(counting, "PARALLEL_BYTES", 60_000)  # about 15 of these files
    monkeypatch.setattr(counting, "SPAWNED_PARALLEL_BYTES", 60_000)
    assert not counting.worth_workers(80, 0)  # by their number alone, not worth it
    started = started_workers(monkeypatch)
    serial = counted(tmp_path / "large", 1)
    assert started == []
    same_counts(counted(tmp_path / "large", 2), serial)
    assert started == [2]


#: The start of a process that runs the command line (whose first steps set the
#: environment numpy reads) and then loads numpy, as a worker would.
_AFTER_THE_COMMAND_LINE = """
import os, time
from simdup.cli import main
try:
    main(['--version'])
except SystemExit:
    pass
import numpy
"""


def _last_line_after_the_command_line(script: str, name: str, value: str | None) -> list[str]:
    """Run ``script`` after the command line, with ``name`` unset or set to ``value``.

    Returns the words of the last line it printed.
    """
    env = {k: v for k, v in os.environ.items() if k != name}
    if value is not None:
        env[name] = value
    done = subprocess.run(
        [sys.executable, "-c", _AFTER_THE_COMMAND_LINE + script],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split("\n")[-2].split()


@pytest.mark.parametrize("value", [None, "1"])
def test_numpy_huge_pages_are_off_unless_asked_for(value: str | None) -> None:
    """The command line sets NUMPY_MADVISE_HUGEPAGE=0 before numpy loads; a set value stays."""
    script = (
        "from numpy._core import multiarray\n"
        "print(os.environ['NUMPY_MADVISE_HUGEPAGE'], multiarray._get_madvise_hugepage())\n"
    )
    setting, asked = _last_line_after_the_command_line(script, "NUMPY_MADVISE_HUGEPAGE", value)
    assert setting == (value or "0")
    if value is None:
        assert asked == "False"  # (with "1", numpy still declines on kernels without them)


#: The processor time of the process's other threads (OpenBLAS's) half a second after
#: numpy loaded, in clock ticks.
_BLAS_SPIN = """
time.sleep(0.5)
me = os.getpid()
ticks = 0
for task in os.listdir(f"/proc/{me}/task"):
    if int(task) != me:
        with open(f"/proc/{me}/task/{task}/stat") as stat:
            ticks += int(stat.read().rsplit(")", 1)[1].split()[11])
print(os.environ["OPENBLAS_THREAD_TIMEOUT"], ticks, os.sysconf("SC_CLK_TCK"))
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="reads Linux's /proc")
@pytest.mark.parametrize("value", [None, "28"])
def test_blas_threads_do_not_spin_after_numpy_loads(value: str | None) -> None:
    """The command line lets OpenBLAS's threads sleep at once; a set timeout stays."""
    words = _last_line_after_the_command_line(_BLAS_SPIN, "OPENBLAS_THREAD_TIMEOUT", value)
    setting, ticks, per_second = words
    assert setting == (value or "4")
    if value is None:  # spinning for 2**28 cycles takes about 0.1 s of a core
        assert int(ticks) / int(per_second) < 0.04


def test_the_command_line_collects_cycles_at_its_own_pace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run keeps millions of objects for its length: the collector walks them seldom."""
    import simdup.cli

    seen: list[tuple[int, ...]] = []

    def run(args: list[str] | None) -> int:
        seen.append(gc.get_threshold())
        return 0

    monkeypatch.setattr(simdup.cli, "_run", run)
    before = gc.get_threshold()
    with pytest.raises(SystemExit):
        simdup.cli.main(["--version"])
    assert seen == [GC_THRESHOLDS]
    assert gc.get_threshold() == before != GC_THRESHOLDS  # the caller gets its own back
