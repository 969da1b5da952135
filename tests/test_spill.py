"""A corpus spilled to the temporary store scans to the same bits as one held in memory.

Whatever the limits (when the corpus spills, the blocks of rows verified at once, the
pairs waiting and the pairs held before they go to disk) and the worker count, the names,
fingerprints, pairs, cosines, statistics and order are those of the scan in memory; the
temporary files are gone after success, failure and Ctrl-C; a disk without room ends
the run with one line.
"""

from __future__ import annotations

import dataclasses
import errno
import io
import itertools
import json
import os
import pickle
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simdup.engines.local as local
import simdup.engines.local.pairs as local_pairs
import simdup.search.candidates as candidates_module
import simdup.search.plan.budget as budget_module
import simdup.search.plan.choice as choice_module
import simdup.search.plan.memory as memory_module
import simdup.spill as spill_files
from simdup.cli import cli
from simdup.engines.local import fingerprinting, plan_inputs, scan_inputs, tiles
from simdup.fingerprints.weights import StoredWeights, WeightMatrix, take_rows
from simdup.inputs.files import ReadOptions
from simdup.inputs.gather import gather_inputs
from simdup.model import Document, ScanResult
from simdup.params import Params
from simdup.search.plan.budget import SpillLimits, spill_limits
from simdup.search.plan.memory import HELD_ENTRY_BYTES, MIN_HELD_CORPUS
from simdup.spill import Buckets, SpillDir, SpillError, StringColumn, release

WORDS = [f"w{k}" for k in range(40)] + ["the", "and", "of"]

#: Every part spills at once: each chunk is stored, each row is its own block, each pair
#: waits and is held on disk.
TINY = SpillLimits(corpus_entries=0, block_entries=1, waiting_pairs=1, held_pairs=1)

#: Every part spills, in blocks of a few rows and runs of a few pairs.
SMALL = SpillLimits(corpus_entries=0, block_entries=60, waiting_pairs=40, held_pairs=10)


def corpus(seed: int, documents: int) -> list[Document]:
    """Random texts over a small vocabulary, a third of them edited copies of others."""
    rng = np.random.default_rng(seed)
    texts: list[str] = []
    for k in range(documents):
        if k >= 3 and rng.random() < 0.35:
            words = texts[int(rng.integers(k))].split()
            if words:
                words[int(rng.integers(len(words)))] = WORDS[int(rng.integers(len(WORDS)))]
        else:
            size = int(rng.integers(0, 25))
            words = [WORDS[min(len(WORDS) - 1, int(rng.zipf(1.3)) - 1)] for _ in range(size)]
        texts.append(" ".join(words))
    return [Document(f"d{(k * 7919) % 1000:03d}-{k}", text) for k, text in enumerate(texts)]


def identical(a: ScanResult, b: ScanResult) -> None:
    """Assert two scans are the same to the last bit: rows, pairs, cosines, order, stats."""
    assert list(a.names) == list(b.names)
    assert a.fingerprints.tobytes() == b.fingerprints.tobytes()
    assert a.pairs.pairs.tobytes() == b.pairs.pairs.tobytes()
    assert a.pairs.hamming.tobytes() == b.pairs.hamming.tobytes()
    assert a.pairs.estimated.tobytes() == b.pairs.estimated.tobytes()
    assert a.pairs.cosine.tobytes() == b.pairs.cosine.tobytes()
    assert a.feature_counts.tobytes() == b.feature_counts.tobytes()
    assert a.skipped == b.skipped
    assert a.stats == b.stats
    assert a.plan == b.plan
    assert a.params == b.params
    assert a.tables == b.tables


def leftovers(directory: Path) -> list[str]:
    """Return what a scan left in its temporary directory."""
    return sorted(p.name for p in directory.iterdir())


# The store's files.


