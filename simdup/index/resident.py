"""Index stage 6a, resident fingerprints: a long-lived process's candidates without SQL.

A query through the stored keys reads every row sharing a key: with keys planned for
a query's cost that is thousands of rows at 100,000 documents, of which a few hundred
are within the Hamming pre-filter. A server answers many queries from one index, so it
keeps the stored fingerprints in memory (8 bytes per document per 64 bits) and finds
the same candidates as the lookups do: the documents within the pre-filter that share
a key with the query. Those are few; with their weights and filters (:mod:`screen`)
held too, only the rows of the pairs reported are read.

Staying current, whoever writes: new documents have ids above every stored one and
are read by id; an update or a delete of a stored document is written to a log of
changes by triggers (so by every writer, this process or another), and only those
documents are read again. The arrays are brought up to date inside the caller's
snapshot, so a query never sees fewer documents than its snapshot holds.
"""

from __future__ import annotations

import contextlib
import mmap
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.fingerprints.weights import WeightMatrix
from simdup.index.packing import packed_rows, to_unsigned
from simdup.index.schema import changes_sql
from simdup.index.screen import FILTER_BYTES, feature_filters
from simdup.index.store import IndexStore
from simdup.search.buckets import within

#: Rows read per statement when the fingerprints are loaded.
LOAD_ROWS = 100_000

#: Held rows whose distances to a query are measured at a time (bounded temporaries: 1 MiB
#: of XORs at 64 bits). At 1,000,000 documents the pass took 0.81 ms a query against 0.89
#: with 65,536 rows and 0.94 with 32,768 (medians of eleven runs each, interleaved).
SCAN_ROWS = 1 << 17

#: Held arrays of at least this many bytes are asked to be backed by huge pages.
HUGE_FROM = 4 << 20

#: Room made for more than is needed, as a share of it (1 / 8), when the arrays are
#: allocated: the documents added next go there, and only every eighth of growth copies
#: everything held (about half a second at 1,000,000 documents) and adds to the memory.
HEADROOM = 8


def _room(needed: int, least: int) -> int:
    """Return the capacity to allocate for ``needed`` rows or entries."""
    return max(needed + needed // HEADROOM, least)


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


@dataclass(frozen=True)
class HeldView:
    """The held documents at one moment, rows in id order.

    Attributes:
        ids: Stored ids, int64 (n,), ascending.
        prints: Fingerprints, uint64 (n, words).
        starts: Where each row's features start in ``feature_ids`` and ``weights``.
        lengths: Features per row (0 without a weight vector).
        vector: Whether each row has its weight vector.
        feature_ids: Stored feature ids of the rows, end to end (uint32).
        weights: Their weights, in the narrowest type holding every stored one exactly.
        squares: Each row's squared norm (:func:`squared_norms`; 0 without a vector).
        filters: Each row's filter of its features, uint8 (n, bytes) (:mod:`screen`;
            empty without a vector).
    """

    ids: npt.NDArray[np.int64]
    prints: npt.NDArray[np.uint64]
    starts: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.int64]
    vector: npt.NDArray[np.bool_]
    feature_ids: npt.NDArray[np.uint32]
    weights: npt.NDArray[Any]
    squares: npt.NDArray[np.float64]
    filters: npt.NDArray[np.uint8]

    def after(self, last: int) -> HeldView:
        """Return the rows of ids above ``last`` (the weights stay where they are)."""
        first = int(np.searchsorted(self.ids, last, side="right"))
        return replace(
            self,
            ids=self.ids[first:],
            prints=self.prints[first:],
            starts=self.starts[first:],
            lengths=self.lengths[first:],
            vector=self.vector[first:],
            squares=self.squares[first:],
            filters=self.filters[first:],
        )


def squared_norms(
    lengths: npt.NDArray[np.int64], ids: npt.NDArray[Any], weights: npt.NDArray[Any]
) -> npt.NDArray[np.float64]:
    """Return each row's squared norm; rows lie end to end in ``ids`` and ``weights``.

    :meth:`WeightMatrix.squared_norms`: summed in stored order, the order a query's dot
    products are summed in, so an exact copy scores 1.0.
    """
    indptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    return WeightMatrix(indptr, ids, weights.astype(np.float64), ()).squared_norms()


