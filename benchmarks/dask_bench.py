"""Benchmark the Dask engine against the local engine on one corpus, and measure its costs.

Builds the deterministic corpus of ``generate.py`` and cuts it into ``--shards`` JSON Lines
files (the Dask engine reads one file per task). Then, each run in a fresh process so peak
memory is its own, back to back:

* **local**: ``simdup.find_duplicates`` over the documents of every shard, ``--jobs``
  worker processes (what ``simdup scan --jsonl`` does for one file);
* **dask**: ``simdup.engines.dask.find_duplicates`` on a ``LocalCluster`` of ``--jobs``
  worker processes, started before the clock and closed after it.

Both results must render to the same JSON; the run stops otherwise. Reported: median
seconds (and the cluster's start-up apart), peak RSS of the local process, of the Dask
client and of each worker, the ratio dask / local, and per-document byte costs of each
stage measured on the partitions themselves (see ``docs/scale.md``).

Usage: ``python benchmarks/dask_bench.py [--docs 100000] [--runs 3] [--jobs 2] [--bits auto]
[--threshold 0.8]``; run it on an otherwise idle machine. With the
default ``--bits auto`` both engines let the planner choose the width, as ``simdup scan``
does; the per-document costs and the billion-document plan use the width it chose.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402  (the sibling module, found through the path above)


def shards(docs: int, count: int, data: Path) -> list[Path]:
    """Write the corpus and cut it into ``count`` JSON Lines files of consecutive lines."""
    corpus, _ = generate.write(docs, data)
    lines = corpus.read_bytes().splitlines(keepends=True)
    step = -(-len(lines) // count)
    out = []
    for k in range(count):
        path = data / f"shard-{docs}-{k:02d}-of-{count:02d}.jsonl"
        if not path.exists():
            path.write_bytes(b"".join(lines[k * step : (k + 1) * step]))
        out.append(path)
    return out


def peak_mib(who: int = resource.RUSAGE_SELF) -> float:
    """Return the peak resident set size in MiB (Linux reports KiB)."""
    return resource.getrusage(who).ru_maxrss / 1024


def params_of(bits: str, threshold: float) -> Any:
    """Return the scan settings (``bits`` a width or ``auto``; the rest at its default)."""
    from simdup.params import Params

    return Params(bits=bits if bits == "auto" else int(bits), threshold=threshold)


def run_local(paths: list[str], jobs: int, out: str, params: Any) -> dict[str, Any]:
    """One local scan in this process."""
    from simdup.engines.local import find_duplicates
    from simdup.inputs.jsonl import JsonlOptions, read_jsonl_input

    started = time.perf_counter()
    documents = []
    for path in paths:
        documents += read_jsonl_input(path, JsonlOptions())[0]
    result = find_duplicates(documents, params, jobs=jobs)
    seconds = time.perf_counter() - started
    Path(out).write_text(_rendered(result))
    return {
        "seconds": seconds,
        "stages": result.timings,
        "peak_mib": peak_mib(),
        "children_peak_mib": peak_mib(resource.RUSAGE_CHILDREN),
        "pairs": len(result.pairs),
        "bits": result.stats["bits"],
    }


def run_dask(paths: list[str], jobs: int, out: str, params: Any) -> dict[str, Any]:
    """One Dask scan on a fresh local cluster, started before the clock."""
    from simdup.engines.dask import Inputs, connect, find_duplicates

    clock = time.perf_counter()
    with connect(jobs=jobs) as client:
        startup = time.perf_counter() - clock
        sampler = _Sampler()  # the client's resident memory during the scan alone
        started = time.perf_counter()
        inputs = Inputs(jsonl=paths)
        with sampler:
            result = find_duplicates(client, inputs, params)
        seconds = time.perf_counter() - started
        workers = client.run(peak_mib)
    Path(out).write_text(_rendered(result))
    return {
        "seconds": seconds,
        "startup": startup,
        "stages": result.timings,
        "peak_mib": peak_mib(),
        "baseline_mib": sampler.first,
        "scan_peak_mib": sampler.peak,
        "worker_peak_mib": sorted(workers.values()),
        "expected_candidates": result.plan["expected_candidates"],
        "workers": jobs,
        "pairs": len(result.pairs),
        "tables": result.plan["table_count"],
        "key_bits": result.plan["key_bits"],
        "candidates": result.stats["candidates"],
        "bits": result.stats["bits"],
    }


class _Sampler:
    """Sample this process's resident memory every 20 ms while in a ``with`` block."""

    def __init__(self) -> None:
        import psutil  # type: ignore[import-untyped]

        self.process = psutil.Process()
        self.first = self.peak = self.process.memory_info().rss / 2**20
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.done.wait(0.02):
            self.peak = max(self.peak, self.process.memory_info().rss / 2**20)

    def __enter__(self) -> _Sampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()
        self.peak = max(self.peak, self.process.memory_info().rss / 2**20)


def _rendered(result: Any) -> str:
    from simdup.report.render import ReportOptions, selected_pairs, to_json

    options = ReportOptions()
    return to_json(result, options, {}, selected_pairs(result, options))


