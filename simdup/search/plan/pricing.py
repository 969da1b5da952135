"""Price the table options a plan chooses among, on the corpus's own fingerprints.

Three families of tables can reach a recall (:mod:`simdup.search.plan.recall`): contiguous blocks
(pigeonhole), Manku, Jain and Das Sarma's distance tables (2007), and sampled tables
(``r`` permuted bit positions per table, as many tables as the recall needs). Which is
cheapest depends on the corpus: real text is not uniform (every English document leans
the same way on common words), so buckets are much larger than ``n / 2**r``. The options
are therefore priced by *measuring* the bucket sizes of every option on the corpus's own
fingerprints (identical fingerprints collapsed, a fixed-seed sample of at most
:data:`PLAN_SAMPLE` of them) and estimating the candidate pairs.

Candidates farther apart in Hamming distance than an option's ``max_hamming`` are
dropped before their true cosine is computed; each option's recall accounts for that
filter too, and filter and tables are priced together, in predicted seconds
(:func:`~simdup.search.plan.seconds.table_seconds`, by which the options are chosen, as the
widths are): every table of a set keyed, sorted and bringing its candidates, and each
candidate within the filter (``verified``) a true cosine. ``verified`` is estimated from the
corpus's own histogram of pairwise distances and the tables' probability of finding a pair
at each distance. The chosen plan's cost in units of one candidate pair, ``candidates +
TABLE_COST · tables · n + VERIFY_COST · verified``, is reported beside its seconds.

Beyond :data:`MAX_TABLES` (whose recall is estimated by Monte Carlo), wider keys with up
to :data:`MANY_TABLES` tables are priced from the probability that one table of ``r``
random positions misses all ``d`` differing bits, ``C(bits - d, r) / C(bits, r)``: where
unrelated documents are close, more tables of wider keys bring the candidates down.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from simdup.params import Params
from simdup.search.buckets import Prints, locate, sorted_buckets, triangle
from simdup.search.buckets import near as near_pairs
from simdup.search.candidates import FIRST_TABLE_LIMIT
from simdup.search.plan.cosines import Groups
from simdup.search.plan.reach import counted, found_shares, layered_reach, recalls, sampled_reach
from simdup.search.plan.recall import (
    binomial_pmf,
    binomial_quantile,
    flip_probability,
)
from simdup.search.plan.seconds import table_seconds
from simdup.search.tables import (
    Tables,
    block_tables,
    bucket_pairs,
    distance_blocks,
    distance_tables,
    masked_keys,
    sampled_tables,
    table_masks,
)

#: Features per document assumed when the weights are not at hand.
ROW_ENTRIES = 100

#: Distinct fingerprints on which bucket sizes are measured (a fixed-seed sample above it).
PLAN_SAMPLE = 20_000

#: Seed of that sample.
SAMPLE_SEED = 0x5A3D

#: A measured table whose sample shares keys among more pairs than this is measured on
#: this many of them to find the share within the pre-filter (:meth:`Sample.near_share`).
NEAR_SHARE_PAIRS = 1 << 16

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

#: The loosest Hamming pre-filter weighed spends this share of the missed-pair budget
#: ``1 - recall``; the tightest leaves only a tenth of it to the tables.
FILTER_SHARE = 0.1


@dataclass
class Sample:
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

    def near_share(self, tables: Tables, limit: int, max_hamming: int | None) -> float:
        """Return the share of pairs sharing a key that lie within ``max_hamming``.

        Measured on the first ``limit`` tables: a pair is counted once per table whose
        key it shares, as the record of emitted pairs meets it. Every pair of a table's
        sample buckets is measured, or :data:`NEAR_SHARE_PAIRS` of them drawn at random
        (fixed seed) where they are more.
        """
        if max_hamming is None:
            return 1.0
        prints = Prints(self.fingerprints)
        rng = np.random.default_rng(SAMPLE_SEED)
        near = shared = 0.0
        for mask in table_masks(tables)[:limit]:
            keys = prints.keys(mask)
            order, starts, sizes = sorted_buckets(keys)
            counts = sizes * (sizes - 1) // 2
            raw = int(counts.sum())
            if raw == 0:
                continue
            every = raw <= NEAR_SHARE_PAIRS
            drawn = np.arange(raw) if every else rng.integers(0, raw, NEAR_SHARE_PAIRS)
            bucket, local = locate(counts, drawn)
            first, second = triangle(local)
            i, j = order[starts[bucket] + first], order[starts[bucket] + second]
            same = keys[i] == keys[j]  # a run of truncated keys may (rarely) join two
            a, b = i[same], j[same]
            scale = raw / len(drawn)
            near += scale * len(near_pairs(prints, a, b, max_hamming))
            shared += scale * len(a)
        return 1.0 if shared == 0 else near / shared

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
        # All pairs i < j, a block of rows at a time against the rows after the block's
        # first (a (rows, s) temporary per word at most): the square's lower half is not
        # measured, and only the block's own corner needs a mask.
        step = max(1, DISTANCE_BLOCK // s)
        for lo in range(0, s - 1, step):
            hi = min(s - 1, lo + step)
            after = sub[lo + 1 :]
            d = np.zeros((hi - lo, len(after)), dtype=np.uint16)
            for w in range(sub.shape[1]):  # word by word: no (rows, s, words) temporary
                d += np.bitwise_count(sub[lo:hi, w, None] ^ after[None, :, w])
            corner = hi - lo  # columns of rows lo + 1 .. hi, paired with the earlier rows only
            upper = np.arange(corner)[None, :] >= np.arange(corner)[:, None]
            counts += np.bincount(d[:, :corner][upper], minlength=bits + 1)[: bits + 1]
            counts += np.bincount(d[:, corner:].ravel(), minlength=bits + 1)[: bits + 1]
        distinct_pairs = self.distinct * (self.distinct - 1) / 2
        return counts * (distinct_pairs / (s * (s - 1) / 2))


def measuring_sample(fingerprints: npt.NDArray[np.uint64]) -> Sample:
    """Collapse identical fingerprints and draw the deterministic measuring sample."""
    n = len(fingerprints)
    if n == 0:
        return Sample(0, 0, 0, fingerprints)
    groups = Groups.of(fingerprints)
    distinct = len(groups.first)
    picked = groups.first  # the distinct fingerprints in order, or a sample of them
    if distinct > PLAN_SAMPLE:
        rng = np.random.default_rng(SAMPLE_SEED)
        picked = groups.first[np.sort(rng.choice(distinct, PLAN_SAMPLE, replace=False))]
    sample = np.ascontiguousarray(fingerprints[picked])
    return Sample(n, distinct, groups.identical_pairs, sample)


@dataclass(frozen=True)
class Option:
    """One way to find the candidates: tables and pre-filter, their recall and seconds.

    Attributes:
        tables: The blocking tables.
        max_hamming: Candidates farther apart than this are not verified.
        recall: Probability that a pair at the threshold is reported.
        candidates: Estimated candidate pairs.
        verified: Estimated candidates within ``max_hamming`` (true cosines to compute).
        seconds: Estimated seconds of pair work (:func:`~simdup.search.plan.seconds.table_seconds`):
            what the options of one width are chosen by, as the widths are.
    """

    tables: Tables
    max_hamming: int
    recall: float
    candidates: float
    verified: float
    seconds: float


def _filters(params: Params) -> list[int]:
    """Return the Hamming pre-filter distances worth weighing for the threshold.

    From the smallest that keeps the recall reachable at all to the one that spends only a
    small share of the missed-pair budget: a tighter filter verifies far fewer pairs (the
    count of pairs within distance ``K`` grows steeply with ``K``) but leaves less of the
    budget to the tables, which then need more of them.
    """
    bits, p, target = params.fixed_bits, flip_probability(params.threshold), params.recall
    low = binomial_quantile(bits, p, min(1.0, target + (1.0 - target) * 0.1))
    high = binomial_quantile(bits, p, 1.0 - (1.0 - target) * FILTER_SHARE)
    return list(range(low, max(low, high) + 1))


@dataclass
class _Pricing:
    """What every option at one width is priced against, and the options priced so far.

    Attributes:
        sample: The corpus's measuring sample.
        bits: Fingerprint width.
        threshold: The true cosine recall is planned at.
        target: The recall to reach at ``threshold``.
        filters: Hamming pre-filter distances weighed (:func:`_filters`).
        cdf: float64 (bits + 1,), P(distance <= d) of a pair at ``threshold``.
        histogram: float64 (bits + 1,), estimated distinct pairs at each distance.
        documents: Distinct fingerprints (at least 1): what each table keys and sorts.
        entries: Mean features per document (what a true cosine walks).
        stored: The corpus is verified from its store.
        options: The options priced so far, in the order they were weighed.
    """

    sample: Sample
    bits: int
    threshold: float
    target: float
    filters: list[int]
    cdf: npt.NDArray[np.float64]
    histogram: npt.NDArray[np.float64]
    documents: int
    entries: float
    stored: bool
    options: list[Option] = field(default_factory=list)

    def weigh(
        self,
        make: Callable[[int], Tables],
        reach: npt.NDArray[np.int64],
        per_table: float,
        fixed_tables: int | None,
    ) -> bool:
        """Add the cheapest option per filter; ``reach`` holds the counts of a growing set.

        ``reach`` (tables, bits + 1): row ``t`` counts the random orders in which the first
        ``t + 1`` tables reach each distance (:mod:`simdup.search.plan.reach`). Returns
        False when even the loosest filter and every table miss the recall.
        """
        cdf, filters, target = self.cdf, self.filters, self.target
        loosest = recalls(reach[-1:], cdf, filters[-1])[0]
        reachable = bool(loosest >= target)
        for k in filters if reachable else filters[-1:]:
            at = recalls(reach, cdf, k)
            enough = np.flatnonzero(at >= target)
            count = int(enough[0]) + 1 if len(enough) else reach.shape[0]
            if fixed_tables is not None:
                count = fixed_tables
            found = found_shares(reach[count - 1])
            found[k + 1 :] = 0.0
            verified = self.sample.duplicate_pairs + float(self.histogram @ found)
            tables = make(count)
            # Every table of the set is keyed and sorted, and brings its candidates.
            keyed = len(tables.keys)
            candidates = self.sample.duplicate_pairs + per_table * keyed
            self.add(tables, k, float(at[count - 1]), candidates, verified)
        return reachable

    def add(
        self, tables: Tables, k: int, recall: float, candidates: float, verified: float
    ) -> None:
        """Add the option of ``tables`` and filter ``k``, with its seconds."""
        widths = np.unique(np.array(tables.key_bits), return_counts=True)
        shape = dict(zip(widths[0].tolist(), widths[1].tolist(), strict=True))
        seconds = self.seconds(shape, k, candidates, verified)
        self.options.append(Option(tables, k, recall, candidates, verified, seconds))

    def seconds(self, shape: dict[int, int], k: int, candidates: float, verified: float) -> float:
        """Return the seconds of pair work of tables of ``shape`` (key bits: tables).

        With many tables, the record of emitted pairs meets every pair within filter ``k``
        that shares a key, once per table: a pair at distance ``d`` shares the key of a
        table of ``r`` bits with probability :func:`_survival` (identical pairs in all).
        """
        keyed = sum(shape.values())
        met = 0.0
        if keyed > FIRST_TABLE_LIMIT:
            within = self.histogram[: k + 1]
            met = self.sample.duplicate_pairs * float(keyed)
            for width, count in shape.items():
                met += float(count) * float(within @ _survival(self.bits, width)[: k + 1])
        return table_seconds(
            keys=keyed * self.documents,
            candidates=candidates,
            words=self.bits // 64,
            verified=verified,
            entries=self.entries,
            documents=self.documents,
            tables=keyed,
            recorded=met,
            stored=self.stored,
        )

    def measured(self, tables: Tables) -> float:
        """Candidate pairs per table among distinct fingerprints (first tables measured)."""
        limit = min(len(tables.keys), MEASURED_TABLES)
        sample = self.sample
        return (sample.pairs(tables, limit) - sample.duplicate_pairs) / len(tables.keys)


def found_share(reach: npt.NDArray[np.int64], bits: int) -> npt.NDArray[np.float64]:
    """Return, for each distance 0..bits, the share of random orders reaching at least it.

    Counted once per value rather than compared once per distance: the same counts, so
    the same shares, in a pass over the orders instead of ``bits + 1``.

    >>> found_share(np.array([0, 2, 2, 3]), 3).tolist()
    [1.0, 0.75, 0.75, 0.25]
    """
    return found_shares(counted(reach[:, None], bits)[0])


def table_options(
    params: Params, sample: Sample, entries: float = ROW_ENTRIES, stored: bool = False
) -> list[Option]:
    """Return, per family, width and pre-filter, the fewest tables that reach the recall.

    ``entries``: mean features per document, which the seconds of true cosines grow with;
    ``stored``: the corpus is verified from its store.

    The options come in the order they are weighed: contiguous blocks and distance
    tables, then sampled tables by key width, then many tables of wider keys.
    """
    bits, threshold = params.fixed_bits, params.threshold
    pricing = _Pricing(
        sample=sample,
        bits=bits,
        threshold=threshold,
        target=params.recall,
        filters=_filters(params),
        cdf=np.cumsum(binomial_pmf(bits, flip_probability(threshold))),
        histogram=sample.distances(bits),
        documents=max(sample.distinct, 1),
        entries=entries,
        stored=stored,
    )
    _family_options(pricing)
    key_bits = _sampled_options(pricing)
    _many_table_options(pricing, key_bits)
    return pricing.options


def _family_options(pricing: _Pricing) -> None:
    """Price contiguous blocks and distance tables: the fewest that reach the recall."""
    bits = pricing.bits
    for family in ("blocks", "distance"):
        k = _fewest(bits, family, pricing.threshold, pricing.target, pricing.filters[-1])
        if k is not None:
            tables = _family_tables(bits, family, k)
            reach = layered_reach(bits, *_blocks(bits, family, k))
            pricing.weigh(functools.partial(_same, tables), reach, pricing.measured(tables), 1)


def narrowest_key(bits: int) -> int:
    """Return the narrowest sampled key priced at ``bits``: a sixteenth of them, 16 at most.

    At 512 bits a sixteenth is 32, and keys of 32 bits need hundreds of tables to reach a
    pair at the threshold; a million documents and more are found with fewer tables of 20
    to 24 bits, for less (measured on ``corpus-1000000.jsonl``: RESULTS.md).

    >>> narrowest_key(64), narrowest_key(256), narrowest_key(512)
    (4, 16, 16)
    """
    return max(1, min(bits // 16, 16))


def _sampled_options(pricing: _Pricing) -> int:
    """Price sampled tables per key width and filter; return the first width not priced.

    Key widths grow until even every table of the loosest filter misses the recall: wider
    keys only survive less, so no wider width can reach it.
    """
    bits = pricing.bits
    for key_bits in range(narrowest_key(bits), min(bits, 40) + 1):
        first = sampled_tables(bits, key_bits, MEASURED_TABLES)
        reach = sampled_reach(bits, key_bits, MAX_TABLES)
        make = functools.partial(sampled_tables, bits, key_bits)
        if not pricing.weigh(make, reach, pricing.measured(first), None):
            break  # wider keys only survive less: no wider width can reach the recall
    else:
        key_bits += 1
    return key_bits


def _many_table_options(pricing: _Pricing, key_bits: int) -> None:
    """Price more than :data:`MAX_TABLES` tables of wider keys, from ``key_bits`` on.

    Where unrelated documents are close, as with a heavy shared vocabulary, more tables of
    wider keys are what brings the candidates down towards the optimum.
    """
    bits, sample = pricing.bits, pricing.sample
    pmf = binomial_pmf(bits, flip_probability(pricing.threshold))
    for wide in range(
        key_bits if bits >= MANY_TABLE_BITS else bits + 1, min(bits, MANY_KEY_BITS) + 1
    ):
        survive = _survival(bits, wide)
        per_table = pricing.measured(sampled_tables(bits, wide, MEASURED_TABLES))
        options: list[tuple[float, int, int, float, float, float]] = []
        for k in pricing.filters:
            count = _fewest_tables(pmf, survive, k, pricing.target)
            if count is None or count <= MAX_TABLES:
                continue
            found = 1.0 - (1.0 - survive) ** count
            found[k + 1 :] = 0.0
            verified = sample.duplicate_pairs + float(pricing.histogram @ found)
            candidates = sample.duplicate_pairs + per_table * count
            seconds = pricing.seconds({wide: count}, k, candidates, verified)
            options.append((seconds, k, count, float(pmf @ found), candidates, verified))
        if not options:
            break
        # The width's fastest filter only: only its tables are made.
        _, k, count, recall, candidates, verified = min(options)
        pricing.add(sampled_tables(bits, wide, count), k, recall, candidates, verified)


@functools.lru_cache(maxsize=256)
def _survival(bits: int, key_bits: int) -> npt.NDArray[np.float64]:
    """Return P(a table of ``key_bits`` random positions misses ``d`` differing bits), d=0..bits.

    That is ``C(bits - d, key_bits) / C(bits, key_bits)``. Cached (read-only): every
    filter weighed at a width asks for it again.

    >>> _survival(4, 2).tolist()
    [1.0, 0.5, 0.16666666666666666, 0.0, 0.0]
    """
    d = np.arange(bits + 1, dtype=np.float64)[:, None]
    i = np.arange(key_bits, dtype=np.float64)[None, :]
    factors = np.clip((bits - d - i) / (bits - i), 0.0, 1.0)
    out = np.asarray(np.prod(factors, axis=1), dtype=np.float64)
    out.setflags(write=False)
    return out


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


def _blocks(bits: int, family: str, k: int) -> tuple[int, int]:
    """Return the blocks a family's tables are cut into, and how many each table keys."""
    if family == "blocks":
        return k + 1, 1
    blocks = distance_blocks(bits, k)
    return blocks, blocks - k


def _fewest(bits: int, family: str, threshold: float, target: float, reach: int) -> int | None:
    """Return the smallest ``k`` whose tables reach the recall within MAX_TABLES, or None.

    Both more blocks and a larger distance find more pairs and take more tables, so
    "too many tables, or the recall reached" is false up to some ``k`` and true from
    there: a galloping then binary search finds it with a few recall estimates, where
    trying every ``k`` would take hundreds at 512 bits.
    """

    def usable(k: int) -> bool:
        blocks, kept = _blocks(bits, family, k)
        return math.comb(blocks, kept) <= MAX_TABLES

    cdf = np.clip(np.cumsum(binomial_pmf(bits, flip_probability(threshold))), 0.0, 1.0)

    def reaches(k: int) -> bool:
        return bool(
            recalls(layered_reach(bits, *_blocks(bits, family, k)), cdf, reach)[0] >= target
        )

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
