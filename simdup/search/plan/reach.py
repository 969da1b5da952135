"""What random bit orders tell of table sets, counted once and kept between runs.

The planner prices tables by how far apart a pair may be and still be found
(:func:`simdup.search.tables.clean_ranks`): per random bit order, the largest distance
some table still keeps together. That depends on the width and the tables alone, not on
the corpus, yet drawing the orders and reading every table set off them took a second
of every scan that plans tables, however few its documents. So the reach is *counted*:
entry ``[t, d]`` holds how many of the orders have the first ``t + 1`` tables reach
exactly distance ``d``. Every recall and found share the planner needs is a sum over
those counts, and the counts are kept as :mod:`simdup.derived` tables.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import numpy.typing as npt

import simdup.search.tables as tables_module
from simdup import derived
from simdup.search.plan.recall import RECALL_SAMPLES
from simdup.search.tables import layered_best, sampled_ranks


def counted(reach: npt.NDArray[np.integer[Any]], bits: int) -> npt.NDArray[np.int64]:
    """Return per column of ``reach`` (samples, columns) how many orders reach each distance.

    int64 (columns, bits + 1); a reach beyond ``bits`` counts as ``bits``.

    >>> counted(np.array([[0, 2], [2, 2], [3, 9]]), 3).tolist()
    [[1, 0, 1, 1], [0, 0, 2, 1]]
    """
    columns = reach.shape[1]
    capped = np.clip(reach, 0, bits).astype(np.int64) + np.arange(columns) * (bits + 1)
    return np.bincount(capped.ravel(), minlength=columns * (bits + 1)).reshape(columns, bits + 1)


def recalls(
    counts: npt.NDArray[np.int64], cdf: npt.NDArray[np.float64], max_hamming: int
) -> npt.NDArray[np.float64]:
    """Return per row of ``counts`` the probability that a pair is found within ``max_hamming``.

    ``cdf[d]`` is the probability that a pair at the planned cosine is within distance
    ``d``; an order reaching ``r`` finds it when it is within ``min(r, max_hamming)``.

    >>> recalls(np.array([[1, 0, 1]]), np.array([0.5, 0.75, 1.0]), 1).tolist()
    [0.625]
    """
    positions = np.minimum(np.arange(counts.shape[1]), max_hamming)
    return np.asarray(counts @ cdf[positions] / counts[0].sum(), dtype=np.float64)


def found_shares(counts: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """Return, for one row of counts, the share of orders reaching at least each distance.

    >>> found_shares(np.array([1, 0, 2, 1])).tolist()
    [1.0, 0.75, 0.75, 0.25]
    """
    at_least = np.cumsum(counts[::-1])[::-1]
    return np.asarray(at_least / counts.sum(), dtype=np.float64)


@functools.lru_cache(maxsize=256)
def sampled_reach(bits: int, key_bits: int, tables: int) -> npt.NDArray[np.int64]:
    """Return the counts of the first 1..``tables`` sampled tables of ``key_bits`` bits.

    int64 (tables, bits + 1), read-only: the reach of a growing set of
    :func:`simdup.search.tables.sampled_tables` is its running maximum.
    """

    def compute() -> npt.NDArray[np.int64]:
        ranks = sampled_ranks(bits, key_bits, tables, samples=RECALL_SAMPLES)
        return counted(np.maximum.accumulate(ranks, axis=1), bits)

    return _kept(f"sampled-{bits}-{key_bits}-{tables}", compute)


@functools.lru_cache(maxsize=1024)
def layered_reach(bits: int, blocks: int, kept: int) -> npt.NDArray[np.int64]:
    """Return the counts, int64 (1, bits + 1), of every table of ``kept`` of ``blocks`` blocks."""

    def compute() -> npt.NDArray[np.int64]:
        best = layered_best(bits, blocks, kept, samples=RECALL_SAMPLES)
        return counted(best[:, None], bits)

    return _kept(f"layered-{bits}-{blocks}-{kept}", compute)


def _kept(name: str, compute: Any) -> npt.NDArray[np.int64]:
    """Return the counts ``name``, kept between runs (see :mod:`simdup.derived`)."""
    key = derived.stamp(tables_module.__file__, __file__)
    if key is not None:
        key = f"{key}|numpy {np.__version__}|{RECALL_SAMPLES}"
    counts: npt.NDArray[np.int64] = derived.kept(f"reach/{name}", key, compute, _data, _counts)
    counts.setflags(write=False)
    return counts


def _data(counts: npt.NDArray[np.int64]) -> dict[str, Any]:
    """Return ``counts`` as JSON-ready lists: per row, its first non-zero column and what follows.

    Each row is a narrow run of distances, so the zeros around it are left out.
    """
    firsts, rows = [], []
    for row in counts.tolist():
        nonzero = [i for i, c in enumerate(row) if c]
        first, last = (nonzero[0], nonzero[-1]) if nonzero else (0, -1)
        firsts.append(first)
        rows.append(row[first : last + 1])
    return {"width": counts.shape[1], "firsts": firsts, "rows": rows}


def _counts(data: dict[str, Any]) -> npt.NDArray[np.int64]:
    """Return the counts written by :func:`_data`."""
    out = np.zeros((len(data["rows"]), int(data["width"])), dtype=np.int64)
    for i, (first, row) in enumerate(zip(data["firsts"], data["rows"], strict=True)):
        out[i, first : first + len(row)] = row
    return out
