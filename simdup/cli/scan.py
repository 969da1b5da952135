"""``simdup scan``: near-duplicate pairs among files, JSON Lines records or both."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import click

from simdup.cli.inputs import gather
from simdup.cli.options import (
    DEFAULTS,
    ExitStatus,
    encode_output,
    fingerprint_options,
    input_options,
    make_progress,
    output_options,
    stderr_console,
    user_errors,
    write_output,
)
from simdup.cli.render_out import emit_rich
from simdup.html import scan_page
from simdup.model import SCHEME_CHOICES, Pair, Params, ScanResult
from simdup.pipeline import find_duplicates, plan_duplicates
from simdup.render import (
    SORT_KEYS,
    ReportOptions,
    cluster_table,
    dumps,
    pair_table,
    printable,
    selected_pairs,
    summary,
    to_csv,
    to_json,
    to_jsonl,
)

EPILOG = """\b
Examples:
  simdup scan docs/
  simdup scan --threshold 0.9 --format jsonl crawl/ > pairs.jsonl
  find . -name '*.md' -print0 | simdup scan --files-from - -0
  simdup scan --jsonl corpus.jsonl.gz --text-field body --id-field url --clusters
  simdup scan --fail-on-match --threshold 0.95 essays/   # exit 1 if any pair
"""


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
        "jsonl": kwargs["jsonl"] is not None,
        "text_field": kwargs["text_field"],
        "id_field": kwargs["id_field"],
    }


def plan_lines(described: dict[str, Any]) -> str:
    """Return the plan as lines for people: tables, guarantee, recall curve, cost, warnings."""
    lines = [
        f"tables: {described['tables']} ({described['source']}; "
        f"key bits {', '.join(map(str, described['key_bits']))})",
        f"guarantee: every pair within Hamming distance {described['guarantee']}"
        if described["guarantee"] >= 0
        else "guarantee: none (probabilistic tables)",
        f"recall at cosine {described['threshold']}: {described['recall_at_threshold']:.3f}",
        "recall curve: "
        + "  ".join(f"{p['cosine']:.2f}:{p['recall']:.3f}" for p in described["recall_curve"]),
        f"expected candidates: {described['expected_candidates']:,} (upper bound); "
        f"to verify: {described['expected_verified']:,}",
        f"documents: {described['documents']:,} ({described['distinct_fingerprints']:,} distinct "
        f"fingerprints, key sizes measured on {described['measured_on']:,})",
    ]
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
        items: list[Any] = [pair_table(shown)]
        if options.clusters:
            items.append(cluster_table(result))
        emit_rich(items, output)
    return shown


@click.command(epilog=EPILOG)
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@input_options
@fingerprint_options
@blocking_options
@report_options
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False),
    help="Also write a self-contained HTML report (pairs, clusters, bits) to this file.",
)
@click.option(
    "--cache",
    type=click.Path(dir_okay=False),
    help="Keep fingerprints in this index file; a rescan reads only changed files.",
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help=(
        "Workers for tokenizing, fingerprinting and checking pairs (0: every core). "
        "Output never depends on it."
    ),
)
@click.option(
    "--engine",
    type=click.Choice(("local", "dask")),
    default="local",
    show_default=True,
    help="Run the stages here, or on a Dask cluster (needs: pip install 'simdup[dask]').",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    help="With --engine dask: the scheduler, e.g. tcp://host:8786 (default: a local "
    "cluster of --jobs worker processes).",
)
@click.option(
    "--plan",
    "plan_only",
    is_flag=True,
    help="Print the blocking plan (tables, expected recall and candidates) and stop.",
)
@output_options(("table", "json", "jsonl", "csv"))
def scan(paths: tuple[str, ...], **kwargs: Any) -> None:
    """Find pairs of near-duplicate documents under PATHS.

    Directories are walked recursively (hidden names and symbolic links skipped unless
    asked for); .gz files are read transparently. Pairs are verified by their true cosine.
    """
    started = time.perf_counter()
    params = build_params(kwargs)
    options = report_of(kwargs)
    progress = make_progress(kwargs["quiet"])
    dask = kwargs["engine"] == "dask"
    if dask and (kwargs["plan_only"] or kwargs["cache"]):
        raise click.UsageError("--engine dask does not take --plan or --cache")
    if not dask and kwargs["scheduler"]:
        raise click.UsageError("--scheduler needs --engine dask")
    if kwargs["plan_only"]:
        documents, skipped = gather(paths, kwargs, progress)
        with user_errors():
            described = plan_duplicates(documents, params, progress=progress, jobs=kwargs["jobs"])
        write_plan(described, kwargs)
        return
    if dask:
        from simdup.cli.distributed import dask_scan  # imports Dask only when chosen

        result = dask_scan(paths, kwargs, params, options.report_all, progress)
    elif kwargs["cache"]:
        from simdup.cli.index import cached_scan  # simdup.cli.index imports this module

        result = cached_scan(paths, kwargs, params, options.report_all)
    else:
        documents, skipped = gather(paths, kwargs, progress)
        with user_errors():
            result = find_duplicates(
                documents,
                params,
                report_all=options.report_all,
                skipped=skipped,
                progress=progress,
                jobs=kwargs["jobs"],
            )
    extra = {**input_params(kwargs), **({"engine": "dask"} if dask else {})}
    shown = write_result(result, kwargs, options, extra)
    if kwargs["html_file"]:
        page = scan_page(result, None if kwargs["cache"] or dask else documents, options)
        write_output(encode_output(page), kwargs["html_file"])
    report_messages(result, kwargs, shown, time.perf_counter() - started)
    raise click.exceptions.Exit(exit_status(result, kwargs, shown))
