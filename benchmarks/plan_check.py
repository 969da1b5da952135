"""Predicted against counted: the planner's estimates on heavy-background corpora and real trees.

For each corpus of the heavy-background family (``generate.py --family``) and each real tree
of this machine (a Python installation's sources, the documentation and the manual pages),
at each threshold, a default ``simdup scan`` runs in a child process, which records what the
plan predicted when it was made and what the scan then counted:

* table candidates (pairs sharing a key, summed over the tables; exact mode: every pair),
* true cosines computed (candidates within the Hamming pre-filter; exact mode: the pairs
  its products select),
* pairs above the threshold (for tables: those the tables find),
* peak memory of the pair stage (the run's resident memory at the plan, and the parts the
  plan adds; counted: the peak resident memory from the plan to the scan's result, the
  process's peak being reset when the plan is made),
* pair-stage seconds (finding and verifying the pairs).

The column ``cores`` is the processor seconds the pair stage got per second of it: the
costs behind the predicted seconds are wall seconds fitted on this machine
(``plan_costs.py``), and when other work leaves the pair stage fewer processor seconds per
second than it had then, its seconds are longer by as much. The last, ``processor s``, is
those processor seconds, and the predicted seconds' ratio to them. The report is not
written: the child process ends with the pair stage's result (rendering millions of pairs
takes longer, and far more memory, than finding them).

Ratios are predicted / counted. ``--json FILE`` also writes every record, with the plan's
quantities (the unit counts behind its seconds).

Usage: ``python benchmarks/plan_check.py [--docs 20000] [--thresholds 0.8,0.9]
[--corpora z1-v50k-w200,python] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402  (the sibling module, found through the path above)

#: Real trees of heavy-background text: a name, the inputs and the options of the scan.
TREES: dict[str, list[str]] = {
    "python": [sysconfig.get_paths()["stdlib"], "--include", "*.py"],
    "doc": ["/usr/share/doc"],
    "man": ["/usr/share/man"],
}

#: What the child process runs: the scan, with the plan and its fit recorded as made.
CHILD = """
import json, os, sys, time
from pathlib import Path
import simdup.cli
from simdup.engines.local import pairs
from simdup.search.plan.budget import BudgetError

record = {}

def status_field(name):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1]) * 1024
    return 0

original = pairs.fitted

def spied(*args, **kwargs):
    try:
        plan, fit = original(*args, **kwargs)
    except BudgetError as refused:
        print(json.dumps({"refused": str(refused).splitlines()[0]}), flush=True)
        os._exit(0)
    record["plan"] = plan
    record["fit"] = fit
    record["peak_before_pairs"] = status_field("VmHWM")
    record["clock"] = time.perf_counter(), sum(os.times()[:2])
    Path("/proc/self/clear_refs").write_text("5")  # the peak starts again from here
    return plan, fit

joined = pairs.scan_result

def ended(*args, **kwargs):
    result = joined(*args, **kwargs)
    peak = status_field("VmHWM")  # the pair stage ends with its result
    wall = time.perf_counter() - record["clock"][0]
    cpu = sum(os.times()[:2]) - record["clock"][1]
    plan, fit = record["plan"], record["fit"]
    work = plan.work
    print(json.dumps({
        "mode": "exact" if plan.exact else "tables",
        "bits": plan.bits,
        "tables": plan.tables.description,
        "table_count": len(plan.tables.keys),
        "documents": plan.documents,
        "distinct": plan.distinct,
        "expected_candidates": plan.expected_candidates,
        "expected_verified": plan.expected_verified,
        "expected_reported": plan.expected_reported,
        "reported_bound": plan.reported_bound,
        "seconds": plan.seconds,
        "memory": fit.total,
        "resident": fit.footprint.resident,
        "footprint": fit.describe(),
        "work": None if work is None else [work.pairs, work.heavy, work.light_walks, work.entries],
        "peak_before_pairs": record["peak_before_pairs"],
        "peak_pairs": peak,
        "stats": result.stats,
        "timings": result.timings,
        "cores": cpu / wall,
    }), flush=True)
    # The report is not measured: rendering every pair of a corpus whose background
    # reaches the threshold takes longer, and far more memory, than finding them.
    os._exit(0)

