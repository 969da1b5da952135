"""Worker processes for the local engine: how many, how they start, and ordered results.

Work is cut into chunks by a fixed size, never by the number of workers, and results are
taken in chunk order from a bounded window of futures, so the output never depends on
how many workers ran and few results wait in memory. ``multiprocessing`` loads only when
workers start: a run that needs none never pays for it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from simdup.errors import ParameterError

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

R = TypeVar("R")


def check_jobs(jobs: int) -> int:
    """Return the worker count for ``jobs`` (0 = every core), or raise naming the value."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 0:
        raise ParameterError(f"jobs must be an integer >= 0 (0 = all cores), got {jobs!r}")
    return jobs or (os.cpu_count() or 1)


def start_method() -> str:
    """Return how to start workers: ``fork`` where it is cheap and quiet, else ``spawn``.

    Forking shares the already imported modules (no start-up cost) but is unsafe once
    other threads run, which Python 3.12+ warns about (numpy's BLAS runs threads); a
    spawned worker starts a fresh interpreter, and like any ``multiprocessing`` program
    a script using it needs the ``if __name__ == "__main__":`` guard.
    """
    import multiprocessing

    if sys.version_info < (3, 12) and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return "spawn"


#: What the workers of a forked pool inherit from their parent (set while the pool runs):
#: the texts being counted, or the matrix and sign words being fingerprinted.
_INHERITED: Any = None


def inherited() -> Any:
    """Return what a forked worker inherited from :func:`worker_pool` (None if spawned)."""
    return _INHERITED


@contextlib.contextmanager
def worker_pool(workers: int, method: str, inherited: object) -> Iterator[ProcessPoolExecutor]:
    """Run a process pool whose forked workers find ``inherited`` in :data:`_INHERITED`."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    global _INHERITED
    _INHERITED = inherited if method == "fork" else None
    try:
        context = multiprocessing.get_context(method)
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            yield pool
    finally:
        _INHERITED = None


def chunk_bounds(count: int, size: int, start: int = 0) -> list[tuple[int, int]]:
    """Return ``(lo, hi)`` of consecutive chunks of ``size`` items from ``start`` to ``count``.

    >>> chunk_bounds(5, 2), chunk_bounds(5, 2, start=1)
    ([(0, 2), (2, 4), (4, 5)], [(1, 3), (3, 5)])
    """
    size = max(1, size)
    return [(lo, min(lo + size, count)) for lo in range(start, count, size)]


def ordered_map(
    function: Callable[[Sequence[Any]], R],
    items: Sequence[Any],
    bounds: Sequence[tuple[int, int]],
    jobs: int,
    *,
    here: int = 0,
    ahead: int | None = None,
) -> Iterator[R]:
    """Yield ``function(items[lo:hi])`` for each of ``bounds`` in order, over processes.

    Forked workers inherit ``items`` and are sent only the bounds; spawned ones are sent
    their slice, so ``function`` must be a module-level function (or a
    :func:`functools.partial` of one). Results are taken in order from a bounded window of
    chunks in flight, so few wait in memory. With one job, or no chunk for a second
    process to work on, the work stays in this process.

    Args:
        function: The work on one chunk.
        items: What the chunks are cut from.
        bounds: ``(lo, hi)`` of each chunk, in the order results are yielded.
        jobs: Worker processes (0: every core).
        here: Work on this many leading chunks in this process while spawned workers
            start on the others (their start then costs no time). Forked workers start
            at once, and would wait idle for the chunks this process sends while it
            works: they are given every chunk.
        ahead: Chunks in flight beyond the one awaited (default: two per worker, less
            one); their results wait in memory while an earlier chunk is worked on.
    """
    jobs = check_jobs(jobs)
    if here and jobs > 1 and start_method() == "fork":
        here = 0
    workers = min(jobs, len(bounds) - here)
    if jobs == 1 or workers < (1 if here else 2):  # else one process does it sooner
        yield from (function(items[lo:hi]) for lo, hi in bounds)
        return
    from simdup.window import in_order

    method = start_method()
    with worker_pool(workers, method, items) as pool:

        def submit(bound: tuple[int, int]) -> Future[R]:
            lo, hi = bound
            if method == "fork":
                return pool.submit(_call_forked, function, lo, hi)
            return pool.submit(function, items[lo:hi])

        ahead = 2 * workers - 1 if ahead is None else max(1, ahead)
        started = deque(submit(bound) for bound in bounds[here : here + ahead + 1])
        yield from (function(items[lo:hi]) for lo, hi in bounds[:here])

        def take(bound: tuple[int, int]) -> Future[R]:
            """The future of a chunk: submitted above while this process worked, or now."""
            return started.popleft() if started else submit(bound)

        yield from in_order(take, bounds[here:], ahead=ahead)


def _call_forked(function: Callable[[Sequence[Any]], R], lo: int, hi: int) -> R:
    """Apply ``function`` to items ``lo:hi`` inherited from the parent process."""
    return function(_INHERITED[lo:hi])