def test_a_column_reads_back_what_was_written_mapped_or_by_spans(tmp_path: Path) -> None:
    with SpillDir(str(tmp_path)) as spill:
        column = spill.column("c", np.int32)
        column.append(np.arange(5))
        column.append([7, 8])
        values = column.mapped()
        assert values.tolist() == [0, 1, 2, 3, 4, 7, 8]
        assert column.read_spans(np.array([[5, 7], [0, 2]])).tolist() == [7, 8, 0, 1]
        column.write_at(1, [-1, -2])
        assert values.tolist() == [0, -1, -2, 3, 4, 7, 8]  # the mapping sees the write
        release(values[2:5])
        release(np.arange(3))  # ordinary memory: nothing to give back
        assert values.tolist() == [0, -1, -2, 3, 4, 7, 8]
        assert spill.column("empty", np.float64).mapped().tolist() == []
    assert leftovers(tmp_path) == []
    assert values.tolist() == [0, -1, -2, 3, 4, 7, 8]  # still mapped after the files go


def _resident_kib(path: str) -> int:
    """Return the KiB of ``path``'s mapped pages this process holds (Linux's smaps)."""
    total, inside = 0, False
    with open("/proc/self/smaps", encoding="utf-8", errors="replace") as smaps:
        for line in smaps:
            fields = line.split()
            if fields and "-" in fields[0] and not fields[0].endswith(":"):
                inside = len(fields) > 5 and fields[5] == path
            elif inside and fields[0] == "Rss:":
                total += int(fields[1])
    return total


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="reads Linux's smaps")
def test_a_pass_in_row_order_gives_back_every_page_it_read(tmp_path: Path) -> None:
    """A block's first read maps the pages of its folio before it: given back too."""
    count = 3_000_000  # 24 MB
    with SpillDir(str(tmp_path)) as spill:
        column = spill.column("w", np.float64)
        column.append(np.arange(count, dtype=np.float64))
        values = column.mapped()
        # Read from the disk, as a store larger than the page cache is: by folios.
        handle = os.open(column.path, os.O_RDONLY)
        try:
            os.fsync(handle)
            os.posix_fadvise(handle, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(handle)
        bounds = [0, 262_147, 700_001, 1_048_577, 2_000_003, count]  # off any page's edge
        total = 0.0
        for lo, hi in itertools.pairwise(bounds):
            total += float(values[lo:hi].sum())
            assert _resident_kib(column.path) > 0
            release(values[lo:hi])
        assert total == float(np.arange(count, dtype=np.float64).sum())
        assert _resident_kib(column.path) == 0
        assert values[bounds[1] - 1 : bounds[1] + 1].tolist() == [262_146.0, 262_147.0]


@settings(max_examples=40, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 3000), min_size=1, max_size=12),
    picks=st.lists(st.integers(0, 11), max_size=20),
)
def test_stored_rows_read_in_any_order_equal_the_mapped_rows(
    lengths: list[int], picks: list[int]
) -> None:
    # Rows far apart are read in spans of their own, rows close together in one (rows of
    # up to 3,000 entries straddle READ_GAP); any order, repeats included.
    rng = np.random.default_rng(len(lengths))
    indptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    total = int(indptr[-1])
    with SpillDir() as spill:
        indices, data = spill.column("i", np.int32), spill.column("d", np.float64)
        indices.append(rng.integers(0, 50, total))
        data.append(rng.random(total))
        indices.finish()
        data.finish()
        matrix = WeightMatrix(indptr, indices.mapped(), data.mapped(), tuple(map(str, range(50))))
        stored = StoredWeights(matrix, indices, data)
        rows = np.array([p % len(lengths) for p in picks], dtype=np.int64)
        read, mapped = stored.take(rows), take_rows(matrix, rows)
        assert read.indptr.tolist() == mapped.indptr.tolist()
        assert read.indices.tolist() == mapped.indices.tolist()
        assert read.data.tobytes() == mapped.data.tobytes()
        assert not spill_files.is_mapped(read.data)


