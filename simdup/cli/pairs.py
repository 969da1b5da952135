"""What the commands that list pairs share: their report, messages and exit status.

``scan``, ``match``, ``index query`` and ``index scan`` write their results the same way;
this module holds that so that no command module imports another.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, NoReturn

import click

from simdup.cli.options import TERMINAL_ROWS
from simdup.cli.output import (
    emit_plain,
    emit_rich,
    encode_output,
    parquet_pieces,
    stderr_console,
    stdout_is_terminal,
    tell_skipped,
    write_output,
    write_text,
)
from simdup.cli.parsed import Output, PairReport
from simdup.cli.status import ExitStatus, unreadable
from simdup.model import Cluster, Pair, ScanResult
from simdup.progress import Tell
from simdup.report.fields import pair_record_columns, pair_rows
from simdup.report.plain_table import plain_batch_lines
from simdup.report.render import (
    PAIR_TYPES,
    cluster_table,
    csv_pieces,
    json_pieces,
    jsonl_pieces,
    no_pairs_line,
    pair_columns,
    pair_table,
    report_clusters,
    summary,
)
from simdup.report.shown import field_batches, selected_pairs
from simdup.text.display import common_dir, printable


def write_result(result: ScanResult, report: PairReport, extra: dict[str, Any]) -> Sequence[Pair]:
    """Render ``result`` in the chosen format and write it; return the pairs shown.

    ``extra`` holds settings outside :class:`Params` that shaped the result (for JSON).
    The pairs listed are at most :func:`shown_limit`'s.
    """
    fmt, output = report.output.fmt, report.output.path
    terminal = fmt == "table" and stdout_is_terminal(output)
    options = replace(report.options, limit=shown_limit(report))
    shown = selected_pairs(result, options)
    groups = report_clusters(result, options)
    if fmt == "json":
        write_output(map(encode_output, json_pieces(result, options, extra, shown)), output)
    elif fmt == "jsonl":
        write_output(map(encode_output, jsonl_pieces(shown, groups)), output)
    elif fmt == "csv":
        csv_groups = groups if options.clusters else None
        write_output(map(encode_output, csv_pieces(shown, csv_groups)), output)
    elif fmt == "parquet":
        write_output(
            parquet_pieces(map(pair_record_columns, field_batches(shown)), PAIR_TYPES), output
        )
    elif not shown:
        write_text(no_pairs_line(result, options), output)
    elif terminal:
        emit_rich(terminal_view(result, shown, groups, report.labels), output)
    else:  # a long table as lines, without rich's cells
        after: list[Any] = [cluster_table(groups)] if groups else []
        columns = pair_columns(report.labels)
        headers = [header for header, _ in columns]
        right = [flush_right for _, flush_right in columns]
        rows = partial(pair_rows, bits=result.bits)
        lines = plain_batch_lines(headers, right, lambda: map(rows, field_batches(shown)))
        if lines is None:
            emit_rich([pair_table(shown, result.bits, labels=report.labels), *after], output)
        else:
            emit_plain(lines, output, after)
    return shown


def shown_limit(report: PairReport) -> int | None:
    """Return the most pairs the report lists (None: all of them).

    A terminal shows the strongest :data:`TERMINAL_ROWS` pairs unless ``--limit`` is
    given; files and pipes get every pair.
    """
    terminal = report.output.fmt == "table" and stdout_is_terminal(report.output.path)
    if terminal and report.options.limit is None and not report.show_all:
        return TERMINAL_ROWS
    return report.options.limit


def terminal_view(
    result: ScanResult,
    shown: Sequence[Pair],
    groups: Sequence[Cluster],
    labels: tuple[str, str] | None = None,
) -> list[Any]:
    """Return what a terminal shows: names under their common folder, wrapped at ``/``.

    When pairs were left out, a line says how many and how to see them.
    """
    from rich.text import Text

    names = [name for p in shown for name in (p.a, p.b)]
    names += [name for group in groups for name in group.members]
    base = common_dir(names)
    width = shutil.get_terminal_size().columns
    view: list[Any] = [Text(f"paths under {printable(base)}", style="dim")] if base else []
    view.append(pair_table(shown, result.bits, base=base, width=width, labels=labels))
    if (more := len(result.pairs) - len(shown)) > 0:
        view.append(Text(f"… and {more:,} more: --limit 0 for all, or --format jsonl -o FILE"))
    if groups:
        view.append(cluster_table(groups, base=base, width=width))
    return view


def warning_teller(quiet: bool, told: list[str] | None = None) -> Tell:
    """Return what prints a warning on stderr at once (nothing with ``quiet``).

    Each warning printed is added to ``told``, so that the summary does not repeat it.
    """

    def tell(warning: str) -> None:
        if not quiet:
            stderr_console().print(f"warning: {printable(warning)}", markup=False)
            if told is not None:
                told.append(warning)

    return tell


def report_messages(
    result: ScanResult,
    output: Output,
    shown: Sequence[Pair],
    elapsed: float,
    told: Sequence[str] = (),
) -> None:
    """Print the summary and (with -v) the skipped inputs on stderr.

    The plan's warnings are printed but for those ``told`` before the pair work.
    """
    if output.quiet:
        return
    console = stderr_console()
    tell_skipped(console, result.skipped, verbose=output.verbose)
    for warning in result.plan.get("warnings", []):
        if warning not in told:
            console.print(f"warning: {printable(warning)}", markup=False)
    console.print(summary(result, shown, elapsed, table=output.fmt == "table"), markup=False)


def exit_status(
    result: ScanResult, report: PairReport, shown: Sequence[Pair], *, strict: bool
) -> int:
    """Return the exit status the options ask for (see ``simdup --help``)."""
    if unreadable(strict, result.skipped):
        return ExitStatus.UNREADABLE
    if report.fail_on_match and bool((result.pairs.score() >= result.params.threshold).any()):
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
    told: Sequence[str] = (),
) -> NoReturn:
    """Write the pairs, then messages, and end the run with the status the options ask for.

    ``also`` writes more from the pairs shown (``scan --html``) before the messages; the
    warnings ``told`` already are not repeated.
    """
    shown = write_result(result, report, extra)
    if also is not None:
        also(shown)
    report_messages(result, report.output, shown, time.perf_counter() - started, told)
    raise click.exceptions.Exit(exit_status(result, report, shown, strict=strict))
