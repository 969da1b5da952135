"""Index stage 6, keys planned again: an index whose corpus outgrew its keys gets new ones.

The keys of a new index are planned on its first documents (:mod:`~simdup.index.keys`); an
index that grows far beyond them keeps bucket sizes measured on a small sample, and a query
reads ever more candidates. :func:`replan` plans the keys on every stored fingerprint, with
the planner a scan uses, and rewrites the key columns and their indexes in one transaction:
readers (WAL) go on with the old keys until it commits, a process killed in the middle
leaves the old keys whole, and no document is touched but for its key columns.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.index.keys import PENDING, planned_keys, replan_at, replan_due
from simdup.index.packing import to_signed, to_unsigned
from simdup.index.reading import count
from simdup.index.schema import key_column_sql
from simdup.index.store import IndexStore
from simdup.search.tables import table_keys, table_masks

#: Page cache (KiB) of a connection planning keys again: the key columns and their indexes
#: of a million documents stay in memory until the transaction commits.
REPLAN_CACHE_KIB = 512 * 1024

#: Rows whose key columns one ``UPDATE`` statement batch rewrites.
UPDATE_ROWS = 20_000

_KEY_COLUMN = re.compile(r"k\d+")


def due(store: IndexStore, documents: int | None = None) -> bool:
    """Tell whether the index's keys are due to be planned again (``documents``: its count)."""
    store.refresh_keys()
    n = count(store) if documents is None else documents
    return replan_due(store.params, store.keys_info, n)


def next_replan(store: IndexStore) -> int | None:
    """Return how many documents the index holds when its keys are due again (None: never)."""
    store.refresh_keys()
    return replan_at(store.params, store.keys_info)


def _key_columns(store: IndexStore) -> list[str]:
    """Return the key columns the documents table has (``k0``, ``k1``, ...), used or not."""
    rows = store.db.execute("PRAGMA table_info(documents)").fetchall()
    return [row[1] for row in rows if _KEY_COLUMN.fullmatch(row[1])]


def _rewrite_keys(
    store: IndexStore, ids: list[int], keys: npt.NDArray[np.int64], existing: list[str]
) -> None:
    """Drop the key indexes and set every row's keys; key columns left unused become 0."""
    db = store.db
    for (name,) in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND name GLOB 'documents_k[0-9]*'"
    ).fetchall():
        db.execute(f"DROP INDEX {name}")
    used = [f"k{t}" for t in range(keys.shape[1])]
    unused = [c for c in existing if c not in used]
    sql = f"UPDATE documents SET {', '.join(f'{c} = ?' for c in [*used, *unused])} WHERE id = ?"
    zeros = [0] * len(unused)
    for lo in range(0, len(ids), UPDATE_ROWS):
        rows = zip(keys[lo : lo + UPDATE_ROWS].tolist(), ids[lo : lo + UPDATE_ROWS], strict=True)
        db.executemany(sql, ([*row, *zeros, i] for row, i in rows))


#: Rows of the table for each placeholder moved through a key index as it is built
#: (:func:`_indexes_with_room`): about one for each of its pages (some 150 entries at 64
#: bits); a split leaves room in two or three of the four pages it writes. A table of
#: 1,000,000 rows and 20 keys built in one transaction, as here (a `/tmp` script), a new
#: row's pages of log a key: 5.30 built whole, 1.13 with a placeholder every 200 rows, for
#: 26.0 s of building against 22.6; at 200,000 rows: 4.34, 2.45 every 800, 1.31 every 285,
#: 1.29 every 200.
ROOM_ROWS = 200

#: The key the placeholders wait at between their moves (the first of every key index).
_WAITING = -(2**63)

#: A placeholder's name: no stored name starts with this byte (never in UTF-8).
_PLACEHOLDER = b"\xffroom-"


