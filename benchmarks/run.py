"""Benchmark simdup against the tokenising floor and peer libraries on one corpus.

Builds the deterministic corpus (``generate.py``), then runs, each in its own process so
peak RSS is its own: simdup's library pipeline (read → tokenise → weights → fingerprints
→ plan → candidates → verified pairs), the "floor" (read + regex tokenise + ``Counter``
in one process, the least any tokenising tool must do), and the peers, installed with pip
into ``benchmarks/.peers/`` (a failed install is reported in the table, never fatal).

Reported per tool: median seconds per stage and in total over ``--runs`` runs, documents
per second, peak RSS, recall of the planted near-duplicates (all of them, and those whose
true cosine is at least the threshold: the pairs the user asked for), precision (share of
reported pairs that are planted), and simdup's time as a ratio of each tool's.

Usage: ``python benchmarks/run.py [--docs 100000] [--runs 3] [--jobs 0] [--no-peers]``.
``--json FILE`` also writes every figure as JSON.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402  (the sibling module, found through the path above)

PEERS = HERE / ".peers"

#: Virtual environment, pip packages and importable module of each peer. simhash (1e0ng)
#: and simhash-pybind both install a module named ``simhash``, so they live apart.
PEER_TOOLS: dict[str, tuple[str, list[str], str]] = {
    "gaoya-minhash": ("venv", ["gaoya"], "gaoya"),
    "rensa": ("venv", ["rensa"], "rensa"),
    "gaoya-simhash": ("venv", ["gaoya"], "gaoya"),
    "datasketch": ("venv", ["datasketch"], "datasketch"),
    "simhash-pybind": ("venv", ["simhash-pybind"], "simhash._simhash"),
    "simhash": ("venv-simhash", ["simhash"], "simhash.Simhash"),
}

#: Documents read and tokenised at a time by simdup's run (its texts are never all held).
READ_BATCH = 100_000

#: The pure-Python simhash index is quadratic in practice: skipped by default above this.
SLOW_PEER_DOCS = 20_000

#: What each peer computes, for the table.
PEER_WHAT = {
    "gaoya-minhash": "MinHash LSH, Jaccard 0.7 (Rust)",
    "rensa": "MinHash LSH, Jaccard 0.7 (Rust)",
    "gaoya-simhash": "SimHash, Hamming <= 3 (Rust)",
    "datasketch": "MinHash LSH, Jaccard 0.7",
    "simhash-pybind": "SimHash, Hamming <= 3 (C++)",
    "simhash": "SimHash, Hamming <= 3 (pure Python)",
}


# --- children: one measured run each --------------------------------------------------------


def peak_rss_mb() -> float:
    """Return the peak RSS of this process and its finished children, MiB."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) / 1024


def child_floor(corpus: Path) -> dict[str, Any]:
    """Read, regex-tokenise and count every document: the floor."""
    stages: dict[str, float] = {}
    start = time.perf_counter()
    with corpus.open(encoding="utf-8") as fh:
        texts = [json.loads(line)["text"] for line in fh]
    stages["read"] = time.perf_counter() - start
    clock = time.perf_counter()
    word = re.compile(r"\w+")
    counts = [Counter(word.findall(t.lower())) for t in texts]
    stages["tokenise+count"] = time.perf_counter() - clock
    stages["total"] = time.perf_counter() - start
    return {"pairs": [], "seconds": stages, "rss_mb": peak_rss_mb(), "documents": len(counts)}


