"""Measure the per-unit seconds of the pair stage on this machine, for the planner's time model.

The planner predicts a plan's seconds as a sum of unit counts times per-unit costs
(:mod:`simdup.search.plan.seconds`). This script measures those costs: on each corpus it
runs the pair stage (:func:`simdup.engines.local.pairs.find_pairs`, default jobs) with the
plan forced to exact mode and to each width's cheapest tables, records the units each run
counted and its seconds, and fits the costs by least squares on relative error:

* tables: seconds = per key · tables · distinct fingerprints + per candidate · pairs sharing
  a key + per cosine · true cosines computed;
* exact: seconds = per pair · pairs + per dense product · pairs · dense columns + per walk ·
  light walks + per cosine · pairs selected.

Exact mode runs on the corpus's first ``--exact-docs`` documents (every pair of a large
corpus takes minutes). The fitted costs, and each run's predicted against measured seconds,
are printed; paste the costs into ``simdup/search/plan/seconds.py``.

Usage: ``python benchmarks/plan_costs.py [--docs 20000] [--corpora z1-v50k-w200,...]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
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
                "tables": len(plan.tables.keys) * plan.distinct,
                "candidates": stats["table_candidates"],
                "verified": stats["candidates"],
                "pairs": 0 if work is None else work.pairs,
                "dense": 0 if work is None else work.pairs * work.heavy,
                "walks": 0 if work is None else work.light_walks,
                "seconds": seconds,
            }
        )
    return out


#: The units each mode's seconds are fitted on.
UNITS = {
    "tables": ("tables", "candidates", "verified"),
    "exact": ("pairs", "dense", "walks", "verified"),
}


def fit(runs: list[dict[str, Any]], mode: str) -> dict[str, float]:
    """Return the per-unit seconds minimising the squared relative error of ``mode``'s runs."""
    chosen = [r for r in runs if r["mode"] == mode]
    units = UNITS[mode]
    a = np.array([[r[u] / r["seconds"] for u in units] for r in chosen], dtype=np.float64)
    costs, *_ = np.linalg.lstsq(a, np.ones(len(chosen)), rcond=None)
    return dict(zip(units, np.maximum(costs, 0.0).tolist(), strict=True))


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
    args = parser.parse_args()
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
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1) + "\n", encoding="utf-8")
    for mode in UNITS:
        costs = fit(runs, mode)
        print(mode, {u: f"{c:.3g}" for u, c in costs.items()})
        for r in (r for r in runs if r["mode"] == mode):
            predicted = sum(costs[u] * r[u] for u in costs)
            measured = r["seconds"]
            print(f"  {r['corpus']} {r['threshold']} {r['plan']}: {predicted:.2f} / {measured:.2f}")


if __name__ == "__main__":
    main()
