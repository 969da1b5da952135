"""Choose blocking tables from the user's settings, and predict what they will cost.

Precedence: ``max_distance`` (a hard guarantee) over ``blocks`` over ``scheme``.

**Recall planned from the threshold** (``scheme="auto"``). The probability that a set of
tables reports a pair at a true cosine is known (:mod:`simdup.search.plan.recall`), so the planner
weighs contiguous blocks, distance tables and sampled tables, each with a Hamming
pre-filter, prices every option on the corpus's own fingerprints (:mod:`simdup.search.plan.pricing`)
and keeps the option with the least estimated cost that reaches the recall (cost in units
of one candidate pair, :mod:`simdup.search.plan.pricing`). Each plan's pair work is then
predicted in seconds from the counts it expects and the measured cost of each unit
(:mod:`simdup.search.plan.seconds`).

**Exact mode.** When the weights are at hand, an exact scan (every pair's cosine by
blocked products, :mod:`simdup.search.exact`) is predicted in seconds too; below
:data:`PLAN_SECONDS` it is chosen without planning tables, and otherwise when it takes
no longer than the best tables. Its recall is 1.0.

**Width.** With ``bits="auto"`` the tables are planned at each of :data:`WIDTHS` on the
first bits of one wide fingerprint (a narrower reference fingerprint is exactly the first
bits of a wider one), and the fastest plan that reaches the recall keeps its width.

When no option reaches the recall, the plan says so in a warning and keeps the option
with the highest recall: recall is never lowered silently. A plan expected to take
minutes says so too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.errors import ParameterError
from simdup.fingerprints.simhash import Wider
from simdup.params import REFERENCE_BITS, Params
from simdup.search.candidates import MAX_CANDIDATES, LargeBucket
from simdup.search.exact import ExactWork
from simdup.search.plan.cosines import CosineSample, RowSource
from simdup.search.plan.pricing import (
    MAX_TABLES,
    MEASURED_TABLES,
    TABLE_COST,
    VERIFY_COST,
    Sample,
    found_share,
    table_options,
)
from simdup.search.plan.recall import (
    RECALL_SAMPLES,
    binomial_quantile,
    flip_probability,
    recall_of,
)
from simdup.search.plan.seconds import exact_seconds, table_seconds
from simdup.search.plan.survey import Survey
from simdup.search.tables import Tables, block_tables, clean_ranks, distance_tables, scheme_tables

#: Plans expected to take longer than this warn before they start.
LONG_SECONDS = 120.0

#: Fingerprint widths priced when the width is ``auto``.
WIDTHS = (64, 128, 256, 512)

#: Below this many seconds of an exact scan's products, tables are not even planned:
#: pricing four widths takes about as long (measured: 1.5-2.7 s).
PLAN_SECONDS = 2.0

#: Warn when more than this many pairs per document are expected to need a true cosine.
VERIFY_WARN = 50

#: Cosines of the recall curve in a plan's description.
CURVE_COSINES = (1.0, 0.99, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6, 0.5)


def tables_for(params: Params) -> Tables:
    """Return the tables an explicit setting asks for (``auto``: a corpus-free fallback).

    ``auto`` needs the corpus to plan (:func:`plan`); without one it guarantees every
    distance up to the ``recall`` quantile of the distance at the threshold.
    """
    if params.max_distance is not None:
        return distance_tables(params.fixed_bits, params.max_distance)
    if params.blocks is not None:
        return block_tables(params.fixed_bits, params.blocks)
    if params.scheme == "auto":
        k = binomial_quantile(params.fixed_bits, flip_probability(params.threshold), params.recall)
        return distance_tables(params.fixed_bits, min(k, params.fixed_bits - 1))
    return scheme_tables(params.fixed_bits, params.scheme)


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
        seconds: Predicted seconds of pair work (:mod:`simdup.search.plan.seconds`).
        expected_reported: Estimated pairs reported (above the threshold, and for tables
            found by them), from the true cosines of a sample of documents
            (:mod:`simdup.search.plan.cosines`); without weights, the pairs within the
            median distance of a pair at the threshold. What the scan holds.
        reported_bound: An upper bound on ``expected_reported`` (about 97.5%).
        cosine_sample: Distinct documents whose pairs' true cosines were computed.
        widths: Widths priced with ``bits="auto"``, as ``(bits, recall, cost, seconds)``.
        exact_cost: Estimated cost of computing every pair (None: not weighed).
        work: What the exact scan does (exact plans only).
        entries: Mean features per document (what verification walks and indexes).
        shared: Features in two documents or more (0: unknown): verification's dense
            blocks are as wide.
        expected_recorded: Estimated pairs within ``max_hamming`` met by the tables, each
            time a table meets one (many tables: what the record of emitted pairs checks).
        considered: Options weighed, as ``(description, recall, expected candidates,
            estimated seconds)``.
        warnings: Sentences for the user (unreachable recall, too many candidates).
        census: The survey knows every pair at the threshold (a census): an exact scan
            takes them as they are and builds no blocks.
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
    seconds: float = 0.0
    expected_reported: int = 0
    reported_bound: int = 0
    cosine_sample: int = 0
    widths: tuple[tuple[int, float, int, float], ...] = ()
    exact_cost: int | None = None
    work: ExactWork | None = None
    entries: float = 0.0
    shared: int = 0
    expected_recorded: int = 0
    considered: tuple[tuple[str, float, int, float], ...] = ()
    warnings: tuple[str, ...] = field(default=())
    census: bool = False

    @property
    def exact(self) -> bool:
        """True when every pair's cosine is computed (no tables)."""
        return self.source == "exact"

    def warned(self, warning: str) -> Plan:
        """Return this plan with one more warning for the user."""
        return dataclasses.replace(self, warnings=(*self.warnings, warning))

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
            "reported_bound": self.reported_bound,
            "cosines_measured_on": self.cosine_sample,
            "documents": self.documents,
            "distinct_fingerprints": self.distinct,
            "measured_on": self.sample,
            "estimated_cost": int(self.cost),
            "estimated_seconds": round(self.seconds, 3),
            "exact_cost": self.exact_cost,
            "widths_priced": [
                {"bits": b, "recall": r, "estimated_cost": c, "estimated_seconds": round(t, 3)}
                for b, r, c, t in self.widths
            ],
            "large_buckets": buckets,
            "warnings": [*self.warnings, *notes],
        }


