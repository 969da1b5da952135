"""The index behind ``simdup serve``: a pool of connections, one writer, keys kept fresh.

Each request (on the event loop, or on a worker thread for writes) borrows one of a few
connections to the index (WAL: readers never wait for the writer). The stored
fingerprints and weights are held in memory when they fit within ``memory``, shared by all
of them (and by the worker processes of one server, read before they fork), so a query
reads only the rows of the matches it reports. Writes go one at a time through a lock
(one for every worker process; SQLite's own write lock against other processes), and a
check-and-add searches and stores in one write transaction. When the index outgrows the
documents its keys were planned on, a background thread plans them again on its own
connection; queries go on with the old keys until it commits, and writes wait for it.
Another thread copies the write-ahead log into the index file after writes, so that no
request waits for the disk. Closing interrupts those threads (the index keeps its old keys
whole) and closes every connection.
"""

from __future__ import annotations

import importlib
import logging
import queue
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from simdup.errors import SimdupError
from simdup.index import FingerprintIndex, open_index
from simdup.index.ingest import Checked, FirstSearch, Incoming
from simdup.index.resident import Resident, held_size
from simdup.params import DEFAULT_TIMEOUT, SEGMENTER_MODULE, Params, zh_extra_installed
from simdup.search.plan.memory import default_memory
from simdup.sizes import format_size

LOG = logging.getLogger("simdup.serve")

#: Connections the request threads share: two, so that a query need not wait for a
#: check-and-add's write; more only add contention for the interpreter (8 clients on
#: 2 cores: 13.6 ms of server time per query with 4, 11.0 with 2, 9.0 with 1).
CONNECTIONS = 2

#: Seconds the log's copier waits after a write before it copies, so that the pages of
#: the writes in the meantime are copied (and synced to disk) together. Shorter, each copy
#: is shorter, and so is the wait of writes for its last frames past :data:`LOG_LIMIT`: at
#: 1,000,000 documents 0.1 s gave a check-and-add p99 of 168-170 ms with 8 clients, 0.25 s
#: 225-236 ms, in the same minutes.
CHECKPOINT_DELAY = 0.1

#: Seconds between two counts of the stored documents by the process that plans the keys
#: (other processes' writes reach it only so; a count reads an index of the whole table).
RECOUNT_SECONDS = 1.0

#: Bytes of write-ahead log past which the copier holds writes back while it copies the last
#: frames: the log then starts again from its beginning with the next write, and its file
#: is cut back to this size.
LOG_LIMIT = 64 << 20


class _Checkpoints:
    """Copies the index's write-ahead log into the file from a thread of its own.

    SQLite makes the connection whose commit takes the log past 1,000 pages copy it and
    wait for the disk, holding the write lock: a check-and-add at 1,000,000 documents
    (about 160 index pages a new document) took 17.4 ms on average that way and 11.2 ms
    with the copy left to another thread (p90 35 against 13 ms). The request connections
    leave it to this thread (:meth:`FingerprintIndex.leave_checkpoints`), which copies
    shortly after each write while readers and writers go on.

    The log starts again from its beginning only when a write begins with all of it
    copied; under a stream of writes one is always committing while the copy runs, and
    the log grew by 70 MB a second. So past :data:`LOG_LIMIT` the copier copies again what
    came during its copy, then the last frames with writes held back (``write``, the lock
    of the server's writers) and waiting for readers to leave the log (SQLite's restarting
    checkpoint, which holds other processes' writers back too): the next write starts the
    log from its beginning. Writes wait for a short copy once per :data:`LOG_LIMIT` of log.
    A copy that only held the writers back left the log to grow to 370-624 MiB in 20 s of
    check-and-adds at 1,000,000 documents from two worker processes, whose searches kept
    reading it.
    """

    def __init__(self, index: FingerprintIndex, write: AbstractContextManager[Any]) -> None:
        self._index = index
        self._write = write
        self._wrote = threading.Event()
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._run, name="simdup-checkpoint", daemon=True)
        self._thread.start()

    def wrote(self) -> None:
        """Say that a write was committed: the log is copied shortly."""
        self._wrote.set()

    def copy(self) -> None:
        """Copy the log into the file; past :data:`LOG_LIMIT`, end with writes held back."""
        if self._index.checkpoint() > LOG_LIMIT:
            self._index.checkpoint()  # what came meanwhile, so that little is left to copy
            with self._write:
                self._index.checkpoint(restart=True)

    def _run(self) -> None:
        while True:
            self._wrote.wait()
            if self._closing.wait(CHECKPOINT_DELAY):
                return  # closing the last connection copies the log
            self._wrote.clear()
            try:
                self.copy()
            except SimdupError as exc:  # the next write tries again
                LOG.warning("write-ahead log not copied: %s", exc)

    def close(self) -> None:
        """Stop the thread and close its connection."""
        self._closing.set()
        self._wrote.set()
        self._thread.join()
        self._index.close()


