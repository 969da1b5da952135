"""Print simdup's plan for a JSON Lines corpus at several thresholds, without pair work.

The plan names its mode (exact or tables), the width chosen, the widths priced with their
recall and estimated cost, and the warnings a scan would print before starting: what a
run that would take too long to finish is predicted to cost.

Usage: ``python benchmarks/plan_report.py benchmarks/data/corpus-hard-100000.jsonl
[--thresholds 0.9,0.8] [--weightings tf,log]``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from simdup.engines.local.counting import count_batches
from simdup.engines.local.fingerprinting import fingerprint_matrix
from simdup.fingerprints.weights import weigh
from simdup.params import Params
from simdup.search.exact import exact_work
from simdup.search.plan.planner import WIDTHS, plan


def main() -> None:
    """Read the corpus once, then plan each weighting and threshold."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--thresholds", default="0.9,0.8")
    parser.add_argument("--weightings", default="tf,log")
    parser.add_argument("--jobs", type=int, default=0)
    args = parser.parse_args()
    with args.corpus.open(encoding="utf-8") as fh:
        texts = [json.loads(line)["text"] for line in fh]
    counts = count_batches(iter([texts]), stopwords=True, ngram=1, jobs=args.jobs)
    for weighting in args.weightings.split(","):
        matrix = weigh(counts.select(counts.row_lengths() > 0), weighting)
        fingerprints = fingerprint_matrix(matrix, max(WIDTHS), 12345, jobs=args.jobs)
        work = exact_work(matrix)
        for threshold in (float(t) for t in args.thresholds.split(",")):
            clock = time.perf_counter()
            chosen = plan(Params(threshold=threshold, weighting=weighting), fingerprints, work=work)
            record = {
                "weighting": weighting,
                "threshold": threshold,
                "plan_seconds": round(time.perf_counter() - clock, 2),
                "mode": chosen.source,
                "bits": chosen.bits,
                "tables": chosen.tables.description,
                "max_hamming": chosen.max_hamming,
                "estimated_cost": int(chosen.cost),
                "predicted_seconds": round(chosen.seconds, 1),
                "expected_reported": chosen.expected_reported,
                "exact_cost": chosen.exact_cost,
                "expected_candidates": chosen.expected_candidates,
                "expected_verified": chosen.expected_verified,
                "widths_priced": chosen.widths,
                "warnings": chosen.warnings,
            }
            print(json.dumps(record))


if __name__ == "__main__":
    main()
