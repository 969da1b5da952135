"""Index stage 8, the public face: :func:`open_index` and :class:`FingerprintIndex`.

This is the top floor of the index: it opens (or creates) the file through the schema
room, then each method of :class:`FingerprintIndex` hands the open store to the room
that does the work (writing, reading, queries, export and import) inside one guard that
turns SQLite errors into index errors with a message. The methods hold the signatures
and the documentation; the rooms below hold the code.
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar, cast

from simdup.index import ingest, optimize, reading, transfer, writing
from simdup.index import query as querying
from simdup.index.ingest import Checked, Incoming
from simdup.index.resident import Resident, ensure_changes, held_size
from simdup.index.schema import (
    IndexFileError,
    SimdupIndexError,
    check_header,
    check_weighting_storable,
    connect,
    create_schema,
    file_kind,
    locked_error,
)
from simdup.index.store import IndexStore
from simdup.index.writing import AddReport
from simdup.inputs.files import ReadOptions
from simdup.model import Document, ScanResult, Skip
from simdup.params import BATCH_DOCUMENTS, DEFAULT_TIMEOUT, Params
from simdup.progress import Progress, no_progress
from simdup.search.tables import Tables

F = TypeVar("F", bound=Callable[..., Any])

#: Measured on generated corpora (64 bits, planned keys) at 100,000 and 1,000,000 stored
#: documents: seconds to read the index to hold it, at first and per stored document (1.0 s
#: and 6.1 s); a query by key lookups at 1,000,000 documents, and the power of the count it
#: grows with (16 ms at 100,000, 48 ms); a held query, the same (2.9 ms, 4.7 ms). Since the
#: held documents' filters (:mod:`simdup.index.screen`), holding takes 1.2 times as long and
#: a held query 0.73 times (5.7 → 6.8 s, 4.2 → 3.1 ms at 1,000,000, builds alternated).
HOLD_SECONDS, HOLD_SECONDS_PER_DOCUMENT = 0.4, 6.7e-6
LOOKUP_SECONDS, LOOKUP_GROWTH = 0.048, 0.48
HELD_SECONDS, HELD_GROWTH = 0.0034, 0.2

#: Fewer query documents than this are looked up by their keys without counting the index.
MIN_HOLD_QUERIES = 40

#: Seconds a checkpoint that starts the write-ahead log again waits for readers and writers
#: to leave it, holding new writers back (a server's searches read for milliseconds; a long
#: reader, an export from the shell, would otherwise hold every writer for the timeout).
RESTART_WAIT = 0.25


def hold_pays(queries: int, stored: int) -> bool:
    """Tell whether holding ``stored`` documents first makes ``queries`` queries sooner.

    About 160 queries at 1,000,000 stored documents, 80 at 100,000 and 480 at 10,000,000
    (there the index rarely fits the budget): the reading grows with the count, the saving
    of each query more slowly.
    """
    scale = stored / 1e6
    saving = float(LOOKUP_SECONDS * scale**LOOKUP_GROWTH - HELD_SECONDS * scale**HELD_GROWTH)
    return saving > 0 and queries * saving > HOLD_SECONDS + HOLD_SECONDS_PER_DOCUMENT * stored


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
        settings: The stored fingerprint settings, as recorded.
        words: 64-bit words per fingerprint.
        store: The open database the methods work on.
    """

    def __init__(self, path: str, connection: sqlite3.Connection, timeout: float) -> None:
        self.store = IndexStore(path, connection, timeout)
        self.path = path
        self.params = self.store.params
        self.settings = self.store.settings
        self.words = self.store.words

    @property
    def tables(self) -> Tables:
        """Return the blocking tables whose keys are stored (planned with the first add)."""
        return self.store.tables

    @property
    def keys_info(self) -> dict[str, Any]:
        """Return how the stored tables were chosen (``planned``, ``explicit``, ...)."""
        return self.store.keys_info

    # -- lifecycle ---------------------------------------------------------------------

    def database_errors(self) -> contextlib.AbstractContextManager[None]:
        """Raise SQLite errors as :class:`IndexLockedError` or :class:`IndexFileError`."""
        return self.store.database_errors()

    def close(self) -> None:
        """Close the database connection."""
        self.store.db.close()

    def __enter__(self) -> FingerprintIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def hold_fingerprints(self, resident: Resident | None = None) -> Resident:
        """Hold the stored fingerprints and weights in memory for the queries to come.

        For a long-lived process (a server): candidates are then found and verified in
        memory, the same ones the key lookups find with the same cosines, and only the
        rows of the matches reported are read. Returns what is held. Connections to one
        file share one :class:`Resident` (pass the first one's). An index made before
        fingerprints could be held gets its log of changes here (a short write).

        Raises:
            IndexLockedError: another writer held the lock past the timeout.
            IndexFileError: the file cannot be written.
        """
        held = resident or Resident(self.words)
        with self.database_errors():
            ensure_changes(self.store)
            self.store.resident = held
            with self.store.snapshot():  # read them now, not in the first query
                held.view(self.store)
                self.store.refresh_features()
        return held

    def check(self, params: Params) -> None:
        """Refuse settings whose fingerprints would not be comparable with the stored ones.

        Raises:
            IndexSettingsError: naming each differing setting, stored and requested.
        """
        self.store.check(params)

    # -- writing -----------------------------------------------------------------------

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
        return writing.add_documents(self.store, documents, origin=origin, prune=prune, batch=batch)

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
        return writing.add_files(
            self.store, paths, options, prune=prune, batch=batch, progress=progress
        )

    @_translated
    def remove(self, paths: Sequence[str]) -> list[str]:
        """Remove the documents named ``paths``, or stored under them; return their names."""
        return writing.remove(self.store, paths)

    # -- reading -----------------------------------------------------------------------

    @_translated
    def fingerprinted(self, names: Iterable[str] | None = None) -> reading.Stored:
        """Return stored documents in name order: names, weights, fingerprints, feature counts.

        Args:
            names: Only these documents (those not stored are ignored); None: all.

        Returns:
            ``(names, matrix, fingerprints, feature_counts)``; ``matrix`` is None when
            some document was imported without weights (the true cosine is then unknown).
        """
        return reading.fingerprinted(self.store, names)

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
        return reading.scan(self.store, params, names=names, report_all=report_all, skipped=skipped)

    def candidates_sql(self) -> str:
        """Return the SQL that finds stored documents sharing a key with one fingerprint.

        One ``SELECT`` per table, each an equality on that table's indexed key column.
        """
        return querying.candidates_sql(self.store)

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
        if self.store.resident is None and len(documents) >= MIN_HOLD_QUERIES:
            self._hold_if_it_pays(len(documents))
        return querying.query(self.store, documents, params, report_all=report_all, skipped=skipped)

    def _hold_if_it_pays(self, queries: int) -> None:
        """Hold the index for a batch of queries, when that is sooner, fits the budget and can be.

        A file this process may not write (``hold_fingerprints`` may add a log of changes)
        is queried by key lookups, as before.
        """
        from simdup.search.plan.memory import default_memory

        with self.database_errors():
            stored, need = held_size(self.store)
        fits = hold_pays(queries, stored) and need <= default_memory()
        if fits:
            with contextlib.suppress(SimdupIndexError):
                self.hold_fingerprints()

    # -- one request at a time ---------------------------------------------------------

    def request_params(self, threshold: float | None) -> Params:
        """Return the stored settings at a request's threshold (None: the stored one).

        Raises:
            ParameterError: for a threshold below the index's (its keys could miss pairs).
        """
        return ingest.request_params(self.store, threshold)

    @_translated
    def search(self, documents: Sequence[Incoming], params: Params) -> list[Checked]:
        """Return the stored near-duplicates of each document (unique ids), strongest first.

        Reads one snapshot through the stored keys; never reads the whole table.
        """
        return ingest.search(self.store, documents, params)

    @_translated
    def put(
        self, documents: Sequence[Incoming], params: Params, *, origin: str = "serve"
    ) -> dict[str, int]:
        """Add or replace documents in one transaction; return the counts of what happened."""
        return ingest.add(self.store, documents, params, origin)

    @_translated
    def check_and_add(
        self,
        documents: Sequence[Incoming],
        params: Params,
        *,
        origin: str = "serve",
        exclusive: contextlib.AbstractContextManager[Any] | None = None,
        first: ingest.FirstSearch | None = None,
    ) -> list[Checked]:
        """Store each document only if nothing stored (or stored before it) matches it.

        One write transaction: two concurrent calls with the same text store it once.
        ``exclusive`` (a lock of the caller's writers) is held around the transaction only,
        not while the texts are fingerprinted. ``first``: the search outside it, made
        already (:meth:`search_first`).
        """
        return ingest.check_and_add(self.store, documents, params, origin, exclusive, first)

    @_translated
    def search_first(self, documents: Sequence[Incoming], params: Params) -> ingest.FirstSearch:
        """Return a check-and-add's search outside the writers' lock; settled: the answer."""
        return ingest.search_first(self.store, documents, params)

    # -- keys planned again ------------------------------------------------------------

    @_translated
    def replan_due(self, documents: int | None = None) -> bool:
        """Tell whether the keys are due to be planned again (``documents``: the count)."""
        return optimize.due(self.store, documents)

    @_translated
    def next_replan(self) -> int | None:
        """Return the document count at which the keys are due again (None: never)."""
        return optimize.next_replan(self.store)

    @_translated
    def optimize(self, *, force: bool = False) -> dict[str, Any]:
        """Plan the keys again on every stored fingerprint if the corpus outgrew them.

        One transaction; queries from other connections go on with the old keys until it
        commits. Keys the user chose are kept.

        Args:
            force: Plan again even when the keys are not due.

        Returns:
            JSON-ready: ``replanned``, ``documents``, ``keys``, ``tables`` and ``next``.
        """
        return optimize.replan(self.store, force=force)

    def interrupt(self) -> None:
        """Abort the statement running on this index's connection (from another thread)."""
        self.store.db.interrupt()

    # -- the write-ahead log -----------------------------------------------------------

    def leave_checkpoints(self, log_limit: int) -> None:
        """Let this connection's commits leave the write-ahead log to :meth:`checkpoint`.

        SQLite otherwise copies the log into the file in the connection whose commit takes
        it past 1,000 pages, and waits there for the disk: a writer that another thread
        checkpoints for does not wait (see :mod:`simdup.serve.service`). When the log starts
        again from its beginning, its file is cut back to ``log_limit`` bytes.
        """
        self.store.db.execute("PRAGMA wal_autocheckpoint = 0")
        self.store.db.execute(f"PRAGMA journal_size_limit = {int(log_limit)}")

    @_translated
    def checkpoint(self, *, restart: bool = False) -> int:
        """Copy what the write-ahead log holds into the file, without waiting for anyone.

        Readers and writers go on meanwhile; pages a reader may still need stay in the
        log for a later checkpoint. ``restart``: wait (up to :data:`RESTART_WAIT` seconds)
        for writers to finish and readers to leave the log, holding new writers back, so
        that the next write starts the log from its beginning; past that wait (a long
        reader), it is left to a later checkpoint. Returns the bytes of log written since
        it last started from its beginning.
        """
        db = self.store.db
        if not restart:
            _, frames, _ = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        else:
            db.execute(f"PRAGMA busy_timeout = {int(RESTART_WAIT * 1000)}")
            try:
                _, frames, _ = db.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()
            finally:
                db.execute(f"PRAGMA busy_timeout = {int(self.store.timeout * 1000)}")
        (page,) = db.execute("PRAGMA page_size").fetchone()
        return max(0, int(frames)) * int(page)

    # -- statistics, export, import ----------------------------------------------------

    @_translated
    def count(self) -> int:
        """Return the number of stored documents."""
        return reading.count(self.store)

    @_translated
    def stats(self) -> dict[str, Any]:
        """Return what the index holds and how large it is, JSON-ready."""
        return reading.stats(self.store)

    def export_records(self, *, weights: bool = True) -> Iterator[dict[str, Any]]:
        """Yield one JSON-ready record per stored document, in name order.

        Each record holds ``id`` (the name), ``fingerprint`` (zero-padded hex), the
        fingerprint settings as ``params``, ``features`` (distinct feature count) and,
        with ``weights``, the sparse weight vector as ``{feature: weight}``.
        """
        return transfer.export_records(self.store, weights=weights)

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
        return transfer.import_records(self.store, records, batch=batch)


