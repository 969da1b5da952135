"""Eval, the run: the stages in order (truth, sweep, schemes, report), from documents to tables.

Documents are ordered by name (and sampled when asked), fingerprinted with the scan's own
pipeline, the blocking settings planned, the run's cost checked against the limit, and
then each stage of :mod:`simdup.evaluate` runs once. The stage names are the keys of
``Evaluation.timings`` (``truth``, ``seeds``, ``theory``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from simdup.engines.local.fingerprinting import Fingerprinted, fingerprint_documents
from simdup.errors import ParameterError
from simdup.evaluate.limits import check_size, sample_documents
from simdup.evaluate.report import similar_list, width_accuracy
from simdup.evaluate.results import EvalOptions, Evaluation
from simdup.evaluate.schemes import new_tallies, plan_schemes, scheme_result
from simdup.evaluate.sweep import sweep, sweep_width
from simdup.evaluate.truth import truth
from simdup.model import Document, Skip
from simdup.params import MAX_SEED, Params
from simdup.progress import Progress, no_progress


def _fingerprinted(
    documents: Sequence[Document], params: Params, options: EvalOptions
) -> tuple[Fingerprinted, int | None]:
    """Return the documents to measure, in name order, and the count before sampling.

    Raises:
        ParameterError: seeds beyond 2**53, or fewer than two documents with features.
    """
    if params.seed + options.hash_seeds > MAX_SEED:
        raise ParameterError(
            f"seeds {params.seed} to {params.seed + options.hash_seeds - 1} go beyond 2**53; "
            "use a smaller --seed"
        )
    ordered = sorted(documents, key=lambda d: d.name)
    sampled_from = None
    if options.sample is not None and options.sample < len(ordered):
        sampled_from = len(ordered)
        ordered = sample_documents(ordered, options.sample)
    corpus = fingerprint_documents(ordered, params)
    n = len(corpus.names)
    if n < 2:
        raise ParameterError(
            f"eval needs at least two documents with features, got {n}; give more inputs"
        )
    return corpus, sampled_from


def evaluate(
    documents: Sequence[Document],
    params: Params | None = None,
    options: EvalOptions | None = None,
    *,
    skipped: Sequence[Skip] = (),
    progress: Progress = no_progress,
) -> Evaluation:
    """Measure estimator error per width and blocking recall per scheme on ``documents``.

    Args:
        documents: Texts with unique names.
        params: Fingerprint settings, threshold (what "truly similar" means), recall, and
            the scheme whose curve is highlighted; ``bits`` is the blocking width.
        options: Seeds, widths, extra distances, sample size, size limit.
        skipped: Inputs the caller could not read, carried into the result.
        progress: Progress hook, called over the hash seeds.

    Raises:
        ParameterError: fewer than two documents with features, seeds beyond 2**53, or a
            corpus too large to measure all pairs (the message names a ``sample`` that fits).

    >>> docs = [Document("a", "red fox jumps high"), Document("b", "red fox jumps"),
    ...         Document("c", "blue whale sings")]
    >>> e = evaluate(docs, Params(bits=16), EvalOptions(hash_seeds=5, bits=(8, 16)))
    >>> e.pairs, e.similar_pairs, [w.bits for w in e.widths]
    (3, 1, [8, 16])
    """
    params = params or Params()
    options = options or EvalOptions()
    clock = time.perf_counter()
    timings: dict[str, float] = {}
    corpus, sampled_from = _fingerprinted(documents, params, options)
    plans, chosen = plan_schemes(corpus.matrix, params, options)
    table_count = sum(len(p.tables.keys) for _, p in plans)
    check_size(corpus.matrix, options, (*options.widths, sweep_width(params, options)), table_count)
    known = truth(corpus.matrix, params.threshold)
    timings["truth"] = time.perf_counter() - clock

    tallies = new_tallies(plans, len(known.a))
    clock = time.perf_counter()
    errors = sweep(corpus.matrix, known, tallies, params, options, progress=progress)
    timings["seeds"] = time.perf_counter() - clock

    clock = time.perf_counter()
    seeds = options.hash_seeds
    accuracy = width_accuracy(errors, known, options.widths)
    results = tuple(scheme_result(t, known, params.fixed_bits, seeds) for t in tallies)
    chosen_found = next(t for t in tallies if t.name == chosen).found
    similar = similar_list(known, corpus.names, chosen_found, seeds)
    timings["theory"] = time.perf_counter() - clock
    return Evaluation(
        params=params,
        options=options,
        documents=len(corpus.names),
        sampled_from=sampled_from,
        pairs=len(known.a),
        similar_pairs=int(known.similar.sum()),
        identical_pairs=int(known.identical.sum()),
        widths=tuple(accuracy),
        schemes=results,
        chosen=chosen,
        similar=similar,
        skipped=(*skipped, *corpus.skipped),
        timings=timings,
    )
