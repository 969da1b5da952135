"""Index stage 6b, the cosine screen: held candidates that cannot reach the threshold.

A held query's candidates are the documents within the planned Hamming pre-filter that
share a key: at 1,000,000 documents about 1,800 a query, of which a handful reach the
threshold. Reading each one's weights (a hundred features at a random place of a pool of
half a gigabyte) was the largest part of a query. So each held document also carries a
filter of its features: :data:`FILTER_BITS` bits, a feature's bit chosen by hashing its
stored id. The query features whose bits a document's filter has include every feature
the two share, so by the Cauchy-Schwarz inequality their cosine is at most the square
root of those features' share of the query's squared norm. A candidate whose bound is
under the threshold is left unread; the others are measured exactly, as before.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

#: Bits of a held document's filter: 128 bytes a document. With about a hundred features
#: a document, 1,024 bits left 14-18% of the 1,000,000-document benchmark's candidates to
#: measure at threshold 0.8 (512 bits: 25%, 2,048: 10%).
FILTER_BITS = 1024

#: Bytes of a filter.
FILTER_BYTES = FILTER_BITS // 8

#: Rows whose filters are built at a time: a byte per bit while built, 2 MiB, in the cache.
BUILD_ROWS = 2048

#: Knuth's multiplicative hash: consecutive feature ids land on bits far apart.
_MULTIPLIER = np.uint32(2654435761)
_SHIFT = np.uint32(32 - (FILTER_BITS.bit_length() - 1))  # the top bits of the product

#: The screen reads a byte for each query feature and candidate, the measure every entry
#: of each candidate at a random place, several times slower an entry (1.1 against 8 ns
#: at 1,000,000 documents). So it pays unless the query has many more features than its
#: candidates: one with more than this many times their mean is measured unscreened (a
#: long text among short ones would read a byte for each of its features and candidates).
SCREEN_RATIO = 2

#: What a bound is raised by besides its sum's rounding, as a share of the query's norm:
#: far more than the rounding of the norm and of a measured cosine.
_MARGIN = 1e-9


def bit_positions(feature_ids: npt.NDArray[Any]) -> npt.NDArray[np.intp]:
    """Return the filter bit of each stored feature id.

    >>> bit_positions(np.array([1, 2, 3], dtype=np.uint32)).tolist()
    [632, 241, 874]
    """
    hashed: npt.NDArray[np.uint32] = np.asarray(feature_ids).astype(np.uint32) * _MULTIPLIER
    return np.asarray(hashed >> _SHIFT, dtype=np.intp)


def feature_filters(
    lengths: npt.NDArray[np.int64], feature_ids: npt.NDArray[Any]
) -> npt.NDArray[np.uint8]:
    """Return the filters of rows whose feature ids lie end to end, uint8 (rows, bytes).

    Bit ``b`` of a filter is bit ``b % 8`` of byte ``b // 8``; a row without features
    has an empty filter.
    """
    rows = len(lengths)
    out = np.zeros((rows, FILTER_BYTES), dtype=np.uint8)
    ends = np.cumsum(lengths)
    for lo in range(0, rows, BUILD_ROWS):
        hi = min(rows, lo + BUILD_ROWS)
        first = int(ends[lo - 1]) if lo else 0
        positions = bit_positions(feature_ids[first : int(ends[hi - 1])])
        bits = np.zeros((hi - lo, FILTER_BITS), dtype=bool)
        bits[np.repeat(np.arange(hi - lo), lengths[lo:hi]), positions] = True
        out[lo:hi] = np.packbits(bits, axis=1, bitorder="little")
    return out


def pays(features: int, sizes: npt.NDArray[np.int64]) -> bool:
    """Tell whether screening candidates of ``sizes`` features pays for a query's ``features``.

    >>> pays(110, np.array([100, 120])), pays(5000, np.array([100, 120]))
    (True, False)
    """
    return features * len(sizes) <= SCREEN_RATIO * int(sizes.sum())


def screened(
    filters: npt.NDArray[np.uint8],
    feature_ids: npt.NDArray[Any],
    squares: npt.NDArray[np.float64],
    norm: float,
    threshold: float,
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64]]:
    """Return which rows may reach ``threshold``, and every row's bound on its cosine.

    Args:
        filters: The candidates' filters, uint8 (m, bytes), from :func:`feature_filters`.
        feature_ids: The query's features known to the index, by stored id.
        squares: Their squared weights.
        norm: The query's squared norm (over all of its features, known or not).
        threshold: The cosine a candidate must reach to be reported.

    Returns:
        A mask of the rows to measure (those whose bound reaches the threshold), and the
        bounds: each at least the row's true cosine, as measured (a query without weight
        has cosine 0 with every row, and bound 0).
    """
    positions = bit_positions(feature_ids)
    masks = np.uint8(1) << (positions & 7).astype(np.uint8)
    hits = (filters.take(positions >> 3, axis=1) & masks).astype(bool)
    # Summed in single precision (a third faster); each sum is then raised by more than
    # its rounding can have taken off (``terms`` roundings of at most one part in 2^23
    # of the whole), so that it stays a bound.
    shares = (hits.astype(np.float32) @ squares.astype(np.float32)).astype(np.float64)
    shares += norm * (2.0 * (len(positions) + 1) * float(np.finfo(np.float32).eps) + _MARGIN)
    with np.errstate(invalid="ignore", divide="ignore"):
        bounds = np.minimum(np.where(norm > 0, np.sqrt(shares / norm), 0.0), 1.0)
    return bounds >= threshold, bounds
