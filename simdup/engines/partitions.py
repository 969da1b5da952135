"""The work of one partition of a distributed scan, as plain functions over numpy arrays.

A distributed engine cuts every stage of :func:`simdup.find_duplicates` into partitions
and moves only what a stage needs between them. Each function here is one partition's
share of a stage, built from the library's own stage functions (reading, counting,
weighting, fingerprinting, verifying), so the arrays it returns are the ones the local
engine computes for the same documents:

* **read**: a partition of the inputs (a group of files, or one JSON Lines file) is read
  and counted where it lives (:func:`read_part`); only names, feature counts and skips
  leave it (:func:`part_summary`).
* **weigh**: once every document has its row number (documents sorted by name, as the
  local engine numbers them), a partition weighs and fingerprints its own rows
  (:func:`weigh_part`). tf-idf's document frequencies come from a reduction of
  :func:`document_frequencies` over the partitions (:func:`add_frequencies`).
* **candidates**: each partition splits its rows' fingerprints by table and key
  (:func:`split_keys`); a shuffle brings one table's equal keys together, where pairs are
  made (:func:`bucket_candidates`). A pair sharing keys in several tables is kept by the
  first of them only, as the local engine keeps it.
* **verify**: each candidate partition takes the weight rows it needs from the
  partitions holding them (:func:`select_rows`) and measures its pairs
  (:func:`verify_pairs`) with :func:`simdup.verify.cosine_many`, whose sums depend only on
  the two rows: the cosines are the local engine's to the last bit.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.blocking import LARGE_BUCKET, LargeBucket, masked_keys
from simdup.corpus import JsonlOptions, ReadOptions, Source, read_documents
from simdup.counts import ChunkCounts
from simdup.exact import ExactWork, heavy_features
from simdup.jsonl_inputs import read_jsonl_input
from simdup.model import PairArrays, Params, Skip
from simdup.parallel import count_chunk, merge
from simdup.simhash import fingerprint_many
from simdup.verify import cosine_many, estimate_cosine_many
from simdup.weights import WeightMatrix, check_weighting, idf, scale_counts

#: Rows per shuffle partition of one table (a row travels as its number and fingerprint).
SHUFFLE_ROWS = 1 << 21


@dataclass(frozen=True)
class FilesPart:
    """A partition of file inputs: regular files found by the walk, read by a worker."""

    sources: tuple[Source, ...]


@dataclass(frozen=True)
class JsonlPart:
    """A JSON Lines input: a path, an fsspec URL, or bytes already read (``data``)."""

    label: str
    data: bytes | None = None


Part = FilesPart | JsonlPart


@dataclass(frozen=True)
class ReadResult:
    """A partition after reading and counting: held on the worker that read it.

    Attributes:
        names: Names of the documents read, in input order.
        counts: Their term counts (a partition-local vocabulary).
        skipped: Inputs of the partition that were not read, in input order.
    """

    names: list[str]
    counts: ChunkCounts
    skipped: list[Skip]


@dataclass(frozen=True)
class Summary:
    """What a partition tells the client: names, distinct features per document, skips."""

    names: list[str]
    lengths: npt.NDArray[np.int64]
    skipped: list[Skip]


@dataclass(frozen=True)
class Vectors:
    """A partition's weighted rows, held on a worker until its pairs are verified.

    Attributes:
        rows: int64 (k,), global row numbers of the matrix rows, ascending.
        matrix: Weights of those rows (partition-local vocabulary).
        fingerprints: uint64 (k, words).
    """

    rows: npt.NDArray[np.int64]
    matrix: WeightMatrix
    fingerprints: npt.NDArray[np.uint64]


@dataclass(frozen=True)
class Candidates:
    """Candidate pairs of one shuffle partition, with their Hamming distances.

    Attributes:
        pairs: int64 (m, 2) global rows, ``i < j``.
        hamming: int64 (m,).
        large: Buckets of the partition with more than :data:`LARGE_BUCKET` distinct
            fingerprints, ordered by key (reported in the plan, as locally).
        table_candidates: Pairs of distinct fingerprints sharing a key of the table in
            this partition, before the pre-filter (the local ``table_candidates``).
    """

    pairs: npt.NDArray[np.int64]
    hamming: npt.NDArray[np.int64]
    large: tuple[LargeBucket, ...] = ()
    table_candidates: int = 0


@dataclass(frozen=True)
class Verified:
    """A candidate partition after verification (what :func:`find_pairs` counts)."""

    candidates: int
    above_threshold: int
    kept: PairArrays


def read_part(
    part: Part,
    options: ReadOptions,
    fields: JsonlOptions,
    stopwords: bool | str,
    ngram: int,
    segment: str = "bigrams",
) -> ReadResult:
    """Read a partition and count its documents' features (the texts stay here)."""
    if isinstance(part, FilesPart):
        documents, skipped = read_documents(part.sources, options)
    else:
        documents, skipped = read_jsonl_input(part.label, fields, part.data)
    counts = count_chunk([d.text for d in documents], stopwords, ngram, segment)
    return ReadResult([d.name for d in documents], counts, skipped)


