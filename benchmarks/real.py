"""Recall of ``--scheme auto`` on a real corpus against exact brute-force truth.

The corpus is the documentation tree every Debian-based machine ships: the uncompressed
text files under ``/usr/share/doc`` (copyright notices, READMEs, change logs), full of
licences copied with small changes. Truth is every pair of documents whose true cosine is
at least the threshold, found by computing the cosine of *all* pairs; simdup's planned
scan is then scored against it, overall and per cosine band, next to the recall the plan
predicted.

Usage: ``python benchmarks/real.py [--root /usr/share/doc] [--threshold 0.8]``.
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import numpy as np

from simdup.engines.local.fingerprinting import fingerprint_documents
from simdup.engines.local.pairs import find_pairs
from simdup.model import Document
from simdup.params import Params
from simdup.search.verify import cosine_many

BANDS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.99, 1.0)


def documents(root: Path, limit: int) -> list[Document]:
    """Return the readable UTF-8 text files under ``root`` (200 B to 1 MB), by path."""
    out = []
    for path in sorted(root.rglob("*")):
        if path.suffix in {".gz", ".bz2", ".xz", ".zip", ".png", ".jpg", ".pdf"}:
            continue
        if not path.is_file() or path.is_symlink():
            continue
        size = path.stat().st_size
        if not 200 <= size <= 1_000_000:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        out.append(Document(str(path.relative_to(root)), text))
        if len(out) >= limit:
            break
    return out


def main() -> None:
    """Score planned scans against brute force and print a table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--root", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument("--limit", type=int, default=3000)
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--variants", default="64,256")
    args = parser.parse_args()
    docs = documents(args.root, args.limit)
    print(f"{len(docs):,} documents from {args.root}")
    base = fingerprint_documents(docs, Params())
    n = len(base.names)
    clock = time.perf_counter()
    i, j = np.triu_indices(n, k=1)
    everything = np.stack([i, j], axis=1).astype(np.int64)
    cosines = cosine_many(base.matrix, everything)
    print(f"brute force: {len(everything):,} pairs in {time.perf_counter() - clock:.1f} s")
    truth = everything[cosines >= args.threshold]
    truth_cos = cosines[cosines >= args.threshold]
    truth_set = {(int(a), int(b)) for a, b in truth}
    print(f"{len(truth):,} pairs with true cosine >= {args.threshold}")
    print()
    print(
        "| bits | tables | planned recall at t | measured recall | pairs found / true | "
        "candidates | seconds | recall by cosine band |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for bits in [int(b) for b in args.variants.split(",")]:
        params = Params(bits=bits, scheme="auto", threshold=args.threshold)
        corpus = fingerprint_documents(docs, params)
        clock = time.perf_counter()
        result = find_pairs(corpus.names, corpus.matrix, corpus.fingerprints, params)
        seconds = time.perf_counter() - clock
        found = {(int(a), int(b)) for a, b in result.pairs.pairs}
        hits = np.array([(int(a), int(b)) in found for a, b in truth], dtype=bool)
        bands = []
        edges = [b for b in BANDS if b >= args.threshold]
        for lo, hi in itertools.pairwise(edges):
            inside = (truth_cos >= lo) & (truth_cos < hi)
            if inside.any():
                bands.append(f"[{lo}, {hi}): {hits[inside].mean():.3f} of {int(inside.sum())}")
        exact = truth_cos >= 1.0
        if exact.any():
            bands.append(f"1.0: {hits[exact].mean():.3f} of {int(exact.sum())}")
        recall = float(hits.mean()) if len(hits) else 1.0
        if not found <= truth_set:
            raise SystemExit("a reported pair is below the threshold: verification is broken")
        print(
            f"| {bits} | {result.tables} | {result.plan['recall_at_threshold']:.3f} | "
            f"{recall:.3f} | {len(found & truth_set):,} / {len(truth_set):,} | "
            f"{result.stats['candidates']:,} | {seconds:.2f} | {'; '.join(bands)} |"
        )


if __name__ == "__main__":
    main()