def plan(
    params: Params,
    fingerprints: npt.NDArray[np.uint64],
    *,
    work: ExactWork | None = None,
    workers: int = 1,
    rows: RowSource | None = None,
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
        work: What an exact scan would cost (:func:`simdup.search.exact.exact_work`); None when
            no weights are at hand (exact mode is then not weighed).
        workers: Threads pricing the widths side by side (each width is priced on its
            own, and numpy releases the interpreter lock in the sorts that dominate); the
            plan never depends on it.
        rows: The weight rows of the rows asked for: the true cosines of a sample of
            documents then estimate the pairs above the threshold (None: from Hamming
            distances).

    >>> p = plan(Params(bits=64, scheme="strict"), np.zeros((3, 1), dtype=np.uint64))
    >>> p.tables.description, p.expected_candidates
    ('1 blocks', 3)
    """
    return next(choices(params, survey_of(params, fingerprints, work, rows), workers=workers))


def survey_of(
    params: Params,
    fingerprints: npt.NDArray[np.uint64],
    work: ExactWork | None,
    rows: RowSource | None,
    entries: float = 0.0,
    shared: int = 0,
    wider: Wider | None = None,
) -> Survey:
    """Return the survey a corpus's plans are priced on (see :meth:`Survey.of`).

    Its cosine sample is small when exact mode is cheap enough to be chosen without tables.
    """
    quick = params.planned and work is not None and exact_is_cheap(work)
    return Survey.of(
        params,
        fingerprints,
        work=work,
        rows=rows,
        quick=quick,
        entries=entries,
        shared=shared,
        wider=wider,
    )


def exact_is_cheap(work: ExactWork) -> bool:
    """Tell whether an exact scan is cheap enough to be chosen without pricing tables."""
    return exact_seconds(work, 0) <= PLAN_SECONDS


def choices(
    params: Params, survey: Survey, *, workers: int = 1, with_exact: bool = True
) -> Iterator[Plan]:
    """Yield the plans worth running for a corpus, the one to prefer first.

    The first is :func:`plan`'s. The others, in order of preference, are what a scan
    falls back on when the first does not fit its memory budget: every width's cheapest
    tables and exact mode, those reaching the recall by cost, then the others by recall.
    Each is priced only when asked for. ``with_exact=False`` leaves exact mode out: it measures
    only the pairs near the threshold, so ``--all`` (every candidate) takes tables.
    """
    if not params.planned:
        yield _fixed_plan(params.replace(bits=params.fixed_bits), survey)
        return
    work = survey.work if with_exact else None
    cheap = work is not None and exact_is_cheap(work)
    if cheap:
        yield _exact_plan(params, survey, ())  # half a second at most
    available = survey.widest
    widths = [w for w in WIDTHS if w <= available] if params.auto_bits else [params.fixed_bits]
    if not widths:
        raise ParameterError(
            f"fingerprints of {available} bits cannot be planned at {params.fixed_bits} bits"
        )
    for bits in widths:  # every width's sample first: the threads then share them
        survey.sample(bits)
    # The widest first: it takes longest, so the narrower ones fill the other threads.
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(widths)))) as pool:
        priced_widths = {
            w: pool.submit(_auto_plan, params.replace(bits=w), survey)
            for w in sorted(widths, reverse=True)
        }
        plans = [priced_widths[w].result() for w in widths]
    priced = tuple((p.bits, round(p.recall, 4), int(p.cost), p.seconds) for p in plans)
    exact_cost = None if work is None else int(work.cost)
    ranked = [dataclasses.replace(p, widths=priced, exact_cost=exact_cost) for p in plans]
    ranked.sort(key=lambda p: _rank(p, params.recall))
    if work is not None and not cheap:
        exact = _exact_plan(params, survey, priced)
        # Exact mode first when it costs no more than the best tables (which may miss the
        # recall); after them by the same order as the others.
        at = 0 if exact.seconds <= ranked[0].seconds else 1
        rest = sorted([exact, *ranked[at:]], key=lambda p: _rank(p, params.recall))
        ranked = [*ranked[:at], *rest]
    for chosen in ranked:
        yield _long(chosen)


def _rank(p: Plan, recall: float) -> tuple[int, float, float, int]:
    """Order plans: those reaching ``recall`` by seconds (exact first on a tie), then the rest.

    The rest go by recall, then seconds.
    """
    if p.recall >= recall:
        return (0, p.seconds, float(not p.exact), p.bits)
    return (1, -p.recall, p.seconds, p.bits)


def _long(chosen: Plan) -> Plan:
    """Return the plan with a warning when it is expected to take minutes."""
    seconds = chosen.seconds
    if seconds < LONG_SECONDS:
        return chosen
    warning = (
        f"this plan is expected to take about {seconds / 60:.0f} minutes of pair work: "
        f"the pairs near cosine {chosen.threshold} are hard to "
        "tell from the corpus's background; a higher --threshold, --weighting log, a "
        "stop-word list for its language or a lower --recall cost less (see --plan)"
    )
    return chosen.warned(warning)


def _reported(sample: Sample, bits: int, threshold: float) -> int:
    """Return the pairs within the median Hamming distance of a pair at ``threshold``.

    Only where no weights are at hand (fingerprints alone, whose pairs are reported by
    their estimated cosine): a heavy shared vocabulary puts many more pairs within that
    distance than reach the threshold in true cosine.
    """
    near = binomial_quantile(bits, flip_probability(threshold), 0.5)
    return round(sample.duplicate_pairs + float(sample.distances(bits)[: near + 1].sum()))


def _exact_plan(
    params: Params, survey: Survey, priced: tuple[tuple[int, float, int, float], ...]
) -> Plan:
    """Return the plan that computes every pair's cosine (recall 1.0).

    Fingerprints play no part in finding the pairs. The pairs selected and verified are
    those above the threshold, estimated from the cosine sample (without weights, from
    the widest fingerprints' distances).
    """
    work = survey.work
    assert work is not None
    bits = params.fixed_bits
    sample = survey.sample(bits)
    cosines = survey.cosines()
    if cosines is not None:
        above, bound = (
            round(cosines.above(params.threshold)),
            round(cosines.bound(params.threshold)),
        )
    else:
        # The pairs above the threshold are told apart best by the widest fingerprints.
        widest = survey.widest if params.auto_bits else bits
        above = bound = _reported(survey.sample(widest), widest, params.threshold)
    above, bound = min(above, work.pairs), min(bound, work.pairs)
    return Plan(
        tables=Tables(bits, (), -1, "exact: every pair"),
        source="exact",
        threshold=params.threshold,
        recall=1.0,
        max_hamming=None,
        curve=tuple((c, 1.0) for c in CURVE_COSINES),
        expected_candidates=work.pairs,
        expected_verified=above,
        expected_reported=above,
        reported_bound=bound,
        cosine_sample=0 if cosines is None else cosines.size,
        documents=sample.documents,
        distinct=sample.distinct,
        sample=len(sample.fingerprints),
        bits=bits,
        cost=work.cost + VERIFY_COST * above,
        seconds=exact_seconds(work, above, above),
        widths=priced,
        exact_cost=int(work.cost),
        work=work,
        entries=survey.row_entries,
        shared=survey.shared,
        census=survey.census(params.threshold) is not None,
    )


def _auto_plan(params: Params, survey: Survey) -> Plan:
    """Return the cheapest tables at ``params.bits`` that reach the recall (or the best)."""
    bits = params.fixed_bits
    options = table_options(params, survey.sample(bits), survey.row_entries, survey.stored)
    considered = tuple(
        (
            f"{o.tables.description}, Hamming <= {o.max_hamming}",
            round(o.recall, 4),
            int(o.candidates),
            round(o.seconds, 3),
        )
        for o in options
    )
    warnings: list[str] = []
    reaching = [o for o in options if o.recall >= params.recall]
    if reaching:
        chosen = min(reaching, key=lambda o: (o.seconds, o.tables.description, o.max_hamming))
    else:
        chosen = max(options, key=lambda o: (o.recall, -o.seconds))
        warnings.append(
            f"{bits}-bit fingerprints cannot reach recall {params.recall} at cosine "
            f"{params.threshold} with at most {MAX_TABLES} tables; the best plan finds "
            f"{chosen.recall:.3f} of such pairs: use more --bits, or a lower --recall"
        )
    return _predicted(
        params, survey, chosen.tables, "auto", chosen.max_hamming, considered, warnings
    )


def _fixed_plan(params: Params, survey: Survey) -> Plan:
    """Return the plan of explicit tables (scheme, blocks or max_distance), predicted."""
    source = (
        "max_distance"
        if params.max_distance is not None
        else "blocks"
        if params.blocks is not None
        else "scheme"
    )
    return _predicted(params, survey, tables_for(params), source, None, (), [])


def _predicted(
    params: Params,
    survey: Survey,
    tables: Tables,
    source: str,
    max_hamming: int | None,
    considered: tuple[tuple[str, float, int, float], ...],
    warnings: list[str],
) -> Plan:
    """Return the plan of ``tables``: its recall curve, candidates, true cosines, cost."""
    bits = params.fixed_bits
    sample = survey.sample(bits)
    best = clean_ranks(tables, samples=RECALL_SAMPLES).max(axis=1)
    curve = _curve(best, bits, max_hamming)
    recall = recall_of(best, bits, params.threshold, max_hamming)
    expected = round(sample.pairs(tables, MEASURED_TABLES if len(tables.keys) > 64 else None))
    found = found_share(best, bits)
    found[: tables.guarantee + 1] = 1.0
    if max_hamming is not None:
        found[max_hamming + 1 :] = 0.0
    verified = round(sample.duplicate_pairs + float(sample.distances(bits) @ found))
    pairs = (sample.documents, expected, verified)
    warnings += _table_warnings(params, tables, source, recall, pairs, max_hamming)
    cost = expected + TABLE_COST * len(tables.keys) * sample.distinct + VERIFY_COST * verified
    cosines = survey.cosines()
    reported, bound = _found_above(cosines, params.threshold, found, bits)
    if reported is None:
        reported = bound = min(verified, _reported(sample, bits, params.threshold))
    measured = min(len(tables.keys), MEASURED_TABLES)
    recorded = expected * sample.near_share(tables, measured, max_hamming)
    seconds = table_seconds(
        keys=len(tables.keys) * sample.distinct,
        candidates=expected,
        words=bits // 64,
        verified=verified,
        entries=survey.row_entries,
        documents=sample.documents,
        tables=len(tables.keys),
        recorded=recorded,
        stored=survey.stored,
        reported=reported,
    )
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
        seconds=seconds,
        expected_reported=reported,
        reported_bound=bound,
        cosine_sample=0 if cosines is None else cosines.size,
        entries=survey.row_entries,
        shared=survey.shared,
        expected_recorded=max(verified, round(recorded)),
        considered=considered,
        warnings=tuple(warnings),
    )


def _table_warnings(
    params: Params,
    tables: Tables,
    source: str,
    recall: float,
    pairs: tuple[int, int, int],
    max_hamming: int | None,
) -> list[str]:
    """Return what a plan of ``tables`` says before its work: low recall, many pairs.

    ``pairs``: the documents, the candidates expected and the true cosines expected.
    """
    bits = params.fixed_bits
    documents, expected, verified = pairs
    warnings = []
    if source != "auto" and recall < params.recall:
        warnings.append(
            f"{tables.description} finds a pair at cosine {params.threshold} with probability "
            f"{recall:.3f}, below --recall {params.recall}; use --scheme auto to plan for it"
        )
    if expected > MAX_CANDIDATES:
        warnings.append(
            f"{tables.description} would create about {expected:,} candidate pairs on these "
            f"{documents:,} documents; expect a long verification, or use more --bits "
            "or a higher --threshold"
        )
    if verified > VERIFY_WARN * max(documents, 1) and max_hamming is not None:
        warnings.append(
            f"about {verified:,} candidate pairs are within Hamming distance {max_hamming} "
            f"and need a true cosine: at {bits} bits, pairs at cosine {params.threshold} are "
            "hard to tell from loosely related ones; more bits "
            f"(--bits {4 * bits if bits < 256 else 2 * bits}) separate them"
        )
    return warnings


def _found_above(
    cosines: CosineSample | None, threshold: float, found: npt.NDArray[np.float64], bits: int
) -> tuple[int | None, int]:
    """Return the pairs above ``threshold`` the tables are expected to find, and a bound.

    ``found`` (float64 (bits + 1,)) is the tables' probability of finding a pair at each
    distance; the distances are the sampled pairs' own, at ``bits``.
    """
    if cosines is None:
        return None, 0
    reported = cosines.above(threshold, found[: bits + 1])
    return round(reported), round(reported + cosines.bound(threshold) - cosines.above(threshold))


def _curve(
    best: npt.NDArray[np.int64], bits: int, max_hamming: int | None
) -> tuple[tuple[float, float], ...]:
    return tuple((c, recall_of(best, bits, c, max_hamming)) for c in CURVE_COSINES)
