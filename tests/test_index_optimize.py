"""Index keys planned again once the corpus outgrew them; requests one at a time."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from test_index_keys import documents, edited_queries

from simdup.cli import cli
from simdup.engines.local.fingerprinting import fingerprint_documents
from simdup.errors import ParameterError
from simdup.fingerprints.simhash import to_hex, words_to_int
from simdup.index import FingerprintIndex, keys, open_index, same_tables
from simdup.index import optimize as optimizing
from simdup.index.ingest import Incoming
from simdup.index.keys import PLAN_MINIMUM, REPLAN_GROWTH, replan_at, replan_due
from simdup.model import Document
from simdup.params import Params


def small_first_add(db: Path, corpus: list[Document], first: int = 100) -> FingerprintIndex:
    """Return an index whose keys were chosen on a first add of ``first`` documents."""
    index = open_index(str(db), create=True, params=Params(weighting="log"))
    index.add_documents(corpus[:first])
    index.add_documents(corpus[first:])
    return index


def found(index: FingerprintIndex, queries: list[Document]) -> set[tuple[str, str]]:
    result = index.query(queries)
    return {(p.a, p.b) for p in result.pair_list()}


def test_the_due_count_follows_the_keys_record() -> None:
    params = Params()
    assert replan_at(params, {"source": "fallback"}) == PLAN_MINIMUM
    assert replan_at(params, {"source": "planned", "planned_on": 4000}) == REPLAN_GROWTH * 4000
    assert replan_at(params, {"source": "planned", "planned_on": 10}) == PLAN_MINIMUM
    assert replan_at(params, {"source": "pending"}) is None
    assert replan_at(params, {"source": "explicit"}) is None
    assert replan_at(Params(scheme="strict"), {"source": "fallback"}) is None
    assert not replan_due(params, {"source": "planned", "planned_on": 4000}, 15999)
    assert replan_due(params, {"source": "planned", "planned_on": 4000}, 16000)


def test_keys_planned_again_keep_every_document_and_find_the_edits(tmp_path: Path) -> None:
    corpus = documents(1400)
    queries = edited_queries(corpus, 40)
    with small_first_add(tmp_path / "a.db", corpus) as index:
        assert index.keys_info["source"] == "fallback"
        names, _, prints, _ = index.fingerprinted()
        before = found(index, queries)
        assert index.replan_due()
        done = index.optimize()
        assert done["replanned"] is True
        assert done["documents"] == 1400
        assert done["keys"]["source"] == "planned"
        assert done["keys"]["planned_on"] == 1400
        assert done["next"] == REPLAN_GROWTH * 1400
        assert index.keys_info == {**done["keys"], "warnings": index.keys_info["warnings"]}
        after_names, _, after_prints, _ = index.fingerprinted()
        assert after_names == names
        assert np.array_equal(after_prints, prints)
        after = found(index, queries)
        # Each edit finds the document it was made from, before and after.
        origins = {(q.name, f"doc{q.name[5:]}") for q in queries}
        assert origins & before <= after
        assert {pair for pair in origins if pair in after} == {p for p in origins if p in before}
        assert not index.replan_due()
        assert index.optimize()["replanned"] is False
        assert index.optimize(force=True)["replanned"] is True
        assert index.count() == 1400


def test_stored_keys_match_the_planned_tables_after_a_replan(tmp_path: Path) -> None:
    corpus = documents(1200)
    with small_first_add(tmp_path / "a.db", corpus) as index:
        index.optimize()
        store = index.store
        rows = store.db.execute(
            f"SELECT {', '.join(store.key_columns)}, {', '.join(store.fp_columns)} FROM documents"
        ).fetchall()
        keys = np.array([r[: len(store.key_columns)] for r in rows], dtype=np.int64)
        words = np.array([r[len(store.key_columns) :] for r in rows], dtype=np.int64)
        expected = store.keys(words.view(np.uint64))
        assert np.array_equal(keys, expected)
        indexes = {
            name
            for (name,) in store.db.execute("SELECT name FROM sqlite_master WHERE type='index'")
        }
        assert {f"documents_{c}" for c in store.key_columns} <= indexes


def test_another_connection_sees_the_new_keys(tmp_path: Path) -> None:
    corpus = documents(1200)
    queries = edited_queries(corpus, 20)
    db = tmp_path / "a.db"
    small_first_add(db, corpus).close()
    with open_index(str(db)) as reader, open_index(str(db)) as writer:
        old = reader.tables
        writer.optimize()
        assert reader.keys_info["source"] == "fallback"  # read again on its next use
        assert found(reader, queries) == found(writer, queries)
        assert reader.keys_info["source"] == "planned"
        assert reader.tables.description != old.description
        assert same_tables(reader.tables, writer.tables)


def test_an_interrupted_replan_keeps_the_old_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = documents(1200)
    queries = edited_queries(corpus, 20)
    with small_first_add(tmp_path / "a.db", corpus) as index:
        before = found(index, queries)
        keys = dict(index.keys_info)

        def broken(*args: Any) -> None:
            original(*args)
            raise KeyboardInterrupt

        original = optimizing._rewrite_keys
        monkeypatch.setattr(optimizing, "_rewrite_keys", broken)
        with pytest.raises(KeyboardInterrupt):
            index.optimize()
        assert index.keys_info == keys
        assert index.count() == 1200
        assert found(index, queries) == before
    with open_index(str(tmp_path / "a.db")) as again:
        assert again.keys_info == keys
        assert found(again, queries) == before


def test_explicit_keys_are_never_planned_again(tmp_path: Path) -> None:
    corpus = documents(1100)
    index = open_index(str(tmp_path / "a.db"), create=True, params=Params(max_distance=3))
    with index:
        index.add_documents(corpus)
        assert not index.replan_due()
        assert index.next_replan() is None
        done = index.optimize(force=True)
        assert done["replanned"] is False
        assert done["keys"]["source"] == "explicit"


def test_check_and_add_stores_one_of_two_near_duplicates(tmp_path: Path) -> None:
    corpus = documents(8)
    with open_index(str(tmp_path / "a.db"), create=True) as index:
        params = index.request_params(None)
        first = index.check_and_add(
            [Incoming("a", corpus[2].text), Incoming("b", corpus[2].text + " more")], params
        )
        assert [c.added for c in first] == [True, False]
        assert [m.b for m in first[1].matches] == ["a"]
        assert first[1].matches[0].cosine is not None
        again = index.check_and_add([Incoming("a", corpus[0].text)], params)
        assert again[0].added is False  # the id is stored already: never replaced here
        assert index.count() == 1
        empty = index.check_and_add([Incoming("c", "... !!!")], params)
        assert empty[0].skipped is not None
        assert empty[0].added is False


def test_a_first_search_made_beforehand_gives_the_same_check_and_add(tmp_path: Path) -> None:
    """The server searches first on its event loop, then stores in a thread."""
    corpus = documents(8)
    calls = [
        [Incoming("b", corpus[2].text + " more")],  # matches: settled outside the lock
        [Incoming("c", corpus[5].text), Incoming("d", corpus[5].text + " again")],
        [Incoming("e", "... !!!")],  # skipped: settled
    ]
    answers: dict[bool, list[Any]] = {}
    for made_first in (False, True):
        answers[made_first] = []
        with open_index(str(tmp_path / f"{made_first}.db"), create=True) as index:
            params = index.request_params(None)
            index.put([Incoming("a", corpus[2].text)], params)
            for call in calls:
                first = index.search_first(call, params) if made_first else None
                if first is not None:
                    answers[made_first].append(first.settled)
                found = index.check_and_add(call, params, first=first)
                named = [(c.name, c.added, [m.b for m in c.matches]) for c in found]
                answers[made_first].append(named)
            answers[made_first].append(sorted(index.store.names()))
    settled = [a for a in answers[True] if isinstance(a, bool)]
    assert settled == [True, False, True]
    assert [a for a in answers[True] if not isinstance(a, bool)] == answers[False]
    assert answers[False][1] == [("c", True, []), ("d", False, ["c"])]
    assert answers[False][3] == ["a", "c"]


def test_a_check_and_add_that_matches_does_not_wait_for_the_writers(tmp_path: Path) -> None:
    """Near-duplicates store nothing: they are answered without the writers' lock.

    A fresh text waits for the lock, and is searched again inside it.
    """
    corpus = documents(8)
    with open_index(str(tmp_path / "a.db"), create=True, threads=True) as index:
        params = index.request_params(None)
        index.put([Incoming("a", corpus[2].text)], params)
        writers = threading.Lock()
        answers: dict[str, list[Any]] = {}

        def call(name: str, text: str) -> None:
            answers[name] = index.check_and_add([Incoming(name, text)], params, exclusive=writers)

        near = threading.Thread(target=call, args=("near", corpus[2].text + " more"))
        fresh = threading.Thread(target=call, args=("fresh", corpus[5].text))
        writers.acquire()  # another writer holds the lock
        try:
            near.start()
            near.join(timeout=120)
            assert not near.is_alive()
            fresh.start()
            fresh.join(timeout=0.5)
            assert fresh.is_alive()  # it waits for the lock
        finally:
            writers.release()
            for thread in (near, fresh):  # done with the connection before it closes
                if thread.ident is not None:
                    thread.join()
        assert [m.b for m in answers["near"][0].matches] == ["a"]
        assert answers["near"][0].added is False
        assert answers["fresh"][0].added is True
        assert index.count() == 2


def test_search_add_and_fingerprints(tmp_path: Path) -> None:
    corpus = documents(12)
    with open_index(str(tmp_path / "a.db"), create=True) as index:
        params = index.params
        counts = index.put([Incoming(d.name, d.text) for d in corpus[:6]], params)
        assert counts == {"added": 6, "updated": 0, "unchanged": 0, "skipped": 0}
        counts = index.put(
            [Incoming(corpus[0].name, corpus[0].text), Incoming(corpus[1].name, "changed text")],
            params,
        )
        assert counts == {"added": 0, "updated": 1, "unchanged": 1, "skipped": 0}
        _, _, prints, _ = index.fingerprinted([corpus[2].name])
        value = words_to_int(prints[0])
        hexa = to_hex(value, params.fixed_bits)
        results = index.search(
            [Incoming("by-text", corpus[2].text), Incoming("by-print", fingerprint=value)],
            params,
        )
        assert [c.name for c in results] == ["by-text", "by-print"]
        assert results[0].matches[0].b == corpus[2].name
        assert results[0].matches[0].cosine == 1.0
        assert results[1].matches[0].b == corpus[2].name
        assert results[1].matches[0].hamming == 0
        assert results[1].matches[0].cosine is None
        assert int(hexa, 16) == value
        strongest = [m.cosine or 0.0 for m in results[0].matches]
        assert strongest == sorted(strongest, reverse=True)
        with pytest.raises(ParameterError, match="below the index"):
            index.request_params(params.threshold - 0.1)
        assert index.request_params(0.95).threshold == 0.95


def test_index_optimize_command(tmp_path: Path, simdup_script: str) -> None:
    corpus = documents(1100)
    db = tmp_path / "a.db"
    small_first_add(db, corpus).close()
    runner = CliRunner()
    result = runner.invoke(cli, ["index", "optimize", "--db", str(db), "--format", "json"])
    assert result.exit_code == 0, result.output
    done = json.loads(result.output)
    assert done["replanned"] is True
    assert done["keys"]["planned_on"] == 1100
    result = runner.invoke(cli, ["index", "optimize", "--db", str(db)])
    assert result.exit_code == 0
    assert result.output.startswith("keys kept (1,100 documents): planned, ")
    assert result.output.endswith(f"; due again at {REPLAN_GROWTH * 1100:,} documents\n")
    forced = subprocess.run(
        [simdup_script, "index", "optimize", "--db", str(db), "--force"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert forced.returncode == 0, forced.stderr
    assert forced.stdout.startswith("keys planned again on 1,100 documents: planned, ")
    missing = runner.invoke(cli, ["index", "optimize", "--db", str(tmp_path / "none.db")])
    assert missing.exit_code == 4
    assert "no index at" in missing.output


def test_keys_planned_for_queries_take_no_more_tables_than_a_scan_plan() -> None:
    corpus = documents(3000)
    params = Params(weighting="log", bits=64)
    prints = fingerprint_documents(corpus, params).fingerprints
    scan_tables, scan_record = keys.planned_keys(params, prints)
    tables, record = keys.planned_keys(params, prints, per_query=True)
    assert record["source"] == scan_record["source"] == "planned"
    assert record["recall"] >= params.recall
    assert 1 <= len(tables.keys) <= len(scan_tables.keys)
    chosen = keys.query_plan(params, prints)
    assert chosen.tables.description == tables.description
    assert chosen.max_hamming == record["max_hamming"]


def _log_pages_per_table(index: FingerprintIndex, new: list[Document]) -> float:
    """Return the pages of log each new document writes for each key table, stored one by one."""
    index.leave_checkpoints(1 << 30)
    index.checkpoint(restart=True)
    for document in new:
        index.put([Incoming(document.name, document.text)], index.params)
    page = int(index.store.db.execute("PRAGMA page_size").fetchone()[0])
    return index.checkpoint() / page / len(new) / len(index.tables.keys)


@pytest.mark.parametrize("room", [True, False])
def test_keys_planned_again_leave_room_for_the_documents_to_come(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, room: bool
) -> None:
    """A key index built whole has full pages: the next document would split one of each."""
    if not room:  # the indexes as SQLite builds them: the test's own check that it can fail
        monkeypatch.setattr(optimizing, "ROOM_ROWS", 10**9)
    corpus = documents(5000)
    with small_first_add(tmp_path / "a.db", corpus) as index:
        index.optimize(force=True)
        assert index.count() == len(corpus)
        assert index.store.db.execute("SELECT count(*) FROM changes").fetchone() == (0,)
        pages = _log_pages_per_table(index, documents(10, seed=5, prefix="new"))
        index.remove([corpus[0].name])  # the log of changes records deletions again
        assert index.store.db.execute("SELECT count(*) FROM changes").fetchone() == (1,)
    # 1.65 pages of log a key with room, 3.52 without (a split writes four pages and the
    # page above)
    assert (pages < 2.5) == room, pages