def test_stored_strings_keep_every_name_and_pickle_as_a_list(tmp_path: Path) -> None:
    names = ["a", "", "naïve 名前", "lone \udcff surrogate", "tab\tname"]
    with SpillDir(str(tmp_path)) as spill:
        column = StringColumn(spill, "names")
        column.append(names[:2])
        column.append([])
        column.append(names[2:])
        stored = column.mapped()
    assert list(stored) == names
    assert len(stored) == 5
    assert stored[-1] == names[-1]
    assert stored[1:4] == names[1:4]
    assert pickle.loads(pickle.dumps(stored)) == names
    with pytest.raises(IndexError):
        stored[5]


@settings(max_examples=30, deadline=None)
@given(
    batches=st.lists(st.lists(st.integers(0, 6), max_size=30), max_size=8),
    limit=st.integers(1, 40),
)
def test_buckets_give_back_each_bucket_in_the_order_added(
    batches: list[list[int]], limit: int
) -> None:
    with SpillDir() as spill:
        buckets = Buckets(spill, "b", np.int64, limit)
        expected: dict[int, list[int]] = {}
        serial = 0
        for batch in batches:
            keys = np.array(batch, dtype=np.int64)
            buckets.add(keys, np.arange(serial, serial + len(batch), dtype=np.int64))
            for key in batch:
                expected.setdefault(key, []).append(serial)
                serial += 1
        got: dict[int, list[int]] = {}
        for key, records in buckets.drain():
            assert len(records) <= limit
            assert not got or key >= max(got)
            got.setdefault(key, []).extend(records.tolist())
    assert got == dict(sorted(expected.items()))


