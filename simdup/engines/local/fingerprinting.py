"""Counts to weights to fingerprints, over worker processes for large corpora."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from simdup.engines.local.counting import count_inputs, count_matrix
from simdup.engines.local.stored import Spill, StoredCorpus, StoredCounts, exactness
from simdup.engines.pool import check_jobs, inherited, start_method, worker_pool
from simdup.fingerprints.hashing import feature_words_many
from simdup.fingerprints.simhash import Wider, fingerprint_many, fingerprint_rows, words64
from simdup.fingerprints.weights import (
    StoredWeights,
    WeightMatrix,
    entry_weights,
    row_ranges,
    take_rows,
    weigh,
)
from simdup.inputs.files import ReadOptions
from simdup.inputs.gather import Input
from simdup.model import SMALL, Document, Skip
from simdup.params import Params, check_bits, check_seed, check_weighting
from simdup.progress import Meter, Progress, no_meter, no_progress
from simdup.search.verify import StoredShared
from simdup.spill import is_mapped, release
from simdup.text.counts import CountMatrix
from simdup.text.segment import note_fallback

#: Below this many entries of the weight matrix, fingerprints are computed in this process.
#: Fingerprinting costs about 0.55 us an entry here; 10,000 manual pages (1.3 million
#: entries, 0.74 s) took 0.14 s less over two forked workers, 1,000 (139,000) the same.
MIN_PARALLEL_ENTRIES = 500_000


def fingerprint_matrix(
    matrix: WeightMatrix, bits: int, seed: int, *, jobs: int = 1
) -> npt.NDArray[np.uint64]:
    """Return :func:`~simdup.fingerprints.simhash.fingerprint_many` of ``matrix`` over processes.

    Each row's fingerprint depends on that row alone, so ranges of rows are fingerprinted
    in forked workers, which inherit the matrix instead of receiving it; the result is the
    same array whatever ``jobs``. Where workers cannot be forked, or the corpus is small,
    the work stays in this process. A matrix mapped from the store is read a block of
    :data:`STORED_BLOCK_ENTRIES` at a time, each block's pages given back once done.
    """
    workers = check_jobs(jobs)
    stored = is_mapped(matrix.data)
    entries = len(matrix.data)
    forked = workers > 1 and entries >= MIN_PARALLEL_ENTRIES and start_method() == "fork"
    if not stored and not forked:
        return fingerprint_many(matrix, bits, seed)
    check_bits(bits)
    check_seed(seed)
    signs = feature_words_many(matrix.vocabulary, seed, -(-bits // 32))  # once, for all
    if stored:
        bounds = row_ranges(matrix.indptr, STORED_BLOCK_ENTRIES)
    else:
        cuts = np.linspace(0, matrix.rows, workers + 1).astype(int).tolist()
        bounds = list(itertools.pairwise(cuts))
    out = np.empty((matrix.rows, words64(bits)), dtype=np.uint64)
    if not forked:
        for lo, hi in bounds:
            out[lo:hi] = _fingerprint_range(matrix, signs, lo, hi, bits)
        return out
    with worker_pool(workers, "fork", (matrix, signs)) as pool:
        parts = pool.map(
            _fingerprint_forked,
            [lo for lo, _ in bounds],
            [hi for _, hi in bounds],
            [bits] * len(bounds),
        )
        for (lo, hi), part in zip(bounds, parts, strict=True):
            out[lo:hi] = part
    return out


#: Entries of a stored matrix fingerprinted (or weighed) at a time.
STORED_BLOCK_ENTRIES = 1 << 20


def _fingerprint_range(
    matrix: WeightMatrix, signs: npt.NDArray[np.uint32], lo: int, hi: int, bits: int
) -> npt.NDArray[np.uint64]:
    """Fingerprint rows ``lo:hi``; give back the pages of a stored matrix's rows read."""
    rows = matrix.row_slice(lo, hi)
    try:
        return fingerprint_rows(rows, signs, bits)
    finally:
        release(rows.indices, rows.data)


def _fingerprint_forked(lo: int, hi: int, bits: int) -> npt.NDArray[np.uint64]:
    """Fingerprint rows ``lo:hi`` of the matrix inherited from the parent process."""
    matrix, signs = inherited()
    return _fingerprint_range(matrix, signs, lo, hi, bits)


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
        stored: The weights' store, for a corpus that outgrew its share of memory (then
            ``matrix`` is mapped from it, and ``names`` read from it).
        wider: How to make the wider fingerprints a plan may price, where ``fingerprints``
            are narrower (see :func:`fingerprint_counts`).
    """

    names: Sequence[str]
    matrix: WeightMatrix
    fingerprints: npt.NDArray[np.uint64]
    skipped: list[Skip]
    stored: StoredCorpus | None = None
    wider: Wider | None = None


def fingerprint_documents(
    documents: Sequence[Document],
    params: Params,
    *,
    progress: Progress = no_progress,
    jobs: int = 1,
    planned: bool = False,
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
    names = [doc.name for doc in documents]
    return fingerprint_counts(counts, names, params, jobs=jobs, planned=planned)


def fingerprint_counts(
    counts: CountMatrix,
    names: Sequence[str],
    params: Params,
    *,
    jobs: int = 1,
    planned: bool = False,
) -> Fingerprinted:
    """Weight and fingerprint counted documents (rows named ``names``); drop featureless ones.

    Documents with fewer than ``params.min_features`` features are dropped too. With
    ``planned`` the fingerprints are those a scan's plan needs (:func:`widest`): but a
    corpus whose exact scan is cheap enough to be chosen without pricing tables
    (:func:`~simdup.search.plan.planner.exact_is_cheap`) is fingerprinted at the width it
    reports (64 bits for ``auto``: an eighth of the work), and the wider fingerprints are
    made for the rows a plan asks for (:class:`~simdup.fingerprints.simhash.Wider`).
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
    wide = widest(params) if planned else params
    bits, wider = wide.fixed_bits, None
    if bits > params.fixed_bits and _exact_is_cheap(matrix):
        bits = params.fixed_bits
        wider = Wider(wide.fixed_bits, functools.partial(_wide_rows, matrix, wide, jobs))
    fingerprints = fingerprint_matrix(matrix, bits, params.seed, jobs=jobs)
    return Fingerprinted([names[i] for i in keep], matrix, fingerprints, skipped, wider=wider)


