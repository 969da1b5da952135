"""``simdup scan``: near-duplicate pairs among files, JSON Lines records or both.

A scan loads only the engine it runs on (see :mod:`simdup.cli.commands`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import click

from simdup.cli.options import (
    corpus_options,
    engine_options,
    html_option,
    output_options,
    report_options,
)
from simdup.cli.parsed import Engine, Inputs, Output, PairReport, build_params
from simdup.cli.status import user_errors
from simdup.errors import SimdupError

if TYPE_CHECKING:
    from simdup.inputs.files import ReadOptions, Source
    from simdup.model import Document, Pair, ScanResult
    from simdup.params import Params
    from simdup.report.render import ReportOptions

EPILOG = """\b
Examples:
  simdup scan docs/
  simdup scan --threshold 0.9 --format jsonl crawl/ > pairs.jsonl
  find . -name '*.md' -print0 | simdup scan --files-from - -0
  simdup scan --jsonl corpus.jsonl.gz --text-field body --id-field url --clusters
  simdup scan --parquet 'shards/*.parquet' --text-field meta.body -o pairs.parquet
  simdup scan --fail-on-match --threshold 0.95 essays/   # exit 1 if any pair
"""


def size_value(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """Return the bytes of a ``--memory`` size such as ``512M``, ``2G`` or ``1.5GiB``."""
    if value is None or ctx.resilient_parsing:  # shell completion checks nothing
        return None
    from simdup.search.plan.budget import parse_size

    try:
        return parse_size(value)
    except SimdupError as exc:
        raise click.BadParameter(str(exc)) from exc


def plan_lines(described: dict[str, Any]) -> str:
    """Return the plan as lines for people: mode, width, tables, recall, cost, memory."""
    from simdup.search.plan.budget import format_size

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


def plan_scan(inputs: Inputs, engine: Engine, params: Params, *, quiet: bool) -> dict[str, Any]:
    """Return the plan a scan of the inputs would follow (``--plan``), read as a scan reads."""
    from simdup.cli.inputs import gather_names
    from simdup.cli.meter import make_meter
    from simdup.engines.local import plan_inputs

    meter = make_meter(quiet)
    found, _ = gather_names(inputs, meter, quiet=quiet)
    with user_errors():
        return plan_inputs(
            found, params, inputs.read, jobs=engine.jobs, meter=meter, memory=engine.memory
        )


def write_scan_plan(described: dict[str, Any], output: Output) -> None:
    """Write the plan: JSON for ``--format json``/``jsonl``, lines for people otherwise."""
    from simdup.cli.output import write_text
    from simdup.report.render import dumps

    if output.fmt in ("json", "jsonl"):
        write_text(dumps(described) + "\n", output.path)
    else:
        write_text(printable_lines(plan_lines(described)), output.path)


def printable_lines(text: str) -> str:
    """Escape control characters in each line of ``text`` (names in warnings are untrusted)."""
    from simdup.text.display import printable

    return "".join(printable(line) + "\n" for line in text.splitlines())


def run_scan(
    inputs: Inputs,
    engine: Engine,
    params: Params,
    report_all: bool,
    *,
    cache: str | None,
    quiet: bool,
) -> tuple[ScanResult, list[Source | Document] | None]:
    """Scan where the options ask: here, through the ``--cache`` index, or on Dask.

    Also returns the inputs a scan here found, whose texts the HTML report reads again
    (None for the others).
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
    from simdup.engines.local import scan_inputs

    meter = make_meter(quiet)
    found, skipped = gather_names(inputs, meter, quiet=quiet)
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
        )
    return result, found.inputs


def write_page(
    path: str,
    result: ScanResult,
    found: list[Source | Document] | None,
    read: ReadOptions,
    options: ReportOptions,
    shown: Sequence[Pair],
) -> None:
    """Write the HTML report, with the texts of the pairs it shows when they can be read."""
    from simdup.cli.output import write_text
    from simdup.inputs.gather import read_named
    from simdup.report.html import MAX_PAIR_VIEWS, scan_page

    texts = None
    if found is not None:
        viewed = {name for p in shown[:MAX_PAIR_VIEWS] for name in (p.a, p.b)}
        texts = read_named(found, viewed, read)
    write_text(scan_page(result, texts, options), path)


@click.command(epilog=EPILOG, context_settings={"default_map": {"bits": "auto"}})
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@corpus_options
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
    if opts["plan_only"]:
        write_scan_plan(plan_scan(inputs, engine, params, quiet=quiet), report.output)
        return
    all_pairs = report.options.report_all
    result, found = run_scan(inputs, engine, params, all_pairs, cache=cache, quiet=quiet)
    page = None
    if html:
        page = partial(write_page, html, result, found, inputs.read, report.options)
    extra = {**inputs.settings(), **engine.settings()}
    list_pairs(result, report, extra, started=started, strict=inputs.strict, also=page)
