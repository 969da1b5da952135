"""Measure the SQLite fingerprint index: add rate, query latency, size, warm rescans.

Writes the benchmark corpus of ``benchmarks/generate.py`` (Zipf-distributed prose with
planted near-duplicates) as one file per document under a temporary directory, then
measures:

* **add rate**: ``simdup index add DIR`` on an empty index, documents per second;
* **unchanged add**: the same command again (nothing changed: only ``stat`` calls);
* **query latency**: ``FingerprintIndex.query`` of one document against all stored ones,
  median and 99th percentile over ``--queries`` documents (edited copies of stored
  documents under new names, so every query has matches to verify), and the median
  number of stored documents each query verified;
* **bytes per document**: the database file (after a WAL checkpoint) divided by the
  number of documents;
* **cold scan vs warm rescan**: ``simdup scan DIR`` without a cache, against
  ``simdup scan DIR --cache DB`` when the cache is already up to date.

Commands run as subprocesses (``python -m simdup``), so the times include start-up, as a
user would see them. Usage::

    python benchmarks/index_bench.py --docs 100000 --keys planned --no-scans
    python benchmarks/index_bench.py --docs 100000 --keys fallback --no-scans
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from simdup.fingerprints.listing import fingerprint_settings
from simdup.index import open_index
from simdup.model import Document
from simdup.params import Params
from simdup.search.plan.planner import tables_for


def _generator() -> Any:
    """Import ``benchmarks/generate.py`` (a script, not a package module)."""
    path = Path(__file__).with_name("generate.py")
    spec = importlib.util.spec_from_file_location("simdup_bench_generate", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


def write_corpus(directory: Path, docs: int, seed: int) -> list[tuple[str, str]]:
    """Write one file per generated document (mtimes an hour old); return (name, text)."""
    documents, _ = _generator().generate(docs, seed)
    past = time.time() - 3600
    for k in range(0, len(documents), 1000):
        sub = directory / f"{k // 1000:03d}"
        sub.mkdir(parents=True, exist_ok=True)
        for name, text in documents[k : k + 1000]:
            path = sub / f"{name}.txt"
            path.write_text(text)
            os.utime(path, (past, past))
    return list(documents)


def timed(command: list[str]) -> tuple[float, str]:
    """Run ``python -m simdup COMMAND``; return (seconds, stdout)."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "simdup", *command],
        check=True,
        capture_output=True,
        text=True,
    )
    return time.perf_counter() - start, done.stdout


def edited(text: str, rng: np.random.Generator) -> str:
    """Return ``text`` with about 3% of its words replaced."""
    words = text.split()
    for _ in range(max(1, len(words) // 33)):
        words[int(rng.integers(len(words)))] = "zzedit"
    return " ".join(words)


def blocking_options(keys: str) -> list[str]:
    """Return the command-line options that make an index store ``keys``."""
    if keys == "planned":
        return []
    if keys == "fallback":
        return ["--max-distance", str(tables_for(Params()).guarantee)]
    return ["--scheme", keys]


def main() -> None:
    """Run the measurements and print them as JSON (and a readable summary on stderr)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--workdir", type=Path, help="Put the temp dir here.")
    parser.add_argument(
        "--keys",
        default="planned",
        help="Stored keys: planned (the default: planned on the first documents added), "
        "fallback (the corpus-free keys of scheme auto, --max-distance K) or a scheme name "
        "(strict, balanced, loose). The scans use the same blocking.",
    )
    parser.add_argument(
        "--no-scans", action="store_true", help="Skip the cold and warm scans (slow with loose)."
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as temp:
        root = Path(temp)
        corpus = root / "corpus"
        db = str(root / "index.db")
        cache = str(root / "cache.db")
        clock = time.perf_counter()
        documents = write_corpus(corpus, args.docs, args.seed)
        print(
            f"wrote {len(documents):,} files in {time.perf_counter() - clock:.1f}s", file=sys.stderr
        )
        results: dict[str, Any] = {"documents": len(documents), "python": sys.version.split()[0]}

        blocking = blocking_options(args.keys)
        results["keys"] = args.keys
        results["blocking_options"] = " ".join(blocking)
        seconds, _ = timed(["index", "add", str(corpus), "--db", db, "-q", *blocking])
        results["add_seconds"] = round(seconds, 2)
        results["add_docs_per_second"] = round(len(documents) / seconds)
        seconds, out = timed(["index", "add", str(corpus), "--db", db, "-q", "--format", "json"])
        results["unchanged_add_seconds"] = round(seconds, 2)
        results["unchanged_add_report"] = json.loads(out)

        connection = sqlite3.connect(db)
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        connection.close()
        results["db_bytes"] = os.path.getsize(db)
        results["bytes_per_document"] = round(os.path.getsize(db) / len(documents), 1)

        rng = np.random.default_rng(args.seed)
        picks = rng.choice(len(documents), size=min(args.queries, len(documents)), replace=False)
        queries = [Document(f"query-{i}", edited(documents[i][1], rng)) for i in picks.tolist()]
        latencies = []
        verified = []
        matches = 0
        with open_index(db) as index:
            params = index.params
            results["stored_keys"] = {**index.keys_info, "tables": index.tables.description}
            index.query(queries[:1], params)  # warm the page cache
            for query in queries:
                start = time.perf_counter()
                result = index.query([query], params)
                latencies.append(time.perf_counter() - start)
                verified.append(result.stats["candidates"])
                matches += len(result.pairs) > 0
        latencies.sort()
        results["query_ms_median"] = round(statistics.median(latencies) * 1000, 2)
        results["query_ms_p99"] = round(latencies[int(0.99 * (len(latencies) - 1))] * 1000, 2)
        results["verified_candidates_median"] = statistics.median(verified)
        results["queries"] = len(queries)
        results["queries_with_a_match"] = matches

        if args.no_scans:
            print(json.dumps(results, indent=2))
            return
        seconds, cold = timed(["scan", str(corpus), "--format", "json", "-q", *blocking])
        results["cold_scan_seconds"] = round(seconds, 2)
        scan = ["scan", str(corpus), "--cache", cache, "--format", "json", "-q", *blocking]
        seconds, _ = timed(scan)
        results["first_cached_scan_seconds"] = round(seconds, 2)
        seconds, warm = timed(scan)
        results["warm_rescan_seconds"] = round(seconds, 2)
        results["pairs"] = len(json.loads(cold)["pairs"])
        results["warm_pairs_identical"] = json.loads(cold)["pairs"] == json.loads(warm)["pairs"]
        results["params"] = fingerprint_settings(Params())
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
