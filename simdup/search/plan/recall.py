"""Predict recall: the probability that blocking tables report a pair at a true cosine.

This is the probability model the planner (:mod:`simdup.search.plan.planner`) reasons
with. A pair at true cosine ``t`` sits at angle ``θ = arccos t``; each SimHash bit is an independent
random hyperplane, so the pair differs in each bit with probability ``p = θ / π`` and its
Hamming distance is Binomial(bits, p) (Charikar 2002). For any set of tables the
probability of finding a pair at distance ``d`` is known
(:func:`simdup.search.tables.found_probability`, or per random bit order from
:func:`simdup.search.tables.clean_ranks`), so the recall at a cosine is
``Σ_d P(D = d) · found(d)``.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

#: Random bit orders behind the recall estimates (standard error below 0.005).
RECALL_SAMPLES = 2000


def flip_probability(cosine: float) -> float:
    """Return the probability θ/π that one SimHash bit differs at a given true cosine.

    >>> round(flip_probability(0.0), 3)
    0.5
    """
    return math.acos(max(-1.0, min(1.0, cosine))) / math.pi


def binomial_pmf(n: int, p: float) -> npt.NDArray[np.float64]:
    """Return P(Binomial(n, p) = k) for k = 0..n, float64 (n + 1,), stable for large n.

    >>> [round(x, 12) for x in binomial_pmf(2, 0.5).tolist()]
    [0.25, 0.5, 0.25]
    """
    k = np.arange(n + 1, dtype=np.float64)
    out = np.zeros(n + 1, dtype=np.float64)
    if p <= 0.0:
        out[0] = 1.0
    elif p >= 1.0:
        out[n] = 1.0
    else:
        log_comb = np.array(
            [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in range(n + 1)]
        )
        out[:] = np.exp(log_comb + k * math.log(p) + (n - k) * math.log1p(-p))
    return out


def binomial_quantile(n: int, p: float, q: float) -> int:
    """Return the smallest k with P(Binomial(n, p) <= k) >= q.

    >>> binomial_quantile(64, 0.5, 0.5)
    32
    """
    cdf = np.cumsum(binomial_pmf(n, p))
    return min(n, int(np.searchsorted(cdf, q - 1e-12)))


def recall_of(
    best: npt.NDArray[np.int64], bits: int, cosine: float, max_hamming: int | None = None
) -> float:
    """Return the probability of reporting a pair at ``cosine``.

    Args:
        best: int64 (samples,), per random bit order the largest distance still found
            (``clean_ranks(...).max(axis=1)``).
        bits: Fingerprint width.
        cosine: True cosine of the pair.
        max_hamming: Candidates beyond this distance are dropped before verification.
    """
    cdf = np.cumsum(binomial_pmf(bits, flip_probability(cosine)))
    reach = best if max_hamming is None else np.minimum(best, max_hamming)
    return float(np.clip(cdf[np.clip(reach, 0, bits)], 0.0, 1.0).mean())