def _exact_is_cheap(matrix: WeightMatrix) -> bool:
    """Tell whether the exact scan of ``matrix`` is chosen without pricing tables."""
    from simdup.search.exact import exact_work  # only a planned scan needs them
    from simdup.search.plan.planner import exact_is_cheap

    return exact_is_cheap(exact_work(matrix))


def _wide_rows(
    matrix: WeightMatrix, params: Params, jobs: int, rows: npt.NDArray[np.int64]
) -> npt.NDArray[np.uint64]:
    """Return the fingerprints of ``rows`` at ``params``' width, hashing only their features."""
    if len(rows) == matrix.rows and bool(np.all(rows == np.arange(matrix.rows))):
        return fingerprint_matrix(matrix, params.fixed_bits, params.seed, jobs=jobs)
    taken = take_rows(matrix, rows)
    used = np.flatnonzero(np.bincount(taken.indices, minlength=len(matrix.vocabulary)))
    local = np.zeros(len(matrix.vocabulary), dtype=np.int64)
    local[used] = np.arange(len(used), dtype=np.int64)
    vocabulary = tuple(matrix.vocabulary[k] for k in used.tolist())
    compact = WeightMatrix(taken.indptr, local[taken.indices], taken.data, vocabulary)
    return fingerprint_many(compact, params.fixed_bits, params.seed)


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
    spill: Spill | None = None,
    planned: bool = False,
) -> tuple[Fingerprinted, list[Skip]]:
    """Read, count, weight and fingerprint inputs; return them and the unreadable inputs.

    Equal to :func:`fingerprint_documents` of the inputs that can be read. With ``spill``,
    a corpus past its share of memory goes to the store as it is counted.
    """
    counted = count_inputs(
        inputs,
        options,
        stopwords=params.stopwords,
        ngram=params.ngram,
        segment=params.segment,
        jobs=jobs,
        meter=meter,
        spill=spill,
        min_features=params.min_features,
    )
    if isinstance(counted.counts, StoredCounts):
        wide = widest(params) if planned else params
        return fingerprint_stored(counted.counts, wide, jobs=jobs), counted.skipped
    corpus = fingerprint_counts(counted.counts, counted.names, params, jobs=jobs, planned=planned)
    return corpus, counted.skipped


def fingerprint_stored(stored: StoredCounts, params: Params, *, jobs: int = 1) -> Fingerprinted:
    """Weight and fingerprint a stored corpus, as :func:`fingerprint_counts` does one held.

    The weights replace the counts in the store (a block at a time: each entry's weight
    depends on its count and document frequency alone), and the matrix is mapped from it.
    """
    note_fallback(params.segment, stored.vocabulary)
    lengths = stored.lengths[stored.lengths > 0]
    indptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    indices = stored.indices.mapped()
    kind = check_weighting(params.weighting)
    if kind != "tf":
        counts = stored.data.mapped()
        for lo, hi in row_ranges(indptr, STORED_BLOCK_ENTRIES):
            start, stop = int(indptr[lo]), int(indptr[hi])
            weighed = entry_weights(
                counts[start:stop], indices[start:stop], kind, stored.frequencies, len(lengths)
            )
            stored.data.write_at(start, weighed)
            release(counts[start:stop], indices[start:stop])
    matrix = WeightMatrix(indptr, indices, stored.data.mapped(), stored.vocabulary)
    fingerprints = fingerprint_matrix(matrix, params.fixed_bits, params.seed, jobs=jobs)
    skipped = [
        skip
        for name, features in stored.featureless
        if (skip := feature_skip(name, features, params.min_features)) is not None
    ]
    narrow, small = exactness(kind, stored.largest)
    shared = StoredShared.write(
        matrix,
        stored.frequencies,
        stored.spill.directory,
        narrow=narrow,
        small_integers=small,
        block_entries=STORED_BLOCK_ENTRIES,
    )
    names = stored.names.mapped()
    corpus = StoredCorpus(StoredWeights(matrix, stored.indices, stored.data), shared, names.nbytes)
    return Fingerprinted(names, matrix, fingerprints, skipped, corpus)
