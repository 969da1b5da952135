"""Index stage 2, schema and connection: what an index file is, and how one is opened.

Everything that decides whether a file may be used as an index lives here: the table
layout and its version, the file's markers (``PRAGMA application_id`` and
``user_version``), the errors an index raises, the fingerprint settings recorded at
creation and the check that later runs ask for the same ones. A file that is not an
index, an index from a newer simdup, or a request with other fingerprint settings is
refused here with a message that says what to do, before any row is read or written.

``tfidf`` weighting is refused: its weights depend on document frequencies across the
whole corpus, which change with every add, so stored fingerprints would silently go
stale.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Sequence
from typing import Any

from simdup import __version__
from simdup.errors import ParameterError, SimdupError
from simdup.fingerprints.listing import fingerprint_settings
from simdup.fingerprints.simhash import words64
from simdup.index.keys import PENDING, keys_record
from simdup.index.packing import tables_record
from simdup.params import DB_ENV, DEFAULT_DB, Params
from simdup.search.plan.planner import tables_for
from simdup.search.tables import Tables

#: Version of the table layout; bumped (with a migration) whenever it changes.
SCHEMA_VERSION = 1

#: ``PRAGMA application_id`` of a simdup index: ASCII ``SDUP``.
APPLICATION_ID = 0x53445550

#: The first bytes of every SQLite database file, so of every index.
SQLITE_MAGIC = b"SQLite format 3\x00"


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


def check_settings(path: str, settings: dict[str, Any], params: Params) -> None:
    """Refuse ``params`` whose fingerprints would not be comparable with ``settings``.

    Args:
        path: The index file, for the message.
        settings: The fingerprint settings stored in the index.
        params: The settings a run asks for.

    Raises:
        IndexSettingsError: naming each differing setting, stored and requested.
    """
    check_weighting_storable(params.weighting)
    requested = fingerprint_settings(params)
    # Both ways: a key only one side records (word segmentation, the noise-word lists'
    # digest) is a difference too.
    keys = [*requested, *(k for k in settings if k not in requested)]
    differ = [k for k in keys if requested.get(k) != settings.get(k)]
    if differ:
        stored = ", ".join(f"{k}={settings.get(k)}" for k in differ)
        asked = ", ".join(f"{k}={requested.get(k)}" for k in differ)
        raise IndexSettingsError(
            f"index {path} was built with {stored}; this run asks for {asked}. "
            "Fingerprints made with other settings cannot be compared: drop those "
            "options, or use another index file"
        )


def describe_settings(settings: dict[str, Any]) -> str:
    """Return settings as ``key=value, ...`` for messages."""
    return ", ".join(f"{k}={v}" for k, v in settings.items())


def settings_to_params(settings: dict[str, Any]) -> dict[str, Any]:
    """Return the :class:`Params` keyword arguments of stored fingerprint settings."""
    return Params.stored_settings(settings)


def _blocking_of(params: Params) -> dict[str, Any]:
    return {
        "scheme": params.scheme,
        "blocks": params.blocks,
        "max_distance": params.max_distance,
        "threshold": params.threshold,
        "recall": params.recall,
    }


def connect(path: str, timeout: float, *, threads: bool = False) -> sqlite3.Connection:
    """Return a connection in autocommit mode that waits ``timeout`` s for a lock.

    With ``threads`` any thread may use it (one at a time: the caller sees to that).
    """
    connection = sqlite3.connect(
        path, timeout=timeout, isolation_level=None, check_same_thread=not threads
    )
    connection.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
    return connection


def file_kind(path: str) -> str:
    """Return ``missing``, ``empty`` or ``sqlite``; raise for a file that is not SQLite."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(SQLITE_MAGIC))
    except FileNotFoundError:
        return "missing"
    except IsADirectoryError:
        raise IndexFileError(f"{path} is a directory; give an index file with --db") from None
    except OSError as exc:
        raise IndexFileError(f"cannot open index {path}: {exc.strerror}") from None
    if not head:
        return "empty"
    if head != SQLITE_MAGIC:
        raise IndexFileError(
            f"{path} is not a simdup index (not an SQLite database); give another index file"
        )
    return "sqlite"


def locked_error(path: str, timeout: float, exc: sqlite3.OperationalError) -> SimdupError:
    """Return the index error for an SQLite operational error (a lock wait or another)."""
    message = str(exc)
    if "locked" in message or "busy" in message:
        return IndexLockedError(
            f"index {path} is locked by another process (waited {timeout:g} s); "
            "try again when it finishes, or raise --timeout"
        )
    return IndexFileError(f"index {path}: {message}")