def part_summary(part: ReadResult) -> Summary:
    """Return what the client needs of a read partition: names, lengths, skips."""
    return Summary(part.names, part.counts.lengths, part.skipped)


_Kept = tuple[
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.signedinteger[Any]],
    npt.NDArray[np.signedinteger[Any]],
    tuple[str, ...],
]


def _kept_counts(part: ReadResult, rows: npt.NDArray[np.int64]) -> _Kept:
    """Return the partition's counts restricted to documents with a row, in row order.

    Returns:
        ``(rows, indptr, indices, counts, vocabulary)``: the kept global rows ascending
        and their term counts in CSR form (partition-local feature ids).
    """
    matrix = merge([part.counts])
    keep = rows >= 0
    order = np.argsort(rows[keep], kind="stable")
    kept_docs = np.flatnonzero(keep)[order]
    lengths = matrix.row_lengths()
    starts = matrix.indptr[:-1][kept_docs]
    sizes = lengths[kept_docs]
    entry = np.repeat(starts - (np.cumsum(sizes) - sizes), sizes) + np.arange(int(sizes.sum()))
    indptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    return rows[kept_docs], indptr, matrix.indices[entry], matrix.counts[entry], matrix.vocabulary


def document_frequencies(part: ReadResult, rows: npt.NDArray[np.int64]) -> dict[str, int]:
    """Return how many of the partition's kept documents hold each feature."""
    _, _, indices, _, vocabulary = _kept_counts(part, rows)
    df = np.bincount(indices, minlength=len(vocabulary))
    present = np.flatnonzero(df)
    return dict(zip([vocabulary[k] for k in present.tolist()], df[present].tolist(), strict=True))


def add_frequencies(*parts: Mapping[str, int]) -> dict[str, int]:
    """Return the sum of document-frequency tables (one step of the reduction)."""
    total: dict[str, int] = {}
    for table in parts:
        for feature, count in table.items():
            total[feature] = total.get(feature, 0) + count
    return total


def weigh_part(
    part: ReadResult,
    rows: npt.NDArray[np.int64],
    params: Params,
    frequencies: Mapping[str, int] | None,
    documents: int,
) -> Vectors:
    """Weigh and fingerprint the partition's kept rows, as :meth:`CountMatrix.weights` does.

    Args:
        part: The partition read by :func:`read_part`.
        rows: int64 (documents of the part,), global row per document (-1: not scanned).
        params: The settings.
        frequencies: Corpus document frequency per feature (tfidf only).
        documents: Rows in the corpus (the N of idf).
    """
    kind = check_weighting(params.weighting)
    kept, indptr, indices, counts, vocabulary = _kept_counts(part, rows)
    data = scale_counts(np.asarray(counts, dtype=np.float64), kind)
    if kind == "tfidf":
        if frequencies is None:
            raise ValueError("tfidf weighting needs the corpus document frequencies")
        df = np.fromiter(
            (frequencies.get(f, 0) for f in vocabulary), dtype=np.int64, count=len(vocabulary)
        )
        data = data * idf(df, documents)[indices]
    matrix = WeightMatrix(indptr, indices, data, vocabulary)
    return Vectors(kept, matrix, fingerprint_many(matrix, params.bits, params.seed))