def held_size(store: IndexStore) -> tuple[int, int]:
    """Return the documents stored, and about how much memory holding them takes (in bytes).

    Per document its held row (id, fingerprint, filter, bookkeeping); per stored feature its id and
    weight, at the width of the widest stored weights: the held pool takes the type that holds
    them all, so two documents with counts past 65,535 widen every held weight from one byte to
    four (52,217 real files: 99 MiB held where the first document's width gave 65). A blob's
    length is in its row's header, so the widths cost no read of the blobs: one pass over the
    table, before the documents are read (0.71 s against 0.64 at 1,000,000 documents).
    """
    documents, entries, widest = store.db.execute(
        "SELECT count(*), total(feature_count), "
        "max((length(weights) - 1) / feature_count) FROM documents"
    ).fetchone()
    row, entry = Resident(store.words).item_bytes()
    needed = int(documents) * row + int(entries) * (entry + _held_width(widest))
    return int(documents), _room(needed, 0)


def _held_width(widest: int | None) -> int:
    """Return the bytes a held weight takes, given the widest stored bytes a weight (None: none).

    Stored weights take 1, 2, 4 or 8 bytes; a record imported with a feature count that is
    not its number of weights (refused now; stored by earlier builds) gives another quotient,
    taken up to the next of those.

    >>> [_held_width(w) for w in (None, 0, 1, 2, 3, 4, 8, 40)]
    [1, 1, 1, 2, 4, 4, 8, 8]
    """
    if widest is None:
        return 1
    return next((w for w in (1, 2, 4) if widest <= w), 8)