def child_simdup(corpus: Path, options: dict[str, Any]) -> dict[str, Any]:
    """Run simdup's library pipeline stage by stage; pairs as corpus row numbers."""
    from simdup.engines.local.counting import count_batches
    from simdup.engines.local.fingerprinting import fingerprint_matrix, widest
    from simdup.engines.local.pairs import find_pairs
    from simdup.fingerprints.weights import weigh
    from simdup.params import Params
    from simdup.sizes import parse_size

    params = Params(
        bits=options["bits"],
        threshold=options["threshold"],
        recall=options["recall"],
        scheme=options["scheme"],
    )
    stages: dict[str, float] = {"read": 0.0}
    start = time.perf_counter()
    names: list[str] = []

    def batches() -> Iterator[list[str]]:
        """Read the corpus a batch at a time: only one batch of texts is ever held."""
        with corpus.open(encoding="utf-8") as fh:
            while True:
                clock = time.perf_counter()
                rows = [json.loads(line) for line in itertools.islice(fh, READ_BATCH)]
                stages["read"] += time.perf_counter() - clock
                if not rows:
                    return
                names.extend(r["id"] for r in rows)
                yield [r["text"] for r in rows]

    counts = count_batches(
        batches(), stopwords=params.stopwords, ngram=params.ngram, jobs=options["jobs"]
    )
    stages["tokenise"] = time.perf_counter() - start - stages["read"]
    clock = time.perf_counter()
    keep = counts.row_lengths() > 0
    matrix = weigh(counts.select(keep), params.weighting)
    del counts
    kept = [i for i, k in enumerate(keep.tolist()) if k]
    stages["weights"] = time.perf_counter() - clock
    clock = time.perf_counter()
    # With bits "auto": the widest priced width, whose first bits are every narrower one.
    width = widest(params).bits
    fingerprints = fingerprint_matrix(matrix, width, params.seed, jobs=options["jobs"])
    stages["fingerprint"] = time.perf_counter() - clock
    memory = options.get("memory")
    result = find_pairs(
        [names[i] for i in kept],
        matrix,
        fingerprints,
        params,
        jobs=options["jobs"],
        memory=None if memory is None else parse_size(memory),
    )
    for stage in ("plan", "candidates", "verify"):
        stages[stage] = result.timings.get(stage, 0.0)
    stages["total"] = time.perf_counter() - start
    pairs = sorted((kept[a], kept[b]) for a, b in result.pairs.pairs.tolist())
    return {
        "pairs": pairs,
        "seconds": stages,
        "rss_mb": peak_rss_mb(),
        "candidates": result.stats["candidates"],
        "stats": result.stats,
        "plan": result.plan,
    }


# --- the parent: corpus, installs, runs, table ------------------------------------------------