def vector_rows(vectors: Vectors) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]]:
    """Return a partition's rows and fingerprints (what the plan is computed from)."""
    return vectors.rows, vectors.fingerprints


def shuffle_partitions(documents: int) -> int:
    """Return how many shuffle partitions one table's keys are split into.

    >>> shuffle_partitions(10), shuffle_partitions(5_000_000)
    (1, 3)
    """
    return max(1, -(-documents // SHUFFLE_ROWS))


def split_keys(
    vectors: Vectors, masks: npt.NDArray[np.uint64], partitions: int
) -> dict[tuple[int, int], tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]]]:
    """Split a partition's rows by table and by shuffle partition of their key.

    Returns:
        ``{(table, shuffle partition): (rows, fingerprints)}``; every pair of rows with
        equal keys in a table lands in the same shuffle partition of that table.
    """
    out = {}
    # The fingerprints may be wider than the plan's width: its width is their first bits.
    prints = np.ascontiguousarray(vectors.fingerprints[:, : masks.shape[1]])
    for t, mask in enumerate(masks):
        keys = masked_keys(prints, mask)
        target = (keys % np.uint64(partitions)).astype(np.int64)
        for p in range(partitions):
            chosen = target == p
            out[(t, p)] = (vectors.rows[chosen], prints[chosen])
    return out


