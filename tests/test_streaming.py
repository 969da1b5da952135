"""Scanning inputs read in workers equals reading every text first, whatever the chunks."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from simdup.cli import cli
from simdup.engines.local import (
    counting,
    find_duplicates,
    plan_duplicates,
    plan_inputs,
    scan_inputs,
)
from simdup.engines.local.counting import count_inputs, read_counts, read_inputs
from simdup.inputs.files import ReadOptions
from simdup.inputs.gather import gather_inputs, load_corpus, read_chunk, read_named
from simdup.inputs.jsonl import JsonlOptions, JsonlPart
from simdup.model import Document, ScanResult, Skip
from simdup.params import DEFAULT_MAX_SIZE, Params
from simdup.progress import Advance

T = TypeVar("T")

TEXTS = [
    "The quick brown fox jumps over the lazy dog near the river bank today",
    "The quick brown fox jumps over the lazy dog near the river bank",
    "Straße café naïve ﬁne — “quoted” text… with µ and ½",
    "Straße café naive fine quoted text with µ and ½",
    "中文分词 日本語のテキスト 안녕하세요 ภาษาไทย",
    "中文分词 日本語のテキスト 안녕하세요",
    "",
    "the and of",  # only stop words: no features
]


def same(a: ScanResult, b: ScanResult) -> None:
    """Assert two scans report the same rows, fingerprints, pairs and skips."""
    assert a.names == b.names
    assert np.array_equal(a.fingerprints, b.fingerprints)
    assert a.pairs.pairs.tolist() == b.pairs.pairs.tolist()
    assert a.pairs.cosine.tolist() == b.pairs.cosine.tolist()
    assert a.skipped == b.skipped
    assert np.array_equal(a.feature_counts, b.feature_counts)


def reference(paths: list[str], options: ReadOptions, params: Params) -> ScanResult:
    """Read every text first, then scan: what the command line did before counting."""
    documents, skipped = load_corpus(paths, options)
    return find_duplicates(documents, params, skipped=skipped)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """Texts of several scripts, a gzip file, a binary file, a file over a small limit."""
    root = tmp_path / "tree"
    (root / "sub").mkdir(parents=True)
    for k, text in enumerate(TEXTS):
        (root / ("sub" if k % 2 else "") / f"doc{k}.txt").write_text(text, encoding="utf-8")
    (root / "packed.txt.gz").write_bytes(gzip.compress(TEXTS[0].encode()))
    (root / "broken.gz").write_bytes(b"not gzip at all")
    (root / "image.bin").write_bytes(bytes(range(256)) * 2)
    (root / "big.txt").write_text("word " * 400)  # 2,000 bytes
    (root / "latin1.txt").write_bytes("caf\xe9 cr\xe8me br\xfbl\xe9e".encode("latin-1"))
    os.symlink(root / "big.txt", root / "link.txt")
    return root


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of two inputs, over worker processes from the second chunk."""
    monkeypatch.setattr(counting, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(counting, "SPAWNED_PARALLEL_BYTES", 0)
    monkeypatch.setattr(counting, "MIN_CHUNK_INPUTS", 1)
    monkeypatch.setattr(counting, "MAX_CHUNK_INPUTS", 2)


@pytest.mark.parametrize("jobs", [1, 2])
def test_scan_inputs_equals_reading_everything_first(
    tree: Path, jobs: int, small_chunks: None
) -> None:
    options = ReadOptions(max_size=1000)
    params = Params(threshold=0.5)
    found = gather_inputs([str(tree)], options)
    result = scan_inputs(found, params, options, jobs=jobs)
    same(result, reference([str(tree)], options, params))
    reasons = {Path(s.path).name: s.reason for s in result.skipped}
    assert reasons["image.bin"] == "binary file"
    assert "max-size" in reasons["big.txt"]
    assert "gzip" in reasons["broken.gz"]
    assert "symbolic link" in reasons["link.txt"]
    assert "no features" in reasons["doc7.txt"]
    assert len(result.pair_list()) >= 3


def test_sample_corpus_scans_the_same(sample_corpus: Path) -> None:
    options = ReadOptions()
    for params in (Params(), Params(bits=256, ngram=2, stopwords=False, weighting="tfidf")):
        found = gather_inputs([str(sample_corpus)], options)
        same(scan_inputs(found, params, options), reference([str(sample_corpus)], options, params))


def test_documents_in_memory_join_the_files_and_duplicate_names_are_skipped(tree: Path) -> None:
    options = ReadOptions()
    name = str(tree / "doc0.txt")
    extra = [Document("zz-record", TEXTS[1]), Document(name, "a record named like a file")]
    found = gather_inputs([str(tree)], options, extra)
    assert [d.path for d in found.duplicates] == [name]
    assert [i.name for i in found.inputs] == sorted(i.name for i in found.inputs)
    result = scan_inputs(found, Params(threshold=0.5), options, skipped=[Skip("x:3", "bad")])
    assert "zz-record" in result.names
    reasons = [s.reason for s in result.skipped]
    # Walk skips, unreadable files, the caller's skips, duplicates, then featureless ones.
    assert reasons.index("bad") < reasons.index("duplicate document name")
    assert reasons[-1].startswith("no features")
    documents, _ = load_corpus([str(tree)], options)
    expected = find_duplicates([*documents, extra[0]], Params(threshold=0.5))
    assert result.names == expected.names
    assert np.array_equal(result.fingerprints, expected.fingerprints)


@given(
    texts=st.lists(
        st.one_of(
            st.sampled_from(TEXTS),
            st.text(alphabet=st.characters(codec="utf-8"), max_size=80),
            st.text(alphabet="ab cd\n", max_size=40),
        ),
        max_size=12,
    ),
    chunk=st.integers(1, 5),
    ngram=st.integers(1, 2),
)
@settings(max_examples=30, deadline=None)
def test_counts_do_not_depend_on_chunks(texts: list[str], chunk: int, ngram: int) -> None:
    with tempfile.TemporaryDirectory() as root:
        for k, text in enumerate(texts):
            Path(root, f"f{k:02d}.txt").write_text(text, encoding="utf-8")
        options = ReadOptions()
        found = gather_inputs([root], options)
        whole = count_inputs(found.inputs, options, ngram=ngram)
        original = counting.MAX_CHUNK_INPUTS
        try:
            counting.MAX_CHUNK_INPUTS = chunk
            chunked = count_inputs(found.inputs, options, ngram=ngram)
        finally:
            counting.MAX_CHUNK_INPUTS = original
        documents, _ = load_corpus([root], options)
        expected = counting.count_matrix([d.text for d in documents], ngram=ngram)
    for got in (whole, chunked):
        assert got.counts.vocabulary == expected.vocabulary
        assert got.counts.indptr.tolist() == expected.indptr.tolist()
        assert got.counts.indices.tolist() == expected.indices.tolist()
        assert got.counts.counts.tolist() == expected.counts.tolist()


def test_meter_counts_documents_and_bytes(tree: Path, small_chunks: None) -> None:
    seen: list[tuple[int, int]] = []
    opened: list[tuple[str, int | None]] = []

    @contextmanager
    def meter(*, desc: str, total: int | None = None, unit: str = "doc") -> Iterator[Advance]:
        opened.append((desc, total))

        def advance(documents: int, size: int = 0) -> None:
            seen.append((documents, size))

        yield advance

    options = ReadOptions(max_size=DEFAULT_MAX_SIZE)
    found = gather_inputs([str(tree)], options)
    count_inputs(found.inputs, options, meter=meter)
    assert opened == [("read+tokenize", len(found.inputs))]
    assert sum(d for d, _ in seen) == len(found.inputs)
    unread = {"broken.gz", "image.bin"}
    expected = 0
    for item in found.inputs:
        path = Path(getattr(item, "path", ""))
        if path.name in unread:
            continue
        data = path.read_bytes()
        expected += len(gzip.decompress(data) if path.suffix == ".gz" else data)
    assert sum(s for _, s in seen) == expected


@pytest.mark.parametrize("jobs", [1, 2])
def test_plan_inputs_is_the_plan_of_the_documents_read(
    tree: Path, jobs: int, small_chunks: None
) -> None:
    options = ReadOptions(max_size=1000)
    extra = [Document("zz-record", TEXTS[1]), Document(str(tree / "doc0.txt"), "named twice")]
    found = gather_inputs([str(tree)], options, extra)
    documents, _ = load_corpus([str(tree)], options)
    for params in (Params(threshold=0.5), Params(bits=128, scheme="balanced", ngram=2)):
        planned = plan_inputs(found, params, options, jobs=jobs, memory=1 << 30)
        expected = plan_duplicates([*documents, extra[0]], params, jobs=jobs, memory=1 << 30)
        assert planned == expected
        assert planned["documents"] == len(scan_inputs(found, params, options).names)


@pytest.mark.parametrize("jobs", [1, 2])
def test_read_inputs_keeps_the_texts_in_input_order(
    tree: Path, jobs: int, small_chunks: None
) -> None:
    options = ReadOptions(max_size=1000)
    found = gather_inputs([str(tree)], options, [Document("rec", "in memory")])
    chunks = list(read_inputs(found.inputs, options, jobs=jobs))
    assert len(chunks) >= len(found.inputs) // 2
    read = [d for chunk in chunks for d in chunk.documents]
    documents, walked = load_corpus([str(tree)], options)
    assert read == sorted([*documents, Document("rec", "in memory")], key=lambda d: d.name)
    skipped = [s for chunk in chunks for s in chunk.skipped]
    unread = [*found.skipped, *skipped]
    assert sorted(unread, key=lambda s: s.path) == sorted(walked, key=lambda s: s.path)
    assert all(state is None for chunk in chunks for state in chunk.states)


def test_one_chunk_reader_for_files_documents_and_json_lines(tree: Path) -> None:
    """What a worker reads of mixed inputs: documents and skips in input order."""
    options = ReadOptions(max_size=1000)
    data = b'{"id": "j1", "text": "red fox"}\n{"id": "j1", "text": "again"}\n'
    inputs = [
        *gather_inputs([str(tree / "doc0.txt"), str(tree / "image.bin")], options).inputs,
        JsonlPart("<stdin>", data),
        Document("mem", "in memory"),
    ]
    chunk = read_chunk(inputs, options, JsonlOptions(), state=True)
    assert [d.name for d in chunk.documents] == [str(tree / "doc0.txt"), "j1", "mem"]
    assert [(s.path, s.reason) for s in chunk.skipped] == [
        (str(tree / "image.bin"), "binary file"),
        ("<stdin>:2", "duplicate id 'j1'"),
    ]
    assert chunk.size == len(TEXTS[0].encode()) + len(data) + len("in memory")
    file_state = chunk.states[0]
    assert file_state is not None
    assert chunk.states[1:] == [None, None]
    info = os.stat(tree / "doc0.txt")
    assert (file_state.size, file_state.mtime_ns) == (info.st_size, info.st_mtime_ns)
    assert (file_state.device, file_state.inode) == (info.st_dev, info.st_ino)
    counted = read_counts(inputs, options, JsonlOptions(), True, 1)
    assert counted.names == [d.name for d in chunk.documents]
    assert counted.skipped == chunk.skipped
    assert counted.size == chunk.size


def test_read_named_reads_just_those_files_again(tree: Path) -> None:
    options = ReadOptions()
    found = gather_inputs([str(tree)], options, [Document("rec", "in memory")])
    names = [str(tree / "doc0.txt"), "rec", str(tree / "image.bin")]
    got = {d.name: d.text for d in read_named(found.inputs, names, options)}
    assert got == {str(tree / "doc0.txt"): TEXTS[0], "rec": "in memory"}


def test_tokenize_progress_counts_documents_not_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, int | None]] = []
    consumed: list[int] = []

    def progress(items: Iterable[T], *, desc: str, total: int | None = None) -> Iterator[T]:
        calls.append((desc, total))
        for k, item in enumerate(items, 1):
            consumed.append(k)
            yield item

    texts = [f"text number {k}" for k in range(25)]
    counting.count_matrix(texts, chunk_documents=4, progress=progress)
    assert calls == [("tokenize", 25)]
    assert consumed[-1] == 25


