"""Weight rows joined across partitions: the verify stage, and the exact scan's gather.

Each candidate partition takes the weight rows and fingerprints its pairs need from the
partitions holding them (:func:`select_rows`) and measures its pairs (:func:`verify_pairs`)
with :func:`simdup.search.result.measure`, whose cosines' sums depend only on the two rows:
the measures are the local engine's to the last bit. For an exact scan every row is gathered
(:func:`row_block`, :func:`gathered_matrix`) into the matrix the local engine would hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from simdup.engines.dask.partitions import Vectors
from simdup.fingerprints.simhash import words64
from simdup.fingerprints.weights import WeightMatrix, take_rows
from simdup.model import PairArrays
from simdup.params import Params
from simdup.search.candidates import TableCandidates
from simdup.search.result import Verified, measure


@dataclass(frozen=True)
class RowBlock:
    """Some rows of one partition, keyed by global row number: weights and fingerprints."""

    rows: npt.NDArray[np.int64]
    matrix: WeightMatrix
    fingerprints: npt.NDArray[np.uint64]


def row_block(vectors: Vectors) -> RowBlock:
    """Return every weight row of a partition (gathered for an exact scan)."""
    return RowBlock(vectors.rows, vectors.matrix, vectors.fingerprints)


def gathered_matrix(blocks: Sequence[RowBlock]) -> WeightMatrix:
    """Join the row blocks of every partition into the corpus matrix, rows in row order.

    Each row keeps its entries in their order, so sums over a row (norms, cosines) are
    the ones the partitions compute.
    """
    rows, matrix = _joined(blocks)
    return take_rows(matrix, np.argsort(rows, kind="stable"))


def select_rows(vectors: Vectors, candidates: TableCandidates) -> RowBlock:
    """Return the partition's rows that appear in ``candidates`` (runs where they live)."""
    at = np.flatnonzero(np.isin(vectors.rows, np.unique(candidates.pairs)))
    return RowBlock(vectors.rows[at], take_rows(vectors.matrix, at), vectors.fingerprints[at])


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
    candidates: TableCandidates, params: Params, report_all: bool, *blocks: RowBlock
) -> Verified:
    """Measure one partition's candidates and keep those the local engine would report.

    The pairs are measured by :func:`simdup.search.result.measure` on the joined rows (the
    fingerprints at the width of ``params``), as the local engine measures them.
    """
    pairs = candidates.pairs
    if not len(pairs):
        return Verified(0, 0, PairArrays.empty())
    rows, matrix = _joined(blocks)
    fingerprints = np.concatenate([b.fingerprints for b in blocks])[:, : words64(params.fixed_bits)]
    order = np.argsort(rows)
    local = order[np.searchsorted(rows[order], pairs)]
    # Column 0 stays the lower global row: cosine_many walks it on a tie, as locally.
    measured = measure(matrix, fingerprints, local, params.fixed_bits)
    measured.pairs = pairs
    return Verified.of(measured, params.threshold, report_all)
