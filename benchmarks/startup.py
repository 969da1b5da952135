"""Start-up: how long whole ``simdup`` processes take on the small runs most runs are.

Every figure is a whole process of the installed console script, as a shell runs it (the
bytecode cache in place, as pip leaves an install; stdout to /dev/null), the median of
``--runs`` runs taken in turn, so that the machine's drift touches every command alike:

* ``simdup --version`` and ``simdup --help``: the command line alone;
* ``simdup compare`` of two files and ``simdup scan`` of ``sample_corpus/`` (9 short files);
* ``simdup scan TREE`` of trees of 100, 1,000 and 10,000 real files, default settings and
  the table on stdout, each run right after a **one-process floor** over the same tree
  (``realtext.py --floor``: walk, read, gunzip, decode, NFKC, case fold, ``\\w+``,
  ``collections.Counter``); the ratio is taken run by run and its median shown;
* for scale, the interpreter alone (``python -c pass``) and with the libraries any command
  that reads text loads (click, numpy, rich's tables).

The trees are every k-th file of ``--source`` (default ``/usr/share/man``, the manual
pages: gzip-compressed troff in many languages), walked as ``simdup scan`` walks, copied
once under ``--trees`` (default ``/tmp/simdup-startup-trees``) and reused.

With ``--break-even`` it measures instead where worker processes start to pay for reading
and counting (``simdup/engines/local/counting.py``): in one process, the counting of the
first N files of the largest tree in this process and over workers, alternately, and the
cost of an input beside that of a byte (from many tiny files), from which the constants
``INPUT_BYTES`` and ``PARALLEL_BYTES`` are set.

Usage: ``python benchmarks/startup.py [--runs 7] [--tree-runs 3]`` or
``python benchmarks/startup.py --break-even [--runs 5]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from realtext import files, timed  # noqa: E402 - a sibling script

SIMDUP = str(Path(sys.executable).parent / "simdup")
SAMPLE = HERE.parent / "sample_corpus"

#: Files in each tree.
TREE_SIZES = (100, 1_000, 10_000)

#: The goals: seconds (median) for the small commands, ratio to the floor for a tree.
GOALS = {"--version": 0.12, "--help": 0.12, "compare": 0.35, "scan sample_corpus/": 0.35}
TREE_GOAL = (1_000, 1.0)


def tree(source: str, count: int, trees: Path) -> Path:
    """Return a tree of ``count`` files of ``source`` (every k-th), copying it the first time.

    The files keep their paths below ``source``; a marker beside the tree says it is whole.
    """
    root = trees / f"{Path(source).name}-{count}"
    marker = trees / f"{root.name}.complete"
    if marker.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    found = list(files(source, ()))
    if len(found) < count:
        raise SystemExit(f"{source} holds {len(found):,} files; {count:,} are needed")
    step = len(found) / count
    for k in range(count):
        path = found[int(k * step)]
        copy = root / os.path.relpath(path, source)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copy)
    marker.write_text("")
    return root


def wall(command: Sequence[str]) -> float:
    """Run ``command`` with its output to /dev/null; return its wall seconds."""
    seconds, _, _ = timed(list(command), keep_output=False)
    return seconds


def small_commands() -> dict[str, list[str]]:
    """Return the commands timed alone, by label."""
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "python -c 'import click, numpy, rich.table'": [
            sys.executable,
            "-c",
            "import click, numpy, rich.table",
        ],
        "--version": [SIMDUP, "--version"],
        "--help": [SIMDUP, "--help"],
        "compare": [SIMDUP, "compare", str(SAMPLE / "doc0.txt"), str(SAMPLE / "doc1.txt")],
        "scan sample_corpus/": [SIMDUP, "scan", str(SAMPLE)],
    }


def run_small(runs: int) -> list[dict[str, object]]:
    """Time the small commands in turn, ``runs`` times each; return a row per command."""
    commands = small_commands()
    for command in commands.values():  # warm the caches: bytecode, page cache
        wall(command)
    times: dict[str, list[float]] = {label: [] for label in commands}
    for _ in range(runs):
        for label, command in commands.items():
            times[label].append(wall(command))
    rows: list[dict[str, object]] = []
    for label, seconds in times.items():
        median = statistics.median(seconds)
        goal = GOALS.get(label)
        rows.append(
            {
                "command": label,
                "median_s": median,
                "min_s": min(seconds),
                "max_s": max(seconds),
                "goal_s": goal,
                "met": None if goal is None else median <= goal,
            }
        )
    return rows


def scanned(root: Path) -> tuple[float, str]:
    """Run ``simdup scan ROOT`` (the table to /dev/null); return wall seconds and its summary."""
    clock = time.perf_counter()
    done = subprocess.run(
        [SIMDUP, "scan", str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True
    )
    return time.perf_counter() - clock, done.stderr.decode(errors="replace").strip()


def run_trees(roots: Sequence[Path], runs: int) -> list[dict[str, object]]:
    """Time ``simdup scan`` of each tree against the floor, run by run."""
    rows: list[dict[str, object]] = []
    for root in roots:
        floor_command = [sys.executable, str(HERE / "realtext.py"), "--floor", str(root)]
        _, _, out = timed(floor_command)  # warms the page cache; gives the sizes
        pairs = []
        for _ in range(runs):
            floor_s = wall(floor_command)
            simdup_s, summary = scanned(root)
            pairs.append((floor_s, simdup_s))
        sizes = json.loads(out)
        count = sizes["files"]
        ratio = statistics.median(s / f for f, s in pairs)
        rows.append(
            {
                "tree": str(root),
                "files": count,
                "characters": sizes["characters"],
                "pairs": int(re.findall(r"([\d,]+) pairs shown", summary)[-1].replace(",", "")),
                "floor_s": statistics.median(f for f, _ in pairs),
                "simdup_s": statistics.median(s for _, s in pairs),
                "ratio": ratio,
                "ratios": [round(s / f, 2) for f, s in pairs],
                "goal": TREE_GOAL[1] if count == TREE_GOAL[0] else None,
            }
        )
    return rows


def print_tables(small: list[dict[str, object]], trees: list[dict[str, object]]) -> None:
    """Print both tables in Markdown."""
    print("\n| command | median s | min - max s | goal | met |\n|---|---|---|---|---|")
    for r in small:
        goal = "" if r["goal_s"] is None else f"<= {r['goal_s']}"
        met = "" if r["met"] is None else ("yes" if r["met"] else "no")
        print(
            f"| `{r['command']}` | {r['median_s']:.3f} | {r['min_s']:.3f} - {r['max_s']:.3f} "
            f"| {goal} | {met} |"
        )
    columns = ("tree", "files", "characters", "pairs", "floor s", "simdup s", "simdup/floor")
    print("\n| " + " | ".join((*columns, "per run", "goal")) + " |\n" + "|---" * 9 + "|")
    for r in trees:
        goal = "" if r["goal"] is None else f"<= {r['goal']}"
        print(
            f"| {r['tree']} | {r['files']:,} | {r['characters'] / 1e6:.1f} M | {r['pairs']:,} "
            f"| {r['floor_s']:.2f} | {r['simdup_s']:.2f} | {r['ratio']:.2f} "
            f"| {', '.join(map(str, r['ratios']))} | {goal} |"
        )


# -- where workers start to pay ------------------------------------------------------------
@contextlib.contextmanager
def _counting(workers: bool) -> Iterator[None]:
    """Let counting start workers whenever there are chunks for them, or never."""
    from simdup.engines.local import counting

    saved = counting.PARALLEL_BYTES, counting.SPAWNED_PARALLEL_BYTES
    limit = 0 if workers else 1 << 62
    counting.PARALLEL_BYTES = counting.SPAWNED_PARALLEL_BYTES = limit
    try:
        yield
    finally:
        counting.PARALLEL_BYTES, counting.SPAWNED_PARALLEL_BYTES = saved


def break_even(root: Path, runs: int) -> None:
    """Print counting times in this process and over workers, and the cost of an input."""
    from dedupe_bench import median_seconds

    from simdup.engines.local.counting import count_inputs
    from simdup.inputs.files import ReadOptions
    from simdup.inputs.gather import Input, gather_inputs, read_chunk

    options = ReadOptions()
    found = gather_inputs([str(root)], options).inputs
    count_inputs(found[:16], options)  # the noise-word tables, as a scan's first chunk builds

    def counted(inputs: Sequence[Input], workers: bool) -> float:
        with _counting(workers):
            return median_seconds(lambda: count_inputs(inputs, options, jobs=0), runs)

    with tempfile.TemporaryDirectory() as tiny:
        for k in range(2_000):
            Path(tiny, f"{k:05d}.txt").write_text(f"note {k}: see the manual page\n")
        tiny_inputs = gather_inputs([tiny], options).inputs
        per_input = counted(tiny_inputs, False) / len(tiny_inputs)
    whole = counted(found, False)
    size = read_chunk(found, options).size
    per_byte = (whole - per_input * len(found)) / size
    print(
        f"per input {per_input * 1e6:.1f} us, per byte {per_byte * 1e9:.1f} ns: an input "
        f"costs {per_input / per_byte:,.0f} bytes (INPUT_BYTES)"
    )
    print("\n| files | MB of text | one process s | workers s | workers / one |")
    print("|---|---|---|---|---|")
    n = 50
    while True:
        inputs = found[:n]
        one, many = counted(inputs, False), counted(inputs, True)
        text = read_chunk(inputs, options).size / 1e6
        print(f"| {n:,} | {text:.2f} | {one:.3f} | {many:.3f} | {many / one:.2f} |", flush=True)
        if n >= len(found):
            break
        n = min(2 * n, len(found))


def main() -> None:
    """Time the commands and the trees, or find the break-even of workers."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="runs of each small command")
    parser.add_argument("--tree-runs", type=int, default=3, help="runs of each tree")
    parser.add_argument("--source", default="/usr/share/man", help="where tree files come from")
    parser.add_argument(
        "--trees", type=Path, default=Path(tempfile.gettempdir()) / "simdup-startup-trees"
    )
    parser.add_argument(
        "--sizes",
        default=",".join(map(str, TREE_SIZES)),
        help="files of each tree (comma-separated)",
    )
    parser.add_argument("--break-even", action="store_true", help="where workers start to pay")
    parser.add_argument("--json", type=Path, help="also write every figure as JSON")
    args = parser.parse_args()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # time an install as pip leaves it
    roots = [tree(args.source, int(count), args.trees) for count in args.sizes.split(",") if count]
    load = os.getloadavg()[0]
    if args.break_even:
        print(f"load average {load:.2f}; counting {roots[-1]}, medians of {args.runs} runs")
        break_even(roots[-1], args.runs)
        return
    print(f"load average {load:.2f} at the start", flush=True)
    small = run_small(args.runs)
    trees = run_trees(roots, args.tree_runs)
    print(f"\nmedians of {args.runs} runs (trees: {args.tree_runs}), load {os.getloadavg()[0]:.2f}")
    print_tables(small, trees)
    if args.json:
        args.json.write_text(json.dumps({"commands": small, "trees": trees}, indent=1))


if __name__ == "__main__":
    main()
