"""Wall time and memory of a command and every process it starts, taken together.

Runs the command and samples its process tree (the command and all its descendants,
found through ``/proc``) every ``--every`` seconds until it ends. Three memory figures:

* **PSS peak**: the largest sum over the tree of proportional set sizes
  (``/proc/PID/smaps_rollup``): a page shared by n processes counts 1/n in each, so a
  page is counted once however many forked workers map it;
* **sum of peaks**: the sum over every process seen of its own peak RSS (``VmHWM``, last
  value sampled): pages shared between a parent and its forked workers count in each, so
  this overstates what the machine held;
* **RSS peak**: the largest sum over the tree of resident sizes at one sample.

With ``--disk DIR`` it also reports the largest size the files under ``DIR`` reached
(sampled too). A sample can miss a short-lived peak between two samples; the command's
own ``VmHWM`` cannot miss its own.

Usage: ``python benchmarks/treemem.py [--every 0.5] [--disk DIR] [--json OUT] -- COMMAND...``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def children() -> dict[int, list[int]]:
    """Return every process's children, by parent id."""
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        parent = int(stat[stat.rindex(b")") + 2 :].split()[1])
        tree.setdefault(parent, []).append(int(entry))
    return tree


def descendants(root: int) -> list[int]:
    """Return ``root`` and every process below it."""
    tree = children()
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(tree.get(pid, []))
    return found


def fields(path: str, names: tuple[str, ...]) -> dict[str, int]:
    """Return the named ``kB`` fields of a ``/proc`` status file, in bytes (missing: {})."""
    out: dict[str, int] = {}
    try:
        with open(path) as handle:
            for line in handle:
                key, _, rest = line.partition(":")
                if key in names:
                    out[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return {}
    return out


def disk_used(directory: str) -> int:
    """Return the bytes the files under ``directory`` take on disk."""
    total = 0
    for folder, _, names in os.walk(directory):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.stat(os.path.join(folder, name)).st_blocks * 512
    return total


def main() -> None:
    """Run the command, sample its tree, print (and optionally write) the figures."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--every", type=float, default=0.5, help="seconds between samples")
    parser.add_argument("--disk", help="also report the peak size of the files under DIR")
    parser.add_argument("--json", type=Path, help="append the figures as a JSON line")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    load = os.getloadavg()[0]
    clock = time.perf_counter()
    child = subprocess.Popen(command)
    pss_peak = rss_peak = disk_peak = 0
    peaks: dict[int, int] = {}
    processes = 0
    while child.poll() is None:
        pss = rss = 0
        for pid in descendants(child.pid):
            rollup = fields(f"/proc/{pid}/smaps_rollup", ("Pss",))
            status = fields(f"/proc/{pid}/status", ("VmRSS", "VmHWM"))
            pss += rollup.get("Pss", 0)
            rss += status.get("VmRSS", 0)
            if "VmHWM" in status:
                peaks[pid] = max(peaks.get(pid, 0), status["VmHWM"])
        processes = max(processes, len(peaks))
        pss_peak, rss_peak = max(pss_peak, pss), max(rss_peak, rss)
        if args.disk:
            disk_peak = max(disk_peak, disk_used(args.disk))
        time.sleep(args.every)
    seconds = time.perf_counter() - clock
    mib = 1 << 20
    figures = {
        "command": command,
        "exit": child.returncode,
        "seconds": round(seconds, 2),
        "pss_peak_mib": round(pss_peak / mib),
        "sum_of_peaks_mib": round(sum(peaks.values()) / mib),
        "rss_peak_mib": round(rss_peak / mib),
        "processes": processes,
        "load_before_after": [round(load, 1), round(os.getloadavg()[0], 1)],
        **({"disk_peak_mib": round(disk_peak / mib)} if args.disk else {}),
    }
    print(json.dumps(figures), file=sys.stderr, flush=True)
    if args.json:
        with args.json.open("a") as out:
            out.write(json.dumps(figures) + "\n")
    sys.exit(child.returncode)


if __name__ == "__main__":
    main()