class Resident:
    """Every stored document's id, fingerprint and weights, shared by a process's threads.

    Rows are kept in id order. Weights live in a pool the rows point into: a document
    added is put at the end, an updated one too (its old entries become garbage), and
    when the garbage outweighs the rest everything is read again.
    """

    def __init__(self, words: int) -> None:
        self._lock = threading.Lock()
        self._words = words
        self._seen: int | None = None  # the last entry of the log of changes applied
        self._clear()

    def _clear(self) -> None:
        """Hold nothing, in new arrays (those handed out are never written again)."""
        self._size = 0
        self._ids = np.zeros(0, dtype=np.int64)
        self._prints = np.zeros((0, self._words), dtype=np.uint64)
        self._starts = np.zeros(0, dtype=np.int64)
        self._lengths = np.zeros(0, dtype=np.int64)
        self._vector = np.zeros(0, dtype=bool)
        self._squares = np.zeros(0, dtype=np.float64)
        self._filters = np.zeros((0, FILTER_BYTES), dtype=np.uint8)
        self._pool = 0  # entries used in the pool
        self._garbage = 0  # entries no row points to
        self._feature_ids = np.zeros(0, dtype=np.uint32)
        self._weights: npt.NDArray[Any] = np.zeros(0, dtype=np.uint8)

    @property
    def size(self) -> int:
        """Return the documents held when last brought up to date (by any writer)."""
        return self._size

    def item_bytes(self) -> tuple[int, int]:
        """Return the bytes a held row takes, and a held entry's besides its weight."""
        row = sum(a.dtype.itemsize * int(np.prod(a.shape[1:])) for a in self._rows())
        return row, self._feature_ids.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Return the bytes of the arrays held (their capacity, used or not)."""
        return sum(a.nbytes for a in (*self._rows(), self._feature_ids, self._weights))

    def view(self, store: IndexStore) -> HeldView:
        """Return at least what ``store``'s snapshot holds (see :class:`HeldView`).

        Call inside a read or write transaction of ``store``, on an index with the log of
        changes (:func:`ensure_changes`). The arrays returned are never written again:
        documents added later go past their end, and updates, deletions and a reading
        of everything again go to new arrays.
        """
        first, last = store.db.execute("SELECT min(seq), max(seq) FROM changes").fetchone()
        last = last or 0
        with self._lock:
            seen = self._seen
            behind = seen is None or (first is not None and seen < first - 1)
            if seen is None or behind or self._garbage > self._pool // 2:
                self._clear()  # read everything again, into new arrays
                self._seen = last
            elif last > seen:
                self._patch(store, seen)
                self._seen = last
            after = int(self._ids[self._size - 1]) if self._size else -(2**63)
            self._append(store, after)
            n = self._size
            return HeldView(
                self._ids[:n],
                self._prints[:n],
                self._starts[:n],
                self._lengths[:n],
                self._vector[:n],
                self._feature_ids[: self._pool],
                self._weights[: self._pool],
                self._squares[:n],
                self._filters[:n],
            )

    #: The per-row arrays, in the order of :class:`HeldView`'s row fields.
    _ROWS = ("_ids", "_prints", "_starts", "_lengths", "_vector", "_squares", "_filters")

    def _rows(self) -> tuple[npt.NDArray[Any], ...]:
        """Return the per-row arrays (:data:`_ROWS`)."""
        return tuple(getattr(self, name) for name in self._ROWS)

    def _set_rows(self, arrays: Iterable[npt.NDArray[Any]]) -> None:
        """Replace the per-row arrays by ``arrays``, in the order of :data:`_ROWS`."""
        for name, array in zip(self._ROWS, arrays, strict=True):
            setattr(self, name, array)

    def _select(self, store: IndexStore) -> str:
        return f"SELECT id, feature_ids, weights, {', '.join(store.fp_columns)} FROM documents"

    def _patch(self, store: IndexStore, seen: int) -> None:
        """Read again the held documents updated or deleted after entry ``seen`` of the log."""
        logged = store.db.execute("SELECT document FROM changes WHERE seq > ?", (seen,))
        changed = np.unique(np.array([d for (d,) in logged], dtype=np.int64))
        n = self._size
        if not n or not len(changed):
            return
        ids = self._ids[:n]
        at = np.minimum(np.searchsorted(ids, changed), n - 1)
        held = changed[ids[at] == changed]
        rows = store.select_in(self._select(store) + " WHERE id IN ({marks})", held.tolist())
        self._garbage += int(self._lengths[np.searchsorted(ids, held)].sum())
        if rows:  # into copies: a query may be reading the arrays handed out
            self._set_rows([a.copy() for a in self._rows()])
            self._put(np.searchsorted(ids, [r[0] for r in rows]), rows)
        gone = np.setdiff1d(held, np.array([r[0] for r in rows], dtype=np.int64))
        if len(gone):
            keep = np.ones(n, dtype=bool)
            keep[np.searchsorted(ids, gone)] = False
            self._set_rows([a[:n][keep] for a in self._rows()])
            self._size = len(self._ids)

    def _append(self, store: IndexStore, after: int) -> None:
        """Read the documents whose ids are above ``after``, in id order, and keep them."""
        sql = self._select(store) + " WHERE id > ? ORDER BY id LIMIT ?"
        if not self._size:  # everything: room for it at once, not doubling as it comes
            rows, entries = store.db.execute(
                "SELECT count(*), total(feature_count) FROM documents WHERE id > ?", (after,)
            ).fetchone()
            self._grow(int(rows))
            self._reserve(self._pool + int(entries), self._weights.dtype)
        while True:
            rows = store.db.execute(sql, (after, LOAD_ROWS)).fetchall()
            if not rows:
                return
            self._grow(len(rows))
            self._put(np.arange(self._size, self._size + len(rows)), rows)
            self._size += len(rows)
            after = int(rows[-1][0])
            if len(rows) < LOAD_ROWS:
                return

    def _put(self, at: npt.NDArray[np.int64], rows: Sequence[tuple[Any, ...]]) -> None:
        """Write ``rows`` (id, feature ids, weights, fingerprint words) to rows ``at``."""
        values = np.array([r[:1] + r[3:] for r in rows], dtype=np.int64)
        self._ids[at] = values[:, 0]
        self._prints[at] = to_unsigned(values[:, 1:])
        vector = np.array([r[1] is not None for r in rows], dtype=bool)
        lengths, feature_ids, weights = packed_rows(
            [(r[1], r[2]) for r in rows if r[1] is not None]
        )
        sizes = np.zeros(len(rows), dtype=np.int64)
        sizes[vector] = lengths
        squares = np.zeros(len(rows), dtype=np.float64)
        squares[vector] = squared_norms(lengths, feature_ids, weights)
        end = self._pool + len(feature_ids)
        self._reserve(end, weights.dtype)
        self._feature_ids[self._pool : end] = feature_ids
        self._weights[self._pool : end] = weights
        self._starts[at] = self._pool + np.cumsum(sizes) - sizes
        self._lengths[at] = sizes
        self._vector[at] = vector
        self._squares[at] = squares
        self._filters[at] = feature_filters(sizes, feature_ids)
        self._pool = end

    def _grow(self, more: int) -> None:
        """Make room for ``more`` rows: new arrays, so views handed out stay as they were."""
        if self._size + more <= len(self._ids):
            return
        capacity = _room(self._size + more, 1024)
        self._set_rows([_resized(a, self._size, capacity) for a in self._rows()])

    def _reserve(self, end: int, dtype: np.dtype[Any]) -> None:
        """Make the pool hold ``end`` entries and weights of ``dtype`` exactly."""
        wider = np.promote_types(self._weights.dtype, dtype)
        if end <= len(self._feature_ids) and wider == self._weights.dtype:
            return
        capacity = _room(end, 1 << 16)
        self._feature_ids = _resized(self._feature_ids, self._pool, capacity)
        self._weights = _resized(self._weights[: self._pool].astype(wider), self._pool, capacity)


def _resized(array: npt.NDArray[Any], used: int, capacity: int) -> npt.NDArray[Any]:
    """Return a new array of ``capacity`` rows holding the first ``used`` of ``array``."""
    out = _held_array((capacity, *array.shape[1:]), array.dtype)
    out[:used] = array[:used]
    return out


def _held_array(shape: tuple[int, ...], dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    """Return an empty array in memory the kernel is asked to back with huge pages.

    A query reads about 1,600 held rows at random, each in a page of its own: with
    4 KiB pages each costs a walk of the page tables. Backed by 2 MiB pages, a
    1,000,000-document server answered 321 queries a second against 281 (two workers,
    5.8 against 6.7 ms of processor time a query). The command line turns numpy's own
    request off (it slows arrays that are filled once and read once), so it is made
    here, for these arrays only; where the kernel compacts memory for them, reading the
    index at start takes a few seconds more. Small arrays, and systems without the
    request, get ordinary memory.
    """
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    if size < HUGE_FROM or advice is None:
        return np.empty(shape, dtype=dtype)
    memory = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    with contextlib.suppress(OSError):  # a kernel without huge pages: ordinary ones
        memory.madvise(advice)
    return np.frombuffer(memory, dtype=dtype).reshape(shape)


def near(
    store: IndexStore, view: HeldView, fingerprints: npt.NDArray[np.uint64], limit: int
) -> list[npt.NDArray[np.int64]]:
    """Return, per fingerprint, the held rows within ``limit`` that share a stored key.

    The same documents as the indexed lookups with the pre-filter find, found in
    memory; rows ascending (so ids ascending), not ids: finding a thousand ids again
    among a million costs a query about half a millisecond.
    """
    prints = view.prints
    query = fingerprints.reshape(len(fingerprints), store.words)
    shared = store.shared_keys
    out: list[npt.NDArray[np.int64]] = []
    for q in range(len(query)):
        close = _within(prints, query[q], limit)
        out.append(close[shared(prints[close] ^ query[q][None, :])])
    return out


def _within(
    prints: npt.NDArray[np.uint64], query: npt.NDArray[np.uint64], limit: int
) -> npt.NDArray[np.int64]:
    """Return the rows of ``prints`` within Hamming distance ``limit`` of ``query``, ascending.

    A block of rows at a time, so that the temporaries stay in the cache (a fifth faster
    at 1,000,000 rows).
    """
    found = [np.zeros(0, dtype=np.int64)]
    for lo in range(0, len(prints), SCAN_ROWS):
        found.append(lo + within(prints[lo : lo + SCAN_ROWS] ^ query[None, :], limit))
    return np.concatenate(found)
