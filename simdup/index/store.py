"""Index stage 3, the open store: one connection, the stored settings, rows in and out.

An :class:`IndexStore` is what the writing and reading rooms share: the connection, the
settings and blocking tables read from ``meta`` when the file was opened, the column
names they imply, the cache of feature ids, transactions, and the few statements that
put document rows in and take them out. It knows how rows are laid out; it does not
know what an add, a query or an export is (those live one floor up).

Safety: the database runs in WAL mode (readers never wait for the writer), writers take
the write lock up front (``BEGIN IMMEDIATE``) and wait up to a busy timeout for one
another, and every SQLite error becomes an index error with a message, after the open
transaction is rolled back.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from simdup.fingerprints.simhash import words64
from simdup.fingerprints.weights import WeightMatrix
from simdup.index.keys import PENDING, planned_keys, stored_keys_record
from simdup.index.packing import (
    decode_name,
    encode_name,
    pack_weights,
    tables_from_record,
    tables_record,
    to_signed,
    unpack_weights,
)
from simdup.index.schema import (
    IndexFileError,
    add_key_columns,
    check_settings,
    locked_error,
    settings_to_params,
)
from simdup.params import Params
from simdup.search.tables import SharedKeys, Tables, table_keys, table_masks

#: Bound parameters per SQL statement (SQLite's historical limit is 999).
SQL_VARIABLES = 900

#: What an add knows of a stored document: ``name -> (origin, size, mtime_ns, digest)``.
State = dict[str, tuple[str, int | None, int | None, bytes]]

#: The per-document columns :meth:`IndexStore.write` stores, besides name and the arrays.
RowMeta = tuple[str, int | None, int | None, bytes]


class Held(Protocol):
    """Stored fingerprints held in memory (:class:`simdup.index.resident.Resident`)."""

    def view(self, store: IndexStore) -> Any:
        """Return at least what ``store``'s snapshot holds (a ``HeldView``)."""
        ...


