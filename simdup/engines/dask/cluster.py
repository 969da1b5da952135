"""Reach a Dask scheduler, or start a local cluster, and fail with one line when it cannot.

A scan on a cluster should stop quickly and clearly when the scheduler's address is wrong,
and a local cluster started for one scan must be closed whatever happens, Ctrl-C included.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from simdup.allocator import MAP_APART
from simdup.engines.pool import check_jobs
from simdup.errors import SimdupError

if TYPE_CHECKING:
    from distributed import Client


#: Seconds to wait for a scheduler before giving up with a message.
CONNECT_TIMEOUT = 5.0


class SchedulerError(SimdupError):
    """The Dask scheduler cannot be reached, or the Dask extra is not installed."""


def import_distributed() -> Any:
    """Import :mod:`distributed`, or raise a message saying how to install it."""
    try:
        import distributed  # optional: the dask extra
    except ImportError:
        raise SchedulerError(
            "the dask engine needs Dask; install it with: pip install 'simdup[dask]'"
        ) from None
    return distributed


def worker_memory(budget: int, workers: int) -> int:
    """Return the memory limit of each worker of a local cluster run within ``budget``.

    The workers and this process share one machine and one budget: each worker gets an
    equal share, and this process (the plan, the fingerprints, the report) one more.

    >>> worker_memory(3 << 30, 2) == 1 << 30
    True
    """
    return budget // (workers + 1)


#: How a local cluster's workers keep to their share of the budget: Dask moves the
#: results they hold to disk past 60% of it (its own spilling, to ``--tmp-dir``). They
#: neither pause nor are killed near the limit: a worker that paused while its own
#: baseline filled its share would wait for ever, and a killed one loses its work.
#:
#: Dask starts its workers with ``MALLOC_TRIM_THRESHOLD_`` set, so that glibc gives back
#: freed memory; setting it also fixes glibc's size from which arrays are mapped apart at
#: 128 KiB, and every array from there up is then mapped and paged in afresh (a numpy
#: loop over arrays of 200,000 numbers took 1.5 to 1.9 times as long). The workers map
#: arrays apart from 4 MiB instead (:data:`simdup.allocator.MAP_APART`), and still trim.
LOCAL_WORKER_MEMORY = {
    "distributed.worker.memory.pause": False,
    "distributed.worker.memory.terminate": False,
    "distributed.nanny.pre-spawn-environ.MALLOC_MMAP_THRESHOLD_": MAP_APART,
}


@contextlib.contextmanager
def connect(
    scheduler: str | None = None,
    *,
    jobs: int = 0,
    timeout: float = CONNECT_TIMEOUT,
    memory: int | None = None,
    tmp_dir: str | None = None,
) -> Iterator[Client]:
    """Yield a client of the scheduler at ``scheduler``, or of a local cluster.

    Without an address a :class:`distributed.LocalCluster` of ``jobs`` worker processes
    (0: one per core), one thread each, is started and closed on leaving, also when the
    scan is interrupted. Its workers share the ``memory`` budget (default:
    :func:`~simdup.search.plan.memory.default_memory`) with this process
    (:func:`worker_memory`), and spill what they hold past their share under ``tmp_dir``
    (default: the system's temporary directory). A cluster reached at an address keeps
    the limits it was started with.

    Raises:
        SchedulerError: when the scheduler cannot be reached within ``timeout`` seconds.
    """
    distributed = import_distributed()
    if scheduler:
        _probe(distributed, scheduler, timeout)
        try:
            client = distributed.Client(scheduler, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise _unreachable(scheduler, exc) from None
        try:
            yield client
        finally:
            client.close()
        return
    import dask

    from simdup.search.plan.memory import default_memory

    workers = check_jobs(jobs)
    budget = default_memory() if memory is None else memory
    with _interrupt_deferred() as interrupted, dask.config.set(LOCAL_WORKER_MEMORY):
        try:
            cluster = distributed.LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",  # a free port: two clusters never clash
                silence_logs=logging.ERROR,
                memory_limit=worker_memory(budget, workers),
                local_directory=tmp_dir,
            )
        except RuntimeError:
            # A terminal's Ctrl-C also reaches the starting workers, which then fail
            # the start; the cluster has closed what it started.
            if interrupted:
                raise KeyboardInterrupt from None
            raise
    try:
        if interrupted:
            raise KeyboardInterrupt
        with distributed.Client(cluster, set_as_default=False) as client:
            yield client
    finally:
        cluster.close()


@contextlib.contextmanager
def _interrupt_deferred() -> Iterator[list[int]]:
    """Hold Ctrl-C back while a local cluster starts; yield the interrupts received.

    Interrupted half-way, a starting cluster cannot be closed cleanly; once started (or
    failed), it can, and the caller then closes it and stops. Outside the main thread
    signals cannot be handled, and nothing is deferred.
    """
    if threading.current_thread() is not threading.main_thread():
        yield []
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda number, frame: received.append(number))
    try:
        yield received
    finally:
        signal.signal(signal.SIGINT, previous)


def _unreachable(scheduler: str, exc: BaseException | str) -> SchedulerError:
    """Return the one-line error for a scheduler that cannot be used."""
    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return SchedulerError(
        f"cannot reach the Dask scheduler at {scheduler!r} ({reason}); check the address, "
        "and that `dask scheduler` runs there"
    )


def _probe(distributed: Any, scheduler: str, timeout: float) -> None:
    """Open and close one connection to ``scheduler``, or raise :class:`SchedulerError`.

    Done apart from :class:`distributed.Client`, whose failed start leaves a half-made
    client that waits for its own timeout again when collected: a malformed address, a
    closed port or a server that does not speak Dask's protocol fails here, once, within
    ``timeout`` seconds.
    """

    async def attempt() -> None:
        comm = await distributed.comm.connect(scheduler, timeout=timeout)
        await comm.close()

    try:
        asyncio.run(asyncio.wait_for(attempt(), timeout + 1.0))
    # A server speaking another protocol answers with bytes read as a frame length of
    # exabytes: the allocation fails with MemoryError, before anything is allocated.
    except MemoryError:
        raise _unreachable(scheduler, "it answers, but not as a Dask scheduler") from None
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        raise _unreachable(scheduler, exc) from None
