"""The work of one partition of a distributed scan, as plain functions over numpy arrays.

A distributed engine cuts every stage of :func:`simdup.find_duplicates` into partitions
and moves only what a stage needs between them. Each function of this module and of the
two above it is one partition's share of a stage, built from the library's own stage
functions (reading, counting, weighting, fingerprinting, verifying), so the arrays it
returns are the ones the local engine computes for the same documents:

* **read** (here): a partition of the inputs (a group of files, or one JSON Lines file) is
  read and counted where it lives (:func:`read_part`, the local engine's chunk reader);
  only names, feature counts and skips leave it (:func:`part_summary`).
* **weigh** (here): once every document has its row number (documents sorted by name, as
  the local engine numbers them), a partition weighs and fingerprints its own rows
  (:func:`weigh_part`). tf-idf's document frequencies come from a reduction of
  :func:`document_frequencies` over the partitions (:func:`add_frequencies`).
* **candidates** (:mod:`simdup.engines.dask.shuffle`): each partition splits its rows'
  fingerprints by table and key; a shuffle brings one table's equal keys together, where
  pairs are made.
* **verify** (:mod:`simdup.engines.dask.joins`): each candidate partition takes the weight rows
  it needs from the partitions holding them and measures its pairs there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.engines.local.counting import CountedChunk, read_counts
from simdup.fingerprints.simhash import fingerprint_many
from simdup.fingerprints.weights import WeightMatrix, row_entries, weigh
from simdup.inputs.files import ReadOptions
from simdup.inputs.gather import Input
from simdup.inputs.jsonl import JsonlOptions
from simdup.model import Skip
from simdup.params import Params
from simdup.search.exact import ExactWork, work_of
from simdup.text.counting import merge
from simdup.text.counts import CountMatrix


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


def read_part(
    part: Sequence[Input],
    options: ReadOptions,
    fields: JsonlOptions,
    stopwords: bool | str,
    ngram: int,
    segment: str = "bigrams",
) -> CountedChunk:
    """Read a partition and count its documents' features (the texts stay here).

    A partition is a chunk of the local engine's inputs (files, or one JSON Lines input),
    read by its chunk reader, :func:`simdup.engines.local.counting.read_counts`.
    """
    return read_counts(part, options, fields, stopwords, ngram, segment)


def part_summary(part: CountedChunk) -> Summary:
    """Return what the client needs of a read partition: names, lengths, skips."""
    return Summary(part.names, part.counts.lengths, part.skipped)


_Kept = tuple[
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.signedinteger[Any]],
    npt.NDArray[np.signedinteger[Any]],
    tuple[str, ...],
]


def _kept_counts(part: CountedChunk, rows: npt.NDArray[np.int64]) -> _Kept:
    """Return the partition's counts restricted to documents with a row, in row order.

    Returns:
        ``(rows, indptr, indices, counts, vocabulary)``: the kept global rows ascending
        and their term counts in CSR form (partition-local feature ids).
    """
    matrix = merge([part.counts])
    keep = rows >= 0
    order = np.argsort(rows[keep], kind="stable")
    kept_docs = np.flatnonzero(keep)[order]
    indptr, entries = row_entries(matrix.indptr, kept_docs)
    return (
        rows[kept_docs],
        indptr,
        matrix.indices[entries],
        matrix.counts[entries],
        matrix.vocabulary,
    )


def document_frequencies(part: CountedChunk, rows: npt.NDArray[np.int64]) -> dict[str, int]:
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
    part: CountedChunk,
    rows: npt.NDArray[np.int64],
    params: Params,
    frequencies: Mapping[str, int] | None,
    documents: int,
) -> Vectors:
    """Weigh and fingerprint the partition's kept rows, as the local engine does.

    Args:
        part: The partition read by :func:`read_part`.
        rows: int64 (documents of the part,), global row per document (-1: not scanned).
        params: The settings.
        frequencies: Corpus document frequency per feature (tfidf only).
        documents: Rows in the corpus (the N of idf).
    """
    kept, indptr, indices, counts, vocabulary = _kept_counts(part, rows)
    df: npt.NDArray[np.int64] | None = None
    if params.weighting == "tfidf":
        if frequencies is None:
            raise ValueError("tfidf weighting needs the corpus document frequencies")
        df = np.fromiter(
            (frequencies.get(f, 0) for f in vocabulary), dtype=np.int64, count=len(vocabulary)
        )
    counted = CountMatrix(indptr, indices, counts, vocabulary)
    matrix = weigh(counted, params.weighting, df, documents)
    return Vectors(kept, matrix, fingerprint_many(matrix, params.fixed_bits, params.seed))


def vector_rows(vectors: Vectors) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]]:
    """Return a partition's rows and fingerprints (what the plan is computed from)."""
    return vectors.rows, vectors.fingerprints


def corpus_work(frequencies: Mapping[str, int], documents: int, entries: int) -> ExactWork:
    """Return :func:`simdup.search.exact.exact_work` of the corpus from its document frequencies.

    The heavy features and the light walks depend only on the frequencies (features tied
    at the cut of :data:`~simdup.search.exact.MAX_HEAVY` have equal frequencies, so which of them
    is held densely changes no sum): the work is the local engine's.
    """
    df = np.fromiter(frequencies.values(), dtype=np.int64, count=len(frequencies))
    return work_of(df, documents, entries)
