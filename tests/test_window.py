"""Results taken in submission order from a bounded window of futures."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from simdup.window import in_order


@pytest.mark.parametrize("ahead", [1, 3])
def test_results_come_in_order_and_the_items_run_at_most_ahead_plus_one_in_front(
    ahead: int,
) -> None:
    read: list[int] = []

    def items() -> Iterator[int]:
        for k in range(10):
            read.append(k)
            yield k

    # Each even item finishes only after the odd one that follows it: out of order.
    finished = [threading.Event() for _ in range(10)]

    def work(k: int) -> int:
        if k % 2 == 0:
            finished[k + 1].wait()
        finished[k].set()
        return k * k

    with ThreadPoolExecutor(4) as pool:
        taken = []
        for result in in_order(lambda k: pool.submit(work, k), items(), ahead):
            taken.append(result)
            assert len(read) <= min(10, len(taken) + ahead)
    assert taken == [k * k for k in range(10)]


def test_each_result_is_taken_before_the_next_item_without_a_window() -> None:
    events: list[str] = []

    def submit(k: int) -> Future[int]:
        events.append(f"submit {k}")
        done: Future[int] = Future()
        done.set_result(k)
        return done

    for k in in_order(submit, range(3), ahead=0):
        events.append(f"take {k}")
    assert events == ["submit 0", "take 0", "submit 1", "take 1", "submit 2", "take 2"]
