"""Measure the per-unit seconds of the pair stage on this machine, for the planner's time model.

The planner predicts a plan's seconds as a sum of unit counts times per-unit costs
(:mod:`simdup.search.plan.seconds`). This script measures those costs: on each corpus it
runs the pair stage (:func:`simdup.engines.local.pairs.find_pairs`, default jobs) with the
plan forced to exact mode and to each width's cheapest tables, records the units each run
counted and its seconds, and fits the costs by least squares on relative error:

* tables: seconds = per key · tables · distinct fingerprints + (per candidate + per word ·
  64-bit words) · pairs sharing a key + (per cosine + per entry · features per document) ·
  true cosines computed + per entry · the matrix's entries (the verifier's index);
* exact: seconds = per product · products the blocks compute + per dense product · products ·
  dense columns + per walk · light walks + the same cosine and index costs for the pairs
  selected;
* many tables, besides: per pair recorded (met within the pre-filter by a table, and
  checked against the record of emitted pairs) + per element moved by the record's merges.

The dense product's, the merge's and the reported pairs' costs (held as they are verified,
then put in order) are timed on their own (the runs here hold records too small to tell
the merges apart, and report too few pairs) and taken off each run before the fit.

Exact mode runs on the corpus's first ``--exact-docs`` documents (every pair of a large
corpus takes minutes). The fitted costs, and each run's predicted against measured seconds,
are printed; paste the costs into ``simdup/search/plan/seconds.py``.

Usage: ``python benchmarks/plan_costs.py [--docs 20000] [--corpora z1-v50k-w200,...]
[--jsonl other.jsonl ...] [--json runs.json]``; ``--refit runs.json`` fits earlier runs again.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402  (the sibling module, found through the path above)

from simdup.engines.local import pairs  # noqa: E402
from simdup.engines.local.fingerprinting import fingerprint_documents, widest  # noqa: E402
from simdup.model import Document, PairArrays  # noqa: E402
from simdup.params import Params  # noqa: E402
from simdup.search.candidates import DEDUPE_BATCH  # noqa: E402
from simdup.search.exact import SELECTION  # noqa: E402
from simdup.search.held import Held  # noqa: E402
from simdup.search.plan import planner  # noqa: E402
from simdup.search.plan.budget import predict  # noqa: E402
from simdup.search.plan.seconds import merged  # noqa: E402


def load(path: Path, limit: int | None = None) -> list[Document]:
    """Return the documents of a JSON Lines corpus (the first ``limit``)."""
    with path.open(encoding="utf-8") as fh:
        records = [json.loads(line) for line in fh]
    return [Document(r["id"], r["text"]) for r in records[:limit]]


def measure(
    documents: list[Document], params: Params, pick: str, most: float
) -> list[dict[str, Any]]:
    """Run the pair stage once per plan ``pick`` selects; return units and seconds.

    Plans predicted to take more than ``most`` seconds are left out.
    """
    corpus = fingerprint_documents(documents, widest(params), jobs=0)
    survey = pairs.corpus_survey(params, corpus.matrix, corpus.fingerprints)
    options = list(planner.choices(params, survey, workers=2))
    chosen = [p for p in options if p.exact == (pick == "exact")]
    if pick == "tables":
        chosen = [p for p in chosen if p.recall >= params.recall]
    chosen = [p for p in chosen if p.seconds <= most]
    out = []
    for plan in chosen:
        fit = predict(plan, 1 << 40, workers=2, report_all=False)
        original = pairs.fitted
        pairs.fitted = lambda *a, plan=plan, fit=fit, **k: (plan, fit)  # type: ignore[assignment]
        timings: dict[str, float] = {}
        counted: dict[str, dict[str, int]] = {}
        chunks = pairs.candidate_chunks

        def counting(*a: Any, chunks: Any = chunks, counted: Any = counted, **k: Any) -> Any:
            counted["counts"] = k["counts"]
            return chunks(*a, **k)

        pairs.candidate_chunks = counting  # type: ignore[assignment]
        try:
            clock = time.perf_counter()
            result = pairs.find_pairs(
                corpus.names, corpus.matrix, corpus.fingerprints, params, timings=timings, jobs=0
            )
            seconds = time.perf_counter() - clock - timings["plan"]
        finally:
            pairs.fitted = original
            pairs.candidate_chunks = chunks  # type: ignore[assignment]
        recorded = counted.get("counts", {}).get("recorded", 0)
        stats = result.stats
        work = plan.work
        out.append(
            {
                "mode": "exact" if plan.exact else "tables",
                "plan": f"{plan.tables.description} at {plan.bits}",
                "predicted": plan.seconds,
                "keys": len(plan.tables.keys) * plan.distinct,
                "candidates": stats["table_candidates"],
                "words": plan.bits // 64,
                "verified": stats["candidates"],
                "row_entries": len(corpus.matrix.data) / corpus.matrix.rows,
                "documents": corpus.matrix.rows,
                "pairs": 0 if work is None else work.products,
                "dense": 0 if work is None else work.products * work.heavy,
                "walks": 0 if work is None else work.light_walks,
                "recorded": recorded,
                "merged": merged(recorded, stats["candidates"]),
                "reported": stats["above_threshold"],
                "seconds": seconds,
                "stages": {k: timings[k] for k in ("candidates", "verify")},
            }
        )
    return out


def dense_cost(rows: int = 2000, columns: int = 256, documents: int = 20_000) -> float:
    """Return the seconds of one pair and one column of the matrix product exact mode makes."""
    rng = np.random.default_rng(0)
    a = rng.random((rows, columns)).astype(SELECTION)
    b = rng.random((documents, columns)).astype(SELECTION)
    out = np.empty((rows, documents), dtype=SELECTION)
    best = float("inf")
    for _ in range(3):
        clock = time.perf_counter()
        np.matmul(a, b.T, out=out)
        best = min(best, time.perf_counter() - clock)
    return best / (rows * documents * columns)


def held_cost(reported: int = 8_000_000, part: int = 1 << 20, rows: int = 100_000) -> float:
    """Return the seconds per reported pair held as verified parts come, then put in order.

    The pairs hold ties as a scan's do (scores rounded to six places, a few distances),
    and come in parts of ``part`` pairs; the best of three runs.
    """
    rng = np.random.default_rng(0)
    best = float("inf")
    for _ in range(3):
        parts = []
        for size in [part] * (reported // part):
            first = rng.integers(0, rows - 1, size)
            second = np.minimum(first + 1 + rng.integers(0, 1000, size), rows - 1)
            score = np.round(0.8 + 0.2 * rng.random(size), 6)
            hamming = rng.integers(0, 20, size)
            parts.append(
                PairArrays(np.stack([first, second], axis=1), hamming, score, score.copy())
            )
        clock = time.perf_counter()
        held = Held(None, None, rows)
        for pairs_part in parts:
            held.add(pairs_part)
        held.ordered()
        best = min(best, time.perf_counter() - clock)
    return best / reported


def merge_cost(record: int = 32_000_000, batch: int = DEDUPE_BATCH) -> float:
    """Return the seconds per element moved when batches are merged into the record.

    The record grows as a scan's does, a batch of new pairs at a time, each merge into
    newly allocated memory (whose first touch is part of the cost), up to ``record``.
    """
    rng = np.random.default_rng(0)
    emitted = np.zeros(0, dtype=np.int64)
    moved, seconds = 0, 0.0
    while len(emitted) < record:
        keys = np.sort(rng.integers(0, 1 << 40, batch))
        clock = time.perf_counter()
        emitted = np.sort(np.concatenate((emitted, keys)), kind="stable")
        seconds += time.perf_counter() - clock
        moved += len(emitted)
    return seconds / moved


#: The units the seconds are fitted on (the constants of simdup/search/plan/seconds.py), and
#: how many of each a run counted.
UNITS: dict[str, Callable[[dict[str, Any]], float]] = {
    "KEY": lambda r: r["keys"],
    "CANDIDATE": lambda r: r["candidates"] if r["mode"] == "tables" else 0,
    "CANDIDATE_WORD": lambda r: r["candidates"] * r["words"] if r["mode"] == "tables" else 0,
    "COSINE": lambda r: r["verified"],
    "COSINE_ENTRY": lambda r: r["verified"] * r["row_entries"],
    "PAIR": lambda r: r["pairs"],
    "WALK": lambda r: r["walks"],
    "ENTRY": lambda r: r["documents"] * r["row_entries"],
    "RECORD": lambda r: r.get("recorded", 0),
}


def apart(r: dict[str, Any], costs: dict[str, float]) -> float:
    """Return the seconds of a run's units timed apart: dense products, merges, held pairs."""
    return (
        costs["DENSE"] * r["dense"]
        + costs["MERGE"] * r.get("merged", 0)
        + costs["HELD"] * r.get("reported", 0)
    )


