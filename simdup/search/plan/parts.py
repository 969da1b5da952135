"""The bytes each part of a scan's pair stage takes, priced from its plan.

The tables being bucketed and the pairs they hold waiting, and verification's index and
temporaries: :mod:`.budget` adds them up and fits them within the budget.
"""

from __future__ import annotations

from simdup.search.plan.planner import Plan
from simdup.search.verify import DENSE_ENTRIES, DENSE_ROWS, WALK_ENTRIES, WALK_ENTRY_BYTES

#: Bytes per distinct fingerprint of one table being bucketed: its keys, their packed sort
#: (which becomes the buckets) and its order, 8 bytes each, while the order of the table
#: before is still held, and a few booleans (:func:`simdup.search.buckets.sorted_buckets`).
TABLE_BYTES_PER_ROW = 40

#: Bytes of verification temporaries besides the chunks when the corpus's shared features
#: are unknown: a dense block of :data:`~simdup.search.verify.DENSE_ENTRIES` per thread.
VERIFY_BYTES = 48 << 20

#: Bytes per weight entry of the verifier's index while it is built (the shared entries'
#: columns and weights, and the masks and copies they are taken from).
INDEX_BYTES_PER_ENTRY = 24

#: Share of the budget the chunks in flight may take.
CHUNK_SHARE = 16


def ahead_bytes(plan: Plan, budget: int, threads: int, pipelined: bool = False) -> int | None:
    """Return the bytes of pairs each table bucketed ahead may hold (None: no thread ahead).

    A table's share of the pairs the plan expects its tables to meet, and at most the
    budget's share for the chunks spread over the tables held at once: a larger table
    waits for its turn (:func:`simdup.search.buckets.bucketed`). One thread ``pipelined``
    needs only a few pieces ahead of the reader to keep both busy (a piece holds the
    pairs within the pre-filter of a chunk of candidates: a few hundred KiB), so it holds
    the least, in the chunks' share of the budget: a stored corpus fills one chunk at a
    time while its verification waits for the search, and the rest of the share takes
    the pieces and their temporaries.
    """
    if threads <= 1:
        return MIN_AHEAD_BYTES if pipelined else None
    per_table = -(-plan.expected_recorded // max(1, len(plan.tables.keys))) * AHEAD_PAIR_BYTES
    share = budget // CHUNK_SHARE // (2 * threads + 1)
    return max(MIN_AHEAD_BYTES, min(per_table, share))


#: Bytes a pair found by a table ahead of its turn takes: two int64 representatives.
AHEAD_PAIR_BYTES = 16

#: A table bucketed ahead may always hold this much of its pairs waiting.
MIN_AHEAD_BYTES = 1 << 20


def table_bytes(plan: Plan, threads: int, ahead: int | None = None) -> int:
    """Return the bytes of the tables bucketed at once by ``threads`` (each 2 ahead).

    Besides, once: the groups of identical fingerprints (their members, and where each
    group starts, its size and its first row: the tables' keys are read from the rows in
    place, not from a copy); and with threads, the pairs each table in flight holds
    waiting, ``ahead`` bytes at most (:func:`ahead_bytes`). One thread holds one table
    (pipelined, its few pieces ahead are in the chunks' share: see :func:`ahead_bytes`).
    """
    groups = MEMBER_BYTES * plan.documents + GROUP_BYTES * plan.distinct
    if threads <= 1:
        return groups + plan.distinct * TABLE_BYTES_PER_ROW
    return groups + (2 * threads + 1) * (plan.distinct * TABLE_BYTES_PER_ROW + (ahead or 0))


#: Bytes per row of the groups of identical fingerprints (a 4-byte member).
MEMBER_BYTES = 4

#: Bytes per group: where it starts and its size (4 bytes each), its first row (8).
GROUP_BYTES = 16


def verify_bytes(plan: Plan, workers: int, pairs: int) -> int:
    """Return the bytes verification holds besides its chunks: its index and dense blocks.

    Each verifying thread scatters the shared features of a few rows into a dense block
    (:func:`simdup.search.verify.cosine_many`), as wide as the corpus's shared features,
    and reads the entries of the rows paired with them against it, a bounded number at a
    time: at most :data:`~simdup.search.verify.WALK_ENTRIES`, and as many as a block's
    share of a chunk of ``pairs`` pairs walk when the pairs spread over the documents.
    """
    if not plan.shared:
        return VERIFY_BYTES
    per_block = pairs * DENSE_ROWS / max(1, min(plan.documents, pairs))
    walked = min(WALK_ENTRIES, round(per_block * plan.entries))
    block = min(DENSE_ENTRIES, DENSE_ROWS * plan.shared) * 8 + walked * WALK_ENTRY_BYTES
    return index_bytes(plan) + max(1, workers) * block


def index_bytes(plan: Plan) -> int:
    """Return the bytes of the verifier's index in memory (0: unknown, in :data:`VERIFY_BYTES`).

    A stored corpus writes its index to the store instead
    (see :func:`simdup.search.plan.budget.stored_fit`).
    """
    return round(INDEX_BYTES_PER_ENTRY * plan.entries * plan.documents) if plan.shared else 0
