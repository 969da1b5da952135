"""Index keys: planned on a new index's first documents, recorded, and used by queries."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from simdup.cli import cli
from simdup.engines.local.fingerprinting import fingerprint_documents
from simdup.fingerprints.weights import term_weights
from simdup.index import IndexFileError, keys, open_index, same_tables
from simdup.index.keys import PLAN_MINIMUM
from simdup.index.query import candidates_sql
from simdup.index.store import IndexStore
from simdup.model import Document
from simdup.params import Params
from simdup.search.plan.planner import plan, tables_for
from simdup.search.tables import masked_keys, table_masks
from simdup.search.verify import cosine
from simdup.text.tokens import tokenize

VOCABULARY = [f"w{i}" for i in range(3000)]


def documents(count: int, *, seed: int = 11, prefix: str = "doc") -> list[Document]:
    """Return ``count`` Zipf texts of 80 words; every fourth is a light edit of the one before."""
    rng = np.random.default_rng(seed)
    out: list[Document] = []
    previous: list[str] = []
    for i in range(count):
        if i % 4 == 3:
            tokens = list(previous)
            for _ in range(int(rng.integers(1, 6))):
                tokens[int(rng.integers(len(tokens)))] = f"edit{int(rng.integers(50))}"
        else:
            tokens = [VOCABULARY[int(k)] for k in rng.zipf(1.2, 80) % len(VOCABULARY)]
        previous = tokens
        out.append(Document(f"{prefix}{i:05d}", " ".join(tokens)))
    return out


def edited_queries(stored: list[Document], count: int, seed: int = 5) -> list[Document]:
    """Return new documents: light edits of stored ones (so queries have matches)."""
    rng = np.random.default_rng(seed)
    out = []
    for k in rng.choice(len(stored), count, replace=False).tolist():
        tokens = stored[k].text.split()
        for _ in range(int(rng.integers(0, 8))):
            tokens[int(rng.integers(len(tokens)))] = "novel"
        out.append(Document(f"query{k:05d}", " ".join(tokens)))
    return out


def brute_force(
    queries: list[Document],
    stored: list[Document],
    params: Params,
    masks: Any,
    max_hamming: int | None,
) -> set[tuple[str, str]]:
    """Return every (query, stored) pair sharing a key, within the filter, at the threshold.

    Keys, Hamming distances and true cosines are computed here pair by pair, independently
    of the index's SQL lookups.
    """
    query_prints = fingerprint_documents(queries, params).fingerprints
    stored_prints = fingerprint_documents(stored, params).fingerprints
    weights = {d.name: term_weights(tokenize(d.text), params.weighting) for d in queries + stored}
    found: set[tuple[str, str]] = set()
    for q, query in enumerate(queries):
        shares = np.zeros(len(stored), dtype=bool)
        for mask in masks:
            shares |= masked_keys(stored_prints, mask) == masked_keys(query_prints[q : q + 1], mask)
        distance = np.bitwise_count(stored_prints ^ query_prints[q]).sum(axis=1)
        if max_hamming is not None:
            shares &= distance <= max_hamming
        for s in np.flatnonzero(shares).tolist():
            if cosine(weights[query.name], weights[stored[s].name]) >= params.threshold:
                found.add((query.name, stored[s].name))
    return found


@pytest.fixture(scope="module")
def corpus() -> list[Document]:
    return documents(PLAN_MINIMUM + 200)


@pytest.fixture(scope="module")
def planned_db(tmp_path_factory: pytest.TempPathFactory, corpus: list[Document]) -> str:
    path = str(tmp_path_factory.mktemp("keys") / "planned.db")
    with open_index(path, create=True, params=Params()) as index:
        index.add_documents(corpus)
    return path


def test_new_index_records_planned_keys(planned_db: str, corpus: list[Document]) -> None:
    params = Params()
    expected = plan(Params(bits=64), fingerprint_documents(corpus, params).fingerprints)
    with open_index(planned_db) as index:
        info = index.keys_info
        assert info["source"] == "planned"
        assert info["planned_on"] == len(corpus)
        assert info["recall"] == round(expected.recall, 4)
        assert info["recall"] >= params.recall
        assert info["max_hamming"] == expected.max_hamming
        assert same_tables(index.tables, expected.tables)
        assert not same_tables(index.tables, tables_for(params))
        stats = index.stats()
    assert stats["keys"]["source"] == "planned"
    assert stats["keys"]["recall"] == info["recall"]
    assert stats["table_count"] == len(expected.tables.keys)
    connection = sqlite3.connect(planned_db)
    try:
        columns = [r[1] for r in connection.execute("PRAGMA table_info(documents)")]
        indexes = {r[0] for r in connection.execute("SELECT name FROM sqlite_master")}
    finally:
        connection.close()
    keys = [c for c in columns if c.startswith("k")]
    assert keys == [f"k{t}" for t in range(len(expected.tables.keys))]
    assert {f"documents_{k}" for k in keys} <= indexes


def test_planned_query_equals_brute_force(planned_db: str, corpus: list[Document]) -> None:
    queries = edited_queries(corpus, 40)
    with open_index(planned_db) as index:
        params = index.params
        result = index.query(queries, params)
        masks = table_masks(index.tables)
        max_hamming = index.keys_info["max_hamming"]
        stored_prints = index.fingerprinted()[2]
        # The query looked keys up in the index: no stored fingerprint was keyed in memory.
        assert result.tables == index.tables.description
    assert np.array_equal(stored_prints, fingerprint_documents(corpus, params).fingerprints)
    found = {(p.a, p.b) for p in result.pair_list()}
    expected = brute_force(queries, corpus, params, masks, max_hamming)
    assert found == expected
    # Every query is an edit of a stored document: nearly all are found.
    assert len({a for a, _ in found}) >= 0.9 * len(queries)


def test_higher_query_threshold_uses_the_planned_keys(
    planned_db: str, corpus: list[Document]
) -> None:
    queries = edited_queries(corpus, 20, seed=9)
    with open_index(planned_db) as index:
        params = Params(threshold=0.9)
        result = index.query(queries, params)
        assert result.tables == index.tables.description
        masks = table_masks(index.tables)
        max_hamming = index.keys_info["max_hamming"]
        # A lower threshold than planned would find fewer pairs than asked: not these keys.
        assert index.query(queries, Params(threshold=0.7)).tables != index.tables.description
    expected = brute_force(queries, corpus, params, masks, max_hamming)
    assert {(p.a, p.b) for p in result.pair_list()} == expected


def test_explicit_query_settings_still_block_in_memory(
    planned_db: str, corpus: list[Document]
) -> None:
    queries = edited_queries(corpus, 10, seed=8)
    params = Params(max_distance=4)
    with open_index(planned_db) as index:
        result = index.query(queries, params)
    expected = brute_force(queries, corpus, params, table_masks(tables_for(params)), None)
    assert {(p.a, p.b) for p in result.pair_list()} == expected


@pytest.mark.parametrize(
    "params",
    [Params(scheme="balanced"), Params(max_distance=3), Params(blocks=6)],
    ids=["scheme", "max_distance", "blocks"],
)
def test_explicit_keys_are_kept(tmp_path: Path, corpus: list[Document], params: Params) -> None:
    path = str(tmp_path / "explicit.db")
    with open_index(path, create=True, params=params) as index:
        index.add_documents(corpus)
        assert index.keys_info == {"source": "explicit"}
        assert same_tables(index.tables, tables_for(params))
        queries = edited_queries(corpus, 20)
        result = index.query(queries, index.params)
        masks = table_masks(index.tables)
    # Explicit keys verify every candidate: no Hamming pre-filter.
    expected = brute_force(queries, corpus, params, masks, None)
    assert {(p.a, p.b) for p in result.pair_list()} == expected


def test_explicit_keys_from_the_command_line(tmp_path: Path, runner: CliRunner) -> None:
    records = tmp_path / "docs.jsonl"
    records.write_text(
        "".join(json.dumps({"id": d.name, "text": d.text}) + "\n" for d in documents(30))
    )
    db = str(tmp_path / "cli.db")
    args = ["index", "add", "--jsonl", str(records), "--db", db, "--scheme", "balanced"]
    assert runner.invoke(cli, args, catch_exceptions=False).exit_code == 0
    out = runner.invoke(cli, ["index", "stats", "--db", db, "--format", "json"])
    stats = json.loads(out.stdout)
    assert stats["keys"] == {"source": "explicit"}
    assert stats["tables"] == tables_for(Params(scheme="balanced")).description


def test_small_first_add_keeps_fallback_keys(tmp_path: Path, corpus: list[Document]) -> None:
    path = str(tmp_path / "small.db")
    with open_index(path, create=True, params=Params()) as index:
        index.add_documents(corpus[:20])
        assert index.keys_info["source"] == "fallback"
        assert str(PLAN_MINIMUM) in index.keys_info["reason"]
        # Keys are chosen once: later adds keep them.
        index.add_documents(corpus[20:])
        assert index.keys_info["source"] == "fallback"
        assert same_tables(index.tables, tables_for(Params()))
        queries = edited_queries(corpus, 15)
        result = index.query(queries, index.params)
        masks = table_masks(index.tables)
    expected = brute_force(queries, corpus, Params(), masks, None)
    assert {(p.a, p.b) for p in result.pair_list()} == expected


def test_index_made_before_planned_keys_still_works(
    tmp_path: Path, corpus: list[Document], runner: CliRunner
) -> None:
    """An index with corpus-free keys and no keys record (as older simdup wrote them)."""
    path = str(tmp_path / "old.db")
    with open_index(path, create=True, params=Params()) as index:
        index.add_documents(corpus[:10])
    connection = sqlite3.connect(path)
    with connection:
        connection.execute("DELETE FROM meta WHERE key = 'keys'")
    connection.close()
    with open_index(path) as index:
        assert index.keys_info == {"source": "fallback"}
        index.add_documents(corpus[10:])
        assert same_tables(index.tables, tables_for(Params()))
        queries = edited_queries(corpus, 15)
        result = index.query(queries, index.params)
        masks = table_masks(index.tables)
    expected = brute_force(queries, corpus, Params(), masks, None)
    assert {(p.a, p.b) for p in result.pair_list()} == expected
    out = runner.invoke(cli, ["index", "stats", "--db", path], catch_exceptions=False)
    assert "keys: source=fallback" in out.stdout


def test_reader_opened_before_the_first_add_sees_the_planned_keys(
    tmp_path: Path, corpus: list[Document]
) -> None:
    path = str(tmp_path / "two.db")
    queries = edited_queries(corpus, 10)
    with open_index(path, create=True, params=Params()) as reader:
        assert reader.keys_info["source"] == "pending"
        assert reader.query(queries, reader.params).pair_list() == []
        with open_index(path) as writer:
            writer.add_documents(corpus)
        result = reader.query(queries, reader.params)
        assert reader.keys_info["source"] == "planned"
        assert result.tables == reader.tables.description
    assert result.pair_list()


def test_console_script_plans_keys_of_added_files(tmp_path: Path) -> None:
    corpus = tmp_path / "files"
    corpus.mkdir()
    for doc in documents(PLAN_MINIMUM, seed=4):
        (corpus / f"{doc.name}.txt").write_text(doc.text)
    db = str(tmp_path / "files.db")
    simdup = str(Path(sys.executable).with_name("simdup"))
    subprocess.run([simdup, "index", "add", str(corpus), "--db", db, "-q"], check=True)
    done = subprocess.run(
        [simdup, "index", "stats", "--db", db, "--format", "json"],
        check=True,
        capture_output=True,
        text=True,
    )
    keys = json.loads(done.stdout)["keys"]
    assert keys["source"] == "planned"
    assert keys["planned_on"] == PLAN_MINIMUM
    assert keys["recall"] >= Params().recall


def test_planned_lookups_read_only_the_key_indexes(planned_db: str) -> None:
    with open_index(planned_db) as index:
        store = index.store
        sql = candidates_sql(store, ["id", *store.fp_columns], union="UNION ALL")
        rows = store.db.execute(f"EXPLAIN QUERY PLAN {sql}", [0] * len(store.key_columns))
        details = [row[-1] for row in rows.fetchall()]
    searches = [d for d in details if d.startswith("SEARCH documents")]
    assert len(searches) == len(store.key_columns)
    assert all("USING COVERING INDEX documents_k" in d for d in searches)


def test_a_plan_with_more_tables_than_an_index_stores_falls_back(
    monkeypatch: pytest.MonkeyPatch, corpus: list[Document]
) -> None:
    monkeypatch.setattr(keys, "MAX_STORED_TABLES", 1)
    prints = fingerprint_documents(corpus, Params()).fingerprints
    tables, record = keys.planned_keys(Params(), prints)
    assert record["source"] == "fallback"
    assert "an index stores 1 to 1" in record["reason"]
    assert same_tables(tables, tables_for(Params()))


def test_a_failed_first_add_leaves_the_keys_to_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, corpus: list[Document]
) -> None:
    path = str(tmp_path / "failed.db")
    with open_index(path, create=True, params=Params()) as index:
        with monkeypatch.context() as patch:
            patch.setattr(IndexStore, "_upsert_sql", lambda self: "INSERT INTO nowhere VALUES (1)")
            with pytest.raises(IndexFileError, match="nowhere"):
                index.add_documents(corpus)
        assert index.keys_info["source"] == "pending"
        assert index.count() == 0
        index.add_documents(corpus)
        assert index.keys_info["source"] == "planned"
    with open_index(path) as index:
        assert index.keys_info["source"] == "planned"
        assert index.count() == len(corpus)
