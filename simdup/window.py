"""Results of work running elsewhere, taken in submission order from a bounded window.

Work submitted to a pool (threads or processes) finishes in any order; taking results in
the order it was submitted keeps the output independent of how many workers ran, and
bounding how far the submissions run ahead of the results taken keeps few of them
waiting in memory.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from typing import TypeVar

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
