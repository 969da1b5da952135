"""Measure a corpus's background: how similar its unrelated documents are, and what that costs.

A candidate search by sampled SimHash bits (``k`` bits a key, ``L`` tables, recall ``R`` at
the threshold) meets every pair of documents in a table with probability ``p(c) ** k``,
``p(c) = 1 - arccos(c) / pi`` for a pair of cosine ``c``. The pairs that are not
near-duplicates (the background) are a fixed share of all ``N * (N - 1) / 2`` pairs, so
their candidates grow with the square of the corpus unless keys grow longer with it; the
best ``k`` balances candidates against keys made, and the search then grows as
``N ** (1 + rho)``. How fast depends only on the background's cosines, which this script
measures on a sample.

``sample``: every pair among ``--docs`` documents drawn at random from JSON Lines files
(real trees: ``tree_jsonl.py``, then ``--markup``), weighted as ``simdup scan`` weighs them
by default (the fingerprint stage with default settings); prints the cosines' quantiles
and counts, and for each corpus size of ``--sizes`` the cheapest ``k`` and ``L``, the
candidates and keys, their sum per document, and its growth from one size to the next.

``count``: a scan's JSON Lines pairs (``simdup scan --format jsonl``) split into pairs the
generator planted (a pair of documents in one component of ``truth-N.tsv``) and background
pairs, by cosine band: run it on corpora of several sizes to count how the background near
the threshold grows.

Usage::

    python benchmarks/background.py sample --jsonl corpus-100000.jsonl --docs 6000
    python benchmarks/tree_jsonl.py /usr/share/man -o man.jsonl
    python benchmarks/background.py sample --jsonl man.jsonl --markup --docs 6000
    python benchmarks/background.py count --pairs p-100000.jsonl --truth truth-100000.tsv
"""

from __future__ import annotations

import argparse
import json
import math
import random
from collections import Counter
from pathlib import Path

import numpy as np
import numpy.typing as npt

from simdup.engines.local.fingerprinting import fingerprint_documents
from simdup.model import Document
from simdup.params import Params
from simdup.search.exact import cosine_blocks
from simdup.search.plan.recall import flip_probability
from simdup.search.verify import components
from simdup.text.markup import mode_for, read_text

#: Memory for a block of the sampled documents' cosines.
BLOCK_MEMORY = 1 << 30

#: Key widths priced, in bits.
KEY_BITS = range(4, 65)

#: Cosine bands of ``count``, by their lower ends.
BANDS = (0.75, 0.8, 0.85, 0.9, 0.95)


def sampled_texts(paths: list[Path], docs: int, seed: int, markup: bool) -> tuple[list[str], int]:
    """Return the texts of ``docs`` records drawn at random from JSON Lines files, and of how many.

    Only the records drawn are parsed. ``markup``: read as ``simdup scan --text auto`` reads
    a file of the record's id (a path, as ``tree_jsonl.py`` writes them): manual pages, HTML
    and Markdown for their words.
    """
    lines: list[str] = []
    for path in paths:
        with path.open(encoding="utf-8") as records:
            lines += [line for line in records if line.strip()]
    texts = []
    for line in random.Random(seed).sample(lines, min(docs, len(lines))):
        record = json.loads(line)
        text = record["text"]
        if markup:
            text = read_text(text, mode_for(str(record["id"]), "auto", text))
        texts.append(text)
    return texts, len(lines)


def cosines(texts: list[str]) -> npt.NDArray[np.float64]:
    """Return the cosine of every pair of ``texts``, upper triangle, row by row.

    The texts are weighted by the fingerprint stage with default settings, and their
    cosines come from the exact mode's blocks of the Gram matrix (as a small scan's census).
    """
    documents = [Document(f"{k:09d}", text) for k, text in enumerate(texts)]
    matrix = fingerprint_documents(documents, Params()).matrix
    out = [np.zeros(0, dtype=np.float64)]
    for lo, hi, block in cosine_blocks(matrix, BLOCK_MEMORY):
        above = np.triu_indices(hi - lo, 1, m=matrix.rows - lo)
        out.append(block[above].astype(np.float64))
    return np.concatenate(out)


