"""Seconds of pair work: the counts a plan predicts, times the cost of each unit.

The pair work of a plan is made of a few kinds of unit whose counts the plan predicts:

* tables: each distinct fingerprint keyed and sorted in each table; each pair sharing a
  key made, de-duplicated and pre-filtered by its Hamming distance (a XOR and a popcount
  per 64-bit word); each true cosine computed (a sparse dot product, whose work grows with
  the features of the row it walks);
* exact mode: each product a block computes (the pairs, and each block's lower corner), its
  share of the selection, and each product and dense column; each walk of a light feature's
  postings; each pair selected, whose true cosine is then computed as the tables'
  candidates' are;
* many tables: each pair within the pre-filter met by a table, checked against the record
  of pairs already emitted (a sort and a search, per batch), and the record's merges: each
  batch merged into a record that grows to the pairs verified, so the elements moved grow
  with the product of the two (batches times the record's mean size);
* both: the verifier's index of the corpus (every entry of the weight matrix), and each
  pair reported, held and put in order.

The cost of each unit was measured on this machine by ``benchmarks/plan_costs.py``
(:data:`MEASURED`): it runs the pair stage of a scan (default jobs) with the plan forced to
exact mode and to each width's cheapest tables, on the heavy-background family and the
ordinary generated corpus, counts the units and fits their costs by least squares on
relative error. The dense product's cost is that of the machine's single-precision matrix
product, and the record's merge cost that of a record grown a batch at a time to 32
million pairs, each timed on its own. Another machine, or one busy with other work, scales
every cost alike.
"""

from __future__ import annotations

from simdup.search.candidates import DEDUPE_BATCH, FIRST_TABLE_LIMIT
from simdup.search.exact import ExactWork

#: Where the costs below come from.
MEASURED = "benchmarks/plan_costs.py, 2 cores (AMD EPYC), Python 3.11, numpy 2.4, default jobs"

#: One distinct fingerprint keyed and sorted in one table.
KEY = 1.1e-7

#: One pair sharing a key: made, de-duplicated and pre-filtered; and per 64-bit word.
CANDIDATE = 2.3e-8
CANDIDATE_WORD = 3.6e-9

#: One true cosine; and per feature of the row it walks (the mean row's, as estimated).
COSINE = 1.5e-7
COSINE_ENTRY = 5.3e-9

#: Exact mode: one product a block computes (its share of the products and the selection).
PAIR = 2.6e-9

#: Exact mode: one product and one dense column (the machine's BLAS, float32).
DENSE = 1.1e-11

#: Exact mode: one pair walked along a light feature's postings.
WALK = 1.8e-8

#: Many tables: one pair met by a table checked against the record of emitted pairs.
RECORD = 5.3e-8

#: Many tables: one element of the record moved when a batch is merged into it.
MERGE = 9.2e-9

#: The verifier's index: one entry of the weight matrix (fitted at nothing: too small
#: to tell apart from the other units on these runs).
ENTRY = 0.0

#: One pair reported: held as it is verified, and put in order (by score range, in
#: memory or, past the budget, on disk). Timed apart (``plan_costs.py``, ``held_cost``):
#: 0.30 µs a pair at 8 million pairs in memory, 0.38 at 16 million; a scan reporting 47
#: million pairs past its budget, on disk, spent 0.54 µs a pair (25 s of its 51 s).
HELD = 4e-7


#: A stored corpus's true cosine, per feature of the row it walks (its fixed part is
#: :data:`COSINE`). Its pairs wait for the candidate search to end, then are verified a
#: tile of the store at a time (:mod:`simdup.engines.local.tiles`): none overlaps the
#: search, each tile's rows are read again, and a tile's pairs share fewer rows. A corpus
#: the default budget stores is priced so whatever its run's budget
#: (:data:`~simdup.search.plan.survey.STORED_ENTRIES`). Measured
#: by the pair stage of stored scans (``benchmarks/plan_check.py``'s child, ``--memory``
#: small enough to store the corpus): 2.1 to 4.0 µs per cosine of rows of 110 features
#: at 1,000,000 documents (0.9 µs of 80 features at 100,000), where the planner priced
#: 0.73 µs in memory.
STORED_COSINE_ENTRY = 3.0e-8


def cosine_seconds(cosines: float, entries: float, stored: bool = False) -> float:
    """Return the seconds of ``cosines`` true cosines of rows of ``entries`` features.

    ``stored``: the corpus is verified from its store.
    """
    return cosines * (COSINE + (STORED_COSINE_ENTRY if stored else COSINE_ENTRY) * entries)


def merged(recorded: float, verified: float) -> float:
    """Return the record's elements moved by merges: batches times its mean size.

    ``recorded`` pairs come in batches of :data:`DEDUPE_BATCH`, and the record grows to
    the ``verified`` distinct pairs as they come, so each merge moves half of them on
    average.
    """
    return recorded / DEDUPE_BATCH * verified / 2


def table_seconds(
    *,
    keys: float,
    candidates: float,
    words: int,
    verified: float,
    entries: float,
    documents: int,
    tables: int = 1,
    recorded: float = 0.0,
    stored: bool = False,
    reported: float = 0.0,
) -> float:
    """Return the seconds of a table plan's pair work.

    Args:
        keys: Tables times distinct fingerprints.
        candidates: Pairs sharing a key, summed over the tables.
        words: 64-bit words per fingerprint.
        verified: True cosines computed.
        entries: Mean features per document.
        documents: Documents (the verifier indexes their entries).
        tables: Tables; with more than :data:`FIRST_TABLE_LIMIT` the pairs are recorded.
        recorded: Pairs within the pre-filter, summed over the tables (what is recorded).
        stored: The corpus is verified from its store (:data:`STORED_COSINE_ENTRY`).
        reported: Pairs reported (:data:`HELD`).
    """
    record = 0.0
    if tables > FIRST_TABLE_LIMIT:
        record = RECORD * recorded + MERGE * merged(recorded, verified)
    return (
        KEY * keys
        + candidates * (CANDIDATE + CANDIDATE_WORD * words)
        + cosine_seconds(verified, entries, stored)
        + ENTRY * entries * documents
        + record
        + HELD * reported
    )


def exact_seconds(work: ExactWork, selected: float, reported: float = 0.0) -> float:
    """Return the seconds of an exact scan that selects ``selected`` pairs to verify.

    ``reported``: the pairs it reports (:data:`HELD`).
    """
    entries = work.entries / max(work.documents, 1)
    return (
        work.products * (PAIR + DENSE * work.heavy)
        + WALK * work.light_walks
        + cosine_seconds(selected, entries)
        + ENTRY * work.entries
        + HELD * reported
    )