def run_child(command: list[str], timeout: float) -> dict[str, Any]:
    """Run one measured child; its JSON result, or ``{"error": ...}``."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return {"error": f"failed: {tail[:160]}"}
    try:
        result: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError:
        return {"error": "printed no result"}
    return result


def ensure_peer(tool: str) -> str | None:
    """Install a peer into its venv if it is not importable; return an error or None."""
    venv, packages, module = PEER_TOOLS[tool]
    python = PEERS / venv / "bin" / "python"
    if not python.exists():
        PEERS.mkdir(parents=True, exist_ok=True)
        made = subprocess.run(
            [sys.executable, "-m", "venv", str(PEERS / venv)], capture_output=True, check=False
        )
        if made.returncode != 0:
            return "could not create its venv"
    probe = [str(python), "-c", f"import {module.rsplit('.', 1)[0]}; {_probe(module)}"]
    if subprocess.run(probe, capture_output=True, check=False).returncode == 0:
        return None
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *packages],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if subprocess.run(probe, capture_output=True, check=False).returncode == 0:
        return None
    lines = [ln for ln in install.stderr.splitlines() if ln.strip() and "WARNING" not in ln]
    return "install failed: " + (lines[-1][:120] if lines else "module not importable")


def _probe(module: str) -> str:
    """Return a statement that fails unless ``module`` (``pkg.attr`` allowed) exists."""
    package, _, attr = module.rpartition(".")
    if not package:
        return "pass"
    return f"import importlib; m = importlib.import_module('{package}'); getattr(m, '{attr}')"


def load_truth(truth_path: Path, names: list[str]) -> list[tuple[int, int, str]]:
    """Return the planted pairs as (row, row, kind)."""
    row = {n: i for i, n in enumerate(names)}
    out = []
    for line in truth_path.read_text(encoding="utf-8").splitlines():
        a, b, kind = line.split("\t")
        out.append((row[a], row[b], kind))
    return out


def planted_cosines(corpus: Path, truth: list[tuple[int, int, str]]) -> list[float]:
    """Return the true cosine (simdup's default weighting) of every planted pair."""
    import numpy as np

    from simdup.engines.local.counting import count_matrix
    from simdup.fingerprints.weights import weigh
    from simdup.search.verify import cosine_many

    rows = sorted({r for a, b, _ in truth for r in (a, b)})
    local = {r: k for k, r in enumerate(rows)}
    wanted = set(rows)
    texts = []
    with corpus.open(encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if i in wanted:
                texts.append(json.loads(line)["text"])
    matrix = weigh(count_matrix(texts, jobs=1), "tf")
    pairs = np.array([(local[a], local[b]) for a, b, _ in truth], dtype=np.int64)
    return [float(c) for c in cosine_many(matrix, pairs)]


def quality(
    pairs: list[list[int]],
    truth: list[tuple[int, int, str]],
    cosines: list[float],
    threshold: float,
) -> dict[str, float]:
    """Return recall (all planted, planted at or above the threshold) and precision."""
    found = {(a, b) for a, b in pairs}
    planted = {(min(a, b), max(a, b)) for a, b, _ in truth}
    asked = {
        (min(a, b), max(a, b))
        for (a, b, _), c in zip(truth, cosines, strict=True)
        if c >= threshold
    }
    hits = found & planted
    out = {
        "recall_all": len(hits) / max(len(planted), 1),
        "recall_threshold": len(found & asked) / max(len(asked), 1),
        "precision": len(hits) / len(found) if found else float("nan"),
        "reported": len(found),
    }
    for kind in sorted({k for _, _, k in truth}):
        of_kind = {(min(a, b), max(a, b)) for a, b, k in truth if k == kind}
        out[f"recall_{kind}"] = len(found & of_kind) / max(len(of_kind), 1)
    return out


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Return the run with the median total time, with median stage times."""
    good = [r for r in runs if "error" not in r]
    if not good:
        return runs[-1]
    good.sort(key=lambda r: r["seconds"]["total"])
    middle = dict(good[len(good) // 2])
    middle["seconds"] = {
        k: statistics.median(r["seconds"].get(k, 0.0) for r in good) for k in good[0]["seconds"]
    }
    middle["rss_mb"] = max(r["rss_mb"] for r in good)
    middle["runs"] = len(good)
    return middle


def machine() -> str:
    """Return a one-line description of this machine."""
    model = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{os.cpu_count()} cores ({model or platform.machine()}), {memory:.0f} GiB RAM, "
        f"Python {platform.python_version()}, {platform.system()} {platform.release()}"
    )


def table(results: dict[str, dict[str, Any]], docs: int) -> str:
    """Return the results as a Markdown table."""
    floor = results.get("floor", {}).get("seconds", {}).get("total")
    reference = next(
        (k for k, r in results.items() if k.startswith("simdup") and "error" not in r), "simdup"
    )
    simdup = results.get(reference, {}).get("seconds", {}).get("total")
    lines = [
        f"| tool | what | total s | docs/s | vs floor | {reference} / tool | peak RSS MiB "
        "| recall (cos >= t) | recall (all planted) | precision | stages (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        what = r.get("what", "")
        if "error" in r:
            lines.append(f"| {name} | {what} | {r['error']} | | | | | | | | |")
            continue
        total = r["seconds"]["total"]
        stages = ", ".join(f"{k} {v:.2f}" for k, v in r["seconds"].items() if k != "total")
        q = r.get("quality", {})
        lines.append(
            f"| {name} | {what} | {total:.2f} | {docs / total:,.0f} | "
            f"{_fmt(total / floor if floor else None, 2)} | "
            f"{_fmt(simdup / total if simdup else None, 2)} | {r['rss_mb']:.0f} | "
            f"{_fmt(q.get('recall_threshold'))} | {_fmt(q.get('recall_all'))} | "
            f"{_fmt(q.get('precision'))} | {stages} |"
        )
    return "\n".join(lines)


def _fmt(value: float | None, digits: int = 3) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def main() -> None:
    """Parse options, run everything, print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--peer-runs", type=int, default=None, help="default: --runs")
    parser.add_argument("--jobs", type=int, default=0, help="simdup workers (0 = all cores)")
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--recall", type=float, default=0.95)
    parser.add_argument(
        "--variants",
        default="auto,256,64",
        help="comma-separated simdup fingerprint widths to run (auto: the planner's); "
        "the first is compared",
    )
    parser.add_argument("--hard", action="store_true", help="the hard corpus of generate.py")
    parser.add_argument(
        "--shape", help="a member of generate.py's heavy-background family, e.g. z1-v50k-w200"
    )
    parser.add_argument("--memory", default=None, help="simdup's --memory (default: its own)")
    parser.add_argument("--scheme", default="auto")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument(
        "--peers",
        default="auto",
        help="comma-separated; auto: all, but pure-Python simhash only up to 20,000 docs",
    )
    parser.add_argument("--timeout", type=float, default=900, help="seconds per peer run")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--options", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        kind, corpus = args.child
        if kind == "floor":
            out = child_floor(Path(corpus))
        else:
            out = child_simdup(Path(corpus), json.loads(args.options))
        json.dump(out, sys.stdout)
        return

    shape = generate.shape_named(args.shape) if args.shape else None
    corpus, truth_path = generate.write(args.docs, HERE / "data", hard=args.hard, shape=shape)
    with corpus.open(encoding="utf-8") as fh:
        names = [json.loads(line)["id"] for line in fh]
    truth = load_truth(truth_path, names)
    cosines = planted_cosines(corpus, truth)
    print(
        f"corpus: {corpus} ({corpus.stat().st_size / 1e6:.0f} MB, {len(names):,} documents, "
        f"{len(truth):,} planted pairs)",
        file=sys.stderr,
    )

    me = [sys.executable, str(Path(__file__).resolve())]
    floor_command = [*me, "--child", "floor", str(corpus)]
    jobs: list[tuple[str, str, list[str], int]] = [
        ("floor", "read + regex tokenise + Counter", floor_command, args.runs)
    ]
    for bits in [b if b == "auto" else int(b) for b in args.variants.split(",") if b]:
        options = {
            "bits": bits,
            "memory": args.memory,
            "threshold": args.threshold,
            "recall": args.recall,
            "scheme": args.scheme,
            "jobs": args.jobs,
        }
        jobs.append(
            (
                f"simdup {bits}",
                f"SimHash {bits} bits, scheme {args.scheme}, cosine >= {args.threshold}, "
                f"recall {args.recall}, jobs {args.jobs or os.cpu_count()}",
                [*me, "--child", "simdup", str(corpus), "--options", json.dumps(options)],
                args.runs,
            )
        )
    results: dict[str, dict[str, Any]] = {}
    skipped: dict[str, dict[str, Any]] = {}
    if not args.no_peers:
        chosen = args.peers.split(",") if args.peers != "auto" else list(PEER_TOOLS)
        if args.peers == "auto" and args.docs > SLOW_PEER_DOCS:
            chosen.remove("simhash")
            skipped["simhash"] = {
                "error": f"skipped above {SLOW_PEER_DOCS:,} documents (its index takes many "
                "minutes); run with --peers simhash",
                "what": PEER_WHAT["simhash"],
            }
        for tool in [t for t in chosen if t]:
            if tool not in PEER_TOOLS:
                results[tool] = {"error": "unknown peer", "what": ""}
                continue
            print(f"installing {tool} ...", file=sys.stderr)
            problem = ensure_peer(tool)
            if problem:
                results[tool] = {"error": problem, "what": PEER_WHAT[tool]}
                continue
            python = str(PEERS / PEER_TOOLS[tool][0] / "bin" / "python")
            command = [python, str(HERE / "peers.py"), tool, str(corpus)]
            jobs.append((tool, PEER_WHAT[tool], command, args.peer_runs or args.runs))
    for name, what, command, runs in jobs:
        measured = []
        for k in range(runs):
            print(f"{name}: run {k + 1} of {runs} ...", file=sys.stderr)
            own = name == "floor" or name.startswith("simdup")
            outcome = run_child(command, 3600 if own else args.timeout)
            measured.append(outcome)
            if "error" in outcome:
                break
        best = median_run(measured)
        best["what"] = what
        if "error" not in best and name != "floor":
            best["quality"] = quality(best.pop("pairs"), truth, cosines, args.threshold)
        results[name] = best
    results.update(skipped)
    print(f"\n{args.docs:,} documents, median of up to {args.runs} runs; {machine()}")
    print(table(results, args.docs))
    for name, result in results.items():
        plan = result.get("plan")
        if plan:
            stats = result.get("stats", {})
            print(
                f"\n{name} plan: {plan.get('bits')} bits, {plan.get('tables')}, "
                f"Hamming <= {plan.get('max_hamming')}; "
                f"recall at threshold {plan.get('recall_at_threshold')}; expected candidates "
                f"{plan.get('expected_candidates'):,}, verified {plan.get('expected_verified'):,}; "
                f"measured candidates {result.get('candidates'):,}; "
                f"table candidates planned {stats.get('planned_candidates', 0):,} / "
                f"counted {stats.get('table_candidates', 0):,}; true cosines planned "
                f"{stats.get('planned_verified', 0):,} / counted {stats.get('candidates', 0):,}; "
                f"warnings: {plan.get('warnings')}"
            )
    if args.json:
        record = {"machine": machine(), "docs": args.docs, "results": results}
        args.json.write_text(json.dumps(record, indent=1, default=str))


if __name__ == "__main__":
    main()