pairs.fitted = spied
pairs.scan_result = ended
simdup.cli.main(["scan", *sys.argv[1:], "--timings", "--format", "json"])
"""


def run_child(inputs: list[str], threshold: float) -> dict[str, Any]:
    """Scan ``inputs`` at ``threshold`` in a child process; return predicted and counted."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *inputs, "--threshold", str(threshold)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0 or not done.stdout.strip():
        raise SystemExit(f"scan of {inputs} failed:\n{done.stderr[-3000:]}")
    record: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    if "refused" in record:
        return record
    stats, seconds = record["stats"], record["timings"]
    record["counted"] = {
        "candidates": stats["table_candidates"],
        "verified": stats["candidates"],
        "reported": stats["above_threshold"],
        "memory": record["peak_pairs"],
        "seconds": seconds.get("candidates", 0.0) + seconds.get("verify", 0.0),
        "stages": seconds,
    }
    return record


#: The columns compared: (heading, predicted key, counted key).
COLUMNS = (
    ("table candidates", "expected_candidates", "candidates"),
    ("true cosines", "expected_verified", "verified"),
    ("pairs above", "expected_reported", "reported"),
    ("peak MiB", "memory", "memory"),
    ("pair s", "seconds", "seconds"),
)


def _figure(value: float, key: str) -> str:
    if key == "memory":
        return f"{value / (1 << 20):,.0f}"
    if key == "seconds":
        return f"{value:.1f}"
    return f"{round(value):,}"


def row(name: str, threshold: float, record: dict[str, Any]) -> str:
    """Return one Markdown table row: predicted / counted (ratio) per column."""
    if "refused" in record:
        return f"| {name} | {threshold:g} | refused: {record['refused']} |" + " |" * (
            len(COLUMNS) + 2
        )
    cells = [name, f"{threshold:g}", f"{record['mode']} {record['bits']}: {record['tables']}"]
    for _, predicted_key, counted_key in COLUMNS:
        predicted, counted = record[predicted_key], record["counted"][counted_key]
        ratio = f"{predicted / counted:.2f}" if counted else "n/a"
        cells.append(
            f"{_figure(predicted, predicted_key)} / {_figure(counted, predicted_key)} ({ratio})"
        )
    processor = record["counted"]["seconds"] * record["cores"]
    ratio = f"{record['seconds'] / processor:.2f}" if processor else "n/a"
    cells += [f"{record['cores']:.2f}", f"{processor:.1f} ({ratio})"]
    return "| " + " | ".join(cells) + " |"


def corpora(docs: int, out: Path, names: set[str] | None) -> list[tuple[str, list[str]]]:
    """Return the family's corpora (generated when missing) and the real trees to scan."""
    found: list[tuple[str, list[str]]] = []
    for shape in generate.FAMILY:
        if names is None or shape.name in names:
            corpus, _ = generate.write(docs, out, shape=shape)
            found.append((corpus.stem.removeprefix("corpus-"), ["--jsonl", str(corpus)]))
    for name, inputs in TREES.items():
        if (names is None or name in names) and Path(inputs[0]).is_dir():
            found.append((name, inputs))
    return found


def main() -> None:
    """Scan every corpus at every threshold and print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--thresholds", default="0.8,0.9")
    parser.add_argument("--corpora", help="names to run, comma-separated (default: all)")
    parser.add_argument("--out", type=Path, default=HERE / "data")
    parser.add_argument("--json", type=Path, help="also write every record here")
    args = parser.parse_args()
    names = set(args.corpora.split(",")) if args.corpora else None
    headings = [
        "corpus",
        "threshold",
        "plan",
        *(heading for heading, _, _ in COLUMNS),
        "cores",
        "processor s",
    ]
    print("| " + " | ".join(headings) + " |")
    print("|" + "---|" * len(headings))
    records = []
    for name, inputs in corpora(args.docs, args.out, names):
        for threshold in (float(t) for t in args.thresholds.split(",")):
            record = run_child(inputs, threshold)
            records.append({"corpus": name, "threshold": threshold, **record})
            print(row(name, threshold, record), flush=True)
    if args.json:
        args.json.write_text(json.dumps(records, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
