"""What the commands that list pairs share: options, settings, reports and exit status.

``scan``, ``match``, ``index query`` and ``index scan`` (and ``fingerprint`` and ``compare``
for the settings) take the same blocking and report options and write their results the
same way; this module holds them so that no command module imports another.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from simdup.cli.options import (
    DEFAULTS,
    ExitStatus,
    encode_output,
    stderr_console,
    user_errors,
    write_output,
)
from simdup.cli.output import emit_plain, emit_rich, stdout_is_terminal
from simdup.model import Pair, ScanResult
from simdup.params import SCHEME_CHOICES, Params
from simdup.report.plain_table import plain_lines
from simdup.report.render import (
    PAIR_COLUMNS,
    SORT_KEYS,
    ReportOptions,
    cluster_table,
    dumps,
    pair_cells,
    pair_table,
    printable,
    selected_pairs,
    summary,
    to_csv,
    to_json,
    to_jsonl,
)
from simdup.search.plan.budget import format_size


def blocking_options(func: Any) -> Any:
    """Options choosing how candidate pairs are found and which are reported."""
    for decorator in reversed(
        [
            click.option(
                "--scheme",
                type=click.Choice(SCHEME_CHOICES),
                default=DEFAULTS.scheme,
                show_default=True,
                help="Blocking: strict=1 block, balanced=4, loose=8; auto plans from --threshold.",
            ),
            click.option(
                "--blocks",
                type=click.IntRange(min=1),
                help="Split fingerprints into N blocks (overrides --scheme; N <= --bits).",
            ),
            click.option(
                "--max-distance",
                type=click.IntRange(min=0),
                help="Find every pair within this Hamming distance (overrides both).",
            ),
            click.option(
                "--threshold",
                type=click.FloatRange(0.0, 1.0),
                default=DEFAULTS.threshold,
                show_default=True,
                help="Report pairs whose true cosine is at least this.",
            ),
            click.option(
                "--recall",
                type=click.FloatRange(0.0, 1.0, min_open=True),
                default=DEFAULTS.recall,
                show_default=True,
                help="With --scheme auto: find pairs at the threshold with this probability.",
            ),
        ]
    ):
        func = decorator(func)
    return func


def report_options(func: Any) -> Any:
    """Options choosing which pairs are shown, as in ``simdup scan``."""
    for decorator in reversed(
        [
            click.option("--all", "report_all", is_flag=True, help="Report every candidate pair."),
            click.option(
                "--clusters", is_flag=True, help="Also report groups of connected near-duplicates."
            ),
            click.option("--limit", type=click.IntRange(min=0), help="Show at most N pairs."),
            click.option(
                "--sort",
                type=click.Choice(SORT_KEYS),
                default="cosine",
                show_default=True,
                help="Order of pairs: cosine (highest first), hamming (lowest first) or path.",
            ),
            click.option(
                "--fail-on-match", is_flag=True, help="Exit with status 1 if any pair is reported."
            ),
            click.option("--timings", is_flag=True, help="Add per-stage seconds to JSON stats."),
        ]
    ):
        func = decorator(func)
    return func


def report_of(kwargs: dict[str, Any]) -> ReportOptions:
    """Return the report options of a pair-listing command."""
    with user_errors():
        return ReportOptions(
            report_all=kwargs["report_all"],
            clusters=kwargs["clusters"],
            limit=kwargs["limit"],
            sort=kwargs["sort"],
            timings=kwargs["timings"],
        )


def build_params(kwargs: dict[str, Any]) -> Params:
    """Return :class:`Params` from parsed options (library validation, usage errors)."""
    with user_errors():
        return Params(
            bits=kwargs["bits"],
            seed=kwargs["seed"],
            weighting=kwargs["weighting"],
            ngram=kwargs["ngram"],
            stopwords=kwargs["stopwords"],
            segment=kwargs.get("segment", DEFAULTS.segment),
            scheme=kwargs.get("scheme", DEFAULTS.scheme),
            blocks=kwargs.get("blocks"),
            max_distance=kwargs.get("max_distance"),
            threshold=kwargs.get("threshold", DEFAULTS.threshold),
            recall=kwargs.get("recall", DEFAULTS.recall),
        )


def input_params(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Return the input settings that change results, for JSON ``params``."""
    return {
        "hidden": kwargs["hidden"],
        "follow_symlinks": kwargs["follow_symlinks"],
        "include": list(kwargs["include"]),
        "exclude": list(kwargs["exclude"]),
        "max_size": kwargs["max_size"],
        "encoding": kwargs["encoding"],
        "encoding_errors": kwargs["encoding_errors"],
        "jsonl": bool(kwargs["jsonl"]),
        "text_field": kwargs["text_field"],
        "id_field": kwargs["id_field"],
    }


