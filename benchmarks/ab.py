"""Two installed builds of simdup, the same command, run in turn: wall and processor seconds.

Each run starts the command with the first build, then with the second, so that the machine's
drift touches both alike; the medians of ``--runs`` runs are printed with the second build's
ratio to the first. Processor seconds are those of the whole process tree (user and system,
workers included). With ``--timings`` the command must be a ``scan`` (``--format json
--timings -o FILE`` are added) and the medians of its stage seconds are printed instead.

Usage::

    python benchmarks/ab.py OLD/bin/simdup NEW/bin/simdup --runs 11 -- scan sample_corpus
    python benchmarks/ab.py OLD/bin/simdup NEW/bin/simdup --runs 2 --timings -- scan TREE
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(simdup: str, args: list[str]) -> tuple[float, float]:
    """Run one command; return its wall seconds and the processor seconds of its tree."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([simdup, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu


def stages(simdup: str, args: list[str]) -> dict[str, float]:
    """Run one scan with ``--timings``; return its stage seconds."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "result.json"
        command = [simdup, *args, "--format", "json", "--timings", "-o", str(out), "-q"]
        subprocess.run(command, check=True)
        seconds: dict[str, float] = json.loads(out.read_text())["stats"]["seconds"]
    return seconds


def main() -> None:
    """Run both builds in turn and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("first", help="the first build's simdup script")
    parser.add_argument("second", help="the second build's simdup script")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--timings", action="store_true", help="compare a scan's stages")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    options, args = parser.parse_args(argv[:cut]), argv[cut + 1 :]
    builds = {"first": options.first, "second": options.second}
    if options.timings:
        found: dict[str, list[dict[str, float]]] = {name: [] for name in builds}
        for _ in range(options.runs):
            for name, simdup in builds.items():
                found[name].append(stages(simdup, args))
        for name, runs in found.items():
            medians = {k: round(statistics.median(r[k] for r in runs), 3) for k in runs[0]}
            print(f"{name}: {medians}")
        return
    measured: dict[str, list[tuple[float, float]]] = {name: [] for name in builds}
    for _ in range(options.runs):
        for name, simdup in builds.items():
            measured[name].append(run(simdup, args))
    wall = {name: statistics.median(w for w, _ in runs) for name, runs in measured.items()}
    cpu = {name: statistics.median(c for _, c in runs) for name, runs in measured.items()}
    print(f"command: simdup {' '.join(args)}")
    for name in builds:
        print(f"{name}: wall {wall[name]:.3f} s, processor {cpu[name]:.3f} s")
    print(f"second / first: wall {wall['second'] / wall['first']:.3f}")


if __name__ == "__main__":
    main()
