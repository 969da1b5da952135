"""Eval stage 4, report: the sweep's errors as accuracy rows, and the similar pairs by name.

Per width, the measured mean absolute error over all seeds with its standard error, next
to its Binomial expectation (:mod:`simdup.evaluate.theory`), and the same on the truly
similar pairs for weighted and binary fingerprints. Then the truly similar pairs by name,
highest true cosine first, each with the share of seeds in which the chosen blocking
setting found it. The last stage before the :class:`Evaluation` is assembled.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from simdup.evaluate.results import LISTED_PAIRS, SimilarPair, WidthAccuracy
from simdup.evaluate.sweep import SweepErrors
from simdup.evaluate.theory import expected_error
from simdup.evaluate.truth import Truth


def width_accuracy(errors: SweepErrors, truth: Truth, widths: Sequence[int]) -> list[WidthAccuracy]:
    """Return the accuracy row of each width from the errors of every seed.

    Args:
        errors: The sweep's errors, float64 (seeds, widths) each.
        truth: The true cosines the errors were measured against.
        widths: The swept widths, in the order of the errors' columns.
    """
    seeds = len(errors.all_pairs)
    cosines, similar_rows = truth.cosines, truth.similar_rows
    any_similar = len(similar_rows) > 0
    out = []
    for w, bits in enumerate(widths):
        column = errors.all_pairs[:, w]
        out.append(
            WidthAccuracy(
                bits=bits,
                mae=float(column.mean()),
                mae_theory=expected_error(cosines, bits),
                mae_stderr=float(column.std(ddof=1) / math.sqrt(seeds)) if seeds > 1 else 0.0,
                similar_mae=float(errors.similar[:, w].mean()) if any_similar else None,
                similar_binary_mae=float(errors.binary[:, w].mean()) if any_similar else None,
                similar_theory=expected_error(cosines[similar_rows], bits) if any_similar else None,
            )
        )
    return out


def similar_list(
    truth: Truth, names: Sequence[str], found: npt.NDArray[np.int64], seeds: int
) -> tuple[SimilarPair, ...]:
    """Return up to :data:`LISTED_PAIRS` truly similar pairs, highest true cosine first.

    Args:
        truth: The true cosines and similar pairs.
        names: Document names of the rows.
        found: int64 (pairs,), seeds in which the chosen setting found each pair.
        seeds: Seeds swept.
    """
    a, b = truth.a, truth.b
    order = np.lexsort((b, a, -truth.cosines))
    listed = [k for k in order.tolist() if truth.similar[k]][:LISTED_PAIRS]
    return tuple(
        SimilarPair(
            names[int(a[k])],
            names[int(b[k])],
            float(truth.cosines[k]),
            float(found[k] / seeds),
        )
        for k in listed
    )
