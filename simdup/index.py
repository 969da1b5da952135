"""A persistent fingerprint index in SQLite: incremental adds, queries and rescans.

A SimHash fingerprint is a few machine words, so a whole collection's fingerprints fit in
a small database that grows with the collection (the seeds' point about massive, growing
corpora). The index keeps, per document:

* the fingerprint, one signed 64-bit column per 64-bit word (``fp0``, ``fp1``, ...): the
  uint64 words are stored as their int64 view, which SQLite holds exactly;
* one blocking key per table (``k0``, ``k1``, ...), each an indexed integer column, so a
  query is one index lookup per table, never a scan of the whole table;
* its sparse weight vector, compactly: a blob of ids into a ``features`` table and a blob
  of weights, each in the narrowest type that holds it exactly (term counts take one
  byte each), so queries and rescans report the true cosine, bit for bit as a scan of
  the files would;
* what an incremental ``add`` needs: the file's size and modification time (a file whose
  stat is unchanged is not read again) and a BLAKE2b hash of its text (a file whose text
  is unchanged is not fingerprinted again).

The settings that define a fingerprint (:meth:`simdup.model.Params.fingerprint_settings`)
are recorded when the index is created, and every later use must match them exactly:
fingerprints made with other settings are not comparable. ``tfidf`` weighting is refused:
its weights depend on document frequencies across the whole corpus, which change with
every add, so stored fingerprints would silently go stale.

Safety: the database runs in WAL mode (readers never wait for the writer), each ``add``
commits in batches of whole documents, and writers take the write lock up front
(``BEGIN IMMEDIATE``) and wait up to a busy timeout for one another; a process killed in
the middle of an add leaves the last committed batch. The schema version is kept in
``PRAGMA user_version`` and the file is marked with an ``application_id``, so a file that
is not an index, or an index from a newer simdup, is refused with a clear message.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt

from simdup import __version__
from simdup.blocking import Tables, masked_keys, table_masks
from simdup.corpus import ReadOptions, Source, find_files, read_documents
from simdup.errors import ParameterError, SimdupError
from simdup.model import Document, Params, ScanResult, Skip
from simdup.pipeline import canonical_order, find_pairs, fingerprint_documents, measure
from simdup.plan import tables_for
from simdup.progress import Progress, no_progress
from simdup.simhash import from_hex, int_to_words, to_hex, words64, words_to_int
from simdup.weights import WeightMatrix

#: Version of the table layout; bumped (with a migration) whenever it changes.
SCHEMA_VERSION = 1

#: ``PRAGMA application_id`` of a simdup index: ASCII ``SDUP``.
APPLICATION_ID = 0x53445550

#: Documents written per transaction by :meth:`FingerprintIndex.add_files`.
BATCH_DOCUMENTS = 2000

#: Seconds a writer waits for another writer's lock before giving up.
DEFAULT_TIMEOUT = 30.0

#: Files modified less than this many seconds before they were read are read again by
#: the next add: a change within the file system's timestamp granularity would keep size
#: and mtime (the "racy" case git guards against the same way).
RACY_SECONDS = 2.0

#: Default file name of the index, and the environment variable overriding it.
DEFAULT_DB = "simdup.db"
DB_ENV = "SIMDUP_DB"

#: Bound parameters per SQL statement (SQLite's historical limit is 999).
SQL_VARIABLES = 900

_SQLITE_MAGIC = b"SQLite format 3\x00"

F = TypeVar("F", bound=Callable[..., Any])


class SimdupIndexError(SimdupError):
    """Base class of the errors of an index file."""


class IndexFileError(SimdupIndexError):
    """The file is not a simdup index, is from a newer simdup, or is missing or damaged."""


class IndexLockedError(SimdupIndexError):
    """Another process held the index's write lock for longer than the busy timeout."""


class IndexSettingsError(SimdupIndexError, ParameterError):
    """Requested fingerprint settings differ from those the index was built with."""


def default_db() -> str:
    """Return the index path used without ``--db``: ``$SIMDUP_DB`` or ``simdup.db``."""
    return os.environ.get(DB_ENV) or DEFAULT_DB


def check_weighting_storable(weighting: str) -> None:
    """Refuse ``tfidf`` for an index (its weights change whenever documents are added).

    Raises:
        IndexSettingsError: for ``tfidf``.
    """
    if weighting == "tfidf":
        raise IndexSettingsError(
            "tfidf weighting cannot be stored in an index: its weights depend on document "
            "frequencies across the whole corpus, which change with every add; use "
            "--weighting log (damps repeated words without corpus statistics) or tf"
        )


def encode_name(name: str) -> bytes:
    """Return a document name as bytes for storage (any Python string, losslessly).

    >>> decode_name(encode_name("a\\udcff.txt")) == "a\\udcff.txt"
    True
    """
    return name.encode("utf-8", "surrogatepass")


def decode_name(data: bytes) -> str:
    """Return the name stored by :func:`encode_name`."""
    return data.decode("utf-8", "surrogatepass")