# The same scan, in memory and stored.


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**16),
    documents=st.integers(2, 60),
    weighting=st.sampled_from(["tf", "log", "binary", "tfidf"]),
    threshold=st.sampled_from([0.5, 0.7, 0.9]),
    report_all=st.booleans(),
    tables=st.booleans(),
    corpus_entries=st.integers(0, 400),
    block_entries=st.integers(1, 200),
    waiting=st.integers(1, 300),
    held=st.integers(1, 100),
    min_features=st.integers(0, 6),
)
def test_a_stored_scan_equals_the_scan_in_memory(
    tmp_path: Path,
    seed: int,
    documents: int,
    weighting: str,
    threshold: float,
    report_all: bool,
    tables: bool,
    corpus_entries: int,
    block_entries: int,
    waiting: int,
    held: int,
    min_features: int,
) -> None:
    """Documents with fewer than ``min_features`` features are left out of both alike."""
    docs = corpus(seed, documents)
    found = gather_inputs([], ReadOptions(), docs)
    settings: dict[str, Any] = {"bits": 64, "scheme": "balanced"} if tables else {}
    params = Params(threshold=threshold, weighting=weighting, min_features=min_features, **settings)
    limits = SpillLimits(corpus_entries, block_entries, waiting, held)
    held_in_memory = scan_inputs(found, params, report_all=report_all)
    stored = scan_inputs(found, params, report_all=report_all, limits=limits, tmp_dir=str(tmp_path))
    identical(stored, held_in_memory)
    assert leftovers(tmp_path) == []


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**16),
    documents=st.integers(2, 80),
    record=st.integers(0, 40),
    waiting=st.integers(1, 300),
    block_entries=st.integers(1, 200),
)
def test_a_stored_scan_past_its_record_of_emitted_pairs_keeps_each_pair_once(
    tmp_path: Path, seed: int, documents: int, record: int, waiting: int, block_entries: int
) -> None:
    """Many tables past a record of ``record`` pairs add repeats; the tiles keep one of each."""
    found = gather_inputs([], ReadOptions(), corpus(seed, documents))
    params = Params(bits=64, max_distance=8, threshold=0.5)  # 45 tables: a record is kept
    held_in_memory = scan_inputs(found, params)
    fitted = choice_module.fitted

    def tight(*args: Any, **kwargs: Any) -> Any:
        plan, fit = fitted(*args, **kwargs)
        return plan, dataclasses.replace(fit, seen_limit=record)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(local_pairs, "fitted", tight)
        patch.setattr(candidates_module, "DEDUPE_BATCH", 4)  # the record checked often
        limits = SpillLimits(0, block_entries, waiting, 1000)
        stored = scan_inputs(found, params, limits=limits, tmp_dir=str(tmp_path))
    identical(stored, held_in_memory)
    assert leftovers(tmp_path) == []


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    rows=st.integers(2, 3000),
    blocks=st.integers(1, 4),
    pairs=st.integers(0, 5000),
    waiting=st.integers(1, 400),
)
def test_a_tile_is_kept_once_in_batches_of_bounded_size(
    seed: int, rows: int, blocks: int, pairs: int, waiting: int
) -> None:
    """However many pairs a tile holds (repeats too), it is drained a bounded batch at a time.

    Each pair comes once in all, with its tile's blocks; no batch holds much more than
    ``waiting`` pairs (one bucket of the tile's spread at most).
    """
    rng = np.random.default_rng(seed)
    cuts = np.unique(np.concatenate(([0, rows], rng.integers(1, rows, blocks - 1))))
    bounds = list(zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True))
    drawn = np.sort(rng.integers(0, rows, (pairs, 2)), axis=1)
    drawn = drawn[drawn[:, 0] < drawn[:, 1]]
    added = np.concatenate([drawn, drawn[rng.integers(0, max(len(drawn), 1), len(drawn) // 2)]])
    with SpillDir() as spill:
        gathered = tiles.Tiles(bounds, spill, waiting)
        for lo in range(0, len(added), 97):
            gathered.add(added[lo : lo + 97])
        buckets = np.bincount(gathered.bucket_of(added))
        largest = int(buckets.max()) if len(buckets) else 0
        seen = []
        for batch_blocks, batch in gathered.drain():
            assert len(batch) <= waiting + largest
            low = np.searchsorted(gathered.starts, batch, side="right") - 1
            assert [bounds[k] for k in sorted(set(low.ravel().tolist()))] == batch_blocks
            seen.append(batch)
    got = np.concatenate([np.zeros((0, 2), np.int64), *seen])
    assert sorted(map(tuple, got.tolist())) == sorted(set(map(tuple, drawn.tolist())))


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**16),
    documents=st.integers(2, 80),
    budget=st.integers(1 << 10, 1 << 18),
    chunk=st.integers(1, 40),
    block=st.integers(1, 400),
    jobs=st.sampled_from([1, 2]),
)
def test_a_stored_scan_is_the_same_across_chunk_sizes_and_budgets(
    tmp_path: Path, seed: int, documents: int, budget: int, chunk: int, block: int, jobs: int
) -> None:
    """The limits are those a budget gives, without the floors that keep small corpora held.

    Counted in chunks of ``chunk`` inputs (over workers when ``jobs`` is 2) and
    fingerprinted in blocks of ``block`` stored entries.
    """
    found = gather_inputs([], ReadOptions(), corpus(seed, documents))
    params = Params(threshold=0.6)
    held_in_memory = scan_inputs(found, params)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(memory_module, "MIN_HELD_CORPUS", 0)
        patch.setattr(budget_module, "MIN_BLOCK_ENTRIES", 1)
        patch.setattr(local.counting, "PARALLEL_BYTES", 0)
        patch.setattr(local.counting, "MAX_CHUNK_INPUTS", chunk)
        patch.setattr(local.counting, "MIN_CHUNK_INPUTS", 1)
        patch.setattr(fingerprinting, "STORED_BLOCK_ENTRIES", block)
        limits = spill_limits(budget)
        stored = scan_inputs(found, params, jobs=jobs, limits=limits, tmp_dir=str(tmp_path))
    identical(stored, held_in_memory)
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("jobs", [1, 2])
def test_every_part_spilled_at_once_over_workers(
    tmp_path: Path, jobs: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blocks fingerprinted by forked workers, small chunks counted by workers too."""
    monkeypatch.setattr(fingerprinting, "MIN_PARALLEL_ENTRIES", 0)
    monkeypatch.setattr(fingerprinting, "STORED_BLOCK_ENTRIES", 7)
    monkeypatch.setattr(local.counting, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(local.counting, "MAX_CHUNK_INPUTS", 5)
    found = gather_inputs([], ReadOptions(), corpus(7, 120))
    for params in (Params(threshold=0.6), Params(threshold=0.6, bits=64, scheme="balanced")):
        memory = scan_inputs(found, params, jobs=jobs)
        stored = scan_inputs(found, params, jobs=jobs, limits=SMALL, tmp_dir=str(tmp_path))
        identical(stored, memory)
        assert len(stored.pairs) > 10
    assert leftovers(tmp_path) == []


def test_files_and_featureless_documents_spill_in_their_order(
    tmp_path: Path, sample_corpus: Path
) -> None:
    options = ReadOptions()
    extra = [Document("zz-empty", ""), Document("zz-stop", "the and of"), Document("a", "w1 w2")]
    found = gather_inputs([str(sample_corpus)], options, extra)
    params = Params(threshold=0.5)
    work = tmp_path / "work"
    work.mkdir()
    stored = scan_inputs(found, params, options, limits=TINY, tmp_dir=str(work))
    identical(stored, scan_inputs(found, params, options))
    assert [s.path for s in stored.skipped][-2:] == ["zz-empty", "zz-stop"]
    assert leftovers(work) == []


def test_the_plan_of_a_stored_corpus_says_what_goes_to_disk(tmp_path: Path) -> None:
    found = gather_inputs([], ReadOptions(), corpus(3, 80))
    params = Params(bits=64, scheme="balanced", threshold=0.6)
    held = plan_inputs(found, params)
    stored = plan_inputs(found, params, limits=TINY, tmp_dir=str(tmp_path))
    disk = stored.pop("disk")
    # The same plan; its memory is priced as the scan of a stored corpus prices it.
    stored_memory, held_memory = stored.pop("memory"), held.pop("memory")
    assert stored == held
    assert stored_memory["budget"] == held_memory["budget"]
    assert stored_memory["predicted"] != held_memory["predicted"]
    assert "disk" not in held
    assert disk["directory"] == str(tmp_path)
    assert disk["store"] > 0
    assert disk["pairs"] > 0  # every pair past its limit of one
    assert leftovers(tmp_path) == []


def test_the_default_limits_keep_small_corpora_in_memory() -> None:
    limits = spill_limits(200 << 20)
    assert (limits.corpus_entries + 1) * HELD_ENTRY_BYTES > MIN_HELD_CORPUS
    assert spill_limits(4 << 30).blocks <= (4 << 30) // 2


# Temporary files go, whatever the end; a disk without room ends the run with one line.


def test_temporary_files_go_when_the_scan_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        assert any(tmp_path.iterdir())  # the store is there while the pairs are verified
        raise RuntimeError("verification failed")

    monkeypatch.setattr(local_pairs, "verify_stored", broken)
    found = gather_inputs([], ReadOptions(), corpus(1, 50))
    with pytest.raises(RuntimeError, match="verification failed"):
        scan_inputs(found, Params(), limits=TINY, tmp_dir=str(tmp_path))
    assert leftovers(tmp_path) == []


class FullDisk(io.RawIOBase):
    """A file on a disk with no room left: every write fails as the system's would."""

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


def full_disk(path: str, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
    """``open``, where files opened for writing are on a full disk."""
    if "w" in mode:
        return io.BufferedWriter(FullDisk())
    return open(path, mode, *args, **kwargs)


def tiny_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every scan of the command line spill everything."""
    monkeypatch.setattr(budget_module, "spill_limits", lambda budget: SMALL)


@pytest.fixture
def corpus_file(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    lines = [json.dumps({"id": d.name, "text": d.text}) for d in corpus(11, 150)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv", "table"])
def test_the_command_line_prints_the_same_bytes_from_the_store(
    tmp_path: Path, corpus_file: Path, fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["scan", "--jsonl", str(corpus_file), "--format", fmt, "--threshold", "0.6"]
    held = CliRunner().invoke(cli, [*args, "--clusters"])
    assert held.exit_code == 0, held.output
    tiny_limits(monkeypatch)
    work = tmp_path / "work"
    work.mkdir()
    stored = CliRunner().invoke(cli, [*args, "--clusters", "--tmp-dir", str(work)])
    assert stored.exit_code == 0, stored.output
    assert re.sub(r"\d+\.\d+s", "", stored.output) == re.sub(r"\d+\.\d+s", "", held.output)
    assert leftovers(work) == []


def test_a_full_disk_ends_the_scan_with_one_line(
    tmp_path: Path, corpus_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tiny_limits(monkeypatch)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setattr(spill_files, "open", full_disk, raising=False)
    out = tmp_path / "pairs.json"
    args = ["scan", "--jsonl", str(corpus_file), "--tmp-dir", str(work), "-o", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 4
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1
    assert "no room left for temporary files" in lines[0]
    assert "--tmp-dir" in lines[0]
    assert leftovers(work) == []
    assert not out.exists()  # nothing half written
    assert corpus_file.stat().st_size > 0


@pytest.mark.parametrize(
    "limits", [TINY, SMALL, SpillLimits(0, 1000, 5, 1000)], ids=["tiny", "small", "blocks"]
)
@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_the_report_written_from_the_store_is_the_same_file(
    tmp_path: Path,
    corpus_file: Path,
    fmt: str,
    limits: SpillLimits,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    args = ["scan", "--jsonl", str(corpus_file), "--format", fmt, "--threshold", "0.6"]
    held = tmp_path / f"held.{fmt}"
    assert CliRunner().invoke(cli, [*args, "-o", str(held)]).exit_code == 0
    monkeypatch.setattr(budget_module, "spill_limits", lambda budget: limits)
    work = tmp_path / "work"
    work.mkdir()
    for jobs in ("1", "2"):
        stored = tmp_path / f"stored-{jobs}.{fmt}"
        command = [*args, "-o", str(stored), "--jobs", jobs, "--tmp-dir", str(work)]
        result = CliRunner().invoke(cli, command)
        assert result.exit_code == 0, result.output
        if fmt == "jsonl":
            assert stored.read_bytes() == held.read_bytes()
        else:  # the same but for the timings
            ran, kept = json.loads(stored.read_bytes()), json.loads(held.read_bytes())
            for report in (ran, kept):
                report["stats"].pop("timings", None)
            assert ran == kept
        assert leftovers(work) == []


class FullAfter:
    """``open`` on a disk that fills up when files named ``prefix...`` are written."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.refused: list[str] = []

    def __call__(self, path: str, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if "w" in mode and Path(path).name.startswith(self.prefix):
            self.refused.append(path)
            return io.BufferedWriter(FullDisk())
        return open(path, mode, *args, **kwargs)


def ended_on_a_full_disk(result: Any, work: Path, out: Path) -> None:
    """Assert a scan ended with one line and exit 4, its files gone, the old report kept."""
    assert result.exit_code == 4, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1
    assert lines[0].startswith("Error: no room left for temporary files in ")
    assert leftovers(work) == []
    assert out.read_bytes() == b"the report of an earlier run\n"


@pytest.mark.parametrize(
    "prefix", ["indices", "weights", "names", "shared", "waiting", "held", "reported"]
)
def test_a_disk_that_fills_at_any_stage_ends_the_scan_with_one_line_and_loses_nothing(
    tmp_path: Path, corpus_file: Path, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store, the shared rows, the waiting, held and reported pairs: each may fill it.

    A report already at the output path keeps its bytes, and so does the corpus.
    """
    tiny_limits(monkeypatch)
    work = tmp_path / "work"
    work.mkdir()
    out = tmp_path / "pairs.jsonl"
    out.write_bytes(b"the report of an earlier run\n")
    corpus_bytes = corpus_file.read_bytes()
    full = FullAfter(prefix)
    monkeypatch.setattr(spill_files, "open", full, raising=False)
    args = ["scan", "--jsonl", str(corpus_file), "--tmp-dir", str(work), "--threshold", "0.6"]
    result = CliRunner().invoke(cli, [*args, "--format", "jsonl", "-o", str(out)])
    assert full.refused  # the scan came as far as writing those files
    ended_on_a_full_disk(result, work, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.jsonl", "pairs.jsonl", "work"]
    assert corpus_file.read_bytes() == corpus_bytes


@pytest.mark.parametrize("prefix", ["held", "reported"])
def test_a_disk_that_fills_with_the_pairs_of_a_corpus_in_memory_ends_with_one_line(
    tmp_path: Path, corpus_file: Path, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The corpus stays in memory; its reported pairs outgrow the budget and go to disk."""
    monkeypatch.setattr(budget_module, "resident_memory", lambda: 0)
    limits = SpillLimits(corpus_entries=10**9, block_entries=1 << 16, waiting_pairs=1, held_pairs=5)
    monkeypatch.setattr(budget_module, "spill_limits", lambda budget: limits)
    found = gather_inputs([], ReadOptions(), corpus(11, 150))
    params = Params(threshold=0.6)
    predicted = plan_inputs(found, params, memory=1 << 40, jobs=1)["memory"]["predicted"]
    budget = predicted["total"] - predicted["held"] + 2 * 10 * budget_module.PAIR_BYTES
    work = tmp_path / "work"
    work.mkdir()
    out = tmp_path / "pairs.jsonl"
    out.write_bytes(b"the report of an earlier run\n")
    full = FullAfter(prefix)
    monkeypatch.setattr(spill_files, "open", full, raising=False)
    args = ["scan", "--jsonl", str(corpus_file), "--tmp-dir", str(work), "--threshold", "0.6"]
    args += ["--jobs", "1", "--memory", str(budget), "--format", "jsonl", "-o", str(out)]
    result = CliRunner().invoke(cli, args)
    assert full.refused  # the pairs went to disk
    ended_on_a_full_disk(result, work, out)


def test_a_store_that_would_not_fit_is_refused_with_the_size_it_needs(
    tmp_path: Path, corpus_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tiny_limits(monkeypatch)
    monkeypatch.setattr(SpillDir, "free", lambda self: 1000)
    result = CliRunner().invoke(
        cli, ["scan", "--jsonl", str(corpus_file), "--tmp-dir", str(tmp_path)]
    )
    assert result.exit_code == 4
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1
    assert "temporary store needs about" in lines[0]
    assert "which has 1000 bytes free" in lines[0]  # small sizes in bytes
    assert leftovers(tmp_path) == ["corpus.jsonl"]


def test_pairs_that_would_not_fit_on_disk_are_refused_before_pair_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = gather_inputs([], ReadOptions(), corpus(5, 80))
    started = []
    monkeypatch.setattr(tiles, "Tiles", lambda *a: started.append(1))
    original = SpillDir.free
    monkeypatch.setattr(SpillDir, "free", lambda self: original(self) if not self.created else 10)
    with pytest.raises(SpillError, match="pair search's temporary files need about"):
        scan_inputs(found, Params(bits=64, scheme="balanced"), limits=TINY, tmp_dir=str(tmp_path))
    assert not started
    assert leftovers(tmp_path) == []


#: A scan that spills everything and waits, once its pairs are being verified, to be
#: interrupted; it says where it waits by writing ``ready``.
WAIT_IN_PAIRS = """
import sys, time
import simdup.cli as entry
import simdup.search.plan.budget as budget
import simdup.spill as spill_files
import simdup.engines.local.pairs as pairs
from simdup.search.plan.budget import SpillLimits

budget.spill_limits = lambda size: SpillLimits(0, 1, 1, 1)
ready = sys.argv[1]

def waiting(*args, **kwargs):
    open(ready, "w").close()
    while True:
        time.sleep(0.05)

pairs.verify_stored = waiting
sys.argv = ["simdup", *sys.argv[2:]]
entry.main()
"""


def scan_waiting_in_pairs(tmp_path: Path, corpus_file: Path, work: Path) -> subprocess.Popen[bytes]:
    """Start a scan that spills to ``work`` and return it once it waits in its pair stage."""
    work.mkdir()
    ready = tmp_path / "ready"
    command = [sys.executable, "-c", WAIT_IN_PAIRS, str(ready)]
    command += ["scan", "--jsonl", str(corpus_file), "--tmp-dir", str(work)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for _ in range(1200):
        if ready.exists() or process.poll() is not None:
            break
        time.sleep(0.05)
    if not ready.exists():
        process.kill()
        raise AssertionError(process.communicate(timeout=60))
    return process


@pytest.mark.parametrize(
    ("number", "status", "line"),
    [
        (signal.SIGINT, 130, "simdup: interrupted"),
        (signal.SIGTERM, 143, "simdup: terminated"),
    ],
)
def test_ctrl_c_or_kill_while_pairs_are_verified_removes_the_temporary_files(
    tmp_path: Path, corpus_file: Path, number: int, status: int, line: str
) -> None:
    work = tmp_path / "work"
    process = scan_waiting_in_pairs(tmp_path, corpus_file, work)
    try:
        assert leftovers(work)  # the store is there
        process.send_signal(number)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == status
    assert [text for text in err.decode().splitlines() if text.strip()] == [line]
    assert leftovers(work) == []


def test_a_store_left_by_a_killed_scan_is_removed_by_the_next_one(
    tmp_path: Path, corpus_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``kill -9`` leaves the store behind; the next scan that spills there removes it."""
    work = tmp_path / "work"
    process = scan_waiting_in_pairs(tmp_path, corpus_file, work)
    try:
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=60)
    finally:
        process.kill()
        process.wait()
    left = leftovers(work)
    assert len(left) == 1  # the killed run's store
    assert left[0].startswith(spill_files.PREFIX)
    assert spill_files.OWNER in leftovers(work / left[0])
    tiny_limits(monkeypatch)
    result = CliRunner().invoke(cli, ["scan", "--jsonl", str(corpus_file), "--tmp-dir", str(work)])
    assert result.exit_code == 0, result.output
    assert leftovers(work) == []


def test_only_stores_nobody_holds_are_removed(tmp_path: Path) -> None:
    """A live run's store, one without an owner file, and anything else stay."""
    live = SpillDir(str(tmp_path))
    try:
        live.column("a", np.int64).append([1, 2, 3])
        unmarked = tmp_path / f"{spill_files.PREFIX}unmarked"
        unmarked.mkdir()
        other = tmp_path / "other"
        other.mkdir()
        (other / spill_files.OWNER).write_text("")
        stray = tmp_path / f"{spill_files.PREFIX}file"
        stray.write_text("not a directory")
        abandoned = tmp_path / f"{spill_files.PREFIX}abandoned"
        abandoned.mkdir()
        (abandoned / spill_files.OWNER).write_text("")  # nobody holds it locked
        (abandoned / "weights").write_bytes(b"x" * 100)
        assert spill_files.remove_abandoned(str(tmp_path)) == [str(abandoned)]
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            [Path(live.path).name, unmarked.name, other.name, stray.name]
        )
        assert Path(live.path, "a").exists()
    finally:
        live.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [unmarked.name, other.name, stray.name]
    )


def test_a_file_system_without_locks_spills_unmarked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where locks fail (some network file systems), the run goes on; its folder is unmarked."""

    def no_locks(descriptor: int, operation: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr("fcntl.flock", no_locks)
    directory = SpillDir(str(tmp_path))
    try:
        directory.column("a", np.int64).append([1, 2])
        assert leftovers(Path(directory.path)) == ["a"]
    finally:
        directory.close()
    assert leftovers(tmp_path) == []
