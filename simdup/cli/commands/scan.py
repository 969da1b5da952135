"""``simdup scan``: near-duplicate pairs among files, JSON Lines records or both.

A scan loads only the engine it runs on (see :mod:`simdup.cli.commands`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

import click

from simdup.cli.checked import PairCommand
from simdup.cli.options import (
    corpus_options,
    engine_options,
    html_option,
    output_options,
    report_options,
    size_options,
    spill_plan_options,
)
from simdup.cli.parsed import Engine, Inputs, PairReport, build_params
from simdup.cli.status import user_errors

if TYPE_CHECKING:
    from simdup.inputs.files import ReadOptions
    from simdup.inputs.gather import Named
    from simdup.model import Pair, ScanResult
    from simdup.params import Params
    from simdup.report.shown import ReportOptions
    from simdup.spill import SpillDir

EPILOG = """\b
Examples:
  simdup scan docs/
  simdup scan --threshold 0.9 --format jsonl crawl/ > pairs.jsonl
  find . -name '*.md' -print0 | simdup scan --files-from - -0
  simdup scan --jsonl corpus.jsonl.gz --text-field body --id-field url --clusters
  simdup scan --parquet 'shards/*.parquet' --text-field meta.body -o pairs.parquet
  simdup scan --fail-on-match --threshold 0.95 essays/   # exit 1 if any pair
"""


def plan_scan(
    inputs: Inputs, engine: Engine, params: Params, *, quiet: bool, spool: SpillDir | None = None
) -> dict[str, Any]:
    """Return the plan a scan of the inputs would follow (``--plan``), read as a scan reads."""
    from simdup.cli.inputs import gather_names
    from simdup.cli.meter import make_meter
    from simdup.engines.local import plan_inputs
    from simdup.engines.local.counting import pieces_over

    meter = make_meter(quiet)
    over = pieces_over(engine.jobs)
    found, _ = gather_names(inputs, meter, quiet=quiet, spool=spool, over=over)
    with user_errors():
        return plan_inputs(
            found,
            params,
            inputs.read,
            jobs=engine.jobs,
            meter=meter,
            memory=engine.memory,
            tmp_dir=engine.tmp_dir,
        )


def run_scan(
    inputs: Inputs,
    engine: Engine,
    params: Params,
    report_all: bool,
    *,
    cache: str | None,
    quiet: bool,
    spool: SpillDir | None = None,
    told: list[str] | None = None,
) -> tuple[ScanResult, Sequence[Named] | None]:
    """Scan where the options ask: here, through the ``--cache`` index, or on Dask.

    Also returns the inputs a scan here found, whose texts the HTML report reads again
    (None for the others). JSON Lines inputs that cannot be read by byte ranges are
    copied into ``spool`` for a scan here, which must outlive the inputs returned. A scan
    here prints its plan's warnings on standard error before the pair work, and adds them
    to ``told``.
    """
    if engine.dask:
        from simdup.cli.distributed import dask_scan
        from simdup.cli.meter import make_progress

        progress = make_progress(quiet)
        result = dask_scan(
            inputs, engine, params, report_all=report_all, progress=progress, quiet=quiet
        )
        return result, None
    if cache:
        from simdup.cli.cache import cached_scan

        return cached_scan(cache, inputs, params, report_all=report_all, quiet=quiet), None
    from simdup.cli.inputs import gather_names
    from simdup.cli.meter import make_meter
    from simdup.cli.pairs import warning_teller
    from simdup.engines.local import scan_inputs
    from simdup.engines.local.counting import pieces_over

    meter = make_meter(quiet)
    over = pieces_over(engine.jobs)
    found, skipped = gather_names(inputs, meter, quiet=quiet, spool=spool, over=over)
    with user_errors():
        result = scan_inputs(
            found,
            params,
            inputs.read,
            report_all=report_all,
            skipped=skipped,
            jobs=engine.jobs,
            meter=meter,
            memory=engine.memory,
            tmp_dir=engine.tmp_dir,
            tell=warning_teller(quiet, told),
        )
    return result, found.inputs


def write_page(
    path: str,
    result: ScanResult,
    found: Sequence[Named] | None,
    read: ReadOptions,
    options: ReportOptions,
    shown: Sequence[Pair],
) -> None:
    """Write the HTML report, with the texts of the pairs it shows when they can be read.

    The page shows the pairs ``options`` select, whatever a terminal showed (``shown``).
    """
    from simdup.cli.output import write_text
    from simdup.inputs.gather import read_named
    from simdup.report.html import MAX_PAIR_VIEWS, scan_page
    from simdup.report.shown import selected_pairs

    texts = None
    if found is not None:
        limit = MAX_PAIR_VIEWS if options.limit is None else min(options.limit, MAX_PAIR_VIEWS)
        listed = selected_pairs(result, replace(options, limit=limit))
        viewed = {name for p in listed for name in (p.a, p.b)}
        texts = read_named(found, viewed, read)
    write_text(scan_page(result, texts, options), path)


@click.command(cls=PairCommand, epilog=EPILOG, context_settings={"default_map": {"bits": "auto"}})
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@corpus_options
@size_options
@report_options
@html_option("Also write a self-contained HTML report (pairs, clusters, bits) to this file.")
@click.option(
    "--cache",
    type=click.Path(dir_okay=False),
    help="Keep fingerprints in this index file; a rescan reads only changed files.",
)
@engine_options(
    jobs="Workers for tokenizing, fingerprinting and checking pairs (0: every core). "
    "Output never depends on it."
)
@spill_plan_options
@output_options(("table", "json", "jsonl", "csv", "parquet"))
def scan(paths: tuple[str, ...], **opts: Any) -> None:
    """Find pairs of near-duplicate documents under PATHS.

    Directories are walked recursively (hidden names and symbolic links skipped unless
    asked for); .gz files are read transparently. Pairs are verified by their true cosine.
    """
    from simdup.cli.guard import Written, protect_inputs
    from simdup.cli.pairs import list_pairs

    started = time.perf_counter()
    params = build_params(opts)
    report = PairReport.parsed(opts)
    engine = Engine.parsed(opts)
    cache, html, quiet = opts["cache"], opts["html_file"], report.output.quiet
    if engine.dask and (opts["plan_only"] or cache):
        raise click.UsageError("--engine dask does not take --plan or --cache")
    written = Written("pairs", report.output.path, html, ("--cache", cache) if cache else None)
    inputs = protect_inputs(written, Inputs.parsed(paths, opts))
    from simdup.spill import SpillDir

    with SpillDir(engine.tmp_dir) as spool:  # copies of inputs read again, kept to the end
        if opts["plan_only"]:
            from simdup.cli.plans import priced_report, write_plan

            planned = plan_scan(inputs, engine, params, quiet=quiet, spool=spool)
            write_plan(priced_report(planned, report), report.output)
            return
        all_pairs = report.options.report_all
        told: list[str] = []
        result, found = run_scan(
            inputs, engine, params, all_pairs, cache=cache, quiet=quiet, spool=spool, told=told
        )
        page = None
        if html:
            page = partial(write_page, html, result, found, inputs.read, report.options)
        extra = {**inputs.settings(), **engine.settings()}
        list_pairs(
            result, report, extra, started=started, strict=inputs.strict, also=page, told=told
        )