def costs(paths: list[str], docs: int, params: Any) -> dict[str, float]:
    """Bytes per document of what each stage holds or moves, measured on the partitions."""
    import numpy as np

    from simdup.engines.dask.partitions import part_summary, read_part, weigh_part
    from simdup.engines.dask.shuffle import split_keys
    from simdup.inputs.files import ReadOptions
    from simdup.inputs.jsonl import JsonlOptions, JsonlPart
    from simdup.search.plan.planner import plan
    from simdup.search.tables import table_masks

    fields, stopwords = JsonlOptions(), params.stopwords
    part = read_part([JsonlPart(paths[0])], ReadOptions(), fields, stopwords, 1, params.segment)
    n = len(part.names)
    text = Path(paths[0]).stat().st_size
    counts = part.counts
    vocabulary = sum(len(f) + 49 for f in counts.vocabulary)  # str object in CPython
    summary = part_summary(part)
    names = sum(len(x) for x in summary.names)
    rows = np.arange(n, dtype=np.int64)
    vectors = weigh_part(part, rows, params, None, n)
    m = vectors.matrix
    masks = table_masks(plan(params, vectors.fingerprints).tables)
    split = split_keys(vectors, masks, 1)
    shuffled = sum(r.nbytes + f.nbytes for r, f in split.values())
    return {
        "documents_measured": n,
        "corpus_documents": docs,
        "text_bytes": text / n,
        "name_bytes": names / n,
        "counts_bytes": (counts.ids.nbytes + counts.counts.nbytes + counts.lengths.nbytes) / n,
        "partition_vocabulary_bytes": vocabulary / n,
        "summary_bytes": (names + summary.lengths.nbytes) / n,
        "matrix_bytes": (m.indptr.nbytes + m.indices.nbytes + m.data.nbytes) / n,
        "fingerprint_bytes": vectors.fingerprints.nbytes / n,
        "shuffle_bytes_per_table": shuffled / len(masks) / n,
    }


