"""Eval stage 2, the seed sweep: fingerprint every document once per hash seed, and score.

For each of ``hash_seeds`` independent seeds, every document is fingerprinted once at
the widest width; a ``k``-bit fingerprint is the low ``k`` bits of a wider one (the
reference draws sign bits in order from one xorshift stream per feature, and each slot's
sum depends only on its own bits), so every width is measured from the same
fingerprints. Per seed and width the sweep records the mean absolute error of the
estimated cosine over all pairs, and over the truly similar pairs for weighted and for
``binary`` (unweighted) fingerprints, where weights are the whole signal (the seed:
0.048 against 0.086 at 32 bits). At the scan width it counts, per blocking setting,
which pairs become candidates, with the same masks and pre-filter a scan uses.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from simdup.evaluate.results import EvalOptions
from simdup.evaluate.truth import Truth
from simdup.fingerprints.simhash import fingerprint_many, words64
from simdup.fingerprints.weights import WeightMatrix
from simdup.params import Params
from simdup.progress import Progress, no_progress
from simdup.search.candidates import candidate_pairs
from simdup.search.plan.planner import Plan

#: Seeds on which the scan's own candidate generation is timed (the candidates of every
#: seed are counted from the all-pairs XOR, which gives the same pairs).
TIMED_SEEDS = 10


def low_bits(fingerprints: npt.NDArray[np.uint64], bits: int) -> npt.NDArray[np.uint64]:
    """Return the ``bits``-bit fingerprints held in the low bits of wider ones.

    >>> low_bits(np.array([[0xFFFF]], dtype=np.uint64), 8).tolist()
    [[255]]
    """
    out: npt.NDArray[np.uint64] = np.array(fingerprints[:, : words64(bits)], dtype=np.uint64)
    if bits % 64:
        out[:, -1] &= np.uint64((1 << (bits % 64)) - 1)
    return out


def width_distances(
    diff: npt.NDArray[np.uint64], widths: Sequence[int]
) -> list[npt.NDArray[np.int64]]:
    """Return the Hamming distance at each width from XORed fingerprints (low bits).

    Args:
        diff: uint64 (m, words) XOR of pairs of the widest fingerprints.
        widths: Widths, each at most ``64 * words``.
    """
    counts = np.bitwise_count(diff).astype(np.int64)
    full = np.concatenate(
        (np.zeros((len(diff), 1), dtype=np.int64), np.cumsum(counts, axis=1)), axis=1
    )
    out = []
    for bits in widths:
        whole, rest = divmod(bits, 64)
        d = full[:, whole].copy()
        if rest:
            d += np.bitwise_count(diff[:, whole] & np.uint64((1 << rest) - 1)).astype(np.int64)
        out.append(d)
    return out


def with_binary_rows(matrix: WeightMatrix, rows: npt.NDArray[np.int64]) -> WeightMatrix:
    """Return ``matrix`` followed by copies of ``rows`` with every weight set to 1.

    >>> from simdup.fingerprints.weights import weights_to_matrix
    >>> m = with_binary_rows(weights_to_matrix([{"a": 2.0}, {"b": 3.0, "a": 1.0}]), np.array([1]))
    >>> [m.row(i) for i in range(m.rows)]
    [{'a': 2.0}, {'b': 3.0, 'a': 1.0}, {'b': 1.0, 'a': 1.0}]
    """
    lengths = matrix.row_lengths()[rows]
    starts = matrix.indptr[rows]
    offsets = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    entries = np.repeat(starts, lengths) + offsets
    return WeightMatrix(
        np.concatenate((matrix.indptr, matrix.indptr[-1] + np.cumsum(lengths))),
        np.concatenate((matrix.indices, matrix.indices[entries])),
        np.concatenate((matrix.data, np.ones(len(entries)))),
        matrix.vocabulary,
    )


def shares_key(
    diff: npt.NDArray[np.uint64], masks: npt.NDArray[np.uint64]
) -> npt.NDArray[np.bool_]:
    """Tell which pairs agree on every bit of some table: the pairs blocking makes candidates.

    Args:
        diff: uint64 (m, words), XOR of the two fingerprints of each pair.
        masks: uint64 (tables, words), each table's bit positions
            (:func:`simdup.search.tables.table_masks`).

    >>> shares_key(np.array([[0b0011], [0b0101]], dtype=np.uint64),
    ...            np.array([[0b1100], [0b0011]], dtype=np.uint64)).tolist()
    [True, False]
    """
    found = np.zeros(len(diff), dtype=bool)
    for mask in masks:
        found |= ~np.any(diff & mask, axis=1)
    return found


def scan_seconds(fingerprints: npt.NDArray[np.uint64], planned: Plan) -> float:
    """Return the seconds the scan's candidate generation takes on these fingerprints."""
    started = time.perf_counter()
    found = candidate_pairs(fingerprints, planned.tables)
    if planned.max_hamming is not None and len(found):
        distance = np.bitwise_count(fingerprints[found[:, 0]] ^ fingerprints[found[:, 1]])
        found = found[distance.sum(axis=1) <= planned.max_hamming]
    return time.perf_counter() - started


