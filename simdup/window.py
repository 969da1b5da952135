"""Results of work running elsewhere, taken in submission order from a bounded window.

Work submitted to a pool (threads or processes) finishes in any order; taking results in
the order it was submitted keeps the output independent of how many workers ran, and
bounding how far the submissions run ahead of the results taken keeps few of them
waiting in memory.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def in_order(submit: Callable[[T], Future[R]], items: Iterable[T], ahead: int) -> Iterator[R]:
    """Yield the result of ``submit(item)`` for each item, in the order of ``items``.

    Once more than ``ahead`` futures wait, the oldest one's result is taken before the
    next item is submitted (``ahead=0``: each result is taken as soon as it is submitted);
    at the end every remaining result is taken in order. ``items`` is read lazily, so a
    generator of work runs at most ``ahead + 1`` items ahead of its results.

    >>> from concurrent.futures import ThreadPoolExecutor
    >>> with ThreadPoolExecutor(2) as pool:
    ...     list(in_order(lambda x: pool.submit(pow, x, 2), range(5), ahead=3))
    [0, 1, 4, 9, 16]
    """
    waiting: deque[Future[R]] = deque()
    for item in items:
        waiting.append(submit(item))
        while len(waiting) > ahead:
            yield waiting.popleft().result()
    while waiting:
        yield waiting.popleft().result()


class Stream(Generic[T]):
    """Pieces one thread makes and another reads in order, at most ``limit`` bytes waiting.

    The maker blocks while the pieces waiting would pass ``limit`` (one piece always
    fits, however large), so work done ahead of its reader holds bounded memory. The
    reader gives up with :meth:`abandon`: a blocked maker is released and told to stop.
    An error in the maker reaches the reader where its pieces end.
    """

    def __init__(self, limit: int, size: Callable[[T], int]) -> None:
        self._limit, self._size = limit, size
        self._pieces: deque[T] = deque()
        self._held = 0
        self._done = False
        self._abandoned = False
        self._error: BaseException | None = None
        self._changed = threading.Condition()

    def put(self, piece: T) -> bool:
        """Add a piece, once there is room; return False when the reader is gone."""
        size = self._size(piece)
        with self._changed:
            while self._held and self._held + size > self._limit and not self._abandoned:
                self._changed.wait()
            if self._abandoned:
                return False
            self._pieces.append(piece)
            self._held += size
            self._changed.notify_all()
            return True

    def close(self, error: BaseException | None = None) -> None:
        """Tell the reader no piece follows (``error``: raise it there)."""
        with self._changed:
            self._done, self._error = True, error
            self._changed.notify_all()

    def abandon(self) -> None:
        """Drop the waiting pieces and release the maker (:meth:`put` returns False)."""
        with self._changed:
            self._abandoned = True
            self._pieces.clear()
            self._held = 0
            self._changed.notify_all()

    def __iter__(self) -> Iterator[T]:
        while True:
            with self._changed:
                while not self._pieces and not self._done:
                    self._changed.wait()
                if not self._pieces:
                    if self._error is not None:
                        raise self._error
                    return
                piece = self._pieces.popleft()
                self._held -= self._size(piece)
                self._changed.notify_all()
            yield piece
