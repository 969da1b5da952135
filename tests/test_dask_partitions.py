"""The partition functions of the distributed engine against the local stage functions.

No cluster here: each function is called as a task would call it, and its result
compared with what the local engine computes for the same documents.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt
from hypothesis import given, settings
from hypothesis import strategies as st

from simdup.engines.dask.joins import gathered_matrix, row_block, select_rows, verify_pairs
from simdup.engines.dask.partitions import (
    Vectors,
    add_frequencies,
    corpus_work,
    document_frequencies,
    read_part,
    weigh_part,
)
from simdup.engines.dask.shuffle import bucket_candidates, candidate_summary, split_keys
from simdup.engines.local.counting import CountedChunk, count_inputs, count_matrix
from simdup.engines.local.fingerprinting import fingerprint_documents
from simdup.fingerprints.weights import WeightMatrix
from simdup.inputs.files import ReadOptions
from simdup.inputs.jsonl import JsonlOptions, JsonlPart
from simdup.inputs.walk import find_files
from simdup.model import Document
from simdup.params import Params
from simdup.search.candidates import (
    LARGE_BUCKET,
    LargeBucket,
    TableCandidates,
    candidate_chunks,
    identical_groups,
)
from simdup.search.exact import exact_work
from simdup.search.result import measure
from simdup.search.tables import block_tables, sampled_tables, table_masks
from simdup.text.counting import merge
from simdup.text.counts import ChunkCounts, CountMatrix

TEXTS = [
    "the red fox jumps over the lazy dog",
    "a red fox jumps over a lazy dog today",
    "whales sing in the deep blue sea",
    "whales sing songs in the deep blue sea",
    "",
    "fox fox fox dog",
]


def _part(texts: list[str]) -> CountedChunk:
    counts = count_matrix(texts)
    chunk = ChunkCounts.of(
        list(counts.vocabulary), counts.row_lengths(), counts.indices, counts.counts
    )
    return CountedChunk([f"d{k}" for k in range(len(texts))], chunk, [])


def _halves() -> tuple[list[CountedChunk], list[npt.NDArray[np.int64]], int]:
    """Two partitions of TEXTS with the local engine's rows (the empty text dropped)."""
    first, second = _part(TEXTS[:3]), _part(TEXTS[3:])
    return [first, second], [np.array([0, 1, 2]), np.array([3, -1, 4])], 5


def test_weighted_partitions_equal_the_local_matrix_and_fingerprints() -> None:
    docs = [Document(f"d{k}", t) for k, t in enumerate(TEXTS)]
    for weighting in ("tf", "log", "binary", "tfidf"):
        params = Params(weighting=weighting)
        local = fingerprint_documents(docs, params)
        parts, rows, n = _halves()
        frequencies = add_frequencies(
            *[document_frequencies(p, r) for p, r in zip(parts, rows, strict=True)]
        )
        for part, part_rows in zip(parts, rows, strict=True):
            vectors = weigh_part(part, part_rows, params, frequencies, n)
            assert vectors.fingerprints.tolist() == local.fingerprints[vectors.rows].tolist()
            for k, row in enumerate(vectors.rows.tolist()):
                mine = vectors.matrix.row(k)
                theirs = local.matrix.row(row)
                assert list(mine.items()) == list(theirs.items())


def test_verified_cosines_equal_the_local_ones_bit_for_bit() -> None:
    docs = [Document(f"d{k}", t) for k, t in enumerate(TEXTS)]
    params = Params(weighting="log", threshold=0.0)
    local = fingerprint_documents(docs, params)
    pairs = np.array([[i, j] for i in range(5) for j in range(i + 1, 5)], dtype=np.int64)
    expected = measure(local.matrix, local.fingerprints, pairs, params.fixed_bits)
    parts, rows, n = _halves()
    vectors = [weigh_part(p, r, params, None, n) for p, r in zip(parts, rows, strict=True)]
    candidates = TableCandidates(pairs)
    blocks = [select_rows(v, candidates) for v in vectors]
    verified = verify_pairs(candidates, params, True, *blocks)
    assert verified.candidates == len(pairs)
    assert verified.kept.hamming.tolist() == expected.hamming.tolist()
    assert verified.kept.cosine.tobytes() == expected.cosine.tobytes()
    assert verified.kept.estimated.tobytes() == expected.estimated.tobytes()


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 2**16 - 1), min_size=2, max_size=60),
    st.integers(1, 6),
    st.integers(1, 3),
    st.one_of(st.none(), st.integers(0, 16)),
)
def test_shuffled_candidates_are_the_local_candidates_once_each(
    seeds: list[int], tables: int, partitions: int, max_hamming: int | None
) -> None:
    # Few distinct values over 16 bits make many shared keys, duplicates and near pairs.
    fingerprints = np.array(seeds, dtype=np.uint64).reshape(-1, 1) * np.uint64(0x9E37)
    chosen = sampled_tables(64, 4, tables)
    masks = table_masks(chosen)
    counts: dict[str, int] = {}
    expected = {
        tuple(p)
        for chunk in candidate_chunks(fingerprints, chosen, max_hamming=max_hamming, counts=counts)
        for p in chunk.tolist()
    }
    rows = np.arange(len(fingerprints), dtype=np.int64)
    cut = len(rows) // 2
    empty = WeightMatrix(np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0), ())
    halves = [
        Vectors(rows[:cut], empty, fingerprints[:cut]),
        Vectors(rows[cut:], empty, fingerprints[cut:]),
    ]
    splits = [split_keys(v, masks, partitions) for v in halves]
    found: list[tuple[int, ...]] = []
    table_candidates, _ = identical_groups(fingerprints)
    for t in range(len(masks)):
        for q in range(partitions):
            pieces = [s[(t, q)] for s in splits]
            bucketed = bucket_candidates(t, masks, max_hamming, *pieces)
            found += [tuple(p) for p in bucketed.pairs]
            table_candidates += candidate_summary(bucketed)[2]
    assert len(found) == len(set(found))
    assert set(found) == expected
    assert table_candidates == counts["table_candidates"]


