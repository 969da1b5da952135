"""``simdup scan``: near-duplicate pairs among files, JSON Lines records or both."""

from __future__ import annotations

import time
from typing import Any

import click

from simdup.cli.cache import cached_scan
from simdup.cli.guard import protect_inputs
from simdup.cli.inputs import gather, gather_names
from simdup.cli.meter import make_meter
from simdup.cli.options import (
    check_engine,
    encode_output,
    engine_options,
    fingerprint_options,
    input_options,
    make_progress,
    output_options,
    read_options,
    user_errors,
    write_output,
)
from simdup.cli.pairs import (
    blocking_options,
    build_params,
    exit_status,
    input_params,
    report_messages,
    report_of,
    report_options,
    write_plan,
    write_result,
)
from simdup.engines.local import plan_duplicates, scan_inputs
from simdup.errors import SimdupError
from simdup.inputs.gather import read_named
from simdup.model import Document
from simdup.report.html import MAX_PAIR_VIEWS, scan_page
from simdup.search.plan.budget import parse_size

EPILOG = """\b
Examples:
  simdup scan docs/
  simdup scan --threshold 0.9 --format jsonl crawl/ > pairs.jsonl
  find . -name '*.md' -print0 | simdup scan --files-from - -0
  simdup scan --jsonl corpus.jsonl.gz --text-field body --id-field url --clusters
  simdup scan --fail-on-match --threshold 0.95 essays/   # exit 1 if any pair
"""


def size_value(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """Return the bytes of a ``--memory`` size such as ``512M``, ``2G`` or ``1.5GiB``."""
    if value is None:
        return None
    try:
        return parse_size(value)
    except SimdupError as exc:
        raise click.BadParameter(str(exc)) from exc


@click.command(epilog=EPILOG, context_settings={"default_map": {"bits": "auto"}})
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
@engine_options
@click.option(
    "--memory",
    metavar="SIZE",
    callback=size_value,
    help="Memory the scan may use, e.g. 512M, 2G, 1.5GiB [default: the smaller of 4 GiB and "
    "half the machine]. A plan that cannot fit is refused before any pair work.",
)
@click.option(
    "--plan",
    "plan_only",
    is_flag=True,
    help="Print the plan (exact or tables, width, expected recall, cost, memory) and stop.",
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
    check_engine(kwargs)
    protect_inputs(kwargs, paths, kind="pairs")
    if kwargs["plan_only"]:
        documents, skipped = gather(paths, kwargs, progress)
        with user_errors():
            described = plan_duplicates(
                documents, params, progress=progress, jobs=kwargs["jobs"], memory=kwargs["memory"]
            )
        write_plan(described, kwargs)
        return
    if dask:
        from simdup.cli.distributed import dask_scan

        result = dask_scan(paths, kwargs, params, options.report_all, progress)
    elif kwargs["cache"]:
        result = cached_scan(paths, kwargs, params, options.report_all)
    else:
        meter = make_meter(kwargs["quiet"])
        found, skipped = gather_names(paths, kwargs, meter)
        with user_errors():
            result = scan_inputs(
                found,
                params,
                read_options(kwargs),
                report_all=options.report_all,
                skipped=skipped,
                jobs=kwargs["jobs"],
                meter=meter,
                memory=kwargs["memory"],
            )
    extra = {**input_params(kwargs), **({"engine": "dask"} if dask else {})}
    shown = write_result(result, kwargs, options, extra)
    if kwargs["html_file"]:
        texts: list[Document] | None = None
        if not kwargs["cache"] and not dask:  # the texts of the pair views, read again
            viewed = {name for p in shown[:MAX_PAIR_VIEWS] for name in (p.a, p.b)}
            texts = read_named(found.inputs, viewed, read_options(kwargs))
        page = scan_page(result, texts, options)
        write_output(encode_output(page), kwargs["html_file"])
    report_messages(result, kwargs, shown, time.perf_counter() - started)
    raise click.exceptions.Exit(exit_status(result, kwargs, shown))
