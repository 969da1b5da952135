"""What the commands that list pairs share: their report, messages and exit status.

``scan``, ``match``, ``index query`` and ``index scan`` write their results the same way;
this module holds that so that no command module imports another.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import click

from simdup.cli.output import (
    emit_plain,
    emit_rich,
    parquet_bytes,
    stderr_console,
    stdout_is_terminal,
    tell_skipped,
    write_output,
    write_text,
)
from simdup.cli.parsed import Output, PairReport
from simdup.cli.status import ExitStatus, unreadable
from simdup.model import Pair, ScanResult
from simdup.report.plain_table import plain_lines
from simdup.report.render import (
    PAIR_COLUMNS,
    PAIR_TYPES,
    cluster_table,
    pair_cells,
    pair_record,
    pair_table,
    selected_pairs,
    summary,
    to_csv,
    to_json,
    to_jsonl,
)
from simdup.text.display import printable


def write_result(result: ScanResult, report: PairReport, extra: dict[str, Any]) -> list[Pair]:
    """Render ``result`` in the chosen format and write it; return the pairs shown.

    ``extra`` holds settings outside :class:`Params` that shaped the result (for JSON).
    """
    fmt, output, options = report.output.fmt, report.output.path, report.options
    shown = selected_pairs(result, options)
    if fmt == "json":
        write_text(to_json(result, options, extra, shown), output)
    elif fmt == "jsonl":
        write_text(to_jsonl(shown), output)
    elif fmt == "csv":
        write_text(to_csv(shown), output)
    elif fmt == "parquet":
        write_output(parquet_bytes([pair_record(p) for p in shown], PAIR_TYPES), output)
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


def report_messages(
    result: ScanResult, output: Output, shown: Sequence[Pair], elapsed: float
) -> None:
    """Print the summary and (with -v) the skipped inputs on stderr."""
    if output.quiet:
        return
    console = stderr_console()
    tell_skipped(console, result.skipped, verbose=output.verbose)
    for warning in result.plan.get("warnings", []):
        console.print(f"warning: {printable(warning)}", markup=False)
    console.print(summary(result, shown, elapsed), markup=False)


def exit_status(
    result: ScanResult, report: PairReport, shown: Sequence[Pair], *, strict: bool
) -> int:
    """Return the exit status the options ask for (see ``simdup --help``)."""
    if unreadable(strict, result.skipped):
        return ExitStatus.UNREADABLE
    if report.fail_on_match and any(p.above_threshold for p in shown):
        return ExitStatus.MATCHES
    return ExitStatus.OK


def list_pairs(
    result: ScanResult,
    report: PairReport,
    extra: dict[str, Any],
    *,
    started: float,
    strict: bool,
    also: Callable[[Sequence[Pair]], None] | None = None,
) -> NoReturn:
    """Write the pairs, then messages, and end the run with the status the options ask for.

    ``also`` writes more from the pairs shown (``scan --html``) before the messages.
    """
    shown = write_result(result, report, extra)
    if also is not None:
        also(shown)
    report_messages(result, report.output, shown, time.perf_counter() - started)
    raise click.exceptions.Exit(exit_status(result, report, shown, strict=strict))