def moments(background: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Return, for each key width ``k`` in :data:`KEY_BITS`, the mean of ``p(c) ** k``.

    The share of background pairs one table of ``k`` sampled bits puts in a bucket
    together, whatever the corpus size.
    """
    agree = 1 - np.arccos(np.clip(background, -1.0, 1.0)) / math.pi
    power = agree ** (KEY_BITS[0] - 1)
    out = []
    for _ in KEY_BITS:
        power *= agree
        out.append(float(power.mean()))
    return np.array(out)


def cheapest(
    shares: npt.NDArray[np.float64], documents: float, threshold: float, recall: float
) -> tuple[int, int, float, float]:
    """Return the cheapest ``(k, L, candidates, keys)`` for a corpus of ``documents``.

    ``shares``: :func:`moments` of the background. ``L`` tables of ``k`` bits find a pair
    at the threshold with probability ``1 - (1 - p(threshold) ** k) ** L``.
    """
    at_threshold = 1 - flip_probability(threshold)
    pairs = documents * (documents - 1) / 2
    best: tuple[int, int, float, float] | None = None
    for k, share in zip(KEY_BITS, shares.tolist(), strict=True):
        tables = math.ceil(math.log(1 - recall) / math.log(1 - at_threshold**k))
        candidates, keys = pairs * share * tables, documents * tables
        if best is None or candidates + keys < best[2] + best[3]:
            best = (k, tables, candidates, keys)
    assert best is not None
    return best


def sample(args: argparse.Namespace) -> None:
    """Print the background's cosines and the cheapest search's growth with the corpus."""
    chosen, records = sampled_texts(args.jsonl, args.docs, args.seed, args.markup)
    measured = cosines(chosen)
    quantiles = (0.5, 0.9, 0.99, 0.999, 0.9999)
    print(f"{len(chosen):,} documents of {records:,}, {len(measured):,} pairs")
    print(
        "quantiles:",
        ", ".join(
            f"{q}: {v:.3f}"
            for q, v in zip(quantiles, np.quantile(measured, quantiles), strict=True)
        ),
    )
    print(
        "pairs at or above:",
        ", ".join(f"{t}: {int((measured >= t).sum()):,}" for t in (0.5, 0.6, 0.7, 0.8, 0.9)),
    )
    # Near-duplicates are not background: how many there are grows with the corpus, not with
    # its square, so they are left out of what is scaled.
    shares = moments(measured[measured < args.below])
    previous = 0.0
    for size in args.sizes:
        k, tables, candidates, keys = cheapest(shares, size, args.threshold, args.recall)
        total = candidates + keys
        growth = f", {total / previous:.1f} times the size before's" if previous else ""
        print(
            f"N={size:,.0f}: k={k} L={tables} candidates {candidates:.3g} keys {keys:.3g}, "
            f"{total / size:,.0f} a document{growth}"
        )
        previous = total


def planted_groups(truth: Path) -> dict[str, int]:
    """Return each planted document's group: the documents a chain of copies joins."""
    with truth.open(encoding="utf-8") as rows:
        edges = [row.rstrip("\n").split("\t")[:2] for row in rows]
    number: dict[str, int] = {}
    pairs = np.array([[number.setdefault(n, len(number)) for n in e] for e in edges], np.int64)
    labels = components(len(number), pairs.reshape(-1, 2))
    return {name: int(labels[k]) for name, k in number.items()}


def count(args: argparse.Namespace) -> None:
    """Print a scan's pairs by cosine band, planted and background."""
    group = planted_groups(args.truth)
    bands: Counter[tuple[str, float]] = Counter()
    with args.pairs.open(encoding="utf-8") as lines:
        for line in lines:
            pair = json.loads(line)
            a, b = group.get(pair["a"], -1), group.get(pair["b"], -2)
            kind = "planted" if a == b else "background"
            band = max((low for low in BANDS if pair["cosine"] >= low), default=0.0)
            bands[kind, band] += 1
    for kind in ("background", "planted"):
        print(kind + ":", ", ".join(f">={band}: {bands[kind, band]:,}" for band in BANDS))


def main() -> None:
    """Run ``sample`` or ``count``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    sampling = commands.add_parser("sample", help="the background's cosines and its cost")
    sampling.add_argument("--jsonl", type=Path, action="append", default=[])
    sampling.add_argument("--markup", action="store_true", help="ids are paths: read markup")
    sampling.add_argument("--docs", type=int, default=6000)
    sampling.add_argument("--seed", type=int, default=1)
    sampling.add_argument("--threshold", type=float, default=0.9)
    sampling.add_argument("--recall", type=float, default=0.95)
    sampling.add_argument("--below", type=float, default=0.8, help="near-duplicates from here")
    sampling.add_argument("--sizes", type=float, nargs="+", default=[1e6, 1e7, 1e8])
    counting = commands.add_parser("count", help="a scan's pairs, planted and background")
    counting.add_argument("--pairs", type=Path, required=True)
    counting.add_argument("--truth", type=Path, required=True)
    args = parser.parse_args()
    if args.command == "sample":
        sample(args)
    else:
        count(args)


if __name__ == "__main__":
    main()