class IndexStore:
    """An open index database and the settings stored in it.

    Attributes:
        path: The database file.
        db: The connection (autocommit; transactions are explicit).
        params: The stored settings: fingerprint settings and the blocking the keys use.
        tables: The blocking tables whose keys are stored.
        keys_info: How those tables were chosen: ``source`` is ``planned`` (with the
            recall planned and the Hamming pre-filter), ``explicit``, ``fallback`` or
            ``pending`` (no documents yet: no key columns).
        settings: The stored fingerprint settings, as recorded.
        words: 64-bit words per fingerprint.
        fp_columns: Names of the fingerprint word columns.
        key_columns: Names of the blocking key columns, one per table.
        resident: The stored fingerprints held in memory, when a long-lived process
            shares them (None: queries look candidates up by their keys).
    """

    def __init__(self, path: str, connection: sqlite3.Connection, timeout: float) -> None:
        self.path = path
        self.db = connection
        self.timeout = timeout
        meta = dict(connection.execute("SELECT key, value FROM meta").fetchall())
        try:
            settings = json.loads(meta["settings"])
            blocking = json.loads(meta["blocking"])
            self.params = Params(**settings_to_params(settings), **blocking)
        except (KeyError, ValueError, TypeError) as exc:
            raise IndexFileError(
                f"{path}: the index metadata is damaged ({exc}); rebuild it with simdup index add"
            ) from None
        self.settings: dict[str, Any] = settings
        self.words = words64(self.params.fixed_bits)
        self.fp_columns = [f"fp{w}" for w in range(self.words)]
        self._load_keys(meta)
        self._seen_schema = self.schema_version()
        self._features: dict[str, int] = {}
        self._feature_max = 0
        self.resident: Held | None = None

    # -- keys --------------------------------------------------------------------------

    def _load_keys(self, meta: dict[str, str]) -> None:
        """Set the tables, their key columns and the keys record from ``meta`` rows."""
        try:
            self.tables = tables_from_record(self.params.fixed_bits, meta["tables"])
            record = json.loads(meta["keys"]) if "keys" in meta else None
            self.keys_info: dict[str, Any] = stored_keys_record(self.params, record)
        except (KeyError, ValueError, TypeError) as exc:
            raise IndexFileError(
                f"{self.path}: the index metadata is damaged ({exc}); "
                "rebuild it with simdup index add"
            ) from None
        pending = self.keys_info["source"] == PENDING
        self.key_columns = [] if pending else [f"k{t}" for t in range(len(self.tables.keys))]
        self.masks = table_masks(self.tables)
        self._shared_keys: SharedKeys | None = None

    @property
    def shared_keys(self) -> SharedKeys:
        """Return the test of which pairs share a stored key (made when first asked for)."""
        if self._shared_keys is None:
            self._shared_keys = SharedKeys(self.masks)
        return self._shared_keys

    def schema_version(self) -> int:
        """Return SQLite's schema counter, which every change of key columns moves."""
        return int(self.db.execute("PRAGMA schema_version").fetchone()[0])

    def refresh_keys(self) -> None:
        """Read the keys again if another writer may have chosen them or planned them again.

        Keys are chosen while pending, and planned again (``simdup index optimize``) with
        new key columns and indexes, which move SQLite's schema counter.
        """
        version = self.schema_version()
        if self.keys_info["source"] == PENDING or version != self._seen_schema:
            self._load_keys(dict(self.db.execute("SELECT key, value FROM meta").fetchall()))
            self._seen_schema = version

    def set_keys(self, tables: Tables, record: dict[str, Any]) -> None:
        """Record new tables and their keys record in ``meta`` (inside a transaction)."""
        rows = {"tables": tables_record(tables), "keys": json.dumps(record)}
        self.db.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", list(rows.items())
        )
        self._load_keys(rows)
        self._seen_schema = self.schema_version()

    def keys_summary(self) -> dict[str, Any]:
        """Return the keys record JSON-ready, without empty lists (no warnings: none shown)."""
        return {k: v for k, v in self.keys_info.items() if v != []}

    @property
    def max_hamming(self) -> int | None:
        """Return the Hamming pre-filter of planned keys (None: every candidate is verified)."""
        value = self.keys_info.get("max_hamming")
        return None if value is None else int(value)

    def settle_keys(self, fingerprints: npt.NDArray[np.uint64]) -> None:
        """Choose the tables of a new index from its first documents (inside a transaction).

        Does nothing once the keys are chosen. Otherwise plans them on ``fingerprints``
        (:func:`simdup.index.keys.planned_keys`), adds their key columns and records them.
        """
        self.refresh_keys()
        if self.keys_info["source"] != PENDING:
            return
        tables, record = planned_keys(self.params, fingerprints)
        add_key_columns(self.db, tables, self.covering(record))
        self.set_keys(tables, record)

    def covering(self, record: dict[str, Any]) -> list[str]:
        """Return the columns key indexes carry: the words, for a Hamming pre-filter."""
        return self.fp_columns if record.get("max_hamming") is not None else []

    # -- errors and transactions -------------------------------------------------------

    @contextmanager
    def database_errors(self) -> Iterator[None]:
        """Raise SQLite errors as :class:`IndexLockedError` or :class:`IndexFileError`."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            self.rollback()
            raise locked_error(self.path, self.timeout, exc) from None
        except sqlite3.DatabaseError as exc:
            self.rollback()
            raise IndexFileError(
                f"index {self.path} cannot be read ({exc}); rebuild it with simdup index add"
            ) from None

    def check(self, params: Params) -> None:
        """Refuse ``params`` whose fingerprints would not be comparable with the stored ones."""
        check_settings(self.path, self.settings, params)

    def rollback(self) -> None:
        """Roll back the open transaction, if any."""
        if self.db.in_transaction:
            # SQLite may have rolled back already (an I/O error or a full disk ends it).
            with suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")
            # Keys chosen in the rolled-back work are undone.
            with suppress(sqlite3.Error, IndexFileError):
                self._load_keys(dict(self.db.execute("SELECT key, value FROM meta").fetchall()))

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Read the block's statements from one snapshot, with the keys it holds.

        A query runs several statements; inside one read transaction a writer that plans
        the keys again in between changes none of what they see.
        """
        self.db.execute("BEGIN")
        try:
            self.refresh_keys()
            yield
        finally:
            if self.db.in_transaction:
                with suppress(sqlite3.Error):  # nothing was written: ending it cannot fail
                    self.db.execute("COMMIT")

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Hold the write lock for the block; commit at its end, roll back on any exception."""
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise locked_error(self.path, self.timeout, exc) from None
        try:
            yield
            try:
                self.db.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                raise locked_error(self.path, self.timeout, exc) from None
        except BaseException:
            self.rollback()
            raise

    # -- features ----------------------------------------------------------------------

    def refresh_features(self) -> None:
        """Load feature ids added since the last refresh (by this or another writer)."""
        rows = self.db.execute(
            "SELECT id, text FROM features WHERE id > ? ORDER BY id", (self._feature_max,)
        ).fetchall()
        for fid, text in rows:
            self._features[decode_name(text)] = fid
        if rows:
            self._feature_max = rows[-1][0]

    def feature_ids(self, vocabulary: Sequence[str]) -> list[int]:
        """Return the stored id of each feature, adding new ones (inside a transaction)."""
        new = [f for f in dict.fromkeys(vocabulary) if f not in self._features]
        if new:
            start = self._feature_max + 1
            self.db.executemany(
                "INSERT INTO features (id, text) VALUES (?, ?)",
                ((start + i, encode_name(f)) for i, f in enumerate(new)),
            )
            for i, f in enumerate(new):
                self._features[f] = start + i
            self._feature_max = start + len(new) - 1
        return [self._features[f] for f in vocabulary]

    def select_in(self, sql: str, values: Sequence[Any]) -> list[tuple[Any, ...]]:
        """Return the rows of ``sql`` (its ``{marks}`` an ``IN`` list) over every value.

        The values are bound in chunks of :data:`SQL_VARIABLES`, SQLite's limit per statement.
        """
        out: list[tuple[Any, ...]] = []
        for lo in range(0, len(values), SQL_VARIABLES):
            chunk = values[lo : lo + SQL_VARIABLES]
            out += self.db.execute(sql.format(marks=", ".join("?" * len(chunk))), chunk)
        return out

    def known_feature_ids(self, features: Sequence[str]) -> npt.NDArray[np.int64]:
        """Return the stored id of each feature, 0 (no stored feature) for unknown ones.

        A process that holds the fingerprints keeps every feature id too (read once, then
        only those added since); a one-off query looks up only its own features.
        """
        if self.resident is not None:
            self.refresh_features()
            known = self._features
            return np.array([known.get(v, 0) for v in features], dtype=np.int64)
        rows = self.select_in(
            "SELECT id, text FROM features WHERE text IN ({marks})",
            [encode_name(v) for v in features],
        )
        known = {decode_name(text): fid for fid, text in rows}
        return np.array([known.get(v, 0) for v in features], dtype=np.int64)

    def feature_texts(self) -> dict[int, bytes]:
        """Return ``id -> stored text`` of every feature."""
        return dict(self.db.execute("SELECT id, text FROM features").fetchall())

    # -- document rows -----------------------------------------------------------------

    def keys(self, fingerprints: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
        """Return the stored blocking keys of fingerprints, int64 (n, tables)."""
        if not self.key_columns:
            return np.zeros((len(fingerprints), 0), dtype=np.int64)
        return to_signed(table_keys(fingerprints, self.masks))

    def _upsert_sql(self) -> str:
        columns = [
            "name",
            "origin",
            "size",
            "mtime_ns",
            "digest",
            "feature_count",
            "feature_ids",
            "weights",
            *self.fp_columns,
            *self.key_columns,
        ]
        updates = ", ".join(f"{c} = excluded.{c}" for c in columns[1:])
        return (
            f"INSERT INTO documents ({', '.join(columns)}) "
            f"VALUES ({', '.join('?' * len(columns))}) "
            f"ON CONFLICT (name) DO UPDATE SET {updates}"
        )

    def write(
        self,
        names: Sequence[str],
        meta: Sequence[RowMeta],
        fingerprints: npt.NDArray[np.uint64],
        matrix: WeightMatrix | None,
        feature_counts: Sequence[int],
    ) -> None:
        """Write rows (inside a transaction): fingerprints, keys and weights."""
        if not names:
            return
        self.settle_keys(fingerprints)
        signed = to_signed(fingerprints).tolist()
        key_rows = self.keys(fingerprints).tolist()
        ids: list[int] = []
        if matrix is not None:
            vocabulary_ids = np.array(self.feature_ids(matrix.vocabulary), dtype=np.int64)
            ids = vocabulary_ids[matrix.indices].tolist()
        rows = []
        for r, name in enumerate(names):
            origin, size, mtime, digest = meta[r]
            id_blob: bytes | None = None
            weight_blob: bytes | None = None
            if matrix is not None:
                lo, hi = int(matrix.indptr[r]), int(matrix.indptr[r + 1])
                id_blob, weight_blob = pack_weights(ids[lo:hi], matrix.data[lo:hi])
            rows.append(
                (
                    encode_name(name),
                    origin,
                    size,
                    mtime,
                    digest,
                    int(feature_counts[r]),
                    id_blob,
                    weight_blob,
                    *signed[r],
                    *key_rows[r],
                )
            )
        self.db.executemany(self._upsert_sql(), rows)

    def delete(self, names: Iterable[str]) -> None:
        """Delete the named documents (inside a transaction)."""
        self.db.executemany(
            "DELETE FROM documents WHERE name = ?", [(encode_name(n),) for n in names]
        )

    def stored_state(self) -> State:
        """Return ``name -> (origin, size, mtime_ns, digest)`` of every stored document."""
        rows = self.db.execute("SELECT name, origin, size, mtime_ns, digest FROM documents")
        return {decode_name(n): (o, s, m, d) for n, o, s, m, d in rows}

    def names(self) -> list[str]:
        """Return the name of every stored document, in storage order."""
        return [decode_name(n) for (n,) in self.db.execute("SELECT name FROM documents")]

    def rows(self, ids: Sequence[int]) -> list[tuple[Any, ...]]:
        """Return ``(id, name, feature_count, feature_ids, weights, fp...)`` of stored ids."""
        columns = ", ".join(
            ["id", "name", "feature_count", "feature_ids", "weights", *self.fp_columns]
        )
        return self.select_in(f"SELECT {columns} FROM documents WHERE id IN ({{marks}})", ids)

    def matrix(self, blobs: Sequence[tuple[bytes, bytes]]) -> WeightMatrix:
        """Build a weight matrix from stored blobs; ids become dense vocabulary positions.

        The dense positions keep the order of the stored ids (a lookup table, no sort).
        """
        parts = [unpack_weights(i, w) for i, w in blobs]
        lengths = np.array([len(p[0]) for p in parts], dtype=np.int64)
        indptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
        ids = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
        data = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0)
        present = np.zeros(int(ids.max()) + 1 if len(ids) else 1, dtype=bool)
        present[ids] = True
        dense = np.cumsum(present, dtype=np.int64) - 1
        used = np.flatnonzero(present)
        texts = self.feature_texts()
        vocabulary = tuple(decode_name(texts[i]) for i in used.tolist())
        return WeightMatrix(indptr, dense[ids], data, vocabulary)