def plan_lines(described: dict[str, Any]) -> str:
    """Return the plan as lines for people: mode, width, tables, recall, cost, memory."""
    exact = described.get("mode") == "exact"
    lines = [
        "mode: exact (the true cosine of every pair: cheaper here than tables; recall 1.0)"
        if exact
        else f"mode: tables at {described['bits']} bits",
        f"bits: {described['bits']}"
        + "".join(
            f"; {w['bits']} bits: recall {w['recall']:.3f}, cost {w['estimated_cost']:,}"
            for w in described.get("widths_priced", [])
        ),
    ]
    if not exact:
        lines += [
            f"tables: {described['tables']} ({described['source']}; "
            f"key bits {', '.join(map(str, described['key_bits']))})",
            f"guarantee: every pair within Hamming distance {described['guarantee']}"
            if described["guarantee"] >= 0
            else "guarantee: none (probabilistic tables)",
        ]
    lines += [
        f"recall at cosine {described['threshold']}: {described['recall_at_threshold']:.3f}",
        "recall curve: "
        + "  ".join(f"{p['cosine']:.2f}:{p['recall']:.3f}" for p in described["recall_curve"]),
        f"expected candidates: {described['expected_candidates']:,} (upper bound); "
        f"to verify: {described['expected_verified']:,}",
        f"documents: {described['documents']:,} ({described['distinct_fingerprints']:,} distinct "
        f"fingerprints, key sizes measured on {described['measured_on']:,})",
        f"estimated cost: {described['estimated_cost']:,} candidate-pair units"
        + (
            f" (exact: {described['exact_cost']:,})"
            if described.get("exact_cost") is not None and not exact
            else ""
        ),
    ]
    memory = described.get("memory")
    if memory:
        lines.append(
            f"memory: about {format_size(memory['predicted']['total'])} predicted beyond the "
            f"corpus, its weights and fingerprints; budget {format_size(memory['budget'])}"
        )
    lines += [f"warning: {w}" for w in described["warnings"]]
    return "\n".join(lines) + "\n"


def write_plan(described: dict[str, Any], kwargs: dict[str, Any]) -> None:
    """Write the plan: JSON for ``--format json``/``jsonl``, lines for people otherwise."""
    if kwargs["fmt"] in ("json", "jsonl"):
        write_output(encode_output(dumps(described) + "\n"), kwargs["output"])
    else:
        write_output(encode_output(printable_lines(plan_lines(described))), kwargs["output"])


def printable_lines(text: str) -> str:
    """Escape control characters in each line of ``text`` (names in warnings are untrusted)."""
    return "".join(printable(line) + "\n" for line in text.splitlines())


def report_messages(
    result: ScanResult, kwargs: dict[str, Any], shown: Sequence[Pair], elapsed: float
) -> None:
    """Print the summary and (with -v) the skipped inputs on stderr."""
    if kwargs["quiet"]:
        return
    console = stderr_console()
    if kwargs["verbose"]:
        for skip in result.skipped:
            console.print(f"skipped {printable(skip.path)}: {skip.reason}", markup=False)
    elif any(s.unreadable for s in result.skipped):
        count = sum(s.unreadable for s in result.skipped)
        console.print(f"{count} input(s) could not be read; -v lists them", markup=False)
    for warning in result.plan.get("warnings", []):
        console.print(f"warning: {printable(warning)}", markup=False)
    console.print(summary(result, shown, elapsed), markup=False)


def exit_status(result: ScanResult, kwargs: dict[str, Any], shown: Sequence[Pair]) -> int:
    """Return the exit status the options ask for (see ``simdup --help``)."""
    if kwargs.get("strict") and any(s.unreadable for s in result.skipped):
        return ExitStatus.UNREADABLE
    if kwargs["fail_on_match"] and any(p.above_threshold for p in shown):
        return ExitStatus.MATCHES
    return ExitStatus.OK


def write_result(
    result: ScanResult, kwargs: dict[str, Any], options: ReportOptions, extra: dict[str, Any]
) -> list[Pair]:
    """Render ``result`` in the chosen format and write it; return the pairs shown.

    ``extra`` holds settings outside :class:`Params` that shaped the result (for JSON).
    """
    fmt, output = kwargs["fmt"], kwargs["output"]
    shown = selected_pairs(result, options)
    if fmt == "json":
        write_output(encode_output(to_json(result, options, extra, shown)), output)
    elif fmt == "jsonl":
        write_output(encode_output(to_jsonl(shown)), output)
    elif fmt == "csv":
        write_output(encode_output(to_csv(shown)), output)
    else:
        after: list[Any] = [cluster_table(result)] if options.clusters else []
        headers = [header for header, _ in PAIR_COLUMNS]
        right = [flush_right for _, flush_right in PAIR_COLUMNS]
        lines = None
        if not stdout_is_terminal(output):  # a long table as lines, without rich's cells
            lines = plain_lines(headers, right, lambda: map(pair_cells, shown))
        if lines is None:
            emit_rich([pair_table(shown), *after], output)
        else:
            emit_plain(lines, output, after)
    return shown
