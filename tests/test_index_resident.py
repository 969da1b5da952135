"""Fingerprints held in memory: the same answers as the key lookups, whoever writes."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_index_keys import documents, edited_queries

from simdup.index import (
    FingerprintIndex,
    IndexFileError,
    handle,
    ingest,
    open_index,
    resident,
    screen,
)
from simdup.index.ingest import Checked, Incoming
from simdup.index.keys import PLAN_MINIMUM
from simdup.index.packing import decode_name
from simdup.index.query import query_prints
from simdup.index.resident import Resident, held_size
from simdup.index.schema import CHANGES_KEPT
from simdup.model import Document
from simdup.params import Params


def answers(found: list[Checked]) -> list[tuple[str, list[tuple[str, int, float | None]]]]:
    """Return what a search answered, comparable with ``==`` (cosines to the last bit)."""
    return [(c.name, [(m.b, m.hamming, m.cosine) for m in c.matches]) for c in found]


def incoming(docs: list[Document]) -> list[Incoming]:
    return [Incoming(d.name, d.text) for d in docs]


@pytest.fixture(scope="module")
def corpus() -> list[Document]:
    return documents(PLAN_MINIMUM + 200, seed=23)


@pytest.fixture(scope="module")
def planned_db(tmp_path_factory: pytest.TempPathFactory, corpus: list[Document]) -> str:
    path = str(tmp_path_factory.mktemp("resident") / "planned.db")
    with open_index(path, create=True) as index:
        index.add_documents(corpus)
    return path


@contextmanager
def connections(
    folder: Path, source_db: str
) -> Iterator[tuple[FingerprintIndex, FingerprintIndex]]:
    """Two connections to a copy of an index: one looks up keys, one holds prints."""
    path = str(folder / "copy.db")
    source, target = sqlite3.connect(source_db), sqlite3.connect(path)
    source.backup(target)
    source.close()
    target.close()
    with open_index(path, threads=True) as lookups, open_index(path, threads=True) as held:
        held.hold_fingerprints()
        yield lookups, held


@pytest.fixture
def pair(tmp_path: Path, planned_db: str) -> Iterator[tuple[FingerprintIndex, FingerprintIndex]]:
    with connections(tmp_path, planned_db) as both:
        yield both


def test_held_fingerprints_answer_as_the_lookups(
    pair: tuple[FingerprintIndex, FingerprintIndex], corpus: list[Document]
) -> None:
    lookups, held = pair
    assert lookups.keys_info["source"] == "planned"
    queries = incoming(edited_queries(corpus, 60, seed=8))
    expected = answers(lookups.search(queries, lookups.params))
    assert answers(held.search(queries, held.params)) == expected
    # Nearly every query is an edit of a stored document: the comparison has matches.
    assert sum(1 for _, matches in expected if matches) >= 50
    for threshold in (0.9, 0.95):
        params = held.request_params(threshold)
        assert answers(held.search(queries, params)) == answers(lookups.search(queries, params))
    documents = edited_queries(corpus, 30, seed=9)
    for report_all in (False, True):
        by_keys = lookups.query(documents, lookups.params, report_all=report_all)
        in_memory = held.query(documents, held.params, report_all=report_all)
        assert in_memory.pair_list() == by_keys.pair_list()
        assert in_memory.stats == by_keys.stats


@settings(max_examples=15, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["add", "update", "delete", "check"]), st.integers(0, 10**6)),
        min_size=1,
        max_size=8,
    )
)
def test_writes_by_another_connection_are_seen(
    tmp_path_factory: pytest.TempPathFactory,
    planned_db: str,
    corpus: list[Document],
    steps: list[tuple[str, int]],
) -> None:
    with connections(tmp_path_factory.mktemp("writes"), planned_db) as (lookups, held):
        _replay(lookups, held, corpus, steps)


def _replay(
    lookups: FingerprintIndex,
    held: FingerprintIndex,
    corpus: list[Document],
    steps: list[tuple[str, int]],
) -> None:
    """Write through ``lookups`` as ``steps`` say; after each, both must answer alike."""
    params = held.params
    fresh = documents(40, seed=31, prefix="fresh")
    for step, (what, k) in enumerate(steps):
        doc = corpus[k % len(corpus)]
        if what == "add":  # a new document, then a query that should find it
            new = fresh[k % len(fresh)]
            lookups.put([Incoming(f"{new.name}-{step}", new.text)], params)
        elif what == "update":  # a stored document's text replaced by another's
            other = fresh[k % len(fresh)]
            lookups.put([Incoming(doc.name, other.text)], params)
        elif what == "delete":
            lookups.remove([doc.name])
        else:  # a check-and-add through the held prints, after the other's writes
            near = [Incoming(f"c{step}", doc.text + " extra")]
            expected = answers(lookups.search(near, params))
            found = held.check_and_add(near, params)
            assert answers(found) == expected
            assert found[0].added == (not expected[0][1])
        queries = incoming(edited_queries(corpus, 10, seed=k % 1000)) + incoming(fresh[:5])
        assert answers(held.search(queries, params)) == answers(lookups.search(queries, params))


def test_updates_and_deletes_are_logged_and_the_log_is_bounded(
    pair: tuple[FingerprintIndex, FingerprintIndex], corpus: list[Document]
) -> None:
    lookups, _ = pair

    def logged() -> list[int]:
        return [d for (d,) in lookups.store.db.execute("SELECT document FROM changes ORDER BY seq")]

    def stored_id(name: str) -> int:
        row = lookups.store.db.execute("SELECT id FROM documents WHERE name = ?", (name.encode(),))
        return int(row.fetchone()[0])

    lookups.put([Incoming("brand-new", "some words that were never stored before")], lookups.params)
    lookups.put([Incoming(corpus[0].name, corpus[0].text)], lookups.params)  # unchanged
    assert logged() == []
    first, second, third = (stored_id(d.name) for d in corpus[:3])
    lookups.put([Incoming(corpus[0].name, "other words entirely here")], lookups.params)
    assert logged() == [first]
    lookups.remove([corpus[1].name, corpus[2].name])
    assert sorted(logged()) == sorted([first, second, third])
    lookups.optimize(force=True)  # new keys, the documents unchanged
    assert len(logged()) == 3
    with lookups.store.transaction():  # past the bound, the oldest entries go
        for _ in range(CHANGES_KEPT):
            lookups.store.db.execute("UPDATE documents SET fp0 = fp0 WHERE id = ?", (first,))
    assert len(logged()) <= CHANGES_KEPT + 1
    assert second not in logged()


def test_a_holder_further_behind_than_the_log_reads_all_again(
    pair: tuple[FingerprintIndex, FingerprintIndex], corpus: list[Document]
) -> None:
    lookups, held = pair
    queries = incoming(edited_queries(corpus, 20, seed=3))
    held.search(queries, held.params)  # the prints are held now
    others = documents(5, seed=77, prefix="other")
    replaced = [Incoming(d.name, o.text) for d, o in zip(corpus[:5], others, strict=True)]
    lookups.put(replaced, held.params)
    queries += incoming(others)  # found, under the names of the documents they replaced
    with lookups.store.transaction():  # then enough other changes that the log drops those
        for _ in range(CHANGES_KEPT):
            lookups.store.db.execute(
                "UPDATE documents SET fp0 = fp0 WHERE name = ?", (corpus[7].name.encode(),)
            )
    lookups.remove([corpus[6].name])
    assert answers(held.search(queries, held.params)) == answers(
        lookups.search(queries, lookups.params)
    )


def test_an_index_made_before_gets_its_log(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    corpus = documents(30)
    with open_index(path, create=True) as index:
        index.add_documents(corpus)
    connection = sqlite3.connect(path)
    connection.execute("DROP TRIGGER documents_updated")
    connection.execute("DROP TRIGGER documents_deleted")
    connection.execute("DROP TABLE changes")
    connection.commit()
    connection.close()
    with open_index(path) as index:
        queries = incoming(edited_queries(corpus, 10))
        before = answers(index.search(queries, index.params))
        index.hold_fingerprints()
        assert answers(index.search(queries, index.params)) == before
        index.put([Incoming(corpus[3].name, "replaced by different words")], index.params)
        names = [m.b for c in index.search(incoming([corpus[3]]), index.params) for m in c.matches]
        assert corpus[3].name not in names


def test_views_handed_out_do_not_change(tmp_path: Path) -> None:
    corpus = documents(50)
    with open_index(str(tmp_path / "a.db"), create=True) as index:
        index.put(incoming(corpus[:20]), index.params)
        resident = index.hold_fingerprints()
        with index.store.snapshot():
            first = resident.view(index.store)
        kept = [np.copy(getattr(first, f.name)) for f in fields(first)]
        for k in range(20, 50):  # one at a time: the arrays grow in place and are replaced
            index.put(incoming(corpus[k : k + 1]), index.params)
            with index.store.snapshot():
                now = resident.view(index.store)
            assert len(now.ids) == k + 1
        later = [np.copy(getattr(now, f.name)) for f in fields(now)]
        index.put([Incoming(corpus[3].name, "a new text for this one")], index.params)
        index.remove([corpus[4].name])
        with index.store.snapshot():
            assert len(resident.view(index.store).ids) == 49
        for f, before in zip(fields(now), later, strict=True):  # updated and deleted: copies
            assert np.array_equal(getattr(now, f.name), before)
        for f, before in zip(fields(first), kept, strict=True):
            assert np.array_equal(getattr(first, f.name), before)
        # Every held row has the weights the index stores.
        with index.store.snapshot():
            now = resident.view(index.store)
        names, matrix, _, _ = index.fingerprinted()
        assert matrix is not None
        assert names == [d.name for d in corpus if d.name != corpus[4].name]  # ids in name order
        for r in range(len(now.ids)):
            start, end = int(now.starts[r]), int(now.starts[r] + now.lengths[r])
            lo, hi = int(matrix.indptr[r]), int(matrix.indptr[r + 1])
            assert bool(now.vector[r])
            assert np.array_equal(now.weights[start:end].astype(np.float64), matrix.data[lo:hi])
            # ... and its squared norm summed in row order (a copy then scores exactly 1.0).
            square = 0.0
            for weight in matrix.data[lo:hi].tolist():
                square += weight * weight
            assert now.squares[r] == square
            # ... and its filter the bits of its features.
            bits = np.unpackbits(now.filters[r], bitorder="little")
            held_bits = screen.bit_positions(now.feature_ids[start:end])
            assert np.flatnonzero(bits).tolist() == sorted(set(held_bits.tolist()))
        assert isinstance(resident, Resident)


def test_the_memory_planned_for_holding_takes_the_widest_stored_weights(
    tmp_path: Path, planned_db: str
) -> None:
    """One count past 65,535 widens every held weight to four bytes; the plan says so."""
    with connections(tmp_path, planned_db) as (index, _):
        for wide in (False, True):
            if wide:  # stored after narrow ones: the first document's width is one byte
                index.put([Incoming("wide", "word " * 70_000 + "other")], index.params)
            _, planned = held_size(index.store)
            with open_index(index.path, threads=True) as fresh:
                held = fresh.hold_fingerprints()
                with fresh.store.snapshot():
                    weights = held.view(fresh.store).weights
                assert weights.dtype.itemsize == (4 if wide else 1)
                assert abs(planned - held.nbytes) <= 0.02 * held.nbytes


def test_wide_fingerprints_held_answer_as_the_lookups(
    tmp_path: Path, corpus: list[Document]
) -> None:
    path = str(tmp_path / "wide.db")
    with open_index(path, create=True, params=Params(bits=128)) as index:
        index.add_documents(corpus)
        assert index.words == 2
        assert index.keys_info["max_hamming"] is not None  # planned: the held path is taken
    (tmp_path / "copy").mkdir()
    with connections(tmp_path / "copy", path) as (lookups, held):
        queries = incoming(edited_queries(corpus, 40, seed=4))
        expected = answers(lookups.search(queries, lookups.params))
        assert answers(held.search(queries, held.params)) == expected
        assert sum(1 for _, matches in expected if matches) >= 30


def test_a_batch_of_queries_holds_the_index_and_answers_as_the_lookups(
    tmp_path: Path, planned_db: str, corpus: list[Document], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch for which holding pays holds the index first: the same result."""
    documents = edited_queries(corpus, 30, seed=11)
    monkeypatch.setattr(handle, "MIN_HOLD_QUERIES", 30)
    with connections(tmp_path, planned_db) as (lookups, _):
        monkeypatch.setattr(handle, "hold_pays", lambda queries, stored: False)
        by_keys = lookups.query(documents, lookups.params)
        assert lookups.store.resident is None
        monkeypatch.setattr(handle, "hold_pays", lambda queries, stored: True)
        held = lookups.query(documents, lookups.params)
        assert lookups.store.resident is not None
        assert held.pair_list() == by_keys.pair_list()
        assert held.stats == by_keys.stats
        assert len(by_keys.pair_list()) >= 20