def test_wide_fingerprints_are_cut_to_the_width_of_the_tables() -> None:
    docs = [Document(f"d{k}", t) for k, t in enumerate(TEXTS)]
    parts, rows, n = _halves()
    wide = [weigh_part(p, r, Params(bits=512), None, n) for p, r in zip(parts, rows, strict=True)]
    masks = table_masks(block_tables(128, 4))
    narrow = fingerprint_documents(docs, Params(bits=128)).fingerprints
    for vectors in wide:
        for (table, _), (kept, prints) in split_keys(vectors, masks, 1).items():
            assert prints.tolist() == narrow[kept].tolist(), table


def test_gathered_rows_and_reduced_frequencies_give_the_local_exact_inputs() -> None:
    docs = [Document(f"d{k}", t) for k, t in enumerate(TEXTS)]
    local = fingerprint_documents(docs, Params()).matrix
    parts, rows, n = _halves()
    vectors = [weigh_part(p, r, Params(), None, n) for p, r in zip(parts, rows, strict=True)]
    matrix = gathered_matrix([row_block(v) for v in reversed(vectors)])
    for row in range(n):
        assert list(matrix.row(row).items()) == list(local.row(row).items())
    assert matrix.squared_norms().tobytes() == local.squared_norms().tobytes()
    frequencies = add_frequencies(
        *[document_frequencies(p, r) for p, r in zip(parts, rows, strict=True)]
    )
    assert corpus_work(frequencies, n, len(local.data)) == exact_work(local)


def test_jsonl_part_from_bytes_reads_like_a_file() -> None:
    data = b'{"id": "a", "text": "red fox"}\nnot json\n{"id": "a", "text": "again"}\n'
    part = read_part((JsonlPart("<stdin>", data),), ReadOptions(), JsonlOptions(), True, 1)
    assert part.names == ["a"]
    assert [(s.path, s.reason.split(" (")[0]) for s in part.skipped] == [
        ("<stdin>:2", "not valid JSON"),
        ("<stdin>:3", "duplicate id 'a'"),
    ]


def test_a_files_partition_is_read_as_a_local_worker_reads_it(tmp_path: Path) -> None:
    for k, text in enumerate(TEXTS):
        (tmp_path / f"t{k}.txt").write_text(text)
    (tmp_path / "z.bin").write_bytes(bytes(range(256)))
    options = ReadOptions()
    sources, _ = find_files([str(tmp_path)], options)
    part = read_part(tuple(sources), options, JsonlOptions(), "auto", 2, "bigrams")
    local = count_inputs(sources, options, stopwords="auto", ngram=2, jobs=1)
    assert part.names == local.names == [str(tmp_path / f"t{k}.txt") for k in range(len(TEXTS))]
    assert part.skipped == local.skipped
    assert [(s.path, s.reason) for s in part.skipped] == [(str(tmp_path / "z.bin"), "binary file")]
    matrix = merge([part.counts])
    assert isinstance(local.counts, CountMatrix)
    assert matrix.vocabulary == local.counts.vocabulary
    assert matrix.indptr.tolist() == local.counts.indptr.tolist()
    assert matrix.counts.tolist() == local.counts.counts.tolist()


def test_oversized_buckets_are_reported_as_the_local_engine_reports_them() -> None:
    rng = np.random.default_rng(5)
    size = LARGE_BUCKET + 3
    # One group of identical fingerprints, and one table-0 bucket of distinct ones.
    same = np.full((size, 1), 0xABCDEF, dtype=np.uint64)
    low = rng.integers(0, 2**32, size=size, dtype=np.uint64) << np.uint64(32)
    fingerprints = np.concatenate([same, (low | np.uint64(7)).reshape(-1, 1)])
    order = rng.permutation(len(fingerprints))
    fingerprints = fingerprints[order]
    tables = block_tables(64, 2)
    local: list[LargeBucket] = []
    for _ in candidate_chunks(fingerprints, tables, large=local, max_hamming=0):
        pass
    rows = np.arange(len(fingerprints), dtype=np.int64)
    masks = table_masks(tables)
    # The table-0 partition gets its rows in the order of the shuffle: not in row order.
    by_key = np.lexsort((rows, (fingerprints & masks[0][None, :])[:, 0]))
    shuffled = bucket_candidates(0, masks, 0, (rows[by_key], fingerprints[by_key]))
    mine = identical_groups(fingerprints)[1] + list(shuffled.large)
    assert mine == local
    assert [b.table for b in mine] == [-1, 0]
