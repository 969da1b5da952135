"""Eval, limits: the cost model that refuses runs too large, and the sample that fits.

All-pairs truth and the per-seed sweep cost O(n²) in the number of documents, so an
evaluation is estimated before it starts, from the corpus size and the options, and
refused above :data:`~simdup.evaluate.results.MAX_SECONDS` with the size of a
deterministic sample (chosen by a hash of the names alone) that fits.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from simdup.errors import ParameterError
from simdup.evaluate.results import EvalOptions
from simdup.fingerprints.simhash import words64
from simdup.fingerprints.weights import WeightMatrix
from simdup.model import Document

#: Cost model of one run, in seconds, measured on a 2-core machine: per seed (fixed
#: costs); per non-zero weight, bit and seed (slot sums of the widest fingerprints); per
#: pair, seed and unit of work (one word XORed and counted, or two per width for the error
#: sums); per pair and feature shared by two or more documents (the Gram matrix).
SEED_COST = 5e-3
FEATURE_BIT_COST = 1.5e-8
PAIR_UNIT_COST = 2.2e-8
GRAM_COST = 1e-10


def sample_documents(documents: Sequence[Document], size: int) -> list[Document]:
    """Return ``size`` documents chosen by a hash of their names, in name order.

    The choice depends only on the names (BLAKE2b), not on input order or on the other
    documents, so growing a corpus keeps the already-sampled documents that still rank.

    >>> docs = [Document(f"d{i}", "x") for i in range(10)]
    >>> [d.name for d in sample_documents(docs, 3)] == [d.name for d in sample_documents(
    ...     list(reversed(docs)), 3)]
    True
    """
    ranked = sorted(
        documents,
        key=lambda d: (
            hashlib.blake2b(d.name.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
            d.name,
        ),
    )
    return sorted(ranked[:size], key=lambda d: d.name)


def estimated_seconds(
    documents: int,
    nonzeros: int,
    shared_features: int,
    hash_seeds: int,
    widths: Sequence[int],
    tables: int = 0,
) -> float:
    """Return the estimated run time of an evaluation (the cost model, not a measurement).

    Args:
        documents: Documents with features.
        nonzeros: Non-zero weights of the corpus matrix.
        shared_features: Features present in two or more documents.
        hash_seeds: Seeds swept.
        widths: Fingerprint widths measured (the widest is fingerprinted).
        tables: Blocking tables tested against every pair, over all schemes.

    >>> from simdup.evaluate.results import DEFAULT_BITS, MAX_SECONDS
    >>> estimated_seconds(1000, 150_000, 10_000, 300, DEFAULT_BITS) > MAX_SECONDS
    True
    """
    pairs = documents * (documents - 1) / 2
    widest = max(widths)
    units = words64(widest) + 2 * len(widths) + tables
    per_seed = SEED_COST + FEATURE_BIT_COST * nonzeros * widest + PAIR_UNIT_COST * pairs * units
    return hash_seeds * per_seed + GRAM_COST * pairs * 2 * shared_features


def _fitting_sample(
    documents: int,
    nonzeros: int,
    shared: int,
    seeds: int,
    widths: Sequence[int],
    tables: int,
    limit: float,
) -> int:
    """Return the most documents whose evaluation fits in ``limit`` (features scaled)."""
    lo, hi = 2, documents
    while lo < hi:
        mid = (lo + hi + 1) // 2
        scale = mid / documents
        cost = estimated_seconds(
            mid, int(nonzeros * scale), int(shared * scale), seeds, widths, tables
        )
        if cost <= limit:
            lo = mid
        else:
            hi = mid - 1
    return lo


def check_size(
    matrix: WeightMatrix, options: EvalOptions, widths: Sequence[int], tables: int = 0
) -> None:
    """Refuse an evaluation estimated to take longer than ``options.max_seconds``.

    Raises:
        ParameterError: naming the corpus size, the estimate, and a ``--sample`` size (or a
            number of ``--hash-seeds``) that fits.
    """
    n, nonzeros = matrix.rows, len(matrix.data)
    shared = int((np.bincount(matrix.indices, minlength=len(matrix.vocabulary)) >= 2).sum())
    seeds = options.hash_seeds
    seconds = estimated_seconds(n, nonzeros, shared, seeds, widths, tables)
    if seconds <= options.max_seconds:
        return
    fits = _fitting_sample(n, nonzeros, shared, seeds, widths, tables, options.max_seconds)
    per_seed = estimated_seconds(n, nonzeros, shared, 1, widths, tables)
    fewer = int(options.max_seconds // per_seed) if per_seed > 0 else 0
    seeds_hint = f", or --hash-seeds {fewer}" if fewer >= 10 else ""
    raise ParameterError(
        f"eval measures all {n * (n - 1) // 2:,} pairs of {n:,} documents over {seeds} hash "
        f"seeds up to {max(widths)} bits: about {seconds:,.0f} s of work, above the limit of "
        f"{options.max_seconds:,.0f} s; use --sample {fits} to measure a deterministic sample "
        f"of {fits} documents{seeds_hint}"
    )