def _indexes_with_room(
    store: IndexStore,
    ids: list[int],
    fingerprints: npt.NDArray[np.uint64],
    keys: npt.NDArray[np.int64],
    statements: list[str],
) -> None:
    """Build the key indexes (``statements``, one per key column in order), leaving room.

    SQLite packs every page of an index it builds whole, so the first document stored
    afterwards splits a page of every key index, sharing its cells with its neighbours:
    about four pages of log a key (at 1,000,000 documents and 155 keys, 655 pages a document at
    first against 222 once 6,000 had been stored). Here placeholder rows, copies of the
    fingerprints of every :data:`ROOM_ROWS`-th document, wait at the first key of every
    index; as each index is built they move to their documents' keys and back, and each
    move splits the page it lands in the way a new document would, leaving room there and
    in its neighbours. They are deleted before the transaction commits: no reader sees
    them, and the log of changes does not record them.
    """
    count = len(ids) // ROOM_ROWS
    if not count:
        for statement in statements:
            store.db.execute(statement)
        return
    db = store.db
    first = ids[-1] + 1  # ids ascending: the placeholders' ids are past every document's
    placeholders = list(range(first, first + count))
    copied = np.arange(count) * ROOM_ROWS + ROOM_ROWS // 2
    key_columns = [f"k{t}" for t in range(keys.shape[1])]
    columns = ["id", "name", "origin", "digest", "feature_count", *store.fp_columns, *key_columns]
    waiting = [_WAITING] * len(key_columns)
    db.executemany(
        f"INSERT INTO documents ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
        (
            [i, _PLACEHOLDER + str(i).encode(), "", b"", 0, *words, *waiting]
            for i, words in zip(placeholders, to_signed(fingerprints[copied]).tolist(), strict=True)
        ),
    )
    for t, statement in enumerate(statements):
        db.execute(statement)
        db.executemany(
            f"UPDATE documents SET {key_columns[t]} = ? WHERE id = ?",
            zip(keys[copied, t].tolist(), placeholders, strict=True),
        )
        db.execute(f"UPDATE documents SET {key_columns[t]} = ? WHERE id >= ?", (_WAITING, first))
    trigger = db.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'documents_deleted'"
    ).fetchone()
    if trigger is not None:
        db.execute("DROP TRIGGER documents_deleted")
    db.execute("DELETE FROM documents WHERE id >= ?", (first,))
    if trigger is not None:
        db.execute(trigger[0])


@contextmanager
def _large_cache(store: IndexStore) -> Iterator[None]:
    """Give the connection a large page cache for the block (then its own back).

    Rewriting every row's keys in one transaction with SQLite's default 2 MiB cache
    spills pages to the WAL again and again: the WAL grew to ten times the database.
    """
    (previous,) = store.db.execute("PRAGMA cache_size").fetchone()
    store.db.execute(f"PRAGMA cache_size = -{REPLAN_CACHE_KIB}")
    try:
        yield
    finally:
        store.db.execute(f"PRAGMA cache_size = {int(previous)}")


def replan(store: IndexStore, *, force: bool = False) -> dict[str, Any]:
    """Plan the keys again on every stored fingerprint, if due (or ``force``), in one transaction.

    Args:
        store: The open index.
        force: Plan again even when the keys are not due (not for keys the user chose).

    Returns:
        JSON-ready: ``replanned`` (bool), ``documents``, the ``keys`` record now in force,
        ``tables`` (their count) and ``next`` (the count at which they are due again).
    """
    with _large_cache(store), store.transaction():
        store.refresh_keys()
        n = count(store)
        planned = store.keys_info["source"] not in (PENDING, "explicit")
        if planned and n and (force or replan_due(store.params, store.keys_info, n)):
            rows = store.db.execute(
                f"SELECT id, {', '.join(store.fp_columns)} FROM documents ORDER BY id"
            ).fetchall()
            ids = [r[0] for r in rows]
            fingerprints = to_unsigned(
                np.array([r[1:] for r in rows], dtype=np.int64).reshape(n, store.words)
            )
            del rows
            tables, record = planned_keys(store.params, fingerprints, per_query=True)
            record["planned_on"] = n
            keys = to_signed(table_keys(fingerprints, table_masks(tables)))
            existing = _key_columns(store)
            add_columns, add_indexes = key_column_sql(tables, store.covering(record), existing)
            for statement in add_columns:
                store.db.execute(statement)
            _rewrite_keys(store, ids, keys, existing)
            _indexes_with_room(store, ids, fingerprints, keys, add_indexes)
            store.set_keys(tables, record)
            replanned = True
        else:
            replanned = False
    return {
        "replanned": replanned,
        "documents": n,
        "keys": store.keys_summary(),
        "tables": len(store.tables.keys),
        "next": replan_at(store.params, store.keys_info),
    }
