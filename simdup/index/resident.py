"""Index stage 6a, resident fingerprints: a long-lived process's candidates without SQL.

A query through the stored keys reads every row sharing a key: with keys planned for
a query's cost that is thousands of rows at 100,000 documents, of which a few hundred
are within the Hamming pre-filter. A server answers many queries from one index, so it
keeps the stored fingerprints in memory (8 bytes per document per 64 bits) and finds
the same candidates as the lookups do: the documents within the pre-filter that share
a key with the query. Those are few, and only their rows are read.

Staying current, whoever writes: new documents have ids above every stored one and
are read by id; an update or a delete of a stored document is written to a log of
changes by triggers (so by every writer, this process or another), and only those
documents are read again. The arrays are brought up to date inside the caller's
snapshot, so a query never sees fewer documents than its snapshot holds.
"""

from __future__ import annotations

import threading

import numpy as np
import numpy.typing as npt

from simdup.index.packing import to_signed, to_unsigned
from simdup.index.schema import changes_sql
from simdup.index.store import IndexStore

#: Rows read per statement when the fingerprints are loaded.
LOAD_ROWS = 100_000


def ensure_changes(store: IndexStore) -> None:
    """Add the log of changes to an index made before it (one short write transaction)."""
    exists = store.db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'changes'"
    ).fetchone()
    if exists:
        return
    with store.transaction():
        for statement in changes_sql(store.fp_columns):
            store.db.execute(statement)


class Resident:
    """The ids and fingerprints of every stored document, shared by a process's threads."""

    def __init__(self, words: int) -> None:
        self._lock = threading.Lock()
        self._words = words
        self._ids = np.zeros(0, dtype=np.int64)
        self._prints = np.zeros((0, words), dtype=np.uint64)
        self._size = 0
        self._seen: int | None = None  # the last entry of the log of changes applied

    def view(self, store: IndexStore) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]]:
        """Return (ids, fingerprints (n, words)) of at least what ``store``'s snapshot holds.

        Call inside a read or write transaction of ``store``, on an index with the log of
        changes (:func:`ensure_changes`). Documents added later go past the end of the
        arrays returned and a deleted one leaves them as they were (new arrays are made
        without it); an updated document's fingerprint is changed in them.
        """
        first, last = store.db.execute("SELECT min(seq), max(seq) FROM changes").fetchone()
        last = last or 0
        with self._lock:
            if self._seen is None or (first is not None and self._seen < first - 1):
                self._size = 0  # new, or so far behind that the log has moved on: read all
                self._seen = last
            elif last > self._seen:
                self._patch(store, self._seen)
                self._seen = last
            after = int(self._ids[self._size - 1]) if self._size else -(2**63)
            self._append(store, after)
            return self._ids[: self._size], self._prints[: self._size]

    def _patch(self, store: IndexStore, seen: int) -> None:
        """Read again the held documents updated or deleted after entry ``seen`` of the log."""
        logged = store.db.execute("SELECT document FROM changes WHERE seq > ?", (seen,))
        changed = np.unique(np.array([d for (d,) in logged], dtype=np.int64))
        ids = self._ids[: self._size]
        if not self._size or not len(changed):
            return
        at = np.minimum(np.searchsorted(ids, changed), self._size - 1)
        held = changed[ids[at] == changed]
        rows = store.select_in(
            f"SELECT id, {', '.join(store.fp_columns)} FROM documents WHERE id IN ({{marks}})",
            held.tolist(),
        )
        if rows:
            values = np.array(rows, dtype=np.int64)
            self._prints[np.searchsorted(ids, values[:, 0])] = to_unsigned(values[:, 1:])
        gone = np.setdiff1d(held, np.array([r[0] for r in rows], dtype=np.int64))
        if len(gone):
            keep = np.ones(self._size, dtype=bool)
            keep[np.searchsorted(ids, gone)] = False
            self._ids, self._prints = ids[keep], self._prints[: self._size][keep]
            self._size = len(self._ids)

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
