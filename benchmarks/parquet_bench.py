"""Measure ``simdup dedupe --parquet`` against ``--jsonl`` on the same records, side by side.

The JSON Lines corpus (``generate.py``) is written once more as Parquet (the same ``id`` and
``text`` columns, row groups of ``--group-rows``). Both commands then run as the installed
console script, each in its own process, back to back (jsonl, parquet, jsonl, parquet,
...), so that the machine's drift affects both alike:

* ``jsonl``: ``simdup dedupe --jsonl CORPUS.jsonl -o kept.jsonl --removed removed.jsonl``
* ``parquet``: ``simdup dedupe --parquet CORPUS.parquet -o kept.parquet --removed removed.parquet``

Peak memory is each process's maximum resident set size. Last, the kept rows are compared:
every kept Parquet row must be, in order, the JSON object of the kept line.

Usage::

    python benchmarks/parquet_bench.py --docs 1000000 --runs 1 --threshold 0.9
    python benchmarks/parquet_bench.py --docs 1000000 --words 40 --max-distance 2

Needs the parquet extra (pyarrow).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.json as pa_json
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dedupe_bench import SIMDUP, corpus, timed


def as_parquet(source: Path, target: Path, group_rows: int) -> None:
    """Write the records of a JSON Lines corpus as Parquet (id and text, strings)."""
    schema = pa.schema([("id", pa.string()), ("text", pa.string())])
    options = pa_json.ParseOptions(explicit_schema=schema)
    table = pa_json.read_json(source, parse_options=options)
    pq.write_table(table, target, row_group_size=group_rows)


def cut(source: Path, target: Path, words: int) -> Path:
    """Write the corpus with every text cut to its first ``words`` words."""
    with source.open("rb") as lines, target.open("w", encoding="utf-8") as out:
        for line in lines:
            record = json.loads(line)
            record["text"] = " ".join(record["text"].split()[:words])
            out.write(json.dumps(record) + "\n")
    return target


def same_rows(kept_jsonl: Path, kept_parquet: Path) -> bool:
    """Tell whether the kept Parquet rows are, in order, the kept JSON Lines records."""
    with kept_jsonl.open("rb") as lines:
        for batch in pq.ParquetFile(kept_parquet).iter_batches(batch_size=65_536):
            for row in batch.to_pylist():
                if json.loads(next(lines)) != row:
                    return False
        return next(lines, None) is None


def main() -> None:
    """Run both commands, print the table for RESULTS.md, and check the kept rows."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--corpus", type=Path, help="A JSON Lines corpus (default: generated).")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--threshold", type=float, default=0.9)
    parser.add_argument(
        "--max-distance",
        type=int,
        help="Find pairs within this Hamming distance at 64 bits (a light pair scan, so that "
        "reading and writing weigh more).",
    )
    parser.add_argument("--group-rows", type=int, default=65_536)
    parser.add_argument(
        "--words",
        type=int,
        help="Cut every text to its first N words (a million full documents need more than "
        "dedupe's memory budget).",
    )
    args = parser.parse_args()
    source = args.corpus or corpus(args.docs)
    settings = ["--threshold", str(args.threshold), "-q"]
    if args.max_distance is not None:
        settings += ["--max-distance", str(args.max_distance), "--bits", "64"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.words is not None:
            source = cut(source, work / "corpus.jsonl", args.words)
        table = work / "corpus.parquet"
        as_parquet(source, table, args.group_rows)
        commands = {}
        for name, path in (("jsonl", source), ("parquet", table)):
            kept, removed = str(work / f"kept.{name}"), str(work / f"removed.{name}")
            commands[name] = [SIMDUP, "dedupe", f"--{name}", str(path), "-o", kept]
            commands[name] += ["--removed", removed, *settings]
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, command in commands.items():
                results[name].append(timed(command))
        print(
            f"corpus: {source} ({source.stat().st_size:,} bytes as JSON Lines, "
            f"{table.stat().st_size:,} as Parquet)"
        )
        print("| input | seconds (median) | peak RSS (MiB, median) |")
        print("|---|---|---|")
        for name, runs in results.items():
            seconds = statistics.median(r[0] for r in runs)
            peak = statistics.median(r[1] for r in runs)
            print(f"| {name} | {seconds:.1f} | {peak:,.0f} |")
        jsonl, parquet = results["jsonl"], results["parquet"]
        time_ratio = statistics.median(p[0] / j[0] for j, p in zip(jsonl, parquet, strict=True))
        peak_ratio = statistics.median(p[1] / j[1] for j, p in zip(jsonl, parquet, strict=True))
        print(f"parquet / jsonl: time {time_ratio:.3f}, peak memory {peak_ratio:.3f}")
        same = same_rows(work / "kept.jsonl", work / "kept.parquet")
        print(f"kept rows identical in content: {same}")


if __name__ == "__main__":
    main()