def open_index(
    path: str,
    *,
    create: bool = False,
    params: Params | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    threads: bool = False,
) -> FingerprintIndex:
    """Open an index, creating it when asked and absent.

    Args:
        path: The database file.
        create: Create the index if the file is absent or empty (else that is an error).
        params: Settings of a new index (fingerprint settings and blocking keys); for an
            existing one they are only checked against the stored settings.
        timeout: Seconds to wait for another writer's lock.
        threads: Let any thread use the index, one at a time (a server's pool does).

    Raises:
        IndexFileError: not an index, a newer schema, damaged, or absent without ``create``.
        IndexSettingsError: ``params`` differ from the stored fingerprint settings.
        IndexLockedError: another writer held the lock past ``timeout``.
    """
    kind = file_kind(path)
    if kind != "sqlite" and not create:
        raise IndexFileError(
            f"no index at {path}; create one with: simdup index add PATH... --db {path}"
        )
    if params is not None:
        check_weighting_storable(params.weighting)
    try:
        connection = connect(path, timeout, threads=threads)
    except sqlite3.Error as exc:
        raise IndexFileError(f"cannot open index {path}: {exc}") from None
    try:
        try:
            exists = check_header(path, connection)
            if not exists:
                connection.execute("PRAGMA journal_mode = WAL")
                connection.execute("BEGIN IMMEDIATE")
                if not check_header(path, connection):  # another process may have won
                    create_schema(connection, params or Params())
                connection.execute("COMMIT")
            connection.execute("PRAGMA synchronous = NORMAL")
            index = FingerprintIndex(path, connection, timeout)
        except sqlite3.OperationalError as exc:
            raise locked_error(path, timeout, exc) from None
        except sqlite3.DatabaseError as exc:
            raise IndexFileError(f"{path} is not a usable simdup index ({exc})") from None
        if params is not None:
            index.check(params)
    except BaseException:
        connection.close()
        raise
    return index
