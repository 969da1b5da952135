"""Seconds of pair work: the counts a plan predicts, times the cost of each unit.

The pair work of a plan is made of a few kinds of unit whose counts the plan predicts:

* tables: each distinct fingerprint keyed and sorted in each table; each pair sharing a
  key made, de-duplicated and pre-filtered by its Hamming distance (a XOR and a popcount
  per 64-bit word); each true cosine computed (a sparse dot product, whose work grows with
  the features of the row it walks);
* exact mode: each pair's share of the blocked products, normalisation and selection; each
  pair and dense column of the products; each walk of a light feature's postings; each
  pair selected, whose true cosine is then computed as the tables' candidates' are;
* both: the verifier's index of the corpus (every entry of the weight matrix).

The cost of each unit was measured on this machine by ``benchmarks/plan_costs.py``
(:data:`MEASURED`): it runs the pair stage of a scan (default jobs) with the plan forced to
exact mode and to each width's cheapest tables, on the heavy-background family and the
ordinary generated corpus, counts the units and fits their costs by least squares on
relative error. The dense product's cost is that of the machine's matrix product, timed on
its own. Another machine, or one busy with other work, scales every cost alike.
"""

from __future__ import annotations

from simdup.search.exact import ExactWork

#: Where the costs below come from.
MEASURED = "benchmarks/plan_costs.py, 2 cores (Intel Xeon), Python 3.11, numpy 2.4, default jobs"

#: One distinct fingerprint keyed and sorted in one table.
KEY = 1.9e-7

#: One pair sharing a key: made, de-duplicated and pre-filtered; and per 64-bit word.
CANDIDATE = 9.4e-9
CANDIDATE_WORD = 5.5e-9

#: One true cosine; and per feature of the row it walks (the mean row's, as estimated).
COSINE = 3.6e-7
COSINE_ENTRY = 8.5e-9

#: Exact mode: one pair (its share of the products, normalisation and selection).
PAIR = 1.8e-8

#: Exact mode: one pair and one dense column of the products (the machine's BLAS).
DENSE = 4.7e-11

#: Exact mode: one pair walked along a light feature's postings.
WALK = 5.2e-8

#: The verifier's index: one entry of the weight matrix.
ENTRY = 1e-8


def cosine_seconds(cosines: float, entries: float) -> float:
    """Return the seconds of ``cosines`` true cosines of rows of ``entries`` features."""
    return cosines * (COSINE + COSINE_ENTRY * entries)


def table_seconds(
    *,
    keys: float,
    candidates: float,
    words: int,
    verified: float,
    entries: float,
    documents: int,
) -> float:
    """Return the seconds of a table plan's pair work.

    Args:
        keys: Tables times distinct fingerprints.
        candidates: Pairs sharing a key, summed over the tables.
        words: 64-bit words per fingerprint.
        verified: True cosines computed.
        entries: Mean features per document.
        documents: Documents (the verifier indexes their entries).
    """
    return (
        KEY * keys
        + candidates * (CANDIDATE + CANDIDATE_WORD * words)
        + cosine_seconds(verified, entries)
        + ENTRY * entries * documents
    )


def exact_seconds(work: ExactWork, selected: float) -> float:
    """Return the seconds of an exact scan that selects ``selected`` pairs to verify."""
    entries = work.entries / max(work.documents, 1)
    return (
        work.pairs * (PAIR + DENSE * work.heavy)
        + WALK * work.light_walks
        + cosine_seconds(selected, entries)
        + ENTRY * work.entries
    )
