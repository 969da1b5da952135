"""Choose blocking tables from the user's settings, and predict what they will cost.

Precedence: ``max_distance`` (a hard guarantee) over ``blocks`` over ``scheme``.

**Recall planned from the threshold** (``scheme="auto"``). A pair at true cosine ``t``
sits at angle ``θ = arccos t``; each SimHash bit is an independent random hyperplane, so
the pair differs in each bit with probability ``p = θ / π`` and its Hamming distance is
Binomial(bits, p) (Charikar 2002). For any set of tables the probability of finding a
pair at distance ``d`` is known (:func:`simdup.tables.found_probability`), so the recall
at the threshold is ``Σ_d P(D = d) · found(d)``.

Three families of tables can reach a recall: contiguous blocks (pigeonhole), Manku, Jain
and Das Sarma's distance tables (2007), and sampled tables (``r`` permuted bit positions
per table, as many tables as the recall needs). Which is cheapest depends on the corpus:
real text is not uniform (every English document leans the same way on common words), so
buckets are much larger than ``n / 2**r``. The planner therefore *measures* the bucket
sizes of every option on the corpus's own fingerprints (identical fingerprints collapsed,
a fixed-seed sample of at most :data:`PLAN_SAMPLE` of them), estimates the candidate
pairs, and keeps the option with the least estimated cost that reaches the recall.

Candidates farther apart in Hamming distance than a planned ``max_hamming`` are dropped
before their true cosine is computed; the recall accounts for that filter too, and the
planner picks filter and tables together. Cost, in units of one candidate pair:
``candidates + TABLE_COST · tables · n + VERIFY_COST · verified``, where ``verified``
(candidates within the filter) is estimated from the corpus's own histogram of pairwise
distances and the tables' probability of finding a pair at each distance.

Beyond :data:`MAX_TABLES` (whose recall is estimated by Monte Carlo), wider keys with up
to :data:`MANY_TABLES` tables are priced from the probability that one table of ``r``
random positions misses all ``d`` differing bits, ``C(bits - d, r) / C(bits, r)``: where
unrelated documents are close, more tables of wider keys bring the candidates down.

**Exact mode.** When the weights are at hand, an exact scan (every pair's cosine by
blocked products, :mod:`simdup.exact`) is priced in the same unit; below
:data:`PLAN_OVERHEAD` it is chosen without planning tables, and otherwise when it costs
less than the best tables. Its recall is 1.0.

**Width.** With ``bits="auto"`` the tables are planned at each of :data:`WIDTHS` on the
first bits of one wide fingerprint (a narrower reference fingerprint is exactly the first
bits of a wider one), and the cheapest plan that reaches the recall keeps its width.

When no option reaches the recall, the plan says so in a warning and keeps the option
with the highest recall: recall is never lowered silently. A plan expected to take
minutes says so too.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.blocking import (
    MAX_CANDIDATES,
    LargeBucket,
    Tables,
    block_tables,
    bucket_pairs,
    clean_ranks,
    distance_tables,
    masked_keys,
    sampled_tables,
    scheme_tables,
    table_masks,
)
from simdup.errors import ParameterError
from simdup.exact import ExactWork
from simdup.model import Params
from simdup.simhash import REFERENCE_BITS, words64

#: Seconds per unit of estimated cost (one candidate pair, on the 2-core machine measured).
UNIT_SECONDS = 1e-7

#: Plans expected to take longer than this warn before they start.
LONG_SECONDS = 120.0

#: Fingerprint widths priced when the width is ``auto``.
WIDTHS = (64, 128, 256, 512)

#: Below this cost of an exact scan (in candidate pairs; about two seconds) tables are not
#: even planned: pricing four widths costs about as much (measured: 1.5-2.7 s).
PLAN_OVERHEAD = 20_000_000

#: Distinct fingerprints on which bucket sizes are measured (a fixed-seed sample above it).
PLAN_SAMPLE = 20_000

#: Seed of that sample.
SAMPLE_SEED = 0x5A3D

#: Cost of keying and sorting one document in one table, in candidate pairs (measured on
#: 2 cores: about 60 ns per document and table, about 100 ns to make, dedupe and pre-filter
#: one candidate pair).
TABLE_COST = 0.6

#: Distinct fingerprints whose all-pairs Hamming distances estimate how many candidates
#: survive the pre-filter (4.5 million pairs), with the tables' found probability.
DISTANCE_SAMPLE = 3_000

#: Entries of the temporary when measuring those distances a block of rows at a time.
DISTANCE_BLOCK = 1 << 20

#: Cost of one true cosine, in candidate pairs (about 3 µs against 0.1 µs).
VERIFY_COST = 30

#: Warn when more than this many pairs per document are expected to need a true cosine.
VERIFY_WARN = 50

#: Tables whose recall is measured (Monte Carlo) when planning: each one is a sort of the
#: whole corpus.
MAX_TABLES = 256

#: Beyond MAX_TABLES, at most this many tables of keys up to MANY_KEY_BITS wide, priced
#: from the probability that a table misses a pair's differing bits.
MANY_TABLES = 4096
MANY_KEY_BITS = 64

#: ... at these widths and above only (measured at 64 bits: 530 tables of 15 bits took
#: longer than 221 of 13, whatever the pairs they saved).
MANY_TABLE_BITS = 256

#: Sampled-table widths measured from their first tables only, then scaled.
MEASURED_TABLES = 8

#: Random bit orders behind the recall estimates (standard error below 0.005).
RECALL_SAMPLES = 2000

#: Cosines of the recall curve in a plan's description.
CURVE_COSINES = (1.0, 0.99, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6, 0.5)

#: The loosest Hamming pre-filter weighed spends this share of the missed-pair budget
#: ``1 - recall``; the tightest leaves only a tenth of it to the tables.
FILTER_SHARE = 0.1


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


def tables_for(params: Params) -> Tables:
    """Return the tables an explicit setting asks for (``auto``: a corpus-free fallback).

    ``auto`` needs the corpus to plan (:func:`plan`); without one it guarantees every
    distance up to the ``recall`` quantile of the distance at the threshold.
    """
    if params.max_distance is not None:
        return distance_tables(params.bits, params.max_distance)
    if params.blocks is not None:
        return block_tables(params.bits, params.blocks)
    if params.scheme == "auto":
        k = binomial_quantile(params.bits, flip_probability(params.threshold), params.recall)
        return distance_tables(params.bits, min(k, params.bits - 1))
    return scheme_tables(params.bits, params.scheme)


@dataclass(frozen=True)
class Plan:
    """How candidates will be found, and what that is expected to find and cost.

    Attributes:
        tables: The blocking tables.
        source: ``auto`` (planned), ``scheme``, ``blocks`` or ``max_distance``.
        threshold: The true cosine recall is planned at.
        recall: Probability that a pair at the threshold is reported.
        max_hamming: Candidates farther apart than this are not verified (None: all are).
        curve: ``(cosine, probability of being reported)`` at several cosines.
        expected_candidates: Estimated candidate pairs (an upper bound: pairs sharing keys
            in several tables are counted once per table).
        expected_verified: Estimated candidates within ``max_hamming``: the true cosines
            to compute (from the corpus's distance histogram and the found probability).
        documents: Fingerprints planned for.
        distinct: Distinct fingerprints among them.
        sample: Distinct fingerprints the bucket sizes were measured on.
        bits: The fingerprint width the plan uses (the reported estimate's too).
        cost: Estimated cost in candidate pairs (see the module's docstring).
        expected_reported: Rough estimate of the pairs above the threshold (those within
            the median distance of a pair at the threshold), to size what is held.
        widths: Widths priced with ``bits="auto"``, as ``(bits, recall, cost)``.
        exact_cost: Estimated cost of computing every pair (None: not weighed).
        work: What the exact scan does (exact plans only).
        considered: Options weighed, as ``(description, recall, expected candidates,
            estimated cost)``.
        warnings: Sentences for the user (unreachable recall, too many candidates).
    """

    tables: Tables
    source: str
    threshold: float
    recall: float
    max_hamming: int | None
    curve: tuple[tuple[float, float], ...]
    expected_candidates: int
    expected_verified: int
    documents: int
    distinct: int
    sample: int
    bits: int = REFERENCE_BITS
    cost: float = 0.0
    expected_reported: int = 0
    widths: tuple[tuple[int, float, int], ...] = ()
    exact_cost: int | None = None
    work: ExactWork | None = None
    considered: tuple[tuple[str, float, int, int], ...] = ()
    warnings: tuple[str, ...] = field(default=())

    @property
    def exact(self) -> bool:
        """True when every pair's cosine is computed (no tables)."""
        return self.source == "exact"

    def describe(
        self, large: Sequence[LargeBucket] = (), names: Sequence[str] | None = None
    ) -> dict[str, Any]:
        """Return the plan as a JSON-ready dict (what ``--plan`` prints).

        Args:
            large: Oversized buckets met while pairing (they were paired in chunks).
            names: Document names, to show sample members of those buckets by name.
        """
        buckets = [
            {
                "table": b.table,
                "size": b.size,
                "pairs": b.pairs,
                "sample": [names[r] if names is not None else r for r in b.sample],
            }
            for b in large
        ]
        notes = [
            ("identical fingerprints" if b.table == -1 else f"table {b.table}")
            + f": a bucket of {b.size:,} documents ({b.pairs:,} pairs), e.g. "
            + ", ".join(str(names[r] if names is not None else r) for r in b.sample[:3])
            + " (paired in chunks)"
            for b in large
        ]
        return {
            "source": self.source,
            "mode": "exact" if self.exact else "tables",
            "bits": self.bits,
            "tables": self.tables.description,
            "table_count": len(self.tables.keys),
            "key_bits": sorted(set(self.tables.key_bits)),
            "guarantee": self.tables.guarantee,
            "threshold": self.threshold,
            "recall_at_threshold": round(self.recall, 4),
            "max_hamming": self.max_hamming,
            "recall_curve": [{"cosine": c, "recall": round(r, 4)} for c, r in self.curve],
            "expected_candidates": self.expected_candidates,
            "expected_verified": self.expected_verified,
            "expected_reported": self.expected_reported,
            "documents": self.documents,
            "distinct_fingerprints": self.distinct,
            "measured_on": self.sample,
            "estimated_cost": int(self.cost),
            "exact_cost": self.exact_cost,
            "widths_priced": [
                {"bits": b, "recall": r, "estimated_cost": c} for b, r, c in self.widths
            ],
            "large_buckets": buckets,
            "warnings": [*self.warnings, *notes],
        }


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


@dataclass
class _Sample:
    """Distinct fingerprints of a corpus and the sample bucket sizes are measured on."""

    documents: int
    distinct: int
    duplicate_pairs: int
    fingerprints: npt.NDArray[np.uint64]
    measured_distances: dict[int, npt.NDArray[np.float64]] = field(default_factory=dict)

    @property
    def scale(self) -> float:
        """Factor from pairs in the sample to pairs among all distinct fingerprints."""
        s = len(self.fingerprints)
        return 1.0 if s < 2 else self.distinct * (self.distinct - 1) / (s * (s - 1))

    def pairs(self, tables: Tables, limit: int | None = None) -> float:
        """Return the estimated candidate pairs of ``tables`` (first ``limit`` measured)."""
        masks = table_masks(tables)
        measured = masks if limit is None else masks[:limit]
        if len(measured) == 0:
            return float(self.duplicate_pairs)
        found = sum(bucket_pairs(masked_keys(self.fingerprints, m)) for m in measured)
        per_table = found * self.scale / len(measured)
        return self.duplicate_pairs + per_table * len(masks)

    def distances(self, bits: int) -> npt.NDArray[np.float64]:
        """Return the estimated pairs of distinct fingerprints at each distance 0..bits."""
        if bits not in self.measured_distances:
            self.measured_distances[bits] = self._distance_counts(bits)
        out: npt.NDArray[np.float64] = self.measured_distances[bits].copy()
        return out

    def _distance_counts(self, bits: int) -> npt.NDArray[np.float64]:
        s = min(len(self.fingerprints), DISTANCE_SAMPLE)
        counts = np.zeros(bits + 1, dtype=np.float64)
        if s < 2:
            return counts
        # A random subset: the sample is sorted by value, so its first rows share their
        # leading bits and would make distances look small.
        pick = np.random.default_rng(SAMPLE_SEED).permutation(len(self.fingerprints))[:s]
        sub = self.fingerprints[np.sort(pick)]
        # All pairs i < j, a block of rows at a time (a (rows, s) temporary per word).
        step = max(1, DISTANCE_BLOCK // s)
        columns = np.arange(s)
        for lo in range(0, s - 1, step):
            hi = min(s - 1, lo + step)
            d = np.zeros((hi - lo, s), dtype=np.uint16)
            for w in range(sub.shape[1]):  # word by word: no (rows, s, words) temporary
                d += np.bitwise_count(sub[lo:hi, w, None] ^ sub[None, :, w])
            upper = columns[None, :] > np.arange(lo, hi)[:, None]
            counts += np.bincount(d[upper], minlength=bits + 1)[: bits + 1]
        distinct_pairs = self.distinct * (self.distinct - 1) / 2
        return counts * (distinct_pairs / (s * (s - 1) / 2))


def _sample(fingerprints: npt.NDArray[np.uint64]) -> _Sample:
    """Collapse identical fingerprints and draw the deterministic measuring sample."""
    n = len(fingerprints)
    if n == 0:
        return _Sample(0, 0, 0, fingerprints)
    unique, counts = np.unique(fingerprints, axis=0, return_counts=True)
    duplicate_pairs = int((counts * (counts - 1) // 2).sum())
    sample = unique
    if len(unique) > PLAN_SAMPLE:
        rng = np.random.default_rng(SAMPLE_SEED)
        sample = unique[np.sort(rng.choice(len(unique), PLAN_SAMPLE, replace=False))]
    return _Sample(n, len(unique), duplicate_pairs, np.ascontiguousarray(sample))


def _curve(
    best: npt.NDArray[np.int64], bits: int, max_hamming: int | None
) -> tuple[tuple[float, float], ...]:
    return tuple((c, recall_of(best, bits, c, max_hamming)) for c in CURVE_COSINES)


@dataclass(frozen=True)
class _Option:
    tables: Tables
    max_hamming: int
    recall: float
    candidates: float
    verified: float
    cost: float


def _filters(params: Params) -> list[int]:
    """Return the Hamming pre-filter distances worth weighing for the threshold.

    From the smallest that keeps the recall reachable at all to the one that spends only a
    small share of the missed-pair budget: a tighter filter verifies far fewer pairs (the
    count of pairs within distance ``K`` grows steeply with ``K``) but leaves less of the
    budget to the tables, which then need more of them.
    """
    bits, p, target = params.bits, flip_probability(params.threshold), params.recall
    low = binomial_quantile(bits, p, min(1.0, target + (1.0 - target) * 0.1))
    high = binomial_quantile(bits, p, 1.0 - (1.0 - target) * FILTER_SHARE)
    return list(range(low, max(low, high) + 1))


def _options(params: Params, sample: _Sample) -> list[_Option]:
    """Return, per family, width and pre-filter, the fewest tables that reach the recall."""
    bits, threshold, target = params.bits, params.threshold, params.recall
    n = max(sample.distinct, 1)
    cdf = np.cumsum(binomial_pmf(bits, flip_probability(threshold)))
    histogram = sample.distances(bits)
    filters = _filters(params)
    out: list[_Option] = []

    def weigh(
        make: Callable[[int], Tables],
        reach: npt.NDArray[np.int64],
        per_table: float,
        fixed_tables: int | None,
    ) -> bool:
        """Add the cheapest option per filter; ``reach`` (samples, L) is cumulative.

        Returns False when even the loosest filter and every table miss the recall.
        """
        loosest = cdf[np.clip(np.minimum(reach[:, -1], filters[-1]), 0, bits)].mean()
        reachable = bool(loosest >= target)
        for k in filters if reachable else filters[-1:]:
            recalls = cdf[np.clip(np.minimum(reach, k), 0, bits)].mean(axis=0)
            enough = np.flatnonzero(recalls >= target)
            count = int(enough[0]) + 1 if len(enough) else reach.shape[1]
            if fixed_tables is not None:
                count = fixed_tables
            found = (reach[:, count - 1][None, :] >= np.arange(bits + 1)[:, None]).mean(axis=1)
            found[k + 1 :] = 0.0
            verified = sample.duplicate_pairs + float(histogram @ found)
            candidates = sample.duplicate_pairs + per_table * count
            cost = candidates + TABLE_COST * count * n + VERIFY_COST * verified
            out.append(
                _Option(make(count), k, float(recalls[count - 1]), candidates, verified, cost)
            )
        return reachable

    def measured(tables: Tables) -> float:
        """Candidate pairs per table among distinct fingerprints (first tables measured)."""
        limit = min(len(tables.keys), MEASURED_TABLES)
        return (sample.pairs(tables, limit) - sample.duplicate_pairs) / len(tables.keys)

    # Contiguous blocks and distance tables: the fewest blocks that reach the recall.
    for family in ("blocks", "distance"):
        k = _fewest(bits, family, threshold, target, filters[-1])
        if k is not None:
            tables = _family_tables(bits, family, k)
            best = _best(tables)
            weigh(functools.partial(_same, tables), best[:, None], measured(tables), 1)
    # Sampled tables: per key width and filter, the fewest tables that reach the recall.
    for key_bits in range(max(1, bits // 16), min(bits, 40) + 1):
        stream = sampled_tables(bits, key_bits, MAX_TABLES)
        reach = np.maximum.accumulate(clean_ranks(stream, samples=RECALL_SAMPLES), axis=1)
        make = functools.partial(sampled_tables, bits, key_bits)
        if not weigh(make, reach, measured(stream), None):
            break  # wider keys only survive less: no wider width can reach the recall
    else:
        key_bits += 1
    # More tables of wider keys (where unrelated documents are close, as with a heavy
    # shared vocabulary, that is what brings the candidates down towards the optimum).
    pmf = binomial_pmf(bits, flip_probability(threshold))
    for wide in range(
        key_bits if bits >= MANY_TABLE_BITS else bits + 1, min(bits, MANY_KEY_BITS) + 1
    ):
        survive = _survival(bits, wide)
        per_table = measured(sampled_tables(bits, wide, MEASURED_TABLES))
        options: list[tuple[float, int, int, float, float, float]] = []
        for k in filters:
            count = _fewest_tables(pmf, survive, k, target)
            if count is None or count <= MAX_TABLES:
                continue
            found = 1.0 - (1.0 - survive) ** count
            found[k + 1 :] = 0.0
            verified = sample.duplicate_pairs + float(histogram @ found)
            candidates = sample.duplicate_pairs + per_table * count
            cost = candidates + TABLE_COST * count * n + VERIFY_COST * verified
            options.append((cost, k, count, float(pmf @ found), candidates, verified))
        if not options:
            break
        cost, k, count, recall, candidates, verified = min(options)
        tables = sampled_tables(bits, wide, count)
        out.append(_Option(tables, k, recall, candidates, verified, cost))
    return out


def _survival(bits: int, key_bits: int) -> npt.NDArray[np.float64]:
    """Return P(a table of ``key_bits`` random positions misses ``d`` differing bits), d=0..bits.

    That is ``C(bits - d, key_bits) / C(bits, key_bits)``.

    >>> _survival(4, 2).tolist()
    [1.0, 0.5, 0.16666666666666666, 0.0, 0.0]
    """
    d = np.arange(bits + 1, dtype=np.float64)[:, None]
    i = np.arange(key_bits, dtype=np.float64)[None, :]
    factors = np.clip((bits - d - i) / (bits - i), 0.0, 1.0)
    return np.asarray(np.prod(factors, axis=1), dtype=np.float64)


def _fewest_tables(
    pmf: npt.NDArray[np.float64], survive: npt.NDArray[np.float64], k: int, target: float
) -> int | None:
    """Return the fewest tables (up to MANY_TABLES) finding a pair at the threshold.

    Tables are taken as independent: those cut from one permutation are disjoint, which
    only makes finding a pair more likely, so the count is on the safe side.
    """

    def recall(count: int) -> float:
        found = 1.0 - (1.0 - survive[: k + 1]) ** count
        return float(pmf[: k + 1] @ found)

    if recall(MANY_TABLES) < target:
        return None
    low, high = 0, MANY_TABLES  # recall(low) < target <= recall(high)
    while high - low > 1:
        middle = (low + high) // 2
        if recall(middle) >= target:
            high = middle
        else:
            low = middle
    return high


@functools.lru_cache(maxsize=1024)
def _family_tables(bits: int, family: str, k: int) -> Tables:
    """Return ``k + 1`` contiguous blocks, or the distance tables of distance ``k``."""
    return block_tables(bits, k + 1) if family == "blocks" else distance_tables(bits, k)


def _best(tables: Tables) -> npt.NDArray[np.int64]:
    """Return per random bit order the largest distance the tables still find."""
    best: npt.NDArray[np.int64] = clean_ranks(tables, samples=RECALL_SAMPLES).max(axis=1)
    return best


def _fewest(bits: int, family: str, threshold: float, target: float, reach: int) -> int | None:
    """Return the smallest ``k`` whose tables reach the recall within MAX_TABLES, or None.

    Both more blocks and a larger distance find more pairs and take more tables, so
    "too many tables, or the recall reached" is false up to some ``k`` and true from
    there: a galloping then binary search finds it with a few recall estimates, where
    trying every ``k`` would take hundreds at 512 bits.
    """

    def usable(k: int) -> bool:
        return len(_family_tables(bits, family, k).keys) <= MAX_TABLES

    def reaches(k: int) -> bool:
        return recall_of(_best(_family_tables(bits, family, k)), bits, threshold, reach) >= target

    def done(k: int) -> bool:
        return not usable(k) or reaches(k)

    low, step = -1, 1  # done(low) is false (k = -1 stands for "no tables")
    high = min(bits - 1, low + step)
    while not done(high):
        if high == bits - 1:
            return None
        low, step = high, step * 2
        high = min(bits - 1, low + step)
    while high - low > 1:
        middle = (low + high) // 2
        if done(middle):
            high = middle
        else:
            low = middle
    return high if usable(high) and reaches(high) else None


def _same(tables: Tables, count: int) -> Tables:
    """Return ``tables`` whatever the count (a family with one fixed table set)."""
    return tables


def plan(
    params: Params,
    fingerprints: npt.NDArray[np.uint64],
    *,
    work: ExactWork | None = None,
    workers: int = 1,
) -> Plan:
    """Return the plan for a corpus: exact or tables, width, expected recall and cost.

    With ``scheme="auto"`` (and no ``blocks`` or ``max_distance``) the pairs are found
    exactly when that costs less than tables (``work``, from the weights), else by the
    cheapest tables that report a pair at ``params.threshold`` with probability at least
    ``params.recall``; with ``bits="auto"`` the widths of :data:`WIDTHS` are priced and
    the cheapest kept (the fingerprints must then be at least as wide as the widest: a
    narrower fingerprint is the first bits of a wider one). Otherwise the requested tables
    are kept and their recall and cost are only predicted.

    Every input can be computed per part of a corpus and merged (fingerprints, and the
    document frequencies behind ``work``), and the plan depends on nothing else.

    Args:
        params: The settings (bits, threshold, recall, scheme, blocks, max_distance).
        fingerprints: uint64 (n, words) of the corpus.
        work: What an exact scan would cost (:func:`simdup.exact.exact_work`); None when
            no weights are at hand (exact mode is then not weighed).
        workers: Threads pricing the widths side by side (each width is priced on its
            own, and numpy releases the interpreter lock in the sorts that dominate); the
            plan never depends on it.

    >>> p = plan(Params(bits=64, scheme="strict"), np.zeros((3, 1), dtype=np.uint64))
    >>> p.tables.description, p.expected_candidates
    ('1 blocks', 3)
    """
    auto = params.scheme == "auto" and params.blocks is None and params.max_distance is None
    available = fingerprints.shape[1] * 64
    if not auto:
        width = int(params.bits) if not params.auto_bits else REFERENCE_BITS
        return _fixed_plan(params.replace(bits=width), fingerprints)
    if work is not None and work.cost <= PLAN_OVERHEAD:
        return _exact_plan(params, fingerprints, work, ())  # half a second at most
    widths = [w for w in WIDTHS if w <= available] if params.auto_bits else [int(params.bits)]
    if not widths:
        raise ParameterError(
            f"fingerprints of {available} bits cannot be planned at {int(params.bits)} bits"
        )
    # The widest first: it takes longest, so the narrower ones fill the other threads.
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(widths)))) as pool:
        priced_widths = {
            w: pool.submit(_auto_plan, params.replace(bits=w), fingerprints)
            for w in sorted(widths, reverse=True)
        }
        plans = [priced_widths[w].result() for w in widths]
    priced = tuple((p.bits, round(p.recall, 4), int(p.cost)) for p in plans)
    reaching = [p for p in plans if p.recall >= params.recall]
    if reaching:
        chosen = min(reaching, key=lambda p: (p.cost, p.bits))
    else:
        chosen = max(plans, key=lambda p: (p.recall, -p.cost))
    if work is not None and work.cost <= chosen.cost:
        return _long(_exact_plan(params, fingerprints, work, priced))
    return _long(
        dataclasses.replace(
            chosen, widths=priced, exact_cost=None if work is None else int(work.cost)
        )
    )


def _long(chosen: Plan) -> Plan:
    """Return the plan with a warning when it is expected to take minutes."""
    seconds = chosen.cost * UNIT_SECONDS
    if seconds < LONG_SECONDS:
        return chosen
    warning = (
        f"this plan is expected to take about {seconds / 60:.0f} minutes of pair work "
        f"({int(chosen.cost):,} units): the pairs near cosine {chosen.threshold} are hard to "
        "tell from the corpus's background; a higher --threshold, --weighting log, a "
        "stop-word list for its language or a lower --recall cost less (see --plan)"
    )
    return dataclasses.replace(chosen, warnings=(*chosen.warnings, warning))


def _reported(sample: _Sample, bits: int, threshold: float) -> int:
    """Return the pairs within the median Hamming distance of a pair at ``threshold``."""
    near = binomial_quantile(bits, flip_probability(threshold), 0.5)
    return round(sample.duplicate_pairs + float(sample.distances(bits)[: near + 1].sum()))


def _exact_plan(
    params: Params,
    fingerprints: npt.NDArray[np.uint64],
    work: ExactWork,
    priced: tuple[tuple[int, float, int], ...],
) -> Plan:
    """Return the plan that computes every pair's cosine (recall 1.0).

    Fingerprints play no part in finding the pairs; their reported estimate is at the
    reference width when the width is ``auto``.
    """
    bits = REFERENCE_BITS if params.auto_bits else int(params.bits)
    sample = _sample(fingerprints[:, : words64(bits)])
    # The pairs above the threshold are told apart best by the widest fingerprints.
    widest = fingerprints.shape[1] * 64 if params.auto_bits else bits
    wide = sample if widest == bits else _sample(fingerprints)
    above = _reported(wide, widest, params.threshold)
    return Plan(
        tables=Tables(bits, (), -1, "exact: every pair"),
        source="exact",
        threshold=params.threshold,
        recall=1.0,
        max_hamming=None,
        curve=tuple((c, 1.0) for c in CURVE_COSINES),
        expected_candidates=work.pairs,
        expected_verified=min(above, work.pairs),
        expected_reported=min(above, work.pairs),
        documents=sample.documents,
        distinct=sample.distinct,
        sample=len(sample.fingerprints),
        bits=bits,
        cost=work.cost,
        widths=priced,
        exact_cost=int(work.cost),
        work=work,
    )


def _auto_plan(params: Params, fingerprints: npt.NDArray[np.uint64]) -> Plan:
    """Return the cheapest tables at ``params.bits`` that reach the recall (or the best)."""
    bits = int(params.bits)
    sample = _sample(fingerprints[:, : words64(bits)])
    options = _options(params, sample)
    considered = tuple(
        (
            f"{o.tables.description}, Hamming <= {o.max_hamming}",
            round(o.recall, 4),
            int(o.candidates),
            int(o.cost),
        )
        for o in options
    )
    warnings: list[str] = []
    reaching = [o for o in options if o.recall >= params.recall]
    if reaching:
        chosen = min(reaching, key=lambda o: (o.cost, o.tables.description, o.max_hamming))
    else:
        chosen = max(options, key=lambda o: (o.recall, -o.cost))
        warnings.append(
            f"{bits}-bit fingerprints cannot reach recall {params.recall} at cosine "
            f"{params.threshold} with at most {MAX_TABLES} tables; the best plan finds "
            f"{chosen.recall:.3f} of such pairs: use more --bits, or a lower --recall"
        )
    return _predicted(
        params, sample, chosen.tables, "auto", chosen.max_hamming, considered, warnings
    )


def _fixed_plan(params: Params, fingerprints: npt.NDArray[np.uint64]) -> Plan:
    """Return the plan of explicit tables (scheme, blocks or max_distance), predicted."""
    sample = _sample(fingerprints[:, : words64(int(params.bits))])
    source = (
        "max_distance"
        if params.max_distance is not None
        else "blocks"
        if params.blocks is not None
        else "scheme"
    )
    return _predicted(params, sample, tables_for(params), source, None, (), [])


def _predicted(
    params: Params,
    sample: _Sample,
    tables: Tables,
    source: str,
    max_hamming: int | None,
    considered: tuple[tuple[str, float, int, int], ...],
    warnings: list[str],
) -> Plan:
    """Return the plan of ``tables``: its recall curve, candidates, true cosines, cost."""
    bits = int(params.bits)
    best = clean_ranks(tables, samples=RECALL_SAMPLES).max(axis=1)
    curve = _curve(best, bits, max_hamming)
    recall = recall_of(best, bits, params.threshold, max_hamming)
    expected = round(sample.pairs(tables, MEASURED_TABLES if len(tables.keys) > 64 else None))
    found = (best[None, :] >= np.arange(bits + 1)[:, None]).mean(axis=1)
    found[: tables.guarantee + 1] = 1.0
    if max_hamming is not None:
        found[max_hamming + 1 :] = 0.0
    verified = round(sample.duplicate_pairs + float(sample.distances(bits) @ found))
    if source != "auto" and recall < params.recall:
        warnings.append(
            f"{tables.description} finds a pair at cosine {params.threshold} with probability "
            f"{recall:.3f}, below --recall {params.recall}; use --scheme auto to plan for it"
        )
    if expected > MAX_CANDIDATES:
        warnings.append(
            f"{tables.description} would create about {expected:,} candidate pairs on these "
            f"{sample.documents:,} documents; expect a long verification, or use more --bits "
            "or a higher --threshold"
        )
    if verified > VERIFY_WARN * max(sample.documents, 1) and max_hamming is not None:
        warnings.append(
            f"about {verified:,} candidate pairs are within Hamming distance {max_hamming} "
            f"and need a true cosine: at {bits} bits, pairs at cosine {params.threshold} are "
            "hard to tell from loosely related ones; more bits "
            f"(--bits {4 * bits if bits < 256 else 2 * bits}) separate them"
        )
    cost = expected + TABLE_COST * len(tables.keys) * sample.distinct + VERIFY_COST * verified
    return Plan(
        tables=tables,
        source=source,
        threshold=params.threshold,
        recall=recall,
        max_hamming=max_hamming,
        curve=curve,
        expected_candidates=expected,
        expected_verified=verified,
        documents=sample.documents,
        distinct=sample.distinct,
        sample=len(sample.fingerprints),
        bits=bits,
        cost=cost,
        expected_reported=min(verified, _reported(sample, bits, params.threshold)),
        considered=considered,
        warnings=tuple(warnings),
    )
