"""Index keys, below the schema: the blocking tables a new index stores, planned on its documents.

A query is one indexed lookup per stored table, followed by a true cosine per candidate, so the
stored tables decide how fast every later query is. The corpus-free tables of ``scheme="auto"``
(:func:`simdup.search.plan.planner.tables_for`) guarantee a Hamming distance and know nothing of the
corpus: on real text their short keys put thousands of documents in each bucket. A new index
therefore waits for its first documents and plans its tables on their fingerprints with the planner
``simdup scan`` uses (:func:`simdup.search.plan.planner.plan`), at the index's threshold and recall;
the tables, the recall planned and the Hamming pre-filter are recorded in the index, and later adds
and queries use them as stored.

Keys the user chose (a scheme, ``blocks`` or ``max_distance``) are stored as asked, and
an index made before keys were planned keeps its corpus-free keys (``source`` is
``fallback``). A first batch too small to say anything about the corpus keeps the
corpus-free keys too, with the reason recorded.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.fingerprints.simhash import words64
from simdup.params import Params
from simdup.search.plan.planner import plan, tables_for
from simdup.search.plan.pricing import Option, measuring_sample, table_options
from simdup.search.tables import Tables, masked_keys, table_masks

#: Fewest documents in a new index's first batch for its keys to be planned on them: bucket
#: sizes measured on fewer say little about a collection that will grow far beyond them.
PLAN_MINIMUM = 1000

#: Most tables an index stores: each is an indexed column, and a query joins one ``SELECT``
#: per table (SQLite allows at most 500 in one compound statement).
MAX_STORED_TABLES = 256

#: ``source`` of keys not yet chosen (a new index holding no documents yet).
PENDING = "pending"

#: What one query pays, in stored key entries read (about a microsecond each): an indexed
#: lookup per stored table (one SELECT of the query's UNION), and a true cosine per stored
#: candidate within the Hamming pre-filter (its row read, its weights compared). Rough
#: figures from the server's CPU time per query at 100,000 documents with 11 and with 221
#: stored tables.
LOOKUP_COST = 40
VERIFY_COST = 20

#: Sample fingerprints on which the key entries a query reads are counted, per option.
ENTRY_SAMPLE = 5000

#: Keys are planned again once the index holds this many times the documents they were
#: planned on: bucket sizes grow with the corpus, and so does what a query reads.
REPLAN_GROWTH = 4


def explicit_keys(params: Params) -> bool:
    """Tell whether ``params`` name their tables (a scheme, ``blocks`` or ``max_distance``)."""
    return params.scheme != "auto" or params.blocks is not None or params.max_distance is not None


def keys_record(params: Params) -> dict[str, Any]:
    """Return a new index's keys record: ``explicit``, or ``pending`` until it has documents."""
    return {"source": "explicit" if explicit_keys(params) else PENDING}


def stored_keys_record(params: Params, record: dict[str, Any] | None) -> dict[str, Any]:
    """Return the keys record of an opened index (one made before keys were planned has none)."""
    if record is not None:
        return record
    return {"source": "explicit" if explicit_keys(params) else "fallback"}


def replan_at(params: Params, record: dict[str, Any]) -> int | None:
    """Return how many documents the index holds when keys recorded as ``record`` are due again.

    Keys the user chose are never planned again (None). Keys planned on fewer than
    :data:`PLAN_MINIMUM` documents (or never planned: corpus-free keys) are planned as soon
    as the index holds that many; planned keys once it holds :data:`REPLAN_GROWTH` times
    the documents they were planned on.

    >>> replan_at(Params(), {"source": "fallback"})
    1000
    >>> replan_at(Params(), {"source": "planned", "planned_on": 5000})
    20000
    """
    if explicit_keys(params) or record["source"] in (PENDING, "explicit"):
        return None
    base = int(record.get("planned_on", 0))
    return PLAN_MINIMUM if base < PLAN_MINIMUM else REPLAN_GROWTH * base


def replan_due(params: Params, record: dict[str, Any], documents: int) -> bool:
    """Tell whether keys recorded as ``record`` should be planned again at ``documents``."""
    at = replan_at(params, record)
    return at is not None and documents >= at


@dataclass(frozen=True)
class QueryPlan:
    """Tables chosen for the cost of one query (the fields a keys record takes)."""

    tables: Tables
    recall: float
    max_hamming: int
    warnings: tuple[str, ...] = ()


