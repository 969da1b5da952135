"""Counts to weights to fingerprints, over worker processes for large corpora."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from simdup.engines.local.counting import count_inputs, count_matrix
from simdup.engines.pool import check_jobs, inherited, start_method, worker_pool
from simdup.fingerprints.hashing import feature_words_many
from simdup.fingerprints.simhash import fingerprint_many, fingerprint_rows
from simdup.fingerprints.weights import WeightMatrix, weigh
from simdup.inputs.files import ReadOptions
from simdup.inputs.gather import Input
from simdup.model import SMALL, Document, Skip
from simdup.params import Params, check_bits, check_seed
from simdup.progress import Meter, Progress, no_meter, no_progress
from simdup.text.counts import CountMatrix
from simdup.text.segment import note_fallback

#: Below this many documents, fingerprints are computed in this process.
MIN_PARALLEL_FINGERPRINTS = 20_000


def fingerprint_matrix(
    matrix: WeightMatrix, bits: int, seed: int, *, jobs: int = 1
) -> npt.NDArray[np.uint64]:
    """Return :func:`~simdup.fingerprints.simhash.fingerprint_many` of ``matrix`` over processes.

    Each row's fingerprint depends on that row alone, so ranges of rows are fingerprinted
    in forked workers, which inherit the matrix instead of receiving it; the result is the
    same array whatever ``jobs``. Where workers cannot be forked, or the corpus is small,
    the work stays in this process.
    """
    workers = check_jobs(jobs)
    if workers == 1 or matrix.rows < MIN_PARALLEL_FINGERPRINTS or start_method() != "fork":
        return fingerprint_many(matrix, bits, seed)
    check_bits(bits)
    check_seed(seed)
    signs = feature_words_many(matrix.vocabulary, seed, -(-bits // 32))  # once, for all
    bounds = np.linspace(0, matrix.rows, workers + 1).astype(int).tolist()
    with worker_pool(workers, "fork", (matrix, signs)) as pool:
        parts = pool.map(
            _fingerprint_forked, bounds[:-1], bounds[1:], [bits] * workers, [seed] * workers
        )
        return np.concatenate(list(parts))


def _fingerprint_forked(lo: int, hi: int, bits: int, seed: int) -> npt.NDArray[np.uint64]:
    """Fingerprint rows ``lo:hi`` of the matrix inherited from the parent process."""
    matrix, signs = inherited()
    return fingerprint_rows(matrix.row_slice(lo, hi), signs, bits, seed)


NO_FEATURES = "no features (empty, or only punctuation or stop words)"


def feature_skip(name: str, features: int, min_features: int) -> Skip | None:
    """Return the skip of a document with too few features to compare (None: compared).

    >>> feature_skip("a", 3, 8).reason, feature_skip("a", 0, 8).kind, feature_skip("a", 9, 8)
    ('3 features, fewer than --min-features 8', '', None)
    """
    if features == 0:
        return Skip(name, NO_FEATURES, unreadable=False)
    if features < min_features:
        reason = f"{features:,} features, fewer than --min-features {min_features:,}"
        return Skip(name, reason, unreadable=False, kind=SMALL)
    return None


@dataclass
class Fingerprinted:
    """A corpus after the fingerprint stage.

    Attributes:
        names: Document names of the rows.
        matrix: Weights, one row per document.
        fingerprints: uint64 (n, words).
        skipped: Documents dropped for having no features.
    """

    names: list[str]
    matrix: WeightMatrix
    fingerprints: npt.NDArray[np.uint64]
    skipped: list[Skip]


def fingerprint_documents(
    documents: Sequence[Document],
    params: Params,
    *,
    progress: Progress = no_progress,
    jobs: int = 1,
) -> Fingerprinted:
    """Tokenize, weight and fingerprint documents; drop those without features.

    ``jobs`` worker processes tokenize and fingerprint (0: every core); the result never
    depends on it.
    """
    counts = count_matrix(
        [doc.text for doc in documents],
        stopwords=params.stopwords,
        segment=params.segment,
        ngram=params.ngram,
        jobs=jobs,
        progress=progress,
    )
    return fingerprint_counts(counts, [doc.name for doc in documents], params, jobs=jobs)


def fingerprint_counts(
    counts: CountMatrix, names: Sequence[str], params: Params, *, jobs: int = 1
) -> Fingerprinted:
    """Weight and fingerprint counted documents (rows named ``names``); drop featureless ones.

    Documents with fewer than ``params.min_features`` features are dropped too.
    """
    lengths = counts.row_lengths()
    has_features = lengths >= max(1, params.min_features)
    keep = np.flatnonzero(has_features).tolist()
    skipped = [
        skip
        for i in np.flatnonzero(~has_features).tolist()
        if (skip := feature_skip(names[i], int(lengths[i]), params.min_features)) is not None
    ]
    note_fallback(params.segment, counts.vocabulary)
    matrix = weigh(counts.select(has_features), params.weighting)
    fingerprints = fingerprint_matrix(matrix, params.fixed_bits, params.seed, jobs=jobs)
    return Fingerprinted([names[i] for i in keep], matrix, fingerprints, skipped)


def widest(params: Params) -> Params:
    """Return the settings to fingerprint with: with ``bits="auto"``, the widest priced.

    A fingerprint's first ``b`` bits are the ``b``-bit fingerprint of the same settings
    (each feature's sign bits are read in order), so one pass serves every width.
    """
    if not (params.auto_bits and params.planned):
        return params
    from simdup.search.plan.planner import WIDTHS  # only a planned scan needs the planner

    return params.replace(bits=max(WIDTHS))


def fingerprint_inputs(
    inputs: Sequence[Input],
    params: Params,
    options: ReadOptions,
    *,
    jobs: int = 1,
    meter: Meter = no_meter,
) -> tuple[Fingerprinted, list[Skip]]:
    """Read, count, weight and fingerprint inputs; return them and the unreadable inputs.

    Equal to :func:`fingerprint_documents` of the inputs that can be read.
    """
    counted = count_inputs(
        inputs,
        options,
        stopwords=params.stopwords,
        ngram=params.ngram,
        segment=params.segment,
        jobs=jobs,
        meter=meter,
    )
    return fingerprint_counts(counted.counts, counted.names, params, jobs=jobs), counted.skipped