@dataclass
class SchemeTally:
    """One blocking setting being measured: its plan and what it found so far.

    Attributes:
        name: The setting's name (``strict``, ``max distance 3``, ...).
        plan: Its tables and pre-filter, planned as a scan would.
        masks: uint64 (tables, words), each table's bit positions.
        found: int64 (pairs,), seeds in which each pair became a candidate.
        candidates: Candidate pairs summed over seeds.
        seconds: Seconds of the scan's candidate generation, summed over timed seeds.
    """

    name: str
    plan: Plan
    masks: npt.NDArray[np.uint64]
    found: npt.NDArray[np.int64]
    candidates: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class SweepErrors:
    """Mean absolute errors of the estimated cosine, float64 (seeds, widths) each.

    Attributes:
        all_pairs: Over every pair, weighted fingerprints.
        similar: Over the truly similar (not identical) pairs, weighted fingerprints.
        binary: Over the same pairs, ``binary`` (unweighted) fingerprints.
    """

    all_pairs: npt.NDArray[np.float64]
    similar: npt.NDArray[np.float64]
    binary: npt.NDArray[np.float64]


def sweep_width(params: Params, options: EvalOptions) -> int:
    """Return the width fingerprinted per seed: the widest swept, or the scan's if wider."""
    return max(max(options.widths), params.fixed_bits)


def binary_stack(matrix: WeightMatrix, truth: Truth) -> tuple[WeightMatrix, npt.NDArray[np.int64]]:
    """Return the weighted rows followed by binary copies of the rows in similar pairs.

    One matrix, so each seed hashes the vocabulary once.

    Returns:
        ``(stacked, binary_of)``: the matrix, and int64 (n,) giving the row of each
        document's binary copy in it (-1 for documents in no similar pair).
    """
    n = matrix.rows
    similar_rows = truth.similar_rows
    binary_rows = np.unique(np.concatenate((truth.a[similar_rows], truth.b[similar_rows])))
    binary_of = np.full(n, -1, dtype=np.int64)
    binary_of[binary_rows] = n + np.arange(len(binary_rows))
    return with_binary_rows(matrix, binary_rows), binary_of


def _tally(
    tallies: Sequence[SchemeTally],
    weighted: npt.NDArray[np.uint64],
    truth: Truth,
    bits: int,
    timed: bool,
) -> None:
    """Add one seed's candidates at the scan width ``bits`` to every tally."""
    a, b = truth.a, truth.b
    scan_diff = low_bits(weighted[a] ^ weighted[b], bits)
    scan_distance = np.bitwise_count(scan_diff).sum(axis=1)
    for tally in tallies:
        found = shares_key(scan_diff, tally.masks)
        if tally.plan.max_hamming is not None:
            found &= scan_distance <= tally.plan.max_hamming
        tally.found += found
        tally.candidates += int(found.sum())
        if timed:
            tally.seconds += scan_seconds(low_bits(weighted, bits), tally.plan)


def sweep(
    matrix: WeightMatrix,
    truth: Truth,
    tallies: Sequence[SchemeTally],
    params: Params,
    options: EvalOptions,
    *,
    progress: Progress = no_progress,
) -> SweepErrors:
    """Fingerprint ``matrix`` once per seed; return the errors and fill ``tallies``.

    Args:
        matrix: The corpus weights, one row per document.
        truth: Its true cosines (:func:`simdup.evaluate.truth.truth`).
        tallies: Blocking settings to count candidates for, at ``params.bits``.
        params: Fingerprint settings; seeds run from ``params.seed``.
        options: Widths and number of seeds.
        progress: Progress hook, called over the hash seeds.
    """
    n = matrix.rows
    a, b, cosines, similar_rows = truth.a, truth.b, truth.cosines, truth.similar_rows
    stacked, binary_of = binary_stack(matrix, truth)
    widest = sweep_width(params, options)
    widths = options.widths
    seeds = options.hash_seeds
    errors = np.zeros((seeds, len(widths)))
    similar_errors = np.zeros((seeds, len(widths)))
    binary_errors = np.zeros((seeds, len(widths)))
    for s in progress(range(seeds), desc="hash seeds", total=seeds):
        prints = fingerprint_many(stacked, widest, params.seed + s)
        weighted = prints[:n]
        distances = width_distances(weighted[a] ^ weighted[b], widths)
        binary_distances = width_distances(
            prints[binary_of[a[similar_rows]]] ^ prints[binary_of[b[similar_rows]]], widths
        )
        for w, bits in enumerate(widths):
            estimate = np.cos(np.pi * distances[w] / bits)
            errors[s, w] = np.abs(estimate - cosines).mean()
            if len(similar_rows):
                similar = cosines[similar_rows]
                similar_errors[s, w] = np.abs(estimate[similar_rows] - similar).mean()
                binary_estimate = np.cos(np.pi * binary_distances[w] / bits)
                binary_errors[s, w] = np.abs(binary_estimate - similar).mean()
        _tally(tallies, weighted, truth, params.fixed_bits, s < TIMED_SEEDS)
    return SweepErrors(errors, similar_errors, binary_errors)
