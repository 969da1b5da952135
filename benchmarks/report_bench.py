"""Writing a scan's report, in process: seconds and microseconds a pair, per format.

Scans a JSON Lines corpus or a tree of files once (default settings but the threshold), then
writes its report in each format ``--runs`` times, as ``simdup scan -o FILE`` writes it: JSON,
JSON Lines and CSV to a hash (nothing to disk: the pairs selected, made into text a batch at a
time, encoded); with ``--files``, every format (the table and Parquet too) through the command
line's own writer to a file in a temporary folder. Prints the median seconds, the microseconds
a pair and the report's SHA-256, so that two builds can be compared on the same result: run it
with ``PYTHONPATH`` on each build's tree, alternately. ``--result FILE`` keeps the scan's result
(pickled) and reuses it, so that both builds write the same pairs and the scan is not timed
again. The microseconds a pair of ``--files`` are the costs :mod:`simdup.report.seconds`
predicts reports with.

Usage::

    python benchmarks/generate.py --docs 6000 --shape z1.2-v10k-w50
    python benchmarks/report_bench.py benchmarks/data/corpus-z1.2-v10k-w50-6000.jsonl \\
        --threshold 0.8 --runs 3 --result /tmp/z12.pkl [--files --formats table,parquet]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import statistics
import tempfile
import time
from pathlib import Path

from simdup.cli.output import encode_output
from simdup.engines.local import scan_inputs
from simdup.inputs.files import ReadOptions
from simdup.inputs.gather import gather_inputs
from simdup.model import Document, ScanResult
from simdup.params import Params
from simdup.report.render import csv_pieces, json_pieces, jsonl_pieces, report_clusters
from simdup.report.shown import ReportOptions, selected_pairs


def scanned(corpus: Path, threshold: float, kept: Path | None) -> ScanResult:
    """Return the scan of ``corpus`` (``kept``: read from there if present, else saved there)."""
    if kept is not None and kept.exists():
        with kept.open("rb") as handle:
            result: ScanResult = pickle.load(handle)
        return result
    if corpus.is_dir():  # a tree of files, scanned as ``simdup scan TREE`` scans it
        found = gather_inputs([str(corpus)], ReadOptions())
    else:
        with corpus.open(encoding="utf-8") as lines:
            records = (json.loads(line) for line in lines if line.strip())
            documents = [Document(str(r["id"]), r["text"]) for r in records]
        found = gather_inputs([], ReadOptions(), documents)
    result = scan_inputs(found, Params(threshold=threshold), ReadOptions(), jobs=0)
    if kept is not None:
        with kept.open("wb") as handle:
            pickle.dump(result, handle, protocol=pickle.HIGHEST_PROTOCOL)
    return result


def write(result: ScanResult, fmt: str) -> tuple[float, str]:
    """Write the report of ``result`` in ``fmt`` to a hash; return its seconds and digest."""
    options = ReportOptions()
    clock = time.perf_counter()
    shown = selected_pairs(result, options)
    if fmt == "json":
        pieces = json_pieces(result, options, {}, shown)
    elif fmt == "jsonl":
        pieces = jsonl_pieces(shown, report_clusters(result, options))
    else:
        pieces = csv_pieces(shown, None)
    digest = hashlib.sha256()
    for piece in map(encode_output, pieces):
        digest.update(piece)
    return time.perf_counter() - clock, digest.hexdigest()


def write_file(result: ScanResult, fmt: str, folder: Path) -> tuple[float, str]:
    """Write the report of ``result`` in ``fmt`` to a file as the command line does.

    Returns its seconds and the file's digest; the file is removed.
    """
    from simdup.cli.pairs import write_result
    from simdup.cli.parsed import Output, PairReport

    path = folder / f"report.{fmt}"
    report = PairReport(Output(fmt, str(path), quiet=True), ReportOptions(), False)
    clock = time.perf_counter()
    write_result(result, report, {})
    seconds = time.perf_counter() - clock
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    path.unlink()
    return seconds, digest


def main() -> None:
    """Scan the corpus once, then time each format's report and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, help="a JSON Lines corpus (id, text), or a tree")
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--formats", default="jsonl,json,csv")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--result", type=Path, help="keep the scan's result here, and reuse it")
    parser.add_argument(
        "--files", action="store_true", help="write files through the command line's writer"
    )
    args = parser.parse_args()
    result = scanned(args.corpus, args.threshold, args.result)
    pairs = len(result.pairs)
    print(f"{pairs:,} pairs")
    print("| format | median s | µs a pair | runs | sha256 |")
    print("|---|---|---|---|---|")
    for fmt in args.formats.split(","):
        with tempfile.TemporaryDirectory() as folder:
            if args.files:
                runs = [write_file(result, fmt, Path(folder)) for _ in range(args.runs)]
            else:
                runs = [write(result, fmt) for _ in range(args.runs)]
        seconds = statistics.median(s for s, _ in runs)
        digests = {d for _, d in runs}
        assert len(digests) == 1, "a report differs from run to run"
        per_pair = 1e6 * seconds / max(pairs, 1)
        print(f"| {fmt} | {seconds:.2f} | {per_pair:.2f} | {args.runs} | {digests.pop()[:16]} |")


if __name__ == "__main__":
    main()
