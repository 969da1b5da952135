"""Choose blocking tables from the user's settings.

Precedence: ``max_distance`` (a hard guarantee) over ``blocks`` over ``scheme``. The
``auto`` scheme plans from the threshold: a pair at true cosine ``t`` sits at angle
``θ = arccos t`` and differs in each bit with probability ``p = θ / π``, so its Hamming
distance is Binomial(bits, p). ``auto`` guarantees every distance up to the ``recall``
quantile of that distribution.
"""

from __future__ import annotations

import math

from simdup.blocking import Tables, block_tables, distance_tables, scheme_tables
from simdup.model import Params


def flip_probability(cosine: float) -> float:
    """Return the probability θ/π that one SimHash bit differs at a given true cosine.

    >>> round(flip_probability(0.0), 3)
    0.5
    """
    return math.acos(max(-1.0, min(1.0, cosine))) / math.pi


def binomial_quantile(n: int, p: float, q: float) -> int:
    """Return the smallest k with P(Binomial(n, p) <= k) >= q.

    >>> binomial_quantile(64, 0.5, 0.5)
    32
    """
    total = 0.0
    for k in range(n + 1):
        total += math.comb(n, k) * p**k * (1 - p) ** (n - k)
        if total >= q - 1e-12:
            return k
    return n


def tables_for(params: Params) -> Tables:
    """Return the blocking tables the settings ask for."""
    if params.max_distance is not None:
        return distance_tables(params.bits, params.max_distance)
    if params.blocks is not None:
        return block_tables(params.bits, params.blocks)
    if params.scheme == "auto":
        k = binomial_quantile(params.bits, flip_probability(params.threshold), params.recall)
        return distance_tables(params.bits, min(k, params.bits - 1))
    return scheme_tables(params.bits, params.scheme)