def test_an_index_that_cannot_be_held_is_queried_by_its_keys(
    tmp_path: Path, planned_db: str, corpus: list[Document], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Too large for the budget, or a file this process may not write: key lookups."""
    documents = edited_queries(corpus, 30, seed=12)
    monkeypatch.setattr(handle, "MIN_HOLD_QUERIES", 1)
    monkeypatch.setattr(handle, "hold_pays", lambda queries, stored: True)
    with connections(tmp_path, planned_db) as (lookups, _):
        monkeypatch.setattr("simdup.search.plan.memory.default_memory", lambda: 1000)
        small = lookups.query(documents, lookups.params)
        assert lookups.store.resident is None
        monkeypatch.undo()
        monkeypatch.setattr(handle, "MIN_HOLD_QUERIES", 1)
        monkeypatch.setattr(handle, "hold_pays", lambda queries, stored: True)

        def read_only(self: FingerprintIndex, resident: Resident | None = None) -> Resident:
            raise IndexFileError("attempt to write a readonly database")

        monkeypatch.setattr(FingerprintIndex, "hold_fingerprints", read_only)
        unwritable = lookups.query(documents, lookups.params)
        assert lookups.store.resident is None
        assert unwritable.pair_list() == small.pair_list()
        assert len(small.pair_list()) >= 20


def test_holding_pays_from_more_queries_the_larger_the_index() -> None:
    """The break-even of the measured costs: about 160 queries at 1,000,000 documents."""
    even = [
        next(q for q in range(1, 10**5) if handle.hold_pays(q, stored))
        for stored in (100_000, 1_000_000, 4_000_000, 10_000_000)
    ]
    assert even == sorted(even)
    assert 50 <= even[0] <= 120  # measured: 1.1 s to hold against 16 - 2.1 ms a query
    assert 100 <= even[1] <= 200  # measured: 7.1 s against 48 - 3.4 ms
    assert all(handle.hold_pays(q + 1, 1_000_000) for q in range(even[1], even[1] + 50))


class _Waited:
    """A writers' lock that tells when a caller starts waiting for it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.waiting = threading.Event()

    def __enter__(self) -> None:
        self.waiting.set()
        self.lock.acquire()

    def __exit__(self, *_: object) -> None:
        self.lock.release()


@pytest.mark.parametrize("between", ["nothing", "add", "update", "optimize"])
def test_a_check_and_add_sees_writes_made_after_its_first_search(
    pair: tuple[FingerprintIndex, FingerprintIndex],
    corpus: list[Document],
    monkeypatch: pytest.MonkeyPatch,
    between: str,
) -> None:
    """Writes between a check-and-add's search and its write lock are seen.

    The search inside the lock reads only the documents stored since the first one when
    documents were only added since; after an update or new keys it reads them all again.
    """
    lookups, held = pair
    params = held.params
    query = documents(1, seed=91, prefix="query")[0]
    near = query.text + " extra"
    searched_after: list[int | None] = []
    search = query_prints

    def spied(*args: Any, after: int | None = None, **kwargs: Any) -> Any:
        searched_after.append(after)
        return search(*args, after=after, **kwargs)

    monkeypatch.setattr(ingest, "query_prints", spied)
    (last_id,) = lookups.store.db.execute("SELECT max(id) FROM documents").fetchone()
    writers = _Waited()
    found: list[Checked] = []
    caller = threading.Thread(
        target=lambda: found.extend(
            held.check_and_add([Incoming("query", query.text)], params, exclusive=writers)
        )
    )
    writers.lock.acquire()  # another writer holds the lock
    try:
        caller.start()
        assert writers.waiting.wait(timeout=120)  # searched once, found nothing
        if between == "add":
            lookups.put([Incoming("twin", near)], params)
        elif between == "update":  # an old document now says what the query says
            lookups.put([Incoming(corpus[0].name, near)], params)
        elif between == "optimize":
            lookups.optimize(force=True)
    finally:
        writers.lock.release()
        caller.join()
    inside = searched_after[1:]
    expected = answers(lookups.search([Incoming("query", query.text)], params))
    assert answers(found) == expected
    assert found[0].added is (between in ("nothing", "optimize"))
    assert [m.b for m in found[0].matches] == {
        "nothing": [], "add": ["twin"], "update": [corpus[0].name], "optimize": []
    }[between]  # fmt: skip
    only_since = between in ("nothing", "add")
    assert searched_after[0] is None
    assert inside == [last_id if only_since else None]


def test_a_search_after_an_id_finds_what_the_full_search_finds_above_it(
    pair: tuple[FingerprintIndex, FingerprintIndex], corpus: list[Document]
) -> None:
    """Held or by keys, a search after an id is the full search without the lower ids."""
    queries = incoming(edited_queries(corpus, 40, seed=12))
    for index in pair:
        store, params = index.store, index.params
        rows = store.db.execute("SELECT id, name FROM documents")
        ids = {decode_name(name): i for i, name in rows}
        last = sorted(ids.values())[len(ids) // 2]
        corpora = ingest._corpora(queries, params)
        with store.snapshot():
            whole = ingest._search(store, queries, params, corpora)
            above = ingest._search(store, queries, params, corpora, after=last)
        expected = [
            (q.name, [(m.b, m.hamming, m.cosine) for m in whole[q.name].matches if ids[m.b] > last])
            for q in queries
        ]
        assert answers([above[q.name] for q in queries]) == expected
        assert sum(len(m) for _, m in expected) >= 10  # matches on both sides of the cut
        assert sum(len(whole[q.name].matches) for q in queries) > sum(len(m) for _, m in expected)


def _advised_huge(address: int) -> bool:
    """Tell whether the mapping holding ``address`` was advised to use huge pages."""
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and not head.endswith(":"):
            lo, hi = (int(x, 16) for x in head.split("-"))
            inside = lo <= address < hi
        elif inside and line.startswith("VmFlags:"):
            return "hg" in line.split()[1:]
    return False


@pytest.mark.skipif(
    not Path("/sys/kernel/mm/transparent_hugepage").exists(), reason="a kernel with huge pages"
)
def test_large_held_arrays_ask_for_huge_pages_and_small_ones_do_not() -> None:
    large = resident._held_array((resident.HUGE_FROM // 8 + 1, 1), np.dtype(np.uint64))
    large[:] = 7  # writable, and its own pages
    assert large.shape == (resident.HUGE_FROM // 8 + 1, 1)
    assert large.dtype == np.uint64
    assert int(large.sum()) == 7 * len(large)
    assert _advised_huge(large.ctypes.data)
    small = resident._held_array((1000,), np.dtype(np.uint32))
    assert small.shape == (1000,)
    assert small.base is None  # numpy's own memory (the heap's advice is numpy's to give)
