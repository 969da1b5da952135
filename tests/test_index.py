"""The SQLite fingerprint index: storage, incremental adds, queries, safety, CLI."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from simdup.cli import cli
from simdup.engines.local import find_duplicates
from simdup.fingerprints.listing import fingerprint_settings
from simdup.fingerprints.simhash import int_to_words, to_hex
from simdup.fingerprints.weights import term_weights
from simdup.index import (
    SCHEMA_VERSION,
    IndexFileError,
    IndexLockedError,
    IndexSettingsError,
    integrity,
    open_index,
    pack_weights,
    to_signed,
    to_unsigned,
    unpack_weights,
)
from simdup.inputs.files import ReadOptions, read_documents
from simdup.inputs.gather import load_corpus
from simdup.model import Document
from simdup.params import Params
from simdup.search.verify import cosine
from simdup.text.tokens import tokenize

WORDS = [f"w{i}" for i in range(400)]


def make_corpus(root: Path, count: int, *, seed: int = 7, words: int = 60) -> list[Path]:
    """Write ``count`` texts, every fifth a light edit of the one before, with old mtimes."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    previous: list[str] = []
    for i in range(count):
        if i % 5 == 4 and previous:
            tokens = list(previous)
            tokens[int(rng.integers(len(tokens)))] = "edited"
        else:
            tokens = [WORDS[int(k)] for k in rng.zipf(1.3, words) % len(WORDS)]
        previous = tokens
        path = root / f"doc{i:04d}.txt"
        path.write_text(" ".join(tokens) + "\n")
        past = time.time() - 3600
        os.utime(path, (past, past))
        paths.append(path)
    return paths


def run(runner: CliRunner, *args: str, code: int = 0) -> Any:
    result = runner.invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output + result.stderr
    return result


def pairs_of(output: str) -> list[dict[str, Any]]:
    return list(json.loads(output)["pairs"])


# -- storage ---------------------------------------------------------------------------


@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=8))
def test_words_round_trip_through_signed_integers(values: list[int]) -> None:
    words = np.array(values, dtype=np.uint64)
    signed = to_signed(words)
    assert all(-(2**63) <= int(v) < 2**63 for v in signed.tolist())
    assert to_unsigned(signed.tolist()).tolist() == values


@given(
    st.lists(
        st.tuples(
            st.integers(0, 2**32 - 1),
            st.floats(allow_nan=False, allow_infinity=False, width=64),
        ),
        max_size=20,
    )
)
def test_weights_pack_losslessly(entries: list[tuple[int, float]]) -> None:
    ids = [i for i, _ in entries]
    weights = np.array([w for _, w in entries], dtype=np.float64)
    out_ids, out_weights = unpack_weights(*pack_weights(ids, weights))
    assert out_ids.tolist() == ids
    assert out_weights.tolist() == weights.tolist()


@pytest.mark.parametrize(
    ("ids", "weights", "id_bytes", "weight_bytes"),
    [
        ([1, 2, 3], [1.0, 2.0, 7.0], 2, 1),  # term counts: one byte each
        ([70_000], [300.0], 4, 2),
        ([1], [0.5], 2, 4),
        ([1], [1.0 + np.log(3.0)], 2, 8),  # log weights need float64
        ([1], [-1.0], 2, 4),
    ],
)
def test_narrowest_exact_types(
    ids: list[int], weights: list[float], id_bytes: int, weight_bytes: int
) -> None:
    id_blob, weight_blob = pack_weights(ids, np.array(weights))
    assert len(id_blob) == 1 + id_bytes * len(ids)
    assert len(weight_blob) == 1 + weight_bytes * len(weights)
    out_ids, out_weights = unpack_weights(id_blob, weight_blob)
    assert out_ids.tolist() == ids
    assert out_weights.tolist() == weights