def _shared_share(fingerprints: npt.NDArray[np.uint64], tables: Tables) -> float:
    """Return the expected share of stored documents sharing a key, summed over the tables.

    A query reads, per table, every stored entry in its bucket: on average the sum of the
    squared bucket shares, measured here on a sample (skewed buckets cost more than the
    key width alone says).
    """
    m = max(1, len(fingerprints))
    total = 0.0
    for mask in table_masks(tables):
        _, counts = np.unique(masked_keys(fingerprints, mask), return_counts=True)
        total += float(np.square(counts / m).sum())
    return total


def query_plan(params: Params, fingerprints: npt.NDArray[np.uint64]) -> QueryPlan:
    """Return the tables that make one query cheapest at the recall, for a grown index.

    A scan's plan weighs the candidate pairs of the whole corpus, which grow with its
    square, against a table's cost per document, so it takes more and longer keys as the
    corpus grows (hundreds of tables at 100,000 documents). One query against an index
    pays a lookup per table, the stored entries in its buckets and a true cosine per
    candidate within the pre-filter, which grow only linearly: the same priced options
    (:func:`simdup.search.plan.pricing.table_options`) are weighed by that cost instead.

    Args:
        params: The index's settings at its width.
        fingerprints: uint64 (n, words), every stored document.
    """
    n = max(1, len(fingerprints))
    sample = measuring_sample(fingerprints[:, : words64(params.fixed_bits)])
    options = [
        o for o in table_options(params, sample) if 1 <= len(o.tables.keys) <= MAX_STORED_TABLES
    ]
    if not options:
        return QueryPlan(Tables(params.fixed_bits, (), -1, "no tables"), 0.0, 0)
    reaching = [o for o in options if o.recall >= params.recall]
    warnings: tuple[str, ...] = ()
    if not reaching:
        reaching = [max(options, key=lambda o: o.recall)]
        warnings = (
            f"no stored keys reach recall {params.recall} at cosine {params.threshold}; "
            f"these find {reaching[0].recall:.3f} of such pairs",
        )

    probe = sample.fingerprints[:: max(1, len(sample.fingerprints) // ENTRY_SAMPLE)]

    def cost(o: Option) -> float:
        verified = 2.0 * o.verified / n  # a pair is a candidate of either of its documents
        entries = n * _shared_share(probe, o.tables)
        return len(o.tables.keys) * LOOKUP_COST + entries + VERIFY_COST * verified

    chosen = min(reaching, key=lambda o: (cost(o), o.tables.description, o.max_hamming))
    return QueryPlan(chosen.tables, chosen.recall, chosen.max_hamming, warnings)


def planned_keys(
    params: Params, fingerprints: npt.NDArray[np.uint64], *, per_query: bool = False
) -> tuple[Tables, dict[str, Any]]:
    """Return the tables to store for an index's documents, and their keys record.

    Args:
        params: The index's settings (``scheme="auto"``, threshold and recall).
        fingerprints: uint64 (n, words), the first batch of documents added (or, with
            ``per_query``, every stored document).
        per_query: Choose the tables for the cost of one query (:func:`query_plan`),
            as keys planned again for a grown index are; else as a scan would.

    Returns:
        ``(tables, record)``; ``record["source"]`` is ``planned`` (with the recall planned,
        the Hamming pre-filter and the number of documents planned on) or ``fallback``
        (with the reason).
    """
    n = len(fingerprints)
    if n < PLAN_MINIMUM:
        return tables_for(params), {
            "source": "fallback",
            "reason": f"the first add held {n} documents; keys are planned on at least "
            f"{PLAN_MINIMUM}",
        }
    # The index's width is passed explicitly: its fingerprints are stored at that width.
    at = dataclasses.replace(params, bits=params.fixed_bits)
    chosen = query_plan(at, fingerprints) if per_query else plan(at, fingerprints)
    if not chosen.tables.keys or len(chosen.tables.keys) > MAX_STORED_TABLES:
        return tables_for(params), {
            "source": "fallback",
            "reason": f"the plan for the first documents uses {len(chosen.tables.keys)} key "
            f"tables; an index stores 1 to {MAX_STORED_TABLES}",
        }
    return chosen.tables, {
        "source": "planned",
        "planned_on": n,
        "threshold": params.threshold,
        "recall": round(chosen.recall, 4),
        "max_hamming": chosen.max_hamming,
        "warnings": list(chosen.warnings),
    }
