"""Measure the per-unit seconds of the pair stage on this machine, for the planner's time model.

The planner predicts a plan's seconds as a sum of unit counts times per-unit costs
(:mod:`simdup.search.plan.seconds`). This script measures those costs: on each corpus it
runs the pair stage (:func:`simdup.engines.local.pairs.find_pairs`, default jobs) with the
plan forced to exact mode and to each width's cheapest tables, records the units each run
counted and its seconds, and fits the costs by least squares on relative error:

* tables: seconds = per key · tables · distinct fingerprints + (per candidate + per word ·
  64-bit words) · pairs sharing a key + (per cosine + per entry · features per document) ·
  true cosines computed + per entry · the matrix's entries (the verifier's index);
* exact: seconds = per pair · pairs + per dense product · pairs · dense columns + per walk ·
  light walks + the same cosine and index costs for the pairs selected.

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
from simdup.model import Document  # noqa: E402
from simdup.params import Params  # noqa: E402
from simdup.search.plan import planner  # noqa: E402
from simdup.search.plan.budget import predict  # noqa: E402


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
        try:
            clock = time.perf_counter()
            result = pairs.find_pairs(
                corpus.names, corpus.matrix, corpus.fingerprints, params, timings=timings, jobs=0
            )
            seconds = time.perf_counter() - clock - timings["plan"]
        finally:
            pairs.fitted = original
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
                "pairs": 0 if work is None else work.pairs,
                "dense": 0 if work is None else work.pairs * work.heavy,
                "walks": 0 if work is None else work.light_walks,
                "seconds": seconds,
                "stages": {k: timings[k] for k in ("candidates", "verify")},
            }
        )
    return out


def dense_cost(rows: int = 2000, columns: int = 256, documents: int = 20_000) -> float:
    """Return the seconds of one pair and one column of the machine's matrix product."""
    rng = np.random.default_rng(0)
    a, b = rng.random((rows, columns)), rng.random((documents, columns))
    out = np.empty((rows, documents))
    best = float("inf")
    for _ in range(3):
        clock = time.perf_counter()
        np.matmul(a, b.T, out=out)
        best = min(best, time.perf_counter() - clock)
    return best / (rows * documents * columns)


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
}


def fit(runs: list[dict[str, Any]], dense: float) -> dict[str, float]:
    """Return the per-unit seconds minimising the squared relative error over ``runs``.

    The dense products' share (``dense`` seconds per pair and column) is measured apart
    and taken off each exact run's seconds first.
    """
    a = np.array([[unit(r) / r["seconds"] for unit in UNITS.values()] for r in runs])
    rest = np.array([1.0 - dense * r["dense"] / r["seconds"] for r in runs])
    costs, *_ = np.linalg.lstsq(a, rest, rcond=None)
    return {"DENSE": dense, **dict(zip(UNITS, np.maximum(costs, 0.0).tolist(), strict=True))}


def main() -> None:
    """Measure every corpus, fit, and print the costs and each run against them."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--exact-docs", type=int, default=6_000)
    parser.add_argument("--thresholds", default="0.8,0.9")
    parser.add_argument("--corpora", help="family members to run, comma-separated")
    parser.add_argument("--jsonl", type=Path, nargs="*", default=[], help="other corpora")
    parser.add_argument("--most", type=float, default=60.0, help="skip plans predicted longer")
    parser.add_argument("--out", type=Path, default=HERE / "data")
    parser.add_argument("--json", type=Path, help="also write every run here")
    parser.add_argument("--refit", type=Path, help="fit the runs of an earlier --json only")
    args = parser.parse_args()
    if args.refit:
        earlier = json.loads(args.refit.read_text())
        report(earlier["runs"], earlier["dense"])
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
                for run in measure(load(path, limit), params, pick, args.most):
                    runs.append({"corpus": path.stem, "threshold": threshold, **run})
                    print(json.dumps(runs[-1]), flush=True)
    dense = dense_cost()
    if args.json:
        args.json.write_text(json.dumps({"dense": dense, "runs": runs}, indent=1) + "\n")
    report(runs, dense)


def report(runs: list[dict[str, Any]], dense: float) -> None:
    """Print the fitted costs, and each run's seconds predicted by them against measured."""
    costs = fit(runs, dense)
    for name, cost in costs.items():
        print(f"{name} = {cost:.2g}")
    for r in runs:
        fitted = costs["DENSE"] * r["dense"] + sum(costs[u] * unit(r) for u, unit in UNITS.items())
        print(
            f"  {r['corpus']} {r['threshold']} {r['plan']}: fitted {fitted:.2f}, "
            f"measured {r['seconds']:.2f} ({fitted / r['seconds']:.2f})"
        )


if __name__ == "__main__":
    main()