def main() -> None:
    """Run the benchmark, print a Markdown table, optionally write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--bits", default="auto")
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--data", type=Path, default=HERE / "data")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--one", choices=("local", "dask"), help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("paths", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        runner = run_local if args.one == "local" else run_dask
        params = params_of(args.bits, args.threshold)
        print(json.dumps(runner(args.paths, args.jobs, args.out, params)))
        return
    args.data.mkdir(parents=True, exist_ok=True)
    paths = [str(p) for p in shards(args.docs, args.shards, args.data)]
    results: dict[str, list[dict[str, Any]]] = {"local": [], "dask": []}
    for run in range(args.runs):
        for engine in ("local", "dask"):
            out = str(args.data / f"result-{engine}.json")
            command = [sys.executable, __file__, "--one", engine, "--out", out]
            command += ["--jobs", str(args.jobs), "--bits", str(args.bits)]
            command += ["--threshold", str(args.threshold), *paths]
            done = subprocess.run(command, capture_output=True, text=True, check=True)
            results[engine].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"run {run + 1} {engine}: {results[engine][-1]['seconds']:.1f} s", flush=True)
        local = (args.data / "result-local.json").read_text()
        if (args.data / "result-dask.json").read_text() != local:
            raise SystemExit("the engines disagree: compare data/result-*.json")
    args.width = results["dask"][0]["bits"]  # the width the plan chose (or was given)
    measured = costs(paths, args.docs, params_of(str(args.width), args.threshold))
    report(args, results, measured)
    billion(args, results["dask"], measured)
    if args.json:
        args.json.write_text(json.dumps({"runs": results, "costs": measured}, indent=1))


def report(args: Any, results: dict[str, list[dict[str, Any]]], measured: dict[str, Any]) -> None:
    """Print the comparison as Markdown."""

    def median(engine: str, key: str) -> float:
        return float(statistics.median(r[key] for r in results[engine]))

    local, dask = median("local", "seconds"), median("dask", "seconds")
    pairs = zip(results["local"], results["dask"], strict=True)
    ratios = [d["seconds"] / lo["seconds"] for lo, d in pairs]
    print(f"\n{args.docs:,} documents in {args.shards} shards, {args.jobs} workers, ", end="")
    print(f"--bits {args.bits} ({args.width} chosen), threshold {args.threshold}, ", end="")
    print(f"median of {args.runs} runs; outputs identical in every run\n")
    print("| engine | seconds | stages (s) | peak RSS (MiB) |")
    print("|---|---|---|---|")
    stages = ", ".join(
        f"{k} {statistics.median(r['stages'][k] for r in results['local']):.1f}"
        for k in results["local"][0]["stages"]
    )
    peak = median("local", "peak_mib")
    children = median("local", "children_peak_mib")
    print(f"| local | {local:.1f} | {stages} | {peak:.0f} (workers {children:.0f}) |")
    stages = ", ".join(
        f"{k} {statistics.median(r['stages'][k] for r in results['dask']):.1f}"
        for k in results["dask"][0]["stages"]
    )
    workers = " / ".join(
        f"{statistics.median(r['worker_peak_mib'][w] for r in results['dask']):.0f}"
        for w in range(len(results["dask"][0]["worker_peak_mib"]))
    )
    client = median("dask", "peak_mib")
    startup = median("dask", "startup")
    print(
        f"| dask | {dask:.1f} (+{startup:.1f} cluster start) | {stages} "
        f"| client {client:.0f}, workers {workers} |"
    )
    print(f"\ndask / local: {statistics.median(ratios):.2f} (median of per-run ratios)")
    last = results["dask"][-1]
    print(
        f"plan: {last['tables']} tables, key bits {last['key_bits']}; "
        f"{last['candidates']:,} candidate pairs, {last['pairs']:,} pairs reported\n"
    )
    print("| per document | value |")
    print("|---|---|")
    for key, value in measured.items():
        print(f"| {key} | {value:,.2f} |")


def billion(
    args: Any, runs: list[dict[str, Any]], measured: dict[str, Any], n: float = 1e9
) -> None:
    """Print a plan for ``n`` documents from the measured constants (see docs/scale.md).

    Constants, from the Dask runs (medians; worker-seconds = wall seconds x workers):
    ``t_doc`` worker-seconds per document to read, count, weigh and fingerprint;
    ``t_table`` worker-seconds per document and table to key, shuffle and bucket;
    ``t_pair`` worker-seconds per candidate pair to verify; ``c`` the chance that two
    documents share a key of the measured width (the plan's measured bucket sizes).
    """
    import math

    def median(key: str) -> float:
        return statistics.median(float(r[key]) for r in runs)

    docs, workers = args.docs, runs[0]["workers"]
    tables, width = runs[0]["tables"], max(runs[0]["key_bits"])
    t_doc = statistics.median(r["stages"]["fingerprint"] for r in runs) * workers / docs
    t_table = statistics.median(r["stages"]["candidates"] for r in runs) * workers / docs / tables
    t_pair = statistics.median(r["stages"]["verify"] for r in runs) * workers / median("candidates")
    c = median("expected_candidates") / (tables * docs * docs / 2)
    client = (median("scan_peak_mib") - median("baseline_mib")) * 2**20 / docs
    constants = [
        ("t_doc (worker-s/doc)", "fingerprint s x workers / docs", f"{t_doc:.2e}"),
        ("t_table (worker-s/doc/table)", "candidates s x workers / docs / L", f"{t_table:.2e}"),
        ("t_pair (worker-s/pair)", "verify s x workers / candidates", f"{t_pair:.2e}"),
        (f"c (key collision at {width} bits)", "expected candidates / (L n^2 / 2)", f"{c:.2e}"),
        ("client bytes/doc", "(client RSS peak - before) / docs", f"{client:,.0f}"),
    ]
    print(f"\n### {n:,.0f} documents (from the constants above)\n")
    print("| constant | formula | value |")
    print("|---|---|---|")
    for name, formula, value in constants:
        print(f"| {name} | {formula} | {value} |")
    thresholds = (0.8, 0.9, 0.95)
    columns: list[list[str]] = []
    for threshold in thresholds:
        p = math.acos(threshold) / math.pi  # a bit differs with probability theta / pi
        best = None
        for r in range(width, args.width + 1):
            survive = (1 - p) ** r  # a pair at the threshold keeps a table's r bits
            count = math.ceil(math.log(0.05) / math.log1p(-survive))  # recall 0.95
            pairs = count * n * n / 2 * c * 2.0 ** (width - r)  # random candidates
            cost = n * count * t_table + pairs * t_pair
            if best is None or cost < best[0]:
                best = (cost, r, count, pairs)
        assert best is not None
        cost, r, count, pairs = best
        hours = (n * t_doc + cost) / 3600
        columns.append(
            [
                f"{r}",
                f"{count:,}",
                f"{pairs:.1e}",
                f"{count * n * (8 + args.width / 8) / 1e12:,.0f} TB",
                f"{hours:,.0f}",
                f"{hours / 1000:,.1f}",
            ]
        )
    held = n * (measured["matrix_bytes"] + measured["fingerprint_bytes"]) / 1e12
    names = [
        ("key bits r", "least cost over r >= measured width"),
        ("tables L", "ln 0.05 / ln(1 - (1 - p)^r), p = arccos(t) / pi"),
        ("random candidates", "L n^2 / 2 x c x 2^-(r - width)"),
        ("shuffle volume", "L x n x (8 + bits / 8) bytes"),
        ("worker-hours", "(n t_doc + n L t_table + candidates t_pair) / 3600"),
        ("hours on 1,000 workers", "worker-hours / 1,000"),
    ]
    print(f"\n| at threshold | formula | {' | '.join(str(t) for t in thresholds)} |")
    print("|---|---|" + "---|" * len(thresholds))
    for k, (name, formula) in enumerate(names):
        print(f"| {name} | {formula} | {' | '.join(col[k] for col in columns)} |")
    print(f"\nWeight vectors held by the workers: n x (matrix + fingerprint) = {held:,.2f} TB;")
    print(f"client memory: n x client bytes/doc = {n * client / 2**30:,.0f} GiB.")


if __name__ == "__main__":
    main()
