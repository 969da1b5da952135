"""Eval stage 3, schemes: which blocking settings to compare, and how each one did.

Every named scheme (strict, balanced, loose, auto), the user's own ``--blocks`` or
``--max-distance`` and any extra distances are planned once, on the first seed's
fingerprints, as a scan would plan them; the sweep then counts their candidates on every
seed. Here those counts become recall against "true cosine >= threshold", the
false-positive rate, candidates per document and time, next to the recall curve the
plan predicts from the Binomial model and the one measured in bins of true cosine.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from simdup.evaluate.results import CURVE_BINS, CURVE_POINTS, SCHEMES, EvalOptions, SchemeResult
from simdup.evaluate.sweep import TIMED_SEEDS, SchemeTally
from simdup.evaluate.theory import found_curve
from simdup.evaluate.truth import Truth
from simdup.fingerprints.simhash import fingerprint_many
from simdup.fingerprints.weights import WeightMatrix
from simdup.params import Params
from simdup.search.plan.planner import Plan, plan
from simdup.search.tables import found_probability, table_masks


def blocking_settings(params: Params, options: EvalOptions) -> tuple[list[tuple[str, Params]], str]:
    """Return the blocking settings to compare and the name of the one ``params`` selects.

    >>> names, chosen = blocking_settings(Params(), EvalOptions(max_distances=(3,)))
    >>> [n for n, _ in names], chosen
    (['strict', 'balanced', 'loose', 'auto', 'max distance 3'], 'auto')
    """
    base = params.replace(blocks=None, max_distance=None)
    out = [(s, base.replace(scheme=s)) for s in SCHEMES]
    if params.max_distance is not None:
        chosen = f"max distance {params.max_distance}"
    elif params.blocks is not None:
        chosen = f"{params.blocks} blocks"
        out.append((chosen, base.replace(blocks=params.blocks)))
    else:
        chosen = params.scheme
    distances = list(dict.fromkeys(options.max_distances))
    if params.max_distance is not None and params.max_distance not in distances:
        distances.append(params.max_distance)
    out += [(f"max distance {k}", base.replace(max_distance=k)) for k in distances]
    return out, chosen


def plan_schemes(
    matrix: WeightMatrix, params: Params, options: EvalOptions
) -> tuple[list[tuple[str, Plan]], str]:
    """Return the plan of every compared setting and the name of the chosen one.

    Tables are planned once, on the first seed's fingerprints (as a scan would plan
    them), and then measured on every seed.
    """
    choices, chosen = blocking_settings(params, options)
    base_fingerprints = fingerprint_many(matrix, params.fixed_bits, params.seed)
    return [(name, plan(choice, base_fingerprints)) for name, choice in choices], chosen


def new_tallies(plans: Sequence[tuple[str, Plan]], pairs: int) -> list[SchemeTally]:
    """Return an empty tally per planned setting, for ``pairs`` pairs."""
    return [
        SchemeTally(name, p, table_masks(p.tables), np.zeros(pairs, dtype=np.int64))
        for name, p in plans
    ]


def _measured_curve(
    share: npt.NDArray[np.float64], cosines: npt.NDArray[np.float64]
) -> tuple[tuple[float, float, int], ...]:
    """Return ``(bin centre, mean share found, pairs)`` per non-empty bin of true cosine."""
    edges = np.linspace(0.0, 1.0, CURVE_BINS + 1)
    bin_of = np.clip(np.searchsorted(edges, cosines, side="right") - 1, 0, CURVE_BINS - 1)
    measured = []
    for k in range(CURVE_BINS):
        members = bin_of == k
        if members.any():
            centre = round(float(edges[k] + edges[k + 1]) / 2, 3)
            measured.append((centre, float(share[members].mean()), int(members.sum())))
    return tuple(measured)


def _predicted_curve(tally: SchemeTally, bits: int) -> tuple[tuple[float, float], ...]:
    """Return ``(true cosine, chance of becoming a candidate)`` the plan predicts."""
    grid = np.linspace(0.0, 1.0, CURVE_POINTS)
    found_at = found_probability(tally.plan.tables, np.arange(bits + 1))
    if tally.plan.max_hamming is not None:
        found_at = np.where(np.arange(bits + 1) <= tally.plan.max_hamming, found_at, 0)
    return tuple(
        (round(float(c), 2), float(p))
        for c, p in zip(grid, found_curve(found_at, bits, grid), strict=True)
    )


def scheme_result(tally: SchemeTally, truth: Truth, bits: int, seeds: int) -> SchemeResult:
    """Return how one setting did over ``seeds`` seeds at the scan width ``bits``."""
    tables = tally.plan.tables
    share = tally.found / seeds
    similar = truth.similar
    negatives = ~similar
    return SchemeResult(
        name=tally.name,
        tables=tables.description,
        table_count=len(tables.keys),
        max_hamming=tally.plan.max_hamming,
        recall=float(share[similar].mean()) if similar.any() else None,
        false_positive_rate=float(share[negatives].mean()) if negatives.any() else None,
        candidates_per_document=tally.candidates / seeds / truth.documents,
        seconds=tally.seconds / min(seeds, TIMED_SEEDS),
        expected_recall=float(tally.plan.recall),
        curve=_predicted_curve(tally, bits),
        measured_curve=_measured_curve(share, truth.cosines),
    )