def held_within(index: FingerprintIndex, memory: int) -> Resident | None:
    """Return the index's documents held in memory, or None (logged) if they need more."""
    with index.database_errors():
        _, need = held_size(index.store)
    if need > memory:
        LOG.warning(
            "the index is not held in memory: it needs about %s, more than --memory %s; "
            "queries read their candidates' rows",
            format_size(need),
            format_size(memory),
        )
        return None
    return index.hold_fingerprints()


def preload(
    path: str,
    *,
    create: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    memory: int | None = None,
) -> tuple[Resident | None, int]:
    """Open the index, hold it if it fits, and close it: what worker processes share.

    Read once before they fork, the held documents are shared by their pages (each
    worker adds only what is stored after); the segmenter, loaded here, too.

    Returns:
        What is held (None: not held, so the workers hold nothing), and the documents.
    """
    with open_index(path, create=create, timeout=timeout) as index:
        held = held_within(index, memory or default_memory())
        documents = index.count()
    if zh_extra_installed():
        importlib.import_module(SEGMENTER_MODULE)
    return held, documents


class Service:
    """An open index served to request threads.

    Held documents (``held``, read before worker processes forked) are used as they are,
    or none held (``hold`` False); ``writes`` is the lock every writer to the index takes
    (one shared by the workers: waiting on it wakes at once, where SQLite's own lock
    is polled); by default one for this process.

    Attributes:
        path: The index file.
        bits: Its fingerprint width (to read fingerprints in requests).
        documents: Documents stored, kept up to date by this process's writes.
        memory: Bytes the index may take held in memory (default: the scan's budget).
        held: The index held in memory, shared by the connections (None: not held).
    """

    def __init__(
        self,
        path: str,
        *,
        create: bool = False,
        params: Params | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        connections: int = CONNECTIONS,
        replan: bool = True,
        memory: int | None = None,
        held: Resident | None = None,
        hold: bool = True,
        writes: AbstractContextManager[Any] | None = None,
    ) -> None:
        self.path = path
        self.timeout = timeout
        self.memory = memory or default_memory()
        self.held: Resident | None = None
        self._pool: queue.Queue[FingerprintIndex] = queue.Queue()
        self._opened: list[FingerprintIndex] = []
        first = open_index(path, create=create, params=params, timeout=timeout, threads=True)
        self._opened.append(first)
        try:
            for _ in range(max(1, connections) - 1):
                self._opened.append(open_index(path, timeout=timeout, threads=True))
            if held is not None:
                self._hold_given(held)
            elif hold:
                self._hold(first)
            self._write = writes or threading.Lock()
            checkpointing = open_index(path, timeout=timeout, threads=True)
            self._checkpoints = _Checkpoints(checkpointing, self._write)
        except BaseException:
            for index in self._opened:
                index.close()
            raise
        for index in self._opened:
            index.leave_checkpoints(LOG_LIMIT)
            self._pool.put(index)
        self.bits = first.params.fixed_bits
        self._state = threading.Lock()
        self._replan_enabled = replan
        self._replanner: threading.Thread | None = None
        self._replanning: FingerprintIndex | None = None
        self._closed = False
        self._counted_at = time.monotonic()
        self.documents = first.count()
        self._replan_at = first.next_replan()
        if zh_extra_installed():
            # Loaded once here, the segmenter is found in sys.modules by every request.
            importlib.import_module(SEGMENTER_MODULE)
        self._maybe_replan()

    def _hold(self, first: FingerprintIndex) -> None:
        """Hold the index in memory for every connection, if it fits within ``memory``."""
        held = held_within(first, self.memory)
        if held is not None:
            self._hold_given(held)

    def _hold_given(self, held: Resident) -> None:
        """Hold ``held`` (read before the worker processes forked) for every connection."""
        self.held = held
        for index in self._opened:
            index.hold_fingerprints(held)

    def _let_go_if_outgrown(self) -> None:
        """Stop holding the index once it outgrows ``memory`` (queries then read rows)."""
        held = self.held
        if held is None or held.nbytes <= self.memory:
            return
        self.held = None
        for index in self._opened:
            index.store.resident = None
        LOG.warning(
            "the index is no longer held in memory: it has outgrown --memory %s",
            format_size(self.memory),
        )

    @contextmanager
    def _borrow(self) -> Iterator[FingerprintIndex]:
        """Lend a connection to the calling thread for the block."""
        index = self._pool.get()
        try:
            yield index
        finally:
            self._pool.put(index)

    # -- requests ----------------------------------------------------------------------

    def query(self, documents: Sequence[Incoming], threshold: float | None) -> list[Checked]:
        """Return the stored near-duplicates of each document."""
        with self._borrow() as index:
            found = index.search(documents, index.request_params(threshold))
            self._searched(index)
        return found

    def check_first(self, documents: Sequence[Incoming], threshold: float | None) -> FirstSearch:
        """Return a check-and-add's search outside the writers' lock (settled: the answer)."""
        with self._borrow() as index:
            first = index.search_first(documents, index.request_params(threshold))
            self._searched(index)
        return first

    def _searched(self, index: FingerprintIndex) -> None:
        """Keep the count and the keys' due mark after a search that stored nothing."""
        replan_at, counted = self._replan_at, None
        if self._replan_enabled:  # it may see other processes' writes only this way
            replan_at = index.next_replan()
            counted = self._recount(index)
        self._stored(0, replan_at, wrote=False, counted=counted)

    def _recount(self, index: FingerprintIndex) -> int | None:
        """Return the documents stored by any process, counted at most every few seconds.

        The held documents count them once a search reads them all; until the keys are
        planned, and when nothing is held, counting reads an index of the whole table.
        """
        now = time.monotonic()
        if now < self._counted_at + RECOUNT_SECONDS:
            return None
        self._counted_at = now
        return index.count()

    def add(self, documents: Sequence[Incoming]) -> dict[str, int]:
        """Add or replace documents; return the counts."""
        with self._borrow() as index:
            with self._write:
                counts = index.put(documents, index.params)
            wrote = counts["added"] + counts["updated"] > 0
            self._stored(counts["added"], index.next_replan(), wrote=wrote)
        return counts

    def check_and_add(
        self,
        documents: Sequence[Incoming],
        threshold: float | None,
        first: FirstSearch | None = None,
    ) -> list[Checked]:
        """Store each document only if nothing matches it; return what was found.

        ``first``: the search outside the lock, made already (:meth:`check_first`).
        """
        with self._borrow() as index:
            params = index.request_params(threshold)
            found = index.check_and_add(documents, params, exclusive=self._write, first=first)
            added = sum(1 for c in found if c.added)
            self._stored(added, index.next_replan(), wrote=added > 0)
        return found

    def stats(self) -> dict[str, Any]:
        """Return the documents stored and how the keys were chosen, JSON-ready."""
        with self._borrow() as index:
            documents = index.count()
            index.store.refresh_keys()
            keys = index.store.keys_summary()
            tables = len(index.tables.keys)
            replan_at = index.next_replan()  # (another worker may have planned them)
            settings = index.settings
            threshold = index.params.threshold
        with self._state:
            replanning = self._replanner is not None
        return {
            "documents": documents,
            "threshold": threshold,
            "settings": settings,
            "keys": keys,
            "tables": tables,
            "replan_at": replan_at,
            "replanning": replanning,
            "held_in_memory": self.held is not None,
        }

    # -- keys planned again ------------------------------------------------------------

    def _stored(
        self, added: int, replan_at: int | None, *, wrote: bool, counted: int | None = None
    ) -> None:
        """Count documents this process stored; plan the keys again once they are due.

        Also after a query (nothing stored): the held documents it read include what
        other processes stored.

        Args:
            added: Documents just stored.
            replan_at: When the keys the write saw are due (the first write chooses them).
            wrote: Something was written: the log's copier has work.
            counted: Documents stored by every process, when just counted.
        """
        if wrote:
            self._checkpoints.wrote()
        with self._state:
            self.documents += added
            held = self.held
            if held is not None:  # counts what other processes stored too
                self.documents = max(self.documents, held.size)
            if counted is not None:
                self.documents = counted
            self._replan_at = replan_at
            self._let_go_if_outgrown()  # (a check-and-add searched: held ones were read)
        self._maybe_replan()

    def _maybe_replan(self) -> None:
        with self._state:
            due = self._replan_at is not None and self.documents >= self._replan_at
            if not (due and self._replan_enabled) or self._replanner or self._closed:
                return
            try:
                self._replanning = open_index(self.path, timeout=self.timeout, threads=True)
            except SimdupError as exc:  # the write that got here succeeded: say so, plan later
                LOG.warning("keys not planned again: %s", exc)
                return
            self._replanner = threading.Thread(
                target=self._replan, name="simdup-replan", daemon=True
            )
            self._replanner.start()

    def _replan(self) -> None:
        """Plan the keys again (background thread); an interrupted plan keeps the old keys."""
        index = self._replanning
        assert index is not None
        try:
            result = index.optimize()
            documents = index.count()
        except Exception as exc:  # interrupted at shutdown, or the index cannot be written
            LOG.warning("keys not planned again: %s", str(exc).splitlines()[0] if str(exc) else exc)
            result, documents = None, None
        with self._state:
            if result is not None and documents is not None:
                self._replan_at = result["next"]
                self.documents = documents
            else:
                self._replan_enabled = False
            self._replanning = None
            self._replanner = None
        index.close()

    def wait_for_replan(self) -> None:
        """Return when no plan runs (for tests and the benchmark)."""
        with self._state:
            thread = self._replanner
        if thread is not None:
            thread.join()

    def close(self) -> None:
        """Stop a running plan (its transaction rolls back) and close every connection."""
        with self._state:
            self._closed = True
            thread, replanning = self._replanner, self._replanning
        if thread is not None and replanning is not None:
            replanning.interrupt()
            thread.join()
        self._checkpoints.close()
        for index in self._opened:
            index.close()
