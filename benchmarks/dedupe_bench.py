"""Measure what ``simdup dedupe`` costs over ``simdup scan`` on one JSON Lines corpus.

Both commands run as the installed console script, in their own processes, back to back
(scan, dedupe, scan, dedupe, ...), so the machine's drift affects both alike; the ratio
of each dedupe run to the scan run just before it is the figure to read. Peak memory is
each process's maximum resident set size.

* ``scan``: ``simdup scan --jsonl CORPUS --format jsonl -o /dev/null``: the pairs.
* ``dedupe``: ``simdup dedupe --jsonl CORPUS -o kept.jsonl --removed removed.jsonl``: the
  same pairs, then the keep-order walk and both outputs written (kept lines cut from
  the input bytes, written atomically).

Usage (under the shared lock)::

    flock /work/locks/bench python benchmarks/dedupe_bench.py --docs 100000 --runs 3

The corpus is made by ``generate.py`` when missing (``data/corpus-N.jsonl``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SIMDUP = str(Path(sys.executable).parent / "simdup")


def corpus(docs: int) -> Path:
    """Return the benchmark corpus of ``docs`` documents, generating it when missing."""
    path = HERE / "data" / f"corpus-{docs}.jsonl"
    if not path.exists():
        subprocess.run([sys.executable, str(HERE / "generate.py"), "--docs", str(docs)], check=True)
    return path


def timed(command: list[str]) -> tuple[float, float]:
    """Run ``command``; return wall seconds and peak resident memory in MiB."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in (0, 1):
        raise SystemExit(f"{command[:2]} failed with status {process.returncode}")
    return elapsed, usage.ru_maxrss / 1024


def main() -> None:
    """Run the comparison and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--jobs", type=int, default=0)
    args = parser.parse_args()
    path = corpus(args.docs)
    common = ["--jsonl", str(path), "--threshold", str(args.threshold), "-j", str(args.jobs), "-q"]
    times: dict[str, list[float]] = {"scan": [], "dedupe": []}
    memory: dict[str, list[float]] = {"scan": [], "dedupe": []}
    ratios: list[float] = []
    with tempfile.TemporaryDirectory(dir=HERE / "data") as out:
        kept, removed = os.path.join(out, "kept.jsonl"), os.path.join(out, "removed.jsonl")
        commands = {
            "scan": [SIMDUP, "scan", *common, "--format", "jsonl", "-o", os.devnull],
            "dedupe": [SIMDUP, "dedupe", *common, "-o", kept, "--removed", removed],
        }
        for run in range(args.runs):
            for name, command in commands.items():
                seconds, mib = timed(command)
                times[name].append(seconds)
                memory[name].append(mib)
                print(f"run {run + 1} {name}: {seconds:.2f} s, {mib:.0f} MiB", file=sys.stderr)
            ratios.append(times["dedupe"][-1] / times["scan"][-1])
        with open(removed, "rb") as handle:
            removed_count = sum(1 for _ in handle)
        kept_bytes = os.path.getsize(kept)
    print(
        f"{args.docs:,} documents ({path.stat().st_size / 2**20:.0f} MiB), threshold "
        f"{args.threshold}, jobs {args.jobs}, {args.runs} run(s) each; dedupe removed "
        f"{removed_count:,} documents, kept {kept_bytes / 2**20:.0f} MiB\n"
    )
    print("| command | median s | min s | max s | peak RSS MiB (max) |")
    print("|---|---|---|---|---|")
    for name in commands:
        t = times[name]
        print(
            f"| simdup {name} | {statistics.median(t):.2f} | {min(t):.2f} | {max(t):.2f} "
            f"| {max(memory[name]):.0f} |"
        )
    print(
        f"\ndedupe / scan (median of per-run ratios): {statistics.median(ratios):.3f} "
        f"(runs: {', '.join(f'{r:.3f}' for r in ratios)})"
    )


if __name__ == "__main__":
    main()