def _pairs_in_runs(
    starts: npt.NDArray[np.int64], sizes: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Return every pair of positions ``(x, y)``, ``x < y``, inside runs of sorted items.

    >>> [a.tolist() for a in _pairs_in_runs(np.array([0, 5]), np.array([3, 2]))]
    [[5, 0, 0, 1], [6, 1, 2, 2]]
    """
    firsts: list[npt.NDArray[np.int64]] = []
    seconds: list[npt.NDArray[np.int64]] = []
    for size in np.unique(sizes).tolist():
        x, y = np.triu_indices(size, 1)
        base = starts[sizes == size][:, None]
        firsts.append((base + x[None, :]).reshape(-1))
        seconds.append((base + y[None, :]).reshape(-1))
    if not firsts:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    return np.concatenate(firsts), np.concatenate(seconds)


def bucket_candidates(
    table: int,
    masks: npt.NDArray[np.uint64],
    max_hamming: int | None,
    *pieces: tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]],
) -> Candidates:
    """Return the pairs of one table's shuffle partition that the local engine would find.

    Rows with equal keys (the table's bits of their fingerprints) pair up; pairs farther
    apart than ``max_hamming`` are dropped, and so are pairs sharing a key in an earlier
    table (that table's partition reports them), so every pair is found once. Pairs are
    made and filtered about :data:`PAIRS_PER_STEP` at a time.
    """
    rows = np.concatenate([p[0] for p in pieces]) if pieces else np.zeros(0, np.int64)
    words = masks.shape[1]
    fingerprints = (
        np.concatenate([p[1] for p in pieces]) if pieces else np.zeros((0, words), np.uint64)
    )
    empty = Candidates(np.zeros((0, 2), np.int64), np.zeros(0, np.int64))
    if len(rows) < 2:
        return empty
    keyed = fingerprints & masks[table][None, :]
    order = np.lexsort((rows, *[keyed[:, w] for w in reversed(range(words))]))
    ordered = keyed[order]
    edges = np.flatnonzero(np.any(ordered[1:] != ordered[:-1], axis=1)) + 1
    starts = np.concatenate(([0], edges)).astype(np.int64)
    sizes = np.diff(np.concatenate((starts, [len(rows)]))).astype(np.int64)
    large = _large_buckets(table, rows[order], fingerprints[order], starts, sizes)
    raw = _distinct_key_pairs(fingerprints, masks[table])
    shared = sizes > 1
    rows, fingerprints = rows[order], fingerprints[order]
    columns = [np.ascontiguousarray(fingerprints[:, w]) for w in range(words)]
    found: list[npt.NDArray[np.int64]] = []
    distances: list[npt.NDArray[np.int64]] = []
    for run_starts, run_sizes in _run_groups(starts[shared], sizes[shared], PAIRS_PER_STEP):
        x, y = _pairs_in_runs(run_starts, run_sizes)
        x, y, distance = _within(columns, x, y, max_hamming)
        if table and len(x):
            fresh = ~_shared_earlier(fingerprints[x] ^ fingerprints[y], masks[:table])
            x, y, distance = x[fresh], y[fresh], distance[fresh]
        a, b = rows[x], rows[y]
        found.append(np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1))
        distances.append(distance)
    if not found or not sum(len(f) for f in found):
        return Candidates(empty.pairs, empty.hamming, large, raw)
    return Candidates(np.concatenate(found), np.concatenate(distances), large, raw)


def _distinct_key_pairs(fingerprints: npt.NDArray[np.uint64], mask: npt.NDArray[np.uint64]) -> int:
    """Return the pairs of distinct fingerprints sharing a key under ``mask``.

    The local engine counts a table's candidates among distinct fingerprints (equal ones
    are counted once, as identical pairs); equal fingerprints share every key, so they all
    land in one shuffle partition and the count adds up over partitions.

    >>> f = np.array([[1], [1], [3], [7]], dtype=np.uint64)
    >>> _distinct_key_pairs(f, np.array([1], dtype=np.uint64))
    3
    """
    distinct = np.unique(fingerprints, axis=0)
    _, sizes = np.unique(distinct & mask[None, :], axis=0, return_counts=True)
    return int((sizes * (sizes - 1) // 2).sum())


#: Pairs of positions made at once by :func:`bucket_candidates` (a run larger than this
#: is made whole).
PAIRS_PER_STEP = 1 << 21


def _run_groups(
    starts: npt.NDArray[np.int64], sizes: npt.NDArray[np.int64], budget: int
) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]]:
    """Yield consecutive runs in groups of about ``budget`` pairs.

    >>> [s.tolist() for s, _ in _run_groups(np.array([0, 4, 9]), np.array([4, 3, 2]), 7)]
    [[0], [4, 9]]
    """
    ends = np.cumsum(sizes * (sizes - 1) // 2)
    lo = 0
    while lo < len(sizes):
        base = int(ends[lo - 1]) if lo else 0
        hi = max(lo + 1, int(np.searchsorted(ends, base + budget, side="right")))
        yield starts[lo:hi], sizes[lo:hi]
        lo = hi


def _within(
    columns: Sequence[npt.NDArray[np.uint64]],
    x: npt.NDArray[np.int64],
    y: npt.NDArray[np.int64],
    max_hamming: int | None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Return the pairs within ``max_hamming`` and their distances, a word at a time.

    Most pairs of a bucket are far apart: after a word or two most are out of range, and
    the remaining words are read for the few left.
    """
    distance = np.zeros(len(x), dtype=np.int64)
    for column in columns:
        distance += np.bitwise_count(column[x] ^ column[y])
        if max_hamming is not None:
            near = distance <= max_hamming
            x, y, distance = x[near], y[near], distance[near]
    return x, y, distance


def _shared_earlier(
    differ: npt.NDArray[np.uint64], earlier: npt.NDArray[np.uint64]
) -> npt.NDArray[np.bool_]:
    """Tell which pairs (their fingerprints' XOR) agree on every bit of an earlier mask."""
    shared = np.zeros(len(differ), dtype=bool)
    for mask in earlier:
        used = np.flatnonzero(mask).tolist()
        clean = (differ[:, used[0]] & mask[used[0]]) == 0
        for w in used[1:]:
            clean &= (differ[:, w] & mask[w]) == 0
        shared |= clean
    return shared


def _large_buckets(
    table: int,
    rows: npt.NDArray[np.int64],
    fingerprints: npt.NDArray[np.uint64],
    starts: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
) -> tuple[LargeBucket, ...]:
    """Return the runs of equal keys holding over :data:`LARGE_BUCKET` distinct fingerprints.

    Each is sampled, as locally, by the lowest row of its first five distinct fingerprints.
    """
    out = []
    for start, size in zip(starts.tolist(), sizes.tolist(), strict=True):
        if size <= LARGE_BUCKET:
            continue
        members = fingerprints[start : start + size]
        distinct, inverse = np.unique(members, axis=0, return_inverse=True)
        if len(distinct) <= LARGE_BUCKET:
            continue
        inverse = inverse.reshape(-1)
        first = np.full(len(distinct), np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(first, inverse, rows[start : start + size])
        sample = tuple(first[:5].tolist())
        out.append(LargeBucket(table, size, size * (size - 1) // 2, sample))
    return tuple(out)


def join_candidates(*parts: Candidates) -> Candidates:
    """Join the candidates of several partitions (each pair is in exactly one of them)."""
    if not parts:
        return Candidates(np.zeros((0, 2), np.int64), np.zeros(0, np.int64))
    return Candidates(
        np.concatenate([p.pairs for p in parts]), np.concatenate([p.hamming for p in parts])
    )


def candidate_summary(candidates: Candidates) -> tuple[int, tuple[LargeBucket, ...], int]:
    """Return what the client needs of a candidate partition.

    Returns:
        ``(pairs, large buckets, table candidates)``.
    """
    return len(candidates.pairs), candidates.large, candidates.table_candidates


def identical_pairs(fingerprints: npt.NDArray[np.uint64]) -> int:
    """Return the pairs of rows with identical fingerprints (counted once, as locally).

    >>> identical_pairs(np.array([[1], [1], [1], [2]], dtype=np.uint64))
    3
    """
    if not len(fingerprints):
        return 0
    _, sizes = np.unique(fingerprints, axis=0, return_counts=True)
    return int((sizes * (sizes - 1) // 2).sum())


def corpus_work(frequencies: Mapping[str, int], documents: int, entries: int) -> ExactWork:
    """Return :func:`simdup.exact.exact_work` of the corpus from its document frequencies.

    The heavy features and the light walks depend only on the frequencies (features tied
    at the cut of :data:`~simdup.exact.MAX_HEAVY` have equal frequencies, so which of them
    is held densely changes no sum): the work is the local engine's.
    """
    df = np.fromiter(frequencies.values(), dtype=np.int64, count=len(frequencies))
    heavy = heavy_features(df, documents)
    light = df.copy()
    light[heavy] = 0
    return ExactWork(documents, len(heavy), int((light * (light - 1) // 2).sum()), entries)


def row_block(vectors: Vectors) -> RowBlock:
    """Return every weight row of a partition (gathered for an exact scan)."""
    return RowBlock(vectors.rows, vectors.matrix)


def gathered_matrix(blocks: Sequence[RowBlock]) -> WeightMatrix:
    """Join the row blocks of every partition into the corpus matrix, rows in row order.

    Each row keeps its entries in their order, so sums over a row (norms, cosines) are
    the ones the partitions compute.
    """
    rows, matrix = _joined(blocks)
    at = np.argsort(rows, kind="stable")
    sizes = np.diff(matrix.indptr)[at]
    entry = np.repeat(matrix.indptr[:-1][at] - (np.cumsum(sizes) - sizes), sizes) + np.arange(
        int(sizes.sum())
    )
    indptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    return WeightMatrix(indptr, matrix.indices[entry], matrix.data[entry], matrix.vocabulary)


def duplicate_groups(fingerprints: npt.NDArray[np.uint64]) -> list[LargeBucket]:
    """Return the groups of over :data:`LARGE_BUCKET` identical fingerprints, as locally.

    Groups come in the order of their fingerprints, each with its five lowest rows.
    """
    if not len(fingerprints):
        return []
    _, inverse, counts = np.unique(fingerprints, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    out = []
    for group in np.flatnonzero(counts > LARGE_BUCKET).tolist():
        size = int(counts[group])
        sample = tuple(np.flatnonzero(inverse == group)[:5].tolist())
        out.append(LargeBucket(-1, size, size * (size - 1) // 2, sample))
    return out


@dataclass(frozen=True)
class RowBlock:
    """Some weight rows of one partition, keyed by global row number."""

    rows: npt.NDArray[np.int64]
    matrix: WeightMatrix


def select_rows(vectors: Vectors, candidates: Candidates) -> RowBlock:
    """Return the partition's rows that appear in ``candidates`` (runs where they live)."""
    at = np.flatnonzero(np.isin(vectors.rows, np.unique(candidates.pairs)))
    m = vectors.matrix
    sizes = np.diff(m.indptr)[at]
    entry = np.repeat(m.indptr[:-1][at] - (np.cumsum(sizes) - sizes), sizes) + np.arange(
        int(sizes.sum())
    )
    indptr = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    return RowBlock(
        vectors.rows[at], WeightMatrix(indptr, m.indices[entry], m.data[entry], m.vocabulary)
    )


def _joined(blocks: Sequence[RowBlock]) -> tuple[npt.NDArray[np.int64], WeightMatrix]:
    """Join row blocks of several partitions into one matrix with one vocabulary."""
    vocabulary: dict[str, int] = {}
    indices: list[npt.NDArray[np.int64]] = []
    data: list[npt.NDArray[np.float64]] = []
    lengths: list[npt.NDArray[np.int64]] = []
    rows: list[npt.NDArray[np.int64]] = []
    for block in blocks:
        m = block.matrix
        used = np.unique(m.indices)
        mapping = np.full(len(m.vocabulary), -1, dtype=np.int64)
        mapping[used] = [vocabulary.setdefault(m.vocabulary[k], len(vocabulary)) for k in used]
        indices.append(mapping[m.indices])
        data.append(m.data)
        lengths.append(np.diff(m.indptr))
        rows.append(block.rows)
    all_lengths = np.concatenate(lengths) if lengths else np.zeros(0, np.int64)
    matrix = WeightMatrix(
        np.concatenate(([0], np.cumsum(all_lengths))).astype(np.int64),
        np.concatenate(indices) if indices else np.zeros(0, np.int64),
        np.concatenate(data) if data else np.zeros(0, np.float64),
        tuple(vocabulary),
    )
    return (np.concatenate(rows) if rows else np.zeros(0, np.int64)), matrix


def verify_pairs(
    candidates: Candidates, params: Params, report_all: bool, *blocks: RowBlock
) -> Verified:
    """Measure one partition's candidates and keep those the local engine would report."""
    pairs = candidates.pairs
    if not len(pairs):
        return Verified(0, 0, empty_pairs())
    rows, matrix = _joined(blocks)
    order = np.argsort(rows)
    local = order[np.searchsorted(rows[order], pairs)]
    # Column 0 stays the lower global row: cosine_many walks it on a tie, as locally.
    cosines = cosine_many(matrix, local)
    estimated = estimate_cosine_many(candidates.hamming, params.bits)
    measured = PairArrays(pairs, candidates.hamming, estimated, cosines)
    score = np.where(np.isnan(cosines), estimated, cosines)
    passed = score >= params.threshold
    kept = measured if report_all else measured.take(passed)
    return Verified(len(pairs), int(passed.sum()), kept)


def empty_pairs() -> PairArrays:
    """Return a :class:`PairArrays` without pairs."""
    return PairArrays(
        np.zeros((0, 2), dtype=np.int64),
        np.zeros(0, dtype=np.int64),
        np.zeros(0, dtype=np.float64),
        np.zeros(0, dtype=np.float64),
    )
