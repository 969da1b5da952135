"""Eval, the theory: the Binomial model of the Hamming distance, and what it predicts.

Two bits of a SimHash disagree with probability ``θ/π`` (Charikar 2002), so the Hamming
distance ``D`` of a pair at true cosine ``c = cos θ`` is Binomial(bits, θ/π) over random
hash functions. From that distribution follow the expected error of the estimated cosine
``cos(π D / bits)`` (the theory column next to each measured error) and the chance that
blocking makes a pair a candidate (the predicted recall curve). Pure functions of
numbers, no corpus.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

#: True cosines are rounded to this many decimals when the Binomial expectation is
#: computed (identical values share one computation; the error this adds is below 1e-4).
THEORY_DECIMALS = 4


def _log_binomial_coefficients(n: int) -> npt.NDArray[np.float64]:
    """Return ``ln C(n, k)`` for k = 0..n, float64 (n + 1,).

    >>> [round(float(x), 6) for x in np.exp(_log_binomial_coefficients(4))]
    [1.0, 4.0, 6.0, 4.0, 1.0]
    """
    steps = np.log(np.arange(n, 0, -1, dtype=np.float64)) - np.log(
        np.arange(1, n + 1, dtype=np.float64)
    )
    return np.concatenate(([0.0], np.cumsum(steps)))


def distance_pmf(bits: int, cosines: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Return P(D = d) for d = 0..bits at each true cosine, float64 (len(cosines), bits + 1).

    ``D`` is Binomial(bits, θ/π) with ``θ = arccos(cosine)`` (Charikar 2002).

    >>> distance_pmf(2, [0.0]).round(3).tolist()
    [[0.25, 0.5, 0.25]]
    """
    c = np.clip(np.atleast_1d(np.asarray(cosines, dtype=np.float64)), -1.0, 1.0)
    p = (np.arccos(c) / np.pi)[:, None]
    k = np.arange(bits + 1, dtype=np.float64)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p = np.where(k > 0, k * np.log(p), 0.0)
        log_q = np.where(bits - k > 0, (bits - k) * np.log1p(-p), 0.0)
    out: npt.NDArray[np.float64] = np.exp(_log_binomial_coefficients(bits)[None, :] + log_p + log_q)
    return out


def expected_error(cosines: npt.ArrayLike, bits: int) -> float:
    """Return the mean over pairs of E|cos(π D / bits) - c|, D ~ Binomial(bits, θ/π).

    The theory column of the accuracy table. Cosines are rounded to
    :data:`THEORY_DECIMALS` decimals so equal values are computed once.

    >>> round(expected_error([1.0], 64), 6)
    0.0
    >>> round(expected_error([0.0], 1), 6)
    1.0
    """
    c = np.round(np.asarray(cosines, dtype=np.float64).ravel(), THEORY_DECIMALS)
    if c.size == 0:
        return math.nan
    values, counts = np.unique(c, return_counts=True)
    estimates = np.cos(np.pi * np.arange(bits + 1) / bits)
    total = 0.0
    step = max(1, (1 << 22) // (bits + 1))
    for lo in range(0, len(values), step):
        v = values[lo : lo + step]
        errors = np.abs(estimates[None, :] - v[:, None])
        per_value = (distance_pmf(bits, v) * errors).sum(axis=1)
        total += float((per_value * counts[lo : lo + step]).sum())
    return total / float(c.size)


def found_curve(
    found: npt.NDArray[np.float64], bits: int, cosines: npt.ArrayLike
) -> npt.NDArray[np.float64]:
    """Return the probability that a pair at each cosine is a candidate.

    Args:
        found: float64 (bits + 1,), probability of finding a pair at each distance.
        bits: Fingerprint width.
        cosines: True cosines.
    """
    result: npt.NDArray[np.float64] = distance_pmf(bits, cosines) @ found
    return result
