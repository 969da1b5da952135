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
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.params import Params
from simdup.search.plan.planner import plan, tables_for
from simdup.search.tables import Tables

#: Fewest documents in a new index's first batch for its keys to be planned on them: bucket
#: sizes measured on fewer say little about a collection that will grow far beyond them.
PLAN_MINIMUM = 1000

#: Most tables an index stores: each is an indexed column, and a query joins one ``SELECT``
#: per table (SQLite allows at most 500 in one compound statement).
MAX_STORED_TABLES = 256

#: ``source`` of keys not yet chosen (a new index holding no documents yet).
PENDING = "pending"

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


def planned_keys(
    params: Params, fingerprints: npt.NDArray[np.uint64]
) -> tuple[Tables, dict[str, Any]]:
    """Return the tables to store for an index's first documents, and their keys record.

    Args:
        params: The index's settings (``scheme="auto"``, threshold and recall).
        fingerprints: uint64 (n, words), the first batch of documents added.

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
    chosen = plan(at, fingerprints)
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