def near_duplicate_tree(root: Path, files: int, repeat: int = 1) -> None:
    """Write ``files`` texts, each an edited copy of one of a few dozen originals.

    Each original is 60 words, ``repeat`` times over.
    """
    words = [f"w{k}" for k in range(400)]
    for k in range(files):
        base = (k % 37) * 7
        text = " ".join(words[base : base + 60] * repeat) + f" variant{k} café Straße"
        folder = root / f"d{k % 5}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{k:04d}.txt").write_text(text, encoding="utf-8")


def test_cli_scan_streams_over_workers_with_the_same_output(
    tmp_path: Path, simdup_script: str
) -> None:
    """The installed command, jobs 1 and 2, enough files for workers: the same JSON."""
    root = tmp_path / "tree"
    files = counting.PARALLEL_BYTES // (counting.INPUT_BYTES + 3_000) + 50
    near_duplicate_tree(root, files, repeat=12)  # about 3.6 KB a file
    size = sum(path.stat().st_size for path in root.rglob("*.txt"))
    assert counting.worth_workers(files, size)  # with --jobs 2, workers count most files
    outputs = []
    for jobs in ("1", "2"):
        done = subprocess.run(
            [simdup_script, "scan", str(root), "--format", "json", "-q", "--jobs", jobs],
            capture_output=True,
            check=True,
        )
        outputs.append(json.loads(done.stdout))
    assert outputs[0]["pairs"] == outputs[1]["pairs"]
    assert outputs[0]["stats"]["documents"] == files
    documents, _ = load_corpus([str(root)], ReadOptions())
    expected = find_duplicates(documents, Params())
    assert [(p["a"], p["b"]) for p in outputs[0]["pairs"]] == [
        (p.a, p.b) for p in expected.pair_list()
    ]


def test_cli_html_report_reads_the_viewed_files_again(runner: CliRunner, tmp_path: Path) -> None:
    root = tmp_path / "tree"
    near_duplicate_tree(root, 40)
    page = tmp_path / "report.html"
    done = runner.invoke(
        cli, ["scan", str(root), "-q", "--html", str(page)], catch_exceptions=False
    )
    assert done.exit_code == 0
    html = page.read_text(encoding="utf-8")
    # Pair views list shared terms, which only the texts (read again) can give.
    assert "shared terms (what makes them similar)" in html
    assert re.search(r"<td[^>]*>w\d+</td>", html)