@pytest.mark.parametrize("bits", [64, 128, 200])
def test_fingerprints_round_trip_full_range(tmp_path: Path, bits: int) -> None:
    """Extreme words (0, 2**63 - 1, 2**63, 2**64 - 1) survive SQLite's signed integers."""
    extremes = [0, 1, 2**63 - 1, 2**63, 2**64 - 1]
    rng = np.random.default_rng(bits)
    values = []
    for k in range(12):
        words = [extremes[(k + w) % len(extremes)] for w in range(-(-bits // 64))]
        words[-1] &= (1 << (bits - 64 * (len(words) - 1))) - 1
        values.append(sum(w << (64 * i) for i, w in enumerate(words)))
    values.append(int(rng.integers(0, 2**62)) << (bits - 62))
    params = Params(bits=bits)
    records = [
        (
            f"r{i}",
            {
                "id": f"n{i:02d}",
                "fingerprint": to_hex(v, bits),
                "params": fingerprint_settings(params),
            },
        )
        for i, v in enumerate(values)
    ]
    with open_index(str(tmp_path / "x.db"), create=True, params=params) as index:
        index.import_records(records)
        names, matrix, fingerprints, _ = index.fingerprinted()
        exported = list(index.export_records())
    assert matrix is None  # imported without weights
    assert names == [f"n{i:02d}" for i in range(len(values))]
    expected = np.stack([int_to_words(v, bits) for v in values])
    assert np.array_equal(fingerprints, expected)
    assert [r["fingerprint"] for r in exported] == [to_hex(v, bits) for v in values]


# -- scan through the index equals scan of the files ------------------------------------


@pytest.mark.parametrize(
    ("fingerprint", "blocking"),
    [
        ([], []),
        (["--bits", "128", "--weighting", "log", "--ngram", "2"], []),
        (["--no-stopwords"], ["--threshold", "0.5", "--scheme", "balanced"]),
        (["--weighting", "binary"], ["--max-distance", "6", "--all"]),
    ],
)
def test_index_scan_equals_scan(
    runner: CliRunner, tmp_path: Path, fingerprint: list[str], blocking: list[str]
) -> None:
    corpus = tmp_path / "c"
    make_corpus(corpus, 60)
    db = str(tmp_path / "i.db")
    run(runner, "index", "add", str(corpus), "--db", db, *fingerprint)
    options = [*fingerprint, *blocking]
    direct = run(runner, "scan", str(corpus), "--format", "json", *options)
    stored = run(runner, "index", "scan", "--db", db, "--format", "json", *options)
    expected = pairs_of(direct.stdout)
    assert expected, "the corpus should hold near-duplicates"
    assert pairs_of(stored.stdout) == expected
    assert json.loads(stored.stdout)["stats"]["documents"] == 60


def test_library_scan_equals_find_duplicates(tmp_path: Path, sample_corpus: Path) -> None:
    documents, _ = load_corpus([str(sample_corpus)], ReadOptions())
    params = Params(weighting="log", bits=96)
    with open_index(str(tmp_path / "s.db"), create=True, params=params) as index:
        index.add_files([str(sample_corpus)])
        result = index.scan(params)
    assert result.pair_list() == find_duplicates(documents, params).pair_list()


# -- queries ---------------------------------------------------------------------------


def test_query_uses_key_indexes(tmp_path: Path) -> None:
    params = Params(scheme="loose")
    with open_index(str(tmp_path / "q.db"), create=True, params=params) as index:
        sql = index.candidates_sql()
        plan = index.store.db.execute(
            f"EXPLAIN QUERY PLAN {sql}", list(range(len(index.tables.keys)))
        ).fetchall()
    details = [row[-1] for row in plan]
    searches = [d for d in details if d.startswith("SEARCH documents")]
    assert len(searches) == 8
    assert all("INDEX documents_k" in d for d in searches)
    assert not any(d.startswith("SCAN documents") for d in details)


def test_query_finds_stored_near_duplicates(tmp_path: Path, runner: CliRunner) -> None:
    corpus = tmp_path / "c"
    paths = make_corpus(corpus, 40)
    db = str(tmp_path / "q.db")
    run(runner, "index", "add", str(corpus), "--db", db)
    text = paths[3].read_text().replace("w1 ", "w2 ", 1)
    query = tmp_path / "new.txt"
    query.write_text(text)
    out = run(runner, "index", "query", str(query), "--db", db, "--format", "json")
    found = pairs_of(out.stdout)
    assert found
    assert found[0]["a"] == str(query)
    assert found[0]["b"] == str(paths[3])
    compared = find_duplicates(
        [Document("x", text), Document("y", paths[3].read_text())], Params(threshold=0.0)
    ).pair_list()
    assert found[0]["cosine"] == round(compared[0].cosine or 0.0, 6)
    # Querying a stored file does not report the file itself.
    out = run(runner, "index", "query", str(paths[0]), "--db", db, "--format", "jsonl")
    assert all(json.loads(line)["b"] != str(paths[0]) for line in out.stdout.splitlines())


def test_query_cosines_are_true_cosines(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    paths = make_corpus(corpus, 40, seed=3)
    params = Params(weighting="log", threshold=0.0)
    queries = [
        Document(f"q{i}", paths[i].read_text().replace("w3", "novel", 1) + " unseen")
        for i in (2, 9, 14)
    ]
    with open_index(str(tmp_path / "t.db"), create=True, params=params) as index:
        index.add_files([str(corpus)])
        result = index.query(queries, params, report_all=True)
    texts = {str(p): p.read_text() for p in paths} | {q.name: q.text for q in queries}
    found = result.pair_list()
    assert {p.a for p in found} == {q.name for q in queries}
    for pair in found:
        tokens = [tokenize(texts[name]) for name in (pair.a, pair.b)]
        expected = cosine(*(term_weights(t, "log") for t in tokens))
        assert pair.cosine == pytest.approx(expected, abs=1e-12)


def test_query_from_stdin_and_other_blocking(tmp_path: Path, runner: CliRunner) -> None:
    corpus = tmp_path / "c"
    paths = make_corpus(corpus, 30)
    db = str(tmp_path / "q.db")
    run(runner, "index", "add", str(corpus), "--db", db)
    text = paths[9].read_text()
    keyed = runner.invoke(cli, ["index", "query", "-", "--db", db, "--format", "json"], input=text)
    other = runner.invoke(
        cli,
        ["index", "query", "-", "--db", db, "--format", "json", "--scheme", "strict"],
        input=text,
    )
    assert keyed.exit_code == 0, keyed.output
    assert other.exit_code == 0, other.output
    keyed_pairs = pairs_of(keyed.stdout)
    assert {"a": "-", "b": str(paths[9])}.items() <= keyed_pairs[0].items()
    assert keyed_pairs[0]["cosine"] == 1.0
    # A single strict table finds only identical fingerprints: a subset of the 8 blocks.
    assert [p["b"] for p in pairs_of(other.stdout)] == [
        p["b"] for p in keyed_pairs if p["hamming"] == 0
    ]


# -- incremental add -------------------------------------------------------------------


def test_incremental_add_reads_only_changes(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = tmp_path / "c"
    paths = make_corpus(corpus, 20)
    db = str(tmp_path / "a.db")
    read: list[str] = []
    original = read_documents

    def counting(sources: Any, options: Any, **kwargs: Any) -> Any:
        read.extend(s.name for s in sources)
        return original(sources, options, **kwargs)

    monkeypatch.setattr("simdup.index.writing.read_documents", counting)

    def add(*extra: str) -> dict[str, int]:
        out = run(runner, "index", "add", str(corpus), "--db", db, "--format", "json", *extra)
        return {k: v for k, v in json.loads(out.stdout).items() if k != "db"}

    assert add() == {"added": 20, "updated": 0, "unchanged": 0, "removed": 0, "skipped": 0}
    read.clear()
    assert add() == {"added": 0, "updated": 0, "unchanged": 20, "removed": 0, "skipped": 0}
    assert read == []
    past = time.time() - 600
    paths[1].write_text("entirely new words here now")  # changed text
    os.utime(paths[1], (past, past))
    os.utime(paths[2], (past + 1, past + 1))  # touched, same text
    paths[3].unlink()
    (corpus / "extra.txt").write_text("one more document")
    (corpus / "empty.txt").write_text("   ")
    read.clear()
    assert add("--prune") == {"added": 1, "updated": 1, "unchanged": 18, "removed": 1, "skipped": 1}
    assert sorted(read) == sorted(
        [str(paths[1]), str(paths[2]), str(corpus / "extra.txt"), str(corpus / "empty.txt")]
    )
    with open_index(db) as index:
        names = index.fingerprinted()[0]
    assert str(paths[3]) not in names
    assert str(corpus / "extra.txt") in names


@settings(max_examples=15, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 5), st.sampled_from(["write", "touch", "delete"]), st.integers(0, 3)
        ),
        min_size=1,
        max_size=12,
    )
)
def test_incremental_adds_match_a_fresh_index(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[int, str, int]]
) -> None:
    """After any edits and an add --prune, the index holds what a fresh fingerprint gives."""
    root = tmp_path_factory.mktemp("inc")
    corpus = root / "c"
    corpus.mkdir()
    texts = ["alpha beta gamma", "delta epsilon zeta eta", "w1 w2 w3 w4 w5", "the of and"]
    clock = [time.time() - 10_000]

    def stamp(path: Path) -> None:
        clock[0] += 10
        os.utime(path, (clock[0], clock[0]))

    with open_index(str(root / "i.db"), create=True) as index:
        for k, (file, action, text) in enumerate(steps):
            path = corpus / f"f{file}.txt"
            if action == "write":
                path.write_text(texts[text])
                stamp(path)
            elif action == "touch" and path.exists():
                stamp(path)
            elif action == "delete" and path.exists():
                path.unlink()
            if k % 3 == 2 or k == len(steps) - 1:
                index.add_files([str(corpus)], prune=True)
        names, _, fingerprints, counts = index.fingerprinted()
    documents, _ = load_corpus([str(corpus)], ReadOptions())
    fresh = find_duplicates(documents, Params())
    assert names == fresh.names
    assert np.array_equal(fingerprints, fresh.fingerprints)
    assert np.array_equal(counts, fresh.feature_counts)


def test_scan_cache_rereads_nothing_unchanged(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = tmp_path / "c"
    paths = make_corpus(corpus, 50)
    cache = str(tmp_path / "cache.db")
    read: list[str] = []

    def counting(sources: Any, options: Any, **kwargs: Any) -> Any:
        read.extend(s.name for s in sources)
        return read_documents(sources, options, **kwargs)

    monkeypatch.setattr("simdup.index.writing.read_documents", counting)
    options = ["--format", "json", "--threshold", "0.6", "--bits", "128"]
    plain = pairs_of(run(runner, "scan", str(corpus), *options).stdout)
    assert plain
    first = run(runner, "scan", str(corpus), "--cache", cache, *options).stdout
    assert len(read) == 50
    read.clear()
    second = run(runner, "scan", str(corpus), "--cache", cache, *options).stdout
    assert read == []
    assert pairs_of(first) == pairs_of(second) == plain
    past = time.time() - 100
    paths[7].write_text(paths[6].read_text())
    os.utime(paths[7], (past, past))
    third = pairs_of(run(runner, "scan", str(corpus), "--cache", cache, *options).stdout)
    assert read == [str(paths[7])]
    assert third == pairs_of(run(runner, "scan", str(corpus), *options).stdout)
    assert {"a": str(paths[6]), "b": str(paths[7]), "cosine": 1.0}.items() <= third[0].items()
    # A cache only serves the settings it was made with.
    result = run(runner, "scan", str(corpus), "--cache", cache, "--seed", "3", code=2)
    assert "seed=12345" in result.stderr


def test_prune_only_touches_given_roots(tmp_path: Path) -> None:
    make_corpus(tmp_path / "a", 3)
    make_corpus(tmp_path / "b", 3)
    with open_index(str(tmp_path / "p.db"), create=True) as index:
        index.add_files([str(tmp_path / "a"), str(tmp_path / "b")])
        (tmp_path / "b" / "doc0000.txt").unlink()
        report = index.add_files([str(tmp_path / "b")], prune=True)
        assert report.removed == 1
        assert index.count() == 5


def test_jsonl_records_are_added_and_pruned_by_source(tmp_path: Path, runner: CliRunner) -> None:
    records = tmp_path / "r.jsonl"
    records.write_text(
        "".join(
            json.dumps({"id": f"r{i}", "text": f"alpha beta gamma {i}"}) + "\n" for i in range(4)
        )
    )
    db = str(tmp_path / "j.db")
    out = run(runner, "index", "add", "--jsonl", str(records), "--db", db, "--format", "json")
    assert json.loads(out.stdout)["added"] == 4
    records.write_text(json.dumps({"id": "r0", "text": "alpha beta gamma 0"}) + "\n")
    out = run(
        runner, "index", "add", "--jsonl", str(records), "--db", db, "--format", "json", "--prune"
    )
    assert {k: json.loads(out.stdout)[k] for k in ("added", "unchanged", "removed")} == {
        "added": 0,
        "unchanged": 1,
        "removed": 3,
    }


def test_remove(tmp_path: Path, runner: CliRunner) -> None:
    corpus = tmp_path / "c"
    paths = make_corpus(corpus, 5)
    db = str(tmp_path / "r.db")
    run(runner, "index", "add", str(corpus), "--db", db)
    out = run(runner, "index", "remove", str(paths[0]), "--db", db)
    assert out.stdout.strip() == "1 removed"
    out = run(runner, "index", "remove", str(corpus), "--db", db)
    assert out.stdout.strip() == "4 removed"


# -- settings and files ----------------------------------------------------------------


def test_settings_mismatch_names_both_values(tmp_path: Path, runner: CliRunner) -> None:
    corpus = tmp_path / "c"
    make_corpus(corpus, 3)
    db = str(tmp_path / "m.db")
    run(runner, "index", "add", str(corpus), "--db", db, "--bits", "128")
    # Options not given take the stored values.
    run(runner, "index", "add", str(corpus), "--db", db)
    result = run(
        runner, "index", "add", str(corpus), "--db", db, "--bits", "64", "--seed", "1", code=2
    )
    assert "bits=128, seed=12345" in result.stderr
    assert "bits=64, seed=1" in result.stderr
    result = run(runner, "index", "scan", "--db", db, "--ngram", "3", code=2)
    assert "ngram=1" in result.stderr
    assert "ngram=3" in result.stderr
    with pytest.raises(IndexSettingsError, match="bits=128"), open_index(db) as index:
        index.check(Params())


def test_tfidf_is_refused(tmp_path: Path, runner: CliRunner, sample_corpus: Path) -> None:
    db = tmp_path / "t.db"
    result = run(
        runner, "index", "add", str(sample_corpus), "--db", str(db), "--weighting", "tfidf", code=2
    )
    assert "tfidf" in result.stderr
    assert "Traceback" not in result.output
    assert not db.exists()


def test_not_an_index(tmp_path: Path, runner: CliRunner) -> None:
    text = tmp_path / "notes.db"
    text.write_text("hello")
    result = run(runner, "index", "stats", "--db", str(text), code=4)
    assert "not a simdup index" in result.stderr
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE t (x)")
    connection.close()
    result = run(runner, "index", "scan", "--db", str(other), code=4)
    assert "SQLite database but not a simdup index" in result.stderr
    result = run(runner, "index", "stats", "--db", str(tmp_path / "absent.db"), code=4)
    assert "no index at" in result.stderr
    assert not (tmp_path / "absent.db").exists()


def test_damaged_index_is_a_message(tmp_path: Path, runner: CliRunner) -> None:
    corpus = tmp_path / "c"
    make_corpus(corpus, 400)
    db = tmp_path / "d.db"
    run(runner, "index", "add", str(corpus), "--db", str(db))
    with db.open("r+b") as handle:
        handle.truncate(db.stat().st_size // 2)
    result = run(runner, "index", "scan", "--db", str(db), code=4)
    assert "malformed" in result.stderr


def test_newer_schema_is_refused(tmp_path: Path, sample_corpus: Path) -> None:
    db = str(tmp_path / "n.db")
    with open_index(db, create=True) as index:
        index.add_files([str(sample_corpus)])
    connection = sqlite3.connect(db)
    connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    connection.commit()
    connection.close()
    with pytest.raises(IndexFileError, match="newer than this simdup"):
        open_index(db)


def test_default_db_from_environment(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch, sample_corpus: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    run(runner, "index", "add", str(sample_corpus))
    assert (tmp_path / "simdup.db").exists()
    monkeypatch.setenv("SIMDUP_DB", str(tmp_path / "env.db"))
    run(runner, "index", "add", str(sample_corpus))
    assert (tmp_path / "env.db").exists()


def test_locked_index_gives_clear_message(tmp_path: Path, runner: CliRunner) -> None:
    corpus = tmp_path / "c"
    make_corpus(corpus, 3)
    db = str(tmp_path / "l.db")
    run(runner, "index", "add", str(corpus), "--db", db)
    (corpus / "more.txt").write_text("new words to write")
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        # Readers still work while the write lock is held.
        run(runner, "index", "scan", "--db", db, "--format", "json")
        result = run(runner, "index", "add", str(corpus), "--db", db, "--timeout", "0.2", code=4)
        assert "is locked by another process" in result.stderr
        with pytest.raises(IndexLockedError), open_index(db, timeout=0.1) as index:
            index.add_files([str(corpus)])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert integrity(db) == "ok"


def test_two_writers_both_succeed(tmp_path: Path) -> None:
    make_corpus(tmp_path / "a", 40, seed=1)
    make_corpus(tmp_path / "b", 40, seed=2)
    db = str(tmp_path / "w.db")
    open_index(db, create=True).close()
    command = [sys.executable, "-m", "simdup", "index", "add", "--db", db, "--batch", "5", "-q"]
    procs = [subprocess.Popen([*command, str(tmp_path / d)], stderr=subprocess.PIPE) for d in "ab"]
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err.decode()
    with open_index(db) as index:
        assert index.count() == 80
    assert integrity(db) == "ok"


# -- crash safety ----------------------------------------------------------------------


def test_killed_add_leaves_whole_documents(tmp_path: Path, runner: CliRunner) -> None:
    corpus = tmp_path / "c"
    make_corpus(corpus, 3000, words=40)
    db = str(tmp_path / "k.db")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "simdup",
            "index",
            "add",
            str(corpus),
            "--db",
            db,
            "--batch",
            "20",
            "-q",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    stored = 0
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as probe:
                stored = probe.execute("SELECT count(*) FROM documents").fetchone()[0]
            probe.close()
        except sqlite3.Error:
            stored = 0
        if stored >= 100:
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert integrity(db) == "ok"
    documents, _ = load_corpus([str(corpus)], ReadOptions())
    with open_index(db) as index:
        names, matrix, fingerprints, counts = index.fingerprinted()
    assert 0 < len(names) < 3000, "the add should have been killed part-way"
    assert len(names) % 20 == 0  # whole batches only
    reference = find_duplicates(
        [d for d in documents if d.name in set(names)], Params(), report_all=True
    )
    assert reference.names == names
    assert np.array_equal(reference.fingerprints, fingerprints)
    assert np.array_equal(reference.feature_counts, counts)
    assert matrix is not None
    assert np.array_equal(matrix.row_lengths(), counts)
    out = run(runner, "index", "add", str(corpus), "--db", db, "--format", "json")
    report = json.loads(out.stdout)
    assert report["added"] == 3000 - len(names)
    assert report["unchanged"] == len(names)
    assert integrity(db) == "ok"


# -- export and import -----------------------------------------------------------------


def test_export_import_round_trip(tmp_path: Path, runner: CliRunner) -> None:
    corpus = tmp_path / "c"
    make_corpus(corpus, 30)
    source, target, bare = (str(tmp_path / n) for n in ("s.db", "t.db", "b.db"))
    run(runner, "index", "add", str(corpus), "--db", source, "--bits", "128")
    exported = run(runner, "index", "export", "--db", source).stdout
    first = json.loads(exported.splitlines()[0])
    assert set(first) >= {"id", "fingerprint", "params", "weights"}
    assert first["params"]["bits"] == 128
    assert len(first["fingerprint"]) == 32
    dump = tmp_path / "prints.jsonl"
    dump.write_text(exported)
    out = run(runner, "index", "import", str(dump), "--db", target)
    assert out.stdout.strip() == "30 added, 0 updated"
    scans = [
        pairs_of(run(runner, "index", "scan", "--db", db, "--format", "json").stdout)
        for db in (source, target)
    ]
    assert scans[0]
    assert scans[0] == scans[1]
    # Without weights the pairs keep their fingerprints, and the cosine is unknown.
    dump.write_text(run(runner, "index", "export", "--db", source, "--no-weights").stdout)
    run(runner, "index", "import", str(dump), "--db", bare)
    pairs = pairs_of(run(runner, "index", "scan", "--db", bare, "--format", "json").stdout)
    assert pairs
    assert all(p["cosine"] is None for p in pairs)


def test_import_refuses_other_settings(
    tmp_path: Path, runner: CliRunner, sample_corpus: Path
) -> None:
    run(runner, "index", "add", str(sample_corpus), "--db", str(tmp_path / "a.db"))
    run(runner, "index", "add", str(sample_corpus), "--db", str(tmp_path / "b.db"), "--seed", "9")
    dump = tmp_path / "a.jsonl"
    dump.write_text(run(runner, "index", "export", "--db", str(tmp_path / "a.db")).stdout)
    result = run(runner, "index", "import", str(dump), "--db", str(tmp_path / "b.db"), code=2)
    assert "seed=12345" in result.stderr
    assert "seed=9" in result.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    result = run(runner, "index", "import", str(bad), "--db", str(tmp_path / "c.db"), code=4)
    assert "bad.jsonl:1" in result.stderr
    # A count of features that is not its number of weights (the memory planned reads it).
    record = json.loads(dump.read_text().splitlines()[1])
    record["features"] = len(record["weights"]) + 1
    bad.write_text(json.dumps(record) + "\n")
    result = run(runner, "index", "import", str(bad), "--db", str(tmp_path / "c.db"), code=4)
    assert "bad.jsonl:1: the record gives" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_stats(tmp_path: Path, runner: CliRunner, sample_corpus: Path) -> None:
    db = str(tmp_path / "s.db")
    run(runner, "index", "add", str(sample_corpus), "--db", db, "--scheme", "loose")
    stats = json.loads(run(runner, "index", "stats", "--db", db, "--format", "json").stdout)
    assert stats["documents"] == 9
    assert stats["schema_version"] == SCHEMA_VERSION
    assert stats["settings"] == fingerprint_settings(Params())
    assert stats["table_count"] == 8
    connection = sqlite3.connect(db)
    try:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {r[0] for r in connection.execute("SELECT name FROM sqlite_master")}
        assert {"meta", "features", "documents", "documents_k0", "documents_k7"} <= tables
    finally:
        connection.close()
