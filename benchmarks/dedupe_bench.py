"""Measure what ``simdup dedupe`` costs over ``simdup scan`` on one JSON Lines corpus.

Both commands run as the installed console script, in their own processes, back to back
(scan, dedupe, scan, dedupe, ...), so the machine's drift affects both alike; the ratio
of each dedupe run to the scan run just before it is the figure to read. Peak memory is
each process's maximum resident set size.

* ``scan``: ``simdup scan --jsonl CORPUS --format jsonl -o /dev/null``: the pairs.
* ``dedupe``: ``simdup dedupe --jsonl CORPUS -o kept.jsonl --removed removed.jsonl``: the
  same pairs, then the keep-order walk and both outputs written (kept lines cut from
  the input bytes, written atomically).

With ``--stages`` the work dedupe adds is also timed stage by stage in one process
(medians of ``--runs``): reading the JSON Lines with the raw bytes of every line against
scan's reader, the keep order, the greedy walk over the pairs, and writing the kept lines
and the removal records. These are less exposed to other load on the machine than whole
runs.

Usage (under the shared lock)::

    python benchmarks/dedupe_bench.py --docs 100000 --runs 3
    python benchmarks/dedupe_bench.py --docs 100000 --stages

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
from collections.abc import Callable
from pathlib import Path

import numpy as np

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


def median_seconds(action: Callable[[], object], runs: int) -> float:
    """Return the median wall time of ``runs`` calls of ``action``."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def stages(path: Path, threshold: float, runs: int, jobs: int) -> None:
    """Time, in this process, the stages dedupe adds to a scan, and the scan itself."""
    from simdup.dedupe.jsonl import read_dataset, removed_lines, write_kept
    from simdup.dedupe.keep import keep_order, resolve, unique_keys
    from simdup.engines.local import find_duplicates
    from simdup.inputs.jsonl import JsonlOptions, read_jsonl_input
    from simdup.model import Document, PairArrays
    from simdup.params import Params
    from simdup.report.dedupe import Named, removal_records, to_jsonl

    fields = JsonlOptions()
    params = Params(threshold=threshold)
    scan_read = median_seconds(lambda: read_jsonl_input(str(path), fields), runs)
    dedupe_read = median_seconds(lambda: read_dataset(str(path), fields), runs)
    dataset = read_dataset(str(path), fields)
    entries = dataset.entries
    order_s = median_seconds(lambda: keep_order(entries, "first"), runs)
    keys_s = median_seconds(
        lambda: unique_keys([e.name for e in entries], [e.tag for e in entries]), runs
    )
    keys = unique_keys([e.name for e in entries], [e.tag for e in entries])
    documents = [Document(k, e.text) for k, e in zip(keys, entries, strict=True)]
    started = time.perf_counter()
    result = find_duplicates(documents, params, jobs=jobs)
    pairs_s = time.perf_counter() - started
    row = {k: i for i, k in enumerate(keys)}
    to_row = np.array([row[n] for n in result.names], dtype=np.int64)
    found = result.pairs
    pairs = PairArrays(to_row[found.pairs], found.hamming, found.estimated, found.cosine)
    order = keep_order(entries, "first")
    resolve_s = median_seconds(lambda: resolve(order, pairs, threshold), runs)
    removals = resolve(order, pairs, threshold)
    named = [Named(e.name, n) for e, n in zip(entries, dataset.lines, strict=True)]
    sizes = [e.size for e in entries]

    def write() -> None:
        with tempfile.TemporaryDirectory(dir=HERE / "data") as out:
            with open(os.path.join(out, "kept.jsonl"), "wb") as handle:
                write_kept(dataset, removed_lines(dataset, removals), handle)
            with open(os.path.join(out, "removed.jsonl"), "w") as handle:
                handle.write(to_jsonl(removal_records(removals, named, [], sizes)))

    write_s = median_seconds(write, runs)
    added = (dedupe_read - scan_read) + order_s + keys_s + resolve_s + write_s
    print(f"\n{len(entries):,} documents, {len(found):,} pairs, {len(removals):,} removed\n")
    print("| stage | seconds |")
    print("|---|---|")
    for label, seconds in (
        ("scan's reader (`read_jsonl_input`)", scan_read),
        ("dedupe's reader, raw line bytes kept (`read_dataset`)", dedupe_read),
        ("keep order (`keep_order`, first)", order_s),
        ("distinct keys (`unique_keys`)", keys_s),
        ("pairs (`find_duplicates`, one run, shared with scan)", pairs_s),
        ("greedy walk (`resolve`)", resolve_s),
        ("write kept lines and removal records", write_s),
    ):
        print(f"| {label} | {seconds:.3f} |")
    print(
        f"\nadded by dedupe: {added:.3f} s = {added / (scan_read + pairs_s):.1%} of "
        "scan's read + pairs"
    )


def main() -> None:
    """Run the comparison and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument("--stages", action="store_true", help="time the added stages only")
    args = parser.parse_args()
    path = corpus(args.docs)
    if args.stages:
        stages(path, args.threshold, args.runs, args.jobs)
        return
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