def fit(runs: list[dict[str, Any]], timed: dict[str, float]) -> dict[str, float]:
    """Return the per-unit seconds minimising the squared relative error over ``runs``.

    The costs ``timed`` apart (``DENSE`` seconds per pair and column, ``MERGE`` per
    element of the record moved, ``HELD`` per reported pair) are taken off each run's
    seconds first.
    """
    a = np.array([[unit(r) / r["seconds"] for unit in UNITS.values()] for r in runs])
    rest = np.array([1.0 - apart(r, timed) / r["seconds"] for r in runs])
    costs, *_ = np.linalg.lstsq(a, rest, rcond=None)
    fitted = dict(zip(UNITS, np.maximum(costs, 0.0).tolist(), strict=True))
    return {**timed, **fitted}


def main() -> None:
    """Measure every corpus, fit, and print the costs and each run against them."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--exact-docs", type=int, default=6_000)
    parser.add_argument("--thresholds", default="0.8,0.9")
    parser.add_argument("--modes", default="tables,exact", help="plans to run, comma-separated")
    parser.add_argument("--corpora", help="family members to run, comma-separated")
    parser.add_argument("--jsonl", type=Path, nargs="*", default=[], help="other corpora")
    parser.add_argument("--most", type=float, default=60.0, help="skip plans predicted longer")
    parser.add_argument("--out", type=Path, default=HERE / "data")
    parser.add_argument("--json", type=Path, help="also write every run here")
    parser.add_argument("--refit", type=Path, help="fit the runs of an earlier --json only")
    args = parser.parse_args()
    if args.refit:
        earlier = json.loads(args.refit.read_text())
        timed = {
            "DENSE": earlier["dense"],
            "MERGE": earlier.get("merge") or merge_cost(),
            "HELD": earlier.get("held") or held_cost(),
        }
        report(earlier["runs"], timed)
        return
    names = set(args.corpora.split(",")) if args.corpora else None
    runs: list[dict[str, Any]] = []
    paths = [
        generate.write(args.docs, args.out, shape=shape)[0]
        for shape in generate.FAMILY
        if names is None or shape.name in names
    ]
    for path in [*paths, *args.jsonl]:
        for threshold in (float(t) for t in args.thresholds.split(",")):
            params = Params(threshold=threshold)
            for pick, limit in (("tables", None), ("exact", args.exact_docs)):
                if pick not in args.modes.split(","):
                    continue
                for run in measure(load(path, limit), params, pick, args.most):
                    runs.append({"corpus": path.stem, "threshold": threshold, **run})
                    print(json.dumps(runs[-1]), flush=True)
    timed = {"DENSE": dense_cost(), "MERGE": merge_cost(), "HELD": held_cost()}
    if args.json:
        record = {"dense": timed["DENSE"], "merge": timed["MERGE"], "held": timed["HELD"]}
        args.json.write_text(json.dumps({**record, "runs": runs}, indent=1) + "\n")
    report(runs, timed)


def report(runs: list[dict[str, Any]], timed: dict[str, float]) -> None:
    """Print the fitted costs, and each run's seconds predicted by them against measured."""
    costs = fit(runs, timed)
    for name, cost in costs.items():
        print(f"{name} = {cost:.2g}")
    for r in runs:
        fitted = apart(r, costs) + sum(costs[u] * unit(r) for u, unit in UNITS.items())
        print(
            f"  {r['corpus']} {r['threshold']} {r['plan']}: fitted {fitted:.2f}, "
            f"measured {r['seconds']:.2f} ({fitted / r['seconds']:.2f})"
        )


if __name__ == "__main__":
    main()