def text_digest(text: str) -> bytes:
    """Return the 16-byte BLAKE2b digest of a document's text (what decides re-fingerprinting)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def to_signed(words: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
    """Return uint64 words as the int64 values SQLite stores (same bits, two's complement).

    >>> to_signed(np.array([2**64 - 1, 2**63], dtype=np.uint64)).tolist()
    [-1, -9223372036854775808]
    """
    return np.ascontiguousarray(words, dtype=np.uint64).view(np.int64)


def to_unsigned(values: npt.ArrayLike) -> npt.NDArray[np.uint64]:
    """Return int64 values read from SQLite as the uint64 words they stand for."""
    return np.ascontiguousarray(np.asarray(values, dtype=np.int64)).view(np.uint64)


#: Storage types of feature ids and weights, by the code byte that starts each blob.
_ID_TYPES = {b"H": "<u2", b"I": "<u4"}
_WEIGHT_TYPES = {b"B": "<u1", b"H": "<u2", b"f": "<f4", b"d": "<f8"}


def _range(dtype: str) -> tuple[float, float]:
    info = np.iinfo(dtype) if np.dtype(dtype).kind == "u" else np.finfo(dtype)
    return float(info.min), float(info.max)


#: Smallest and largest value of each storage type.
_RANGES = {dtype: _range(dtype) for dtype in {*_ID_TYPES.values(), *_WEIGHT_TYPES.values()}}


def _narrowest(values: npt.NDArray[Any], types: dict[bytes, str]) -> bytes:
    """Return the code of the first (narrowest) type that holds every value exactly."""
    if values.size == 0:
        return next(iter(types))
    low, high = float(values.min()), float(values.max())
    for code, dtype in types.items():
        smallest, largest = _RANGES[dtype]
        if low < smallest or high > largest:
            continue
        with np.errstate(over="ignore", invalid="ignore"):
            narrow = values.astype(dtype)
        if np.array_equal(narrow, values):
            return code
    return list(types)[-1]


def pack_weights(ids: Sequence[int], weights: npt.NDArray[np.float64]) -> tuple[bytes, bytes]:
    """Return (feature ids blob, weights blob) of one document, losslessly and compactly.

    Each blob starts with one byte naming its element type, the narrowest that holds
    every value exactly: ids as uint16 or uint32; weights as uint8 or uint16 when they
    are small whole numbers (term counts, binary), else float32 or float64.

    >>> ids, w = pack_weights([1, 7], np.array([2.0, 1.0]))
    >>> len(ids), len(w)
    (5, 3)
    >>> [x.tolist() for x in unpack_weights(ids, w)]
    [[1, 7], [2.0, 1.0]]
    """
    id_array = np.asarray(ids, dtype=np.int64)
    id_code = _narrowest(id_array, _ID_TYPES)
    weight_code = _narrowest(weights, _WEIGHT_TYPES)
    return (
        id_code + id_array.astype(_ID_TYPES[id_code]).tobytes(),
        weight_code + weights.astype(_WEIGHT_TYPES[weight_code]).tobytes(),
    )


def unpack_weights(
    id_blob: bytes, weight_blob: bytes
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Return (feature ids int64, weights float64) packed by :func:`pack_weights`."""
    ids, weights = _stored_arrays(id_blob, weight_blob)
    return ids.astype(np.int64), weights.astype(np.float64)


def _stored_arrays(id_blob: bytes, weight_blob: bytes) -> tuple[npt.NDArray[Any], ...]:
    """Return the ids and weights of packed blobs in their stored types (no copies)."""
    return (
        np.frombuffer(id_blob, dtype=_ID_TYPES[id_blob[:1]], offset=1),
        np.frombuffer(weight_blob, dtype=_WEIGHT_TYPES[weight_blob[:1]], offset=1),
    )


@dataclass
class AddReport:
    """What an add or import did.

    Attributes:
        added: Documents new to the index.
        updated: Stored documents whose text changed (fingerprinted again).
        unchanged: Stored documents left as they were (not read, or same text).
        removed: Stored documents dropped (``prune``).
        skipped: Inputs not stored, with reasons (unreadable, too large, no features).
        names: Every document name this run saw and stored or kept, sorted.
    """

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: list[Skip] = field(default_factory=list)
    names: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Return the counts as a JSON-ready dict."""
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "skipped": len(self.skipped),
        }


_State = dict[str, tuple[str, int | None, int | None, bytes]]


@dataclass
class _Pending:
    """A document waiting to be written: its text (or ready fingerprint) and file stat."""

    document: Document
    origin: str
    size: int | None
    mtime_ns: int | None
    digest: bytes


def _tables_record(tables: Tables) -> str:
    return json.dumps(
        {
            "description": tables.description,
            "guarantee": tables.guarantee,
            "keys": [k.tolist() for k in tables.keys],
        }
    )


def _tables_from_record(bits: int, text: str) -> Tables:
    record = json.loads(text)
    keys = tuple(np.asarray(k, dtype=np.int64) for k in record["keys"])
    return Tables(bits, keys, int(record["guarantee"]), str(record["description"]))


def same_tables(a: Tables, b: Tables) -> bool:
    """Tell whether two table sets key on the same bit positions, table by table."""
    return (
        a.bits == b.bits
        and len(a.keys) == len(b.keys)
        and all(np.array_equal(x, y) for x, y in zip(a.keys, b.keys, strict=True))
    )


def _describe_settings(settings: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in settings.items())


def _connect(path: str, timeout: float) -> sqlite3.Connection:
    connection = sqlite3.connect(path, timeout=timeout, isolation_level=None)
    connection.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
    return connection


def _file_kind(path: str) -> str:
    """Return ``missing``, ``empty`` or ``sqlite``; raise for a file that is not SQLite."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(_SQLITE_MAGIC))
    except FileNotFoundError:
        return "missing"
    except IsADirectoryError:
        raise IndexFileError(f"{path} is a directory; give an index file with --db") from None
    except OSError as exc:
        raise IndexFileError(f"cannot open index {path}: {exc.strerror}") from None
    if not head:
        return "empty"
    if head != _SQLITE_MAGIC:
        raise IndexFileError(
            f"{path} is not a simdup index (not an SQLite database); give another index file"
        )
    return "sqlite"


def _translated(method: F) -> F:
    """Turn SQLite errors inside an index method into index errors with a message."""

    @functools.wraps(method)
    def wrapper(self: FingerprintIndex, *args: Any, **kwargs: Any) -> Any:
        with self.database_errors():
            return method(self, *args, **kwargs)

    return cast(F, wrapper)


class FingerprintIndex:
    """An open index file. Create or open one with :func:`open_index`; close it when done.

    Attributes:
        path: The database file.
        params: The stored settings: fingerprint settings and the blocking the keys use.
        tables: The blocking tables whose keys are stored.
    """

    def __init__(self, path: str, connection: sqlite3.Connection, timeout: float) -> None:
        self.path = path
        self._db = connection
        self._timeout = timeout
        meta = dict(connection.execute("SELECT key, value FROM meta").fetchall())
        try:
            settings = json.loads(meta["settings"])
            blocking = json.loads(meta["blocking"])
            self.params = Params(**settings_to_params(settings), **blocking)
            self.tables = _tables_from_record(self.params.bits, meta["tables"])
        except (KeyError, ValueError, TypeError) as exc:
            raise IndexFileError(
                f"{path}: the index metadata is damaged ({exc}); rebuild it with simdup index add"
            ) from None
        self.settings: dict[str, Any] = settings
        self.words = words64(self.params.bits)
        self._fp_columns = [f"fp{w}" for w in range(self.words)]
        self._key_columns = [f"k{t}" for t in range(len(self.tables.keys))]
        self._masks = table_masks(self.tables)
        self._features: dict[str, int] = {}
        self._feature_max = 0

    # -- lifecycle ---------------------------------------------------------------------

    @contextmanager
    def database_errors(self) -> Iterator[None]:
        """Raise SQLite errors as :class:`IndexLockedError` or :class:`IndexFileError`."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            self._rollback()
            raise _locked(self.path, self._timeout, exc) from None
        except sqlite3.DatabaseError as exc:
            self._rollback()
            raise IndexFileError(
                f"index {self.path} cannot be read ({exc}); rebuild it with simdup index add"
            ) from None

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()

    def __enter__(self) -> FingerprintIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- settings ----------------------------------------------------------------------

    def check(self, params: Params) -> None:
        """Refuse settings whose fingerprints would not be comparable with the stored ones.

        Raises:
            IndexSettingsError: naming each differing setting, stored and requested.
        """
        check_weighting_storable(params.weighting)
        requested = params.fingerprint_settings()
        differ = [k for k in requested if requested[k] != self.settings.get(k)]
        if differ:
            stored = ", ".join(f"{k}={self.settings.get(k)}" for k in differ)
            asked = ", ".join(f"{k}={requested[k]}" for k in differ)
            raise IndexSettingsError(
                f"index {self.path} was built with {stored}; this run asks for {asked}. "
                "Fingerprints made with other settings cannot be compared: drop those "
                "options, or use another index file"
            )

    # -- writing -----------------------------------------------------------------------

    def _begin(self) -> None:
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise _locked(self.path, self._timeout, exc) from None

    def _commit(self) -> None:
        try:
            self._db.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            raise _locked(self.path, self._timeout, exc) from None

    def _refresh_features(self) -> None:
        """Load feature ids added since the last refresh (by this or another writer)."""
        rows = self._db.execute(
            "SELECT id, text FROM features WHERE id > ? ORDER BY id", (self._feature_max,)
        ).fetchall()
        for fid, text in rows:
            self._features[decode_name(text)] = fid
        if rows:
            self._feature_max = rows[-1][0]

    def _feature_ids(self, vocabulary: Sequence[str]) -> list[int]:
        """Return the stored id of each feature, adding new ones (inside a transaction)."""
        new = [f for f in dict.fromkeys(vocabulary) if f not in self._features]
        if new:
            start = self._feature_max + 1
            self._db.executemany(
                "INSERT INTO features (id, text) VALUES (?, ?)",
                ((start + i, encode_name(f)) for i, f in enumerate(new)),
            )
            for i, f in enumerate(new):
                self._features[f] = start + i
            self._feature_max = start + len(new) - 1
        return [self._features[f] for f in vocabulary]

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
            *self._fp_columns,
            *self._key_columns,
        ]
        updates = ", ".join(f"{c} = excluded.{c}" for c in columns[1:])
        return (
            f"INSERT INTO documents ({', '.join(columns)}) "
            f"VALUES ({', '.join('?' * len(columns))}) "
            f"ON CONFLICT (name) DO UPDATE SET {updates}"
        )

    def _write(
        self,
        names: Sequence[str],
        meta: Sequence[tuple[str, int | None, int | None, bytes]],
        fingerprints: npt.NDArray[np.uint64],
        matrix: WeightMatrix | None,
        feature_counts: Sequence[int],
    ) -> None:
        """Write rows (inside a transaction): fingerprints, keys and weights."""
        if not names:
            return
        signed = to_signed(fingerprints).tolist()
        keys = np.stack([to_signed(masked_keys(fingerprints, m)) for m in self._masks], axis=1)
        key_rows = keys.tolist()
        ids: list[int] = []
        if matrix is not None:
            vocabulary_ids = np.array(self._feature_ids(matrix.vocabulary), dtype=np.int64)
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
        self._db.executemany(self._upsert_sql(), rows)

    def _stored_state(self) -> dict[str, tuple[str, int | None, int | None, bytes]]:
        """Return ``name -> (origin, size, mtime_ns, digest)`` of every stored document."""
        rows = self._db.execute("SELECT name, origin, size, mtime_ns, digest FROM documents")
        return {decode_name(n): (o, s, m, d) for n, o, s, m, d in rows}

    def _flush(self, pending: list[_Pending], stored: _State, report: AddReport) -> list[str]:
        """Fingerprint and write one batch in one transaction; return the names kept."""
        changed = [
            p
            for p in pending
            if p.document.name not in stored or stored[p.document.name][3] != p.digest
        ]
        changed_names = {p.document.name for p in changed}
        same = [p for p in pending if p.document.name not in changed_names]
        corpus = fingerprint_documents([p.document for p in changed], self.params)
        by_name = {p.document.name: p for p in changed}
        gone = [s.path for s in corpus.skipped if s.path in stored]
        self._begin()
        try:
            self._refresh_features()
            self._write(
                corpus.names,
                [
                    (by_name[n].origin, by_name[n].size, by_name[n].mtime_ns, by_name[n].digest)
                    for n in corpus.names
                ],
                corpus.fingerprints,
                corpus.matrix,
                corpus.matrix.row_lengths().tolist(),
            )
            self._db.executemany(
                "UPDATE documents SET size = ?, mtime_ns = ?, origin = ? WHERE name = ?",
                [(p.size, p.mtime_ns, p.origin, encode_name(p.document.name)) for p in same],
            )
            self._delete(gone)
            self._commit()
        except BaseException:
            self._rollback()
            raise
        for name in corpus.names:
            if name in stored:
                report.updated += 1
            else:
                report.added += 1
            p = by_name[name]
            stored[name] = (p.origin, p.size, p.mtime_ns, p.digest)
        report.unchanged += len(same)
        report.removed += len(gone)
        report.skipped += corpus.skipped
        for name in gone:
            stored.pop(name, None)
        return [*corpus.names, *(p.document.name for p in same)]

    def _rollback(self) -> None:
        if self._db.in_transaction:
            # SQLite may have rolled back already (an I/O error or a full disk ends it).
            with suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")

    def _delete(self, names: Iterable[str]) -> None:
        self._db.executemany(
            "DELETE FROM documents WHERE name = ?", [(encode_name(n),) for n in names]
        )

    def _add(
        self,
        documents: Iterable[Document],
        origin: str,
        stored: _State,
        report: AddReport,
        batch: int,
        stats: dict[str, tuple[int, int]] | None = None,
    ) -> list[str]:
        """Write documents in batches; return the names stored or kept."""
        seen: list[str] = []
        pending: list[_Pending] = []
        now = time.time_ns()
        for doc in documents:
            size: int | None = None
            mtime: int | None = None
            if stats is not None and doc.name in stats:
                size, mtime = stats[doc.name]
                if now - mtime < RACY_SECONDS * 1e9:
                    mtime = -1  # read again next time: a change could keep size and mtime
            pending.append(_Pending(doc, origin, size, mtime, text_digest(doc.text)))
            if len(pending) >= batch:
                seen += self._flush(pending, stored, report)
                pending = []
        if pending:
            seen += self._flush(pending, stored, report)
        return seen

    @_translated
    def add_documents(
        self,
        documents: Iterable[Document],
        *,
        origin: str = "documents",
        prune: bool = False,
        batch: int = BATCH_DOCUMENTS,
    ) -> AddReport:
        """Add or update documents given as texts (JSON Lines records, stdin, a library).

        A stored document whose text hash is unchanged is left alone.

        Args:
            documents: Texts with unique names.
            origin: Label of their source (a JSON Lines file name, for instance).
            prune: Remove stored documents of the same ``origin`` not among ``documents``.
            batch: Documents per transaction.
        """
        stored = self._stored_state()
        before = dict(stored)
        report = AddReport()
        seen = self._add(documents, origin, stored, report, max(1, batch))
        if prune:
            kept = set(seen)
            gone = [n for n, s in before.items() if s[0] == origin and n not in kept]
            report.removed += self._remove_batch(gone)
        report.names = sorted(seen)
        return report

    @_translated
    def add_files(
        self,
        paths: Sequence[str],
        options: ReadOptions | None = None,
        *,
        prune: bool = False,
        batch: int = BATCH_DOCUMENTS,
        progress: Progress = no_progress,
    ) -> AddReport:
        """Add or update the files under ``paths``, reading only what changed.

        A file whose size and modification time match the stored ones is not read; one
        whose text hash matches is not fingerprinted again. Batches of ``batch`` documents
        are committed one transaction each, so an interrupted add keeps whole documents
        and the next add carries on.

        Args:
            paths: Files and directories (walked like ``simdup scan``).
            options: How files are found and decoded.
            prune: Remove stored files under ``paths`` that no longer exist there.
            batch: Documents per transaction.
            progress: Progress hook for the read stage.
        """
        options = options or ReadOptions()
        batch = max(1, batch)
        sources, skipped = find_files(paths, options)
        stored = self._stored_state()
        before = dict(stored)
        report = AddReport(skipped=list(skipped))
        seen: list[str] = []
        to_read: list[tuple[Source, int, int]] = []
        for source in sources:
            try:
                info = os.stat(source.path)
            except OSError:
                to_read.append((source, -1, -1))  # read_documents reports why
                continue
            previous = stored.get(source.name)
            if (
                previous is not None
                and previous[0] == "file"
                and previous[1] == info.st_size
                and previous[2] == info.st_mtime_ns
            ):
                seen.append(source.name)
            else:
                to_read.append((source, info.st_size, info.st_mtime_ns))
        report.unchanged += len(seen)
        chunk: list[tuple[Source, int, int]] = []
        for k, item in enumerate(progress(to_read, desc="read", total=len(to_read))):
            chunk.append(item)
            if len(chunk) < batch and k < len(to_read) - 1:
                continue
            documents, unread = read_documents([s for s, _, _ in chunk], options)
            report.skipped += unread
            stat_of = {s.name: (size, mtime) for s, size, mtime in chunk}
            seen += self._add(documents, "file", stored, report, batch, stat_of)
            chunk = []
        if prune:
            found = {s.name for s in sources}
            roots = [p.rstrip("/") or "/" for p in paths]
            gone = [
                n
                for n, s in before.items()
                if s[0] == "file" and n not in found and any(_under(n, r) for r in roots)
            ]
            report.removed += self._remove_batch(gone)
        report.names = sorted(seen)
        return report

    def _remove_batch(self, names: Sequence[str]) -> int:
        if not names:
            return 0
        self._begin()
        try:
            self._delete(names)
            self._commit()
        except BaseException:
            self._rollback()
            raise
        return len(names)

    @_translated
    def remove(self, paths: Sequence[str]) -> list[str]:
        """Remove the documents named ``paths``, or stored under them; return their names."""
        roots = [p.rstrip("/") or "/" for p in paths]
        names = [
            decode_name(n) for (n,) in self._db.execute("SELECT name FROM documents").fetchall()
        ]
        gone = sorted(n for n in names if n in paths or any(_under(n, r) for r in roots))
        self._remove_batch(gone)
        return gone

    # -- reading -----------------------------------------------------------------------

    def _select_columns(self) -> str:
        return ", ".join(["name", "feature_count", "feature_ids", "weights", *self._fp_columns])

    @_translated
    def fingerprinted(
        self, names: Iterable[str] | None = None
    ) -> tuple[list[str], WeightMatrix | None, npt.NDArray[np.uint64], npt.NDArray[np.int64]]:
        """Return stored documents in name order: names, weights, fingerprints, feature counts.

        Args:
            names: Only these documents (those not stored are ignored); None: all.

        Returns:
            ``(names, matrix, fingerprints, feature_counts)``; ``matrix`` is None when
            some document was imported without weights (the true cosine is then unknown).
        """
        wanted = None if names is None else set(names)
        rows = [
            r
            for r in self._db.execute(f"SELECT {self._select_columns()} FROM documents")
            if wanted is None or decode_name(r[0]) in wanted
        ]
        decoded = [decode_name(r[0]) for r in rows]
        order = sorted(range(len(rows)), key=decoded.__getitem__)
        rows = [rows[i] for i in order]
        out_names = [decoded[i] for i in order]
        fingerprints = to_unsigned(
            np.array([r[4:] for r in rows], dtype=np.int64).reshape(len(rows), self.words)
        )
        counts = np.array([r[1] for r in rows], dtype=np.int64)
        if any(r[2] is None for r in rows):
            return out_names, None, fingerprints, counts
        matrix = self._matrix([(r[2], r[3]) for r in rows])
        return out_names, matrix, fingerprints, counts

    def _matrix(self, blobs: Sequence[tuple[bytes, bytes]]) -> WeightMatrix:
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
        texts = dict(self._db.execute("SELECT id, text FROM features").fetchall())
        vocabulary = tuple(decode_name(texts[i]) for i in used.tolist())
        return WeightMatrix(indptr, dense[ids], data, vocabulary)

    @_translated
    def scan(
        self,
        params: Params | None = None,
        *,
        names: Iterable[str] | None = None,
        report_all: bool = False,
        skipped: Sequence[Skip] = (),
    ) -> ScanResult:
        """Return the near-duplicate pairs among stored documents, as ``simdup scan`` would.

        Args:
            params: Settings (fingerprint settings must match the index); default: stored.
            names: Only these documents; None: the whole index.
            report_all: Report every candidate pair.
            skipped: Inputs the caller could not read, carried into the result.
        """
        params = params or self.params
        self.check(params)
        clock = time.perf_counter()
        out_names, matrix, fingerprints, _ = self.fingerprinted(names)
        timings = {"load": time.perf_counter() - clock}
        return find_pairs(
            out_names,
            matrix,
            fingerprints,
            params,
            report_all=report_all,
            skipped=skipped,
            timings=timings,
        )

    def candidates_sql(self) -> str:
        """Return the SQL that finds stored documents sharing a key with one fingerprint.

        One ``SELECT`` per table, each an equality on that table's indexed key column.
        """
        return " UNION ".join(f"SELECT id FROM documents WHERE {c} = ?" for c in self._key_columns)

    @_translated
    def query(
        self,
        documents: Sequence[Document],
        params: Params | None = None,
        *,
        report_all: bool = False,
        skipped: Sequence[Skip] = (),
    ) -> ScanResult:
        """Return the stored near-duplicates of new documents.

        Candidates are found by key lookups on the indexed key columns when ``params``
        asks for the stored blocking tables, else by comparing keys with every stored
        fingerprint in memory (same pairs, slower). Each candidate is verified by its
        Hamming distance and its true cosine, as in a scan. A stored document with the
        same name as a query document is that document, and is not reported.

        Returns:
            A result whose rows are the query documents (sorted) followed by the stored
            documents they matched (sorted); every pair is (query row, stored row).
        """
        params = params or self.params
        self.check(params)
        timings: dict[str, float] = {}
        clock = time.perf_counter()
        ordered = sorted(documents, key=lambda d: d.name)
        corpus = fingerprint_documents(ordered, params)
        timings["fingerprint"] = time.perf_counter() - clock
        clock = time.perf_counter()
        tables = tables_for(params)
        n = len(corpus.names)
        if same_tables(tables, self.tables):
            hits = self._lookup(corpus.fingerprints)
        else:
            hits = self._scan_keys(corpus.fingerprints, tables)
        rows = self._rows(sorted({i for ids in hits for i in ids}))
        name_of = {r[0]: decode_name(r[1]) for r in rows}
        stored_names = sorted(name_of.values())
        position = {name: n + k for k, name in enumerate(stored_names)}
        id_row = {i: position[name] for i, name in name_of.items()}
        pair_list = [
            (q, id_row[i])
            for q, ids in enumerate(hits)
            for i in ids
            if name_of[i] != corpus.names[q]
        ]
        pairs = np.array(sorted(pair_list), dtype=np.int64).reshape(-1, 2)
        timings["candidates"] = time.perf_counter() - clock
        clock = time.perf_counter()
        stored_rows = sorted(rows, key=lambda r: id_row[r[0]])
        fingerprints = np.concatenate(
            [
                corpus.fingerprints.reshape(n, self.words),
                to_unsigned(
                    np.array([r[5:] for r in stored_rows], dtype=np.int64).reshape(-1, self.words)
                ),
            ]
        )
        measured = measure(None, fingerprints, pairs, params.bits)
        if all(r[3] is not None for r in stored_rows):
            measured.cosine = self._cosines(corpus.matrix, stored_rows, pairs)
        score = np.where(np.isnan(measured.cosine), measured.estimated, measured.cosine)
        above = int((score >= params.threshold).sum())
        reported = measured if report_all else measured.take(score >= params.threshold)
        timings["verify"] = time.perf_counter() - clock
        names = [*corpus.names, *stored_names]
        counts = np.concatenate(
            [
                corpus.matrix.row_lengths(),
                np.array([r[2] for r in stored_rows], dtype=np.int64),
            ]
        ).astype(np.int64)
        return ScanResult(
            names=names,
            params=params,
            pairs=canonical_order(names, reported),
            feature_counts=counts,
            fingerprints=fingerprints,
            stats={
                "documents": n,
                "stored": self.count(),
                "skipped": len(skipped) + len(corpus.skipped),
                "candidates": len(pairs),
                "above_threshold": above,
                "pairs": len(reported),
            },
            skipped=[*skipped, *corpus.skipped],
            tables=tables.description,
            timings=timings,
        )

    def _lookup(self, fingerprints: npt.NDArray[np.uint64]) -> list[set[int]]:
        """Return, per fingerprint, the stored ids sharing a key (indexed lookups)."""
        sql = self.candidates_sql()
        keys = np.stack([to_signed(masked_keys(fingerprints, m)) for m in self._masks], axis=1)
        return [{i for (i,) in self._db.execute(sql, row).fetchall()} for row in keys.tolist()]

    def _scan_keys(self, fingerprints: npt.NDArray[np.uint64], tables: Tables) -> list[set[int]]:
        """Return, per fingerprint, the stored ids sharing a key of ``tables`` (in memory)."""
        columns = ", ".join(self._fp_columns)
        rows = self._db.execute(f"SELECT id, {columns} FROM documents").fetchall()
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        stored = to_unsigned(
            np.array([r[1:] for r in rows], dtype=np.int64).reshape(-1, self.words)
        )
        out: list[set[int]] = [set() for _ in range(len(fingerprints))]
        for mask in table_masks(tables):
            stored_keys = masked_keys(stored, mask)
            query_keys = masked_keys(fingerprints, mask)
            for q, key in enumerate(query_keys.tolist()):
                out[q].update(ids[stored_keys == np.uint64(key)].tolist())
        return out

    def _rows(self, ids: Sequence[int]) -> list[tuple[Any, ...]]:
        """Return ``(id, name, feature_count, feature_ids, weights, fp...)`` of stored ids."""
        columns = ", ".join(
            ["id", "name", "feature_count", "feature_ids", "weights", *self._fp_columns]
        )
        out: list[tuple[Any, ...]] = []
        for lo in range(0, len(ids), SQL_VARIABLES):
            chunk = ids[lo : lo + SQL_VARIABLES]
            marks = ", ".join("?" * len(chunk))
            out += self._db.execute(
                f"SELECT {columns} FROM documents WHERE id IN ({marks})", chunk
            ).fetchall()
        return out

    def _stored_ids(self, features: Sequence[str]) -> npt.NDArray[np.int64]:
        """Return the stored id of each feature, 0 (no stored feature) for unknown ones."""
        known: dict[str, int] = {}
        for lo in range(0, len(features), SQL_VARIABLES):
            chunk = [encode_name(v) for v in features[lo : lo + SQL_VARIABLES]]
            marks = ", ".join("?" * len(chunk))
            for fid, text in self._db.execute(
                f"SELECT id, text FROM features WHERE text IN ({marks})", chunk
            ):
                known[decode_name(text)] = fid
        return np.array([known.get(v, 0) for v in features], dtype=np.int64)

    def _cosines(
        self,
        query: WeightMatrix,
        stored_rows: Sequence[tuple[Any, ...]],
        pairs: npt.NDArray[np.int64],
    ) -> npt.NDArray[np.float64]:
        """Return the true cosine of every (query row, stored row) pair, float64 (m,).

        Query features are matched to stored ones through the ``features`` table. Each
        dot product is summed over the stored row's entries in its stored order, and
        each squared norm in row order, so an exact copy scores exactly 1.0.
        """
        out = np.zeros(len(pairs), dtype=np.float64)
        if len(pairs) == 0:
            return out
        vocabulary_ids = self._stored_ids(query.vocabulary)
        vectors = [_stored_arrays(r[3], r[4]) for r in stored_rows]
        first_stored = query.rows
        for q in np.unique(pairs[:, 0]).tolist():
            at = np.flatnonzero(pairs[:, 0] == q)
            lo, hi = int(query.indptr[q]), int(query.indptr[q + 1])
            q_ids = vocabulary_ids[query.indices[lo:hi]]
            q_weights = query.data[lo:hi]
            q_square = float(np.bincount(np.zeros(hi - lo, np.int64), q_weights * q_weights)[0])
            order = np.argsort(q_ids, kind="stable")
            sorted_ids, sorted_weights = q_ids[order], q_weights[order]
            chosen = [vectors[int(s) - first_stored] for s in pairs[at, 1].tolist()]
            ids = np.concatenate([c[0] for c in chosen]).astype(np.int64)
            weights = np.concatenate([c[1] for c in chosen]).astype(np.float64)
            row = np.repeat(np.arange(len(chosen)), [len(c[0]) for c in chosen])
            where = np.minimum(np.searchsorted(sorted_ids, ids), len(sorted_ids) - 1)
            hit = (sorted_ids[where] == ids) & (ids > 0)
            products = np.where(hit, weights * sorted_weights[where], 0.0)
            dots = np.bincount(row, products, minlength=len(chosen))
            squares = np.bincount(row, weights * weights, minlength=len(chosen))
            denominator = np.sqrt(q_square * squares)
            with np.errstate(invalid="ignore", divide="ignore"):
                values = np.where(denominator > 0, dots / denominator, 0.0)
            out[at] = np.clip(values, -1.0, 1.0)
        return out

    # -- statistics, export, import ----------------------------------------------------

    @_translated
    def count(self) -> int:
        """Return the number of stored documents."""
        (n,) = self._db.execute("SELECT count(*) FROM documents").fetchone()
        return int(n)

    @_translated
    def stats(self) -> dict[str, Any]:
        """Return what the index holds and how large it is, JSON-ready."""
        documents = self.count()
        (features,) = self._db.execute("SELECT count(*) FROM features").fetchone()
        page_size = self._db.execute("PRAGMA page_size").fetchone()[0]
        pages = self._db.execute("PRAGMA page_count").fetchone()[0]
        free = self._db.execute("PRAGMA freelist_count").fetchone()[0]
        origins = dict(
            self._db.execute("SELECT origin, count(*) FROM documents GROUP BY origin").fetchall()
        )
        wal = self.path + "-wal"
        wal_bytes = os.path.getsize(wal) if os.path.exists(wal) else 0
        used = (pages - free) * page_size
        return {
            "path": self.path,
            "schema_version": SCHEMA_VERSION,
            "documents": documents,
            "features": int(features),
            "origins": origins,
            "settings": self.settings,
            "tables": self.tables.description,
            "table_count": len(self.tables.keys),
            "file_bytes": pages * page_size,
            "wal_bytes": wal_bytes,
            "bytes_per_document": round(used / documents, 1) if documents else None,
        }

    def export_records(self, *, weights: bool = True) -> Iterator[dict[str, Any]]:
        """Yield one JSON-ready record per stored document, in name order.

        Each record holds ``id`` (the name), ``fingerprint`` (zero-padded hex), the
        fingerprint settings as ``params``, ``features`` (distinct feature count) and,
        with ``weights``, the sparse weight vector as ``{feature: weight}``.
        """
        texts: dict[int, str] = {}
        columns = ", ".join(["name", "feature_count", "feature_ids", "weights", *self._fp_columns])
        with self.database_errors():
            if weights:
                texts = {
                    fid: decode_name(t)
                    for fid, t in self._db.execute("SELECT id, text FROM features").fetchall()
                }
            rows = self._db.execute(f"SELECT {columns} FROM documents").fetchall()
        rows.sort(key=lambda r: decode_name(r[0]))
        for row in rows:
            value = words_to_int(to_unsigned(np.array(row[4:], dtype=np.int64)))
            record: dict[str, Any] = {
                "id": decode_name(row[0]),
                "fingerprint": to_hex(value, self.params.bits),
                "features": int(row[1]),
                "params": self.settings,
            }
            if weights and row[2] is not None:
                ids, values = unpack_weights(row[2], row[3])
                record["weights"] = {
                    texts[i]: w for i, w in zip(ids.tolist(), values.tolist(), strict=True)
                }
            yield record

    @_translated
    def import_records(
        self, records: Iterable[tuple[str, dict[str, Any]]], *, batch: int = BATCH_DOCUMENTS
    ) -> AddReport:
        """Store exported records (``(where, record)`` pairs, ``where`` for messages).

        Records must carry this index's fingerprint settings. Records with weights keep
        the true cosine; records without report the estimate only.

        Raises:
            IndexFileError: for a malformed record, naming where it is.
            IndexSettingsError: for a record made with other settings.
        """
        report = AddReport()
        stored = self._stored_state()
        buffer: list[tuple[str, int, dict[str, float] | None, int]] = []
        for where, record in records:
            try:
                name = str(record["id"])
                settings = dict(record["params"])
                value = from_hex(str(record["fingerprint"]), self.params.bits)
                raw = record.get("weights")
                weights = None if raw is None else {str(k): float(v) for k, v in raw.items()}
                count = int(record.get("features", len(weights or {})))
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise IndexFileError(
                    f"{where}: expected an exported record with id, fingerprint and params ({exc})"
                ) from None
            if settings != self.settings:
                differ = sorted(k for k in self.settings if settings.get(k) != self.settings[k])
                raise IndexSettingsError(
                    f"{where}: record made with "
                    f"{_describe_settings({k: settings.get(k) for k in differ})}, index "
                    f"{self.path} holds {_describe_settings({k: self.settings[k] for k in differ})}"
                    "; import into an index with the same settings"
                )
            buffer.append((name, value, weights, count))
            if len(buffer) >= batch:
                self._import_batch(buffer, stored, report)
                buffer = []
        if buffer:
            self._import_batch(buffer, stored, report)
        return report

    def _import_batch(
        self,
        buffer: list[tuple[str, int, dict[str, float] | None, int]],
        stored: _State,
        report: AddReport,
    ) -> None:
        """Write one batch of imported records in one transaction."""
        self._begin()
        try:
            self._refresh_features()
            for weighted in (True, False):
                group = [b for b in buffer if (b[2] is not None) == weighted]
                if not group:
                    continue
                matrix = _weights_matrix([b[2] or {} for b in group]) if weighted else None
                self._write(
                    [b[0] for b in group],
                    [("import", None, None, text_digest(f"{b[0]}\0{b[1]:x}")) for b in group],
                    np.stack([int_to_words(b[1], self.params.bits) for b in group]),
                    matrix,
                    [b[3] for b in group],
                )
            self._commit()
        except BaseException:
            self._rollback()
            raise
        for name, _, _, _ in buffer:
            if name in stored:
                report.updated += 1
            else:
                report.added += 1
                stored[name] = ("import", None, None, b"")
        report.names += [b[0] for b in buffer]


def _weights_matrix(rows: Sequence[dict[str, float]]) -> WeightMatrix:
    """Return the matrix of weight dicts, features in each dict's order."""
    vocabulary: dict[str, int] = {}
    indices: list[int] = []
    data: list[float] = []
    indptr = [0]
    for weights in rows:
        for feature, weight in weights.items():
            indices.append(vocabulary.setdefault(feature, len(vocabulary)))
            data.append(weight)
        indptr.append(len(indices))
    return WeightMatrix(
        np.array(indptr, dtype=np.int64),
        np.array(indices, dtype=np.int64),
        np.array(data, dtype=np.float64),
        tuple(vocabulary),
    )


def _under(name: str, root: str) -> bool:
    """Tell whether ``name`` is ``root`` or a path below it.

    >>> _under("docs/a.txt", "docs"), _under("docs2/a.txt", "docs"), _under("x", "x")
    (True, False, True)
    """
    return name == root or name.startswith(root if root.endswith("/") else root + "/")


def _locked(path: str, timeout: float, exc: sqlite3.OperationalError) -> SimdupError:
    message = str(exc)
    if "locked" in message or "busy" in message:
        return IndexLockedError(
            f"index {path} is locked by another process (waited {timeout:g} s); "
            "try again when it finishes, or raise --timeout"
        )
    return IndexFileError(f"index {path}: {message}")


def settings_to_params(settings: dict[str, Any]) -> dict[str, Any]:
    """Return the :class:`Params` keyword arguments of stored fingerprint settings."""
    return {k: settings[k] for k in ("bits", "seed", "weighting", "ngram", "stopwords")}


def _blocking_of(params: Params) -> dict[str, Any]:
    return {
        "scheme": params.scheme,
        "blocks": params.blocks,
        "max_distance": params.max_distance,
        "threshold": params.threshold,
        "recall": params.recall,
    }


def _create(connection: sqlite3.Connection, params: Params) -> None:
    """Create the schema for ``params`` (inside the caller's write transaction)."""
    check_weighting_storable(params.weighting)
    tables = tables_for(params)
    words = words64(params.bits)
    fp_columns = "".join(f", fp{w} INTEGER NOT NULL" for w in range(words))
    key_columns = "".join(f", k{t} INTEGER NOT NULL" for t in range(len(tables.keys)))
    connection.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    connection.execute("CREATE TABLE features (id INTEGER PRIMARY KEY, text BLOB NOT NULL UNIQUE)")
    connection.execute(
        "CREATE TABLE documents ("
        "id INTEGER PRIMARY KEY, name BLOB NOT NULL UNIQUE, origin TEXT NOT NULL, "
        "size INTEGER, mtime_ns INTEGER, digest BLOB NOT NULL, feature_count INTEGER NOT NULL, "
        f"feature_ids BLOB, weights BLOB{fp_columns}{key_columns})"
    )
    for t in range(len(tables.keys)):
        connection.execute(f"CREATE INDEX documents_k{t} ON documents (k{t})")
    meta = {
        "application": "simdup",
        "schema_version": str(SCHEMA_VERSION),
        "created_by": __version__,
        "settings": json.dumps(params.fingerprint_settings()),
        "blocking": json.dumps(_blocking_of(params)),
        "tables": _tables_record(tables),
    }
    connection.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", meta.items())
    connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _check_header(path: str, connection: sqlite3.Connection) -> bool:
    """Return True for a simdup index, False for an empty database; raise otherwise."""
    application = connection.execute("PRAGMA application_id").fetchone()[0]
    version = connection.execute("PRAGMA user_version").fetchone()[0]
    objects = connection.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    if application == 0 and version == 0 and objects == 0:
        return False
    if application != APPLICATION_ID:
        raise IndexFileError(
            f"{path} is an SQLite database but not a simdup index; give another index file"
        )
    if version > SCHEMA_VERSION:
        raise IndexFileError(
            f"index {path} has schema version {version}, newer than this simdup "
            f"{__version__} reads ({SCHEMA_VERSION}); upgrade simdup"
        )
    if version < 1:
        raise IndexFileError(f"index {path} has no schema version; rebuild it")
    return True


def index_exists(path: str) -> bool:
    """Tell whether ``path`` holds an SQLite database (which :func:`open_index` validates).

    Raises:
        IndexFileError: for a file that is not an SQLite database at all.
    """
    return _file_kind(path) == "sqlite"


def open_index(
    path: str,
    *,
    create: bool = False,
    params: Params | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> FingerprintIndex:
    """Open an index, creating it when asked and absent.

    Args:
        path: The database file.
        create: Create the index if the file is absent or empty (else that is an error).
        params: Settings of a new index (fingerprint settings and blocking keys); for an
            existing one they are only checked against the stored settings.
        timeout: Seconds to wait for another writer's lock.

    Raises:
        IndexFileError: not an index, a newer schema, damaged, or absent without ``create``.
        IndexSettingsError: ``params`` differ from the stored fingerprint settings.
        IndexLockedError: another writer held the lock past ``timeout``.
    """
    kind = _file_kind(path)
    if kind != "sqlite" and not create:
        raise IndexFileError(
            f"no index at {path}; create one with: simdup index add PATH... --db {path}"
        )
    if params is not None:
        check_weighting_storable(params.weighting)
    try:
        connection = _connect(path, timeout)
    except sqlite3.Error as exc:
        raise IndexFileError(f"cannot open index {path}: {exc}") from None
    try:
        try:
            exists = _check_header(path, connection)
            if not exists:
                connection.execute("PRAGMA journal_mode = WAL")
                connection.execute("BEGIN IMMEDIATE")
                if not _check_header(path, connection):  # another process may have won
                    _create(connection, params or Params())
                connection.execute("COMMIT")
            connection.execute("PRAGMA synchronous = NORMAL")
            index = FingerprintIndex(path, connection, timeout)
        except sqlite3.OperationalError as exc:
            raise _locked(path, timeout, exc) from None
        except sqlite3.DatabaseError as exc:
            raise IndexFileError(f"{path} is not a usable simdup index ({exc})") from None
        if params is not None:
            index.check(params)
    except BaseException:
        connection.close()
        raise
    return index


def integrity(path: str) -> str:
    """Return the result of ``PRAGMA integrity_check`` (``ok`` for a sound file)."""
    connection = sqlite3.connect(path)
    try:
        return str(connection.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        connection.close()


__all__ = [
    "AddReport",
    "FingerprintIndex",
    "IndexFileError",
    "IndexLockedError",
    "IndexSettingsError",
    "default_db",
    "index_exists",
    "integrity",
    "open_index",
]
