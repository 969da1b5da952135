"""The plan a scan runs within its memory budget, or the refusal that names what would fit.

The plans worth running are tried in order (:func:`simdup.search.plan.planner.choices`), each
fitted to the budget (:func:`simdup.search.plan.budget.fit_of`) against one reading of the
memory resident when the first is made. When none fits, the refusal names the preferred plan's
need and the settings that would fit, priced on the planner's own samples.
"""

from __future__ import annotations

from simdup.params import Params
from simdup.search.plan.budget import (
    BudgetError,
    Fit,
    HeldSpill,
    SpillLimits,
    fit_of,
    held_disk,
    held_pairs,
)
from simdup.search.plan.planner import WIDTHS, Plan, choices
from simdup.search.plan.survey import Survey
from simdup.sizes import format_size, size_option


def fitted(
    params: Params,
    survey: Survey,
    budget: int,
    *,
    workers: int,
    report_all: bool,
    refuse: bool = True,
    limits: SpillLimits | None = None,
    held_spill: HeldSpill | None = None,
) -> tuple[Plan, Fit]:
    """Return the first plan worth running that fits ``budget``, and how it fits.

    The plans are :func:`simdup.search.plan.planner.choices`' (the preferred first), each
    priced only when the ones before it do not fit. When none fits and ``refuse`` is
    false, the preferred plan is returned with the refusal's first line as a warning.
    With ``limits`` (a stored corpus), a plan fits when its
    :func:`~simdup.search.plan.budget.stored_fit` does (the store's parts take their share
    of the budget, pairs past their limit go to disk), or else as it would in memory. With
    ``held_spill`` (a corpus in memory that may spill), a plan whose reported pairs would
    not fit with the rest fits when they can go to disk past their share
    (:func:`~simdup.search.plan.budget.fit_of`).

    Raises:
        BudgetError: no plan fits; the message names the preferred plan's need and the
            settings that would fit (:func:`alternatives`).
    """
    first: tuple[Plan, Fit] | None = None
    resident: int | None = None
    for option in choices(params, survey, workers=workers, with_exact=not report_all):
        if resident is None:
            survey.priced()  # what only pricing needs goes before the memory is read
        fit = fit_of(
            option,
            budget,
            workers=workers,
            report_all=report_all,
            limits=limits,
            held_spill=held_spill,
            resident=resident,
        )
        # Read by the first fit, once its plan is made (its samples freed): every plan and
        # alternative is priced on it.
        resident = fit.footprint.resident
        if fit.total <= budget:
            return fit_warned(option, fit, stored=limits is not None), fit
        first = first or (option, fit)
    assert first is not None  # choices always yields a plan
    plan, fit = first
    options = alternatives(
        params,
        survey,
        budget,
        workers=workers,
        limits=limits,
        held_spill=held_spill,
        resident=resident,
    )
    message = refusal(plan, fit, budget, options, held_spill, report_all)
    if refuse:
        raise BudgetError(message)
    warning = f"a scan would be refused: {message.splitlines()[0]}"
    return plan.warned(warning), fit


def fit_warned(plan: Plan, fit: Fit, *, stored: bool = False) -> Plan:
    """Return ``plan`` with a warning when its fit gives up the record of emitted pairs.

    Past :attr:`Fit.seen_limit` the later tables test every earlier key instead, which
    the plan's seconds do not price: measured, 3.7 times the pair work of the same plan
    with its record (1,149 tables, 100,000 documents, ``--memory 1G`` against ``8G``), and
    at 1,000,000 documents far more (each of 1,222 tables tests more keys than the last).
    A ``stored`` corpus's pairs wait on disk for verification instead, repeats and all,
    and each is kept once there: nothing to warn of.
    """
    limit = fit.seen_limit
    if stored or limit is None or limit >= plan.expected_verified:
        return plan
    # How many it holds is left out: it depends on the memory resident when the plan is
    # made, which varies from run to run, and the warning is part of every report.
    warning = (
        "the memory budget holds a record of only part of the about "
        f"{plan.expected_verified:,} pairs its {len(plan.tables.keys)} tables emit; past it "
        "each table tests the keys of every table before it, which can take several times "
        "the predicted time: more --memory avoids that"
    )
    return plan.warned(warning)


def alternatives(
    params: Params,
    survey: Survey,
    budget: int,
    *,
    workers: int,
    limits: SpillLimits | None = None,
    held_spill: HeldSpill | None = None,
    resident: int | None = None,
) -> list[tuple[str, Plan, Fit]]:
    """Return settings that would need less, each with its plan and fit, from ``survey``.

    A higher threshold and a lower recall are planned on the same samples; ``log`` and
    ``binary`` weighting (which damp the words every document repeats) weigh and
    fingerprint only the sampled documents again (:meth:`Survey.reweighted`). Each is
    priced as the scan would run it (:func:`~simdup.search.plan.budget.fit_of`: a stored
    corpus stays stored), with ``resident`` memory (None: each reads it).
    """
    out: list[tuple[str, Plan, Fit]] = []

    def add(what: str, changed: Params, where: Survey) -> None:
        alternative = next(choices(changed, where, workers=workers))
        fit = fit_of(
            alternative,
            budget,
            workers=workers,
            report_all=False,
            limits=limits,
            held_spill=held_spill,
            resident=resident,
        )
        out.append((what, alternative, fit))

    for step in (0.05, 0.1):
        higher = round(min(1.0, params.threshold + step), 4)
        if higher > params.threshold:
            add(f"--threshold {higher:g}", params.replace(threshold=higher), survey)
    for lower in (0.9, 0.8):
        if lower < params.recall:
            add(f"--recall {lower:g}", params.replace(recall=lower), survey)
    if survey.rows is not None and params.weighting == "tf":
        for weighting in ("log", "binary"):
            add(
                f"--weighting {weighting}",
                params.replace(weighting=weighting),
                survey.reweighted(weighting, WIDTHS),
            )
    return out


def refusal(
    plan: Plan,
    fit: Fit,
    budget: int,
    options: list[tuple[str, Plan, Fit]],
    held_spill: HeldSpill | None = None,
    report_all: bool = False,
) -> str:
    """Return the message refusing ``plan``: its need, and the settings that would fit.

    When its reported pairs could have gone to disk (``held_spill``) but the disk lacks
    the room, that is said too.
    """
    lines = [
        f"this scan would need about {format_size(fit.total)} of memory "
        f"(budget {format_size(budget)}): {plan.tables.description} at {plan.bits} bits, "
        f"about {plan.expected_verified:,} true cosines to compute and "
        f"{plan.expected_reported:,} pairs to hold"
    ]
    reported = held_pairs(plan, report_all)
    if held_spill is not None and held_spill.takes(plan) and not held_spill.holds(reported):
        needed = held_disk(reported, held_spill.pairs)
        lines.append(
            f"writing those pairs to disk instead would need about {format_size(needed)} "
            f"in {held_spill.directory}, which has {format_size(held_spill.free)} free"
        )
    fitting = [(what, p, f) for what, p, f in options if f.total <= budget]
    if options and not fitting:
        lines.append("none of these changes alone fits:")
    for what, p, f in fitting or options:
        lines.append(
            f"  {what}: about {format_size(f.total)}, {p.expected_verified:,} true cosines "
            f"(recall {p.recall:.3f} at cosine {p.threshold})"
        )
    lines.append(
        "  a stop-word list for the corpus's language also removes the words most documents "
        "share; or allow more with --memory"
    )
    if not fitting:  # then only more memory does: say how much
        lines.append(f"these settings need --memory {size_option(fit.total)} or more")
    return "\n".join(lines)
