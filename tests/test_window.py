"""Results taken in submission order from a bounded window of futures."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from simdup.window import Stream, in_order


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


def test_a_stream_holds_its_limit_waiting_and_its_maker_waits_for_room() -> None:
    stream: Stream[bytes] = Stream(4, len)
    made: list[int] = []
    held: list[int] = []

    def make() -> None:
        for k in range(8):
            assert stream.put(bytes(2))
            made.append(k)
        stream.close()

    maker = threading.Thread(target=make)
    maker.start()
    # Two pieces of two bytes fill the limit: the third waits for the reader. (A slow
    # machine can only make the maker later here, never earlier.)
    maker.join(0.2)
    assert maker.is_alive()
    assert len(made) <= 2
    taken = []
    for piece in stream:
        taken.append(piece)
        held.append(len(made) - len(taken))
    maker.join()
    assert len(taken) == 8
    assert made == list(range(8))
    assert max(held) <= 2  # pieces made and not yet taken: never more than the limit


def test_a_piece_larger_than_the_limit_still_passes_alone() -> None:
    stream: Stream[bytes] = Stream(1, len)
    assert stream.put(bytes(10))
    stream.close()
    assert [len(p) for p in stream] == [10]


def test_an_abandoned_stream_releases_its_maker_and_an_error_reaches_the_reader() -> None:
    stream: Stream[bytes] = Stream(1, len)
    answers: list[bool] = []

    def make() -> None:
        answers.append(stream.put(b"a"))
        answers.append(stream.put(b"b"))  # waits: the reader takes nothing

    maker = threading.Thread(target=make)
    maker.start()
    maker.join(0.1)
    stream.abandon()
    maker.join()
    assert answers == [True, False]

    failing: Stream[bytes] = Stream(8, len)
    failing.put(b"x")
    failing.close(ValueError("bad table"))
    pieces = iter(failing)
    assert next(pieces) == b"x"
    with pytest.raises(ValueError, match="bad table"):
        next(pieces)
