"""Index stage 6a, resident fingerprints: a long-lived process's candidates without SQL.

A query through the stored keys reads every row sharing a key: with keys planned for
a query's cost that is thousands of rows at 100,000 documents, of which a few hundred
are within the Hamming pre-filter. A server answers many queries from one index, so it
keeps the stored fingerprints in memory (8 bytes per document per 64 bits) and finds
the same candidates as the lookups do: the documents within the pre-filter that share
a key with the query. Those are few, and only their rows are read.

Staying current, whoever writes: new documents have ids above every stored one and
are read by id; an update or a delete of a stored document moves a counter in ``meta``
(moved by triggers, so every writer moves it, this process or another), and then the
fingerprints are read again. The arrays are brought up to date inside the caller's
snapshot, so a query never sees fewer documents than its snapshot holds.
"""

from __future__ import annotations

import threading

import numpy as np
import numpy.typing as npt

from simdup.index.packing import to_signed, to_unsigned
from simdup.index.schema import REVISION, revision_sql
from simdup.index.store import IndexStore

#: Rows read per statement when the fingerprints are loaded.
LOAD_ROWS = 100_000


def ensure_revision(store: IndexStore) -> None:
    """Add the revision counter to an index made before it (one short write transaction)."""
    if _revision(store) is not None:
        return
    with store.transaction():
        for statement in revision_sql(store.fp_columns):
            store.db.execute(statement)


def _revision(store: IndexStore) -> str | None:
    row = store.db.execute("SELECT value FROM meta WHERE key = ?", (REVISION,)).fetchone()
    return None if row is None else str(row[0])


class Resident:
    """The ids and fingerprints of every stored document, shared by a process's threads."""

    def __init__(self, words: int) -> None:
        self._lock = threading.Lock()
        self._words = words
        self._ids = np.zeros(0, dtype=np.int64)
        self._prints = np.zeros((0, words), dtype=np.uint64)
        self._size = 0
        self._revision: str | None = None

    def view(self, store: IndexStore) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]]:
        """Return (ids, fingerprints (n, words)) of at least what ``store``'s snapshot holds.

        Call inside a read or write transaction of ``store``. The arrays returned are
        never written afterwards (documents added later go past their end).

        Raises:
            LookupError: the index has no revision counter (see :func:`ensure_revision`).
        """
        revision = _revision(store)
        if revision is None:
            raise LookupError("the index has no revision counter")
        with self._lock:
            if revision != self._revision:
                self._size = 0
                self._revision = revision
            last = int(self._ids[self._size - 1]) if self._size else -(2**63)
            self._append(store, last)
            return self._ids[: self._size], self._prints[: self._size]

    def _append(self, store: IndexStore, after: int) -> None:
        """Read the documents whose ids are above ``after``, in id order, and keep them."""
        sql = (
            f"SELECT id, {', '.join(store.fp_columns)} FROM documents "
            "WHERE id > ? ORDER BY id LIMIT ?"
        )
        while True:
            rows = store.db.execute(sql, (after, LOAD_ROWS)).fetchall()
            if not rows:
                return
            values = np.array(rows, dtype=np.int64)
            self._grow(len(values))
            end = self._size + len(values)
            self._ids[self._size : end] = values[:, 0]
            self._prints[self._size : end] = to_unsigned(values[:, 1:])
            self._size = end
            after = int(values[-1, 0])
            if len(rows) < LOAD_ROWS:
                return

    def _grow(self, more: int) -> None:
        """Make room for ``more`` rows: new arrays, so views handed out stay as they were."""
        if self._size + more <= len(self._ids):
            return
        capacity = max(self._size + more, 2 * len(self._ids), 1024)
        ids = np.empty(capacity, dtype=np.int64)
        prints = np.empty((capacity, self._words), dtype=np.uint64)
        ids[: self._size] = self._ids[: self._size]
        prints[: self._size] = self._prints[: self._size]
        self._ids, self._prints = ids, prints


def near(
    store: IndexStore,
    view: tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]],
    fingerprints: npt.NDArray[np.uint64],
    limit: int,
) -> list[set[int]]:
    """Return, per fingerprint, the stored ids within ``limit`` that share a stored key.

    The same sets as the indexed lookups with the pre-filter, found in memory.
    """
    ids, prints = view
    query = fingerprints.reshape(len(fingerprints), store.words)
    query_keys = _keys(store, query)
    out: list[set[int]] = []
    for q in range(len(query)):
        distance = np.bitwise_count(prints ^ query[q][None, :]).sum(axis=1, dtype=np.int64)
        close = np.flatnonzero(distance <= limit)
        shared = (_keys(store, prints[close]) == query_keys[q][None, :]).any(axis=1)
        out.append(set(ids[close[shared]].tolist()))
    return out


def _keys(store: IndexStore, prints: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
    """Return ``store.keys(prints)``, in one operation when fingerprints are one word."""
    if store.words != 1:
        return store.keys(prints)
    masks = store.masks[:, 0]
    return to_signed(prints[:, :1] & masks[None, :])
