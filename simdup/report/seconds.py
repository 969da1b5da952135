"""Seconds to write a report: the pairs it lists, times what writing one costs.

A scan that reports tens of millions of pairs spends minutes writing them after its pair
work is done, so a plan that says how long a scan takes says this too. The cost of a pair
in each format was measured on this machine by ``benchmarks/report_bench.py --files``
(:data:`MEASURED`), on the 6.4 million pairs of a generated corpus whose names are short;
longer names cost more to write, in every format alike.
"""

from __future__ import annotations

#: Where the costs below come from.
MEASURED = (
    "benchmarks/report_bench.py --files, corpus-z1.2-v10k-w50-6000.jsonl at 0.8 "
    "(6,433,288 pairs) with names of 8 and of 62 characters, 2 cores (AMD EPYC), Python 3.11"
)

#: Seconds to write one pair, by format: a part for the pair and a part for each character
#: of a name (a pair's names are written, escaped, each of about the corpus's mean
#: length). A table off a terminal is laid out in two passes over the pairs (the columns'
#: widths, then the lines).
PAIR_SECONDS = {
    "json": (1.46e-6, 4.4e-9),
    "jsonl": (1.46e-6, 6.7e-9),
    "csv": (1.68e-6, 2.7e-8),
    "parquet": (1.31e-6, 4.3e-9),
    "table": (3.36e-6, 1.5e-8),
}


def report_seconds(fmt: str, pairs: int, name_length: float) -> float:
    """Return the seconds to write ``pairs`` pairs as ``fmt`` (0 for a format not priced).

    ``name_length`` is the mean length of the documents' names, in characters.

    >>> round(report_seconds("jsonl", 10_000_000, 20.0), 1)
    15.9
    """
    fixed, per_character = PAIR_SECONDS.get(fmt, (0.0, 0.0))
    return max(pairs, 0) * (fixed + per_character * name_length)