def key_column_sql(
    tables: Tables, covering: Sequence[str] = (), existing: Sequence[str] = ()
) -> tuple[list[str], list[str]]:
    """Return the statements that add the key columns of ``tables``, and those that index them.

    Args:
        tables: The tables whose keys the columns hold (``k0``, ``k1``, ...).
        covering: Columns each key's index carries too (the fingerprint words, so that a
            query's Hamming pre-filter reads the index alone, not the table rows).
        existing: Key columns the table has already (they are indexed, not added).

    Returns:
        ``(columns, indexes)``: filling the columns between the two is cheaper than
        keeping their indexes up to date row by row.
    """
    extra = "".join(f", {c}" for c in covering)
    names = [f"k{t}" for t in range(len(tables.keys))]
    columns = [
        f"ALTER TABLE documents ADD COLUMN {c} INTEGER NOT NULL DEFAULT 0"
        for c in names
        if c not in existing
    ]
    indexes = [f"CREATE INDEX documents_{c} ON documents ({c}{extra})" for c in names]
    return columns, indexes


def add_key_columns(
    connection: sqlite3.Connection, tables: Tables, covering: Sequence[str] = ()
) -> None:
    """Add one indexed key column per table to an index created without them.

    Runs inside the caller's write transaction, on an index that holds no documents yet.

    Args:
        connection: The open database.
        tables: The tables whose keys the columns hold.
        covering: Columns each key's index carries too (see :func:`key_column_sql`).
    """
    columns, indexes = key_column_sql(tables, covering)
    for statement in [*columns, *indexes]:
        connection.execute(statement)


def create_schema(connection: sqlite3.Connection, params: Params) -> None:
    """Create the schema for ``params`` (inside the caller's write transaction).

    Keys the user chose get their columns now; planned keys get theirs with the first
    documents (:mod:`simdup.index.keys`), until then the ``tables`` record holds the
    corpus-free tables and the ``keys`` record says ``pending``.
    """
    check_weighting_storable(params.weighting)
    tables = tables_for(params)
    keys = keys_record(params)
    words = words64(params.fixed_bits)
    fp_columns = "".join(f", fp{w} INTEGER NOT NULL" for w in range(words))
    connection.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    connection.execute("CREATE TABLE features (id INTEGER PRIMARY KEY, text BLOB NOT NULL UNIQUE)")
    connection.execute(
        "CREATE TABLE documents ("
        "id INTEGER PRIMARY KEY, name BLOB NOT NULL UNIQUE, origin TEXT NOT NULL, "
        "size INTEGER, mtime_ns INTEGER, digest BLOB NOT NULL, feature_count INTEGER NOT NULL, "
        f"feature_ids BLOB, weights BLOB{fp_columns})"
    )
    if keys["source"] != PENDING:
        add_key_columns(connection, tables)
    meta = {
        "application": "simdup",
        "schema_version": str(SCHEMA_VERSION),
        "created_by": __version__,
        "settings": json.dumps(fingerprint_settings(params)),
        "blocking": json.dumps(_blocking_of(params)),
        "tables": tables_record(tables),
        "keys": json.dumps(keys),
    }
    connection.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", meta.items())
    for statement in changes_sql([f"fp{w}" for w in range(words)]):
        connection.execute(statement)
    connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


#: Entries the ``changes`` log keeps: a holder of fingerprints further behind reads all
#: of them again (see :mod:`simdup.index.resident`).
CHANGES_KEPT = 10_000


def changes_sql(fp_columns: list[str]) -> list[str]:
    """Return the statements that create the log of updated and deleted documents.

    Triggers write it, so every writer does, in this process or another; each entry
    drops the entries more than :data:`CHANGES_KEPT` behind it. Idempotent.
    """
    changed = ", ".join([*fp_columns, "feature_ids", "weights"])
    log = (
        "INSERT INTO changes (document) VALUES (old.id); "
        f"DELETE FROM changes WHERE seq <= (SELECT max(seq) FROM changes) - {CHANGES_KEPT};"
    )
    return [
        "CREATE TABLE IF NOT EXISTS changes (seq INTEGER PRIMARY KEY, document INTEGER NOT NULL)",
        "CREATE TRIGGER IF NOT EXISTS documents_updated "
        f"AFTER UPDATE OF {changed} ON documents BEGIN {log} END",
        f"CREATE TRIGGER IF NOT EXISTS documents_deleted AFTER DELETE ON documents BEGIN {log} END",
    ]


def check_header(path: str, connection: sqlite3.Connection) -> bool:
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
    """Tell whether ``path`` holds an SQLite database (which ``open_index`` validates).

    Raises:
        IndexFileError: for a file that is not an SQLite database at all.
    """
    return file_kind(path) == "sqlite"


def integrity(path: str) -> str:
    """Return the result of ``PRAGMA integrity_check`` (``ok`` for a sound file)."""
    connection = sqlite3.connect(path)
    try:
        return str(connection.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        connection.close()
