"""The index's open store: transactions commit whole or not at all, locks give a message."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from simdup.index import IndexLockedError, open_index
from simdup.index.schema import SQLITE_MAGIC
from simdup.index.writing import remove_names
from simdup.model import Document
from simdup.params import Params

DOCUMENTS = [
    Document("a.txt", "the red fox jumps over the lazy dog"),
    Document("b.txt", "the red fox jumps over the lazy dog again"),
    Document("c.txt", "blue whales sing in the deep cold ocean"),
]


def test_a_transaction_commits_at_its_end(tmp_path: Path) -> None:
    with open_index(str(tmp_path / "t.db"), create=True, params=Params()) as index:
        index.add_documents(DOCUMENTS)
        store = index.store
        with store.transaction():
            store.delete(["a.txt"])
            assert store.db.in_transaction
        assert not store.db.in_transaction
        assert sorted(store.names()) == ["b.txt", "c.txt"]
    with open_index(str(tmp_path / "t.db")) as again:
        assert again.count() == 2


def test_an_index_file_starts_with_the_sqlite_magic(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    with open_index(str(db), create=True, params=Params()) as index:
        index.add_documents(DOCUMENTS)
    assert db.read_bytes().startswith(SQLITE_MAGIC)


def test_a_transaction_rolls_back_on_any_exception(tmp_path: Path) -> None:
    with open_index(str(tmp_path / "t.db"), create=True, params=Params()) as index:
        index.add_documents(DOCUMENTS)
        store = index.store

        def interrupted() -> None:
            with store.transaction():
                store.delete(["a.txt", "b.txt"])
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            interrupted()
        assert not store.db.in_transaction
        assert sorted(store.names()) == ["a.txt", "b.txt", "c.txt"]


def test_a_held_write_lock_is_reported_with_the_wait(tmp_path: Path) -> None:
    db = str(tmp_path / "t.db")
    with open_index(db, create=True, params=Params()) as index:
        index.add_documents(DOCUMENTS)
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with open_index(db, timeout=0.2) as index:
            with pytest.raises(
                IndexLockedError, match=r"locked by another process \(waited 0.2 s\)"
            ):
                remove_names(index.store, ["a.txt"])
            assert not index.store.db.in_transaction
            assert index.count() == 3
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_removing_no_names_takes_no_lock(tmp_path: Path) -> None:
    db = str(tmp_path / "t.db")
    with open_index(db, create=True, params=Params()) as index:
        index.add_documents(DOCUMENTS)
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with open_index(db, timeout=0.1) as index:
            assert remove_names(index.store, []) == 0
    finally:
        other.execute("ROLLBACK")
        other.close()
