"""``simdup index``: a persistent SQLite fingerprint index (add, query, scan, ...).

Every subcommand opens the index named by ``--db`` (default ``$SIMDUP_DB`` or
``simdup.db``). Fingerprint and blocking options default to the values stored in the
index; giving a fingerprint option that differs from the stored one is an error, since
fingerprints made with other settings cannot be compared.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import click
from click.core import ParameterSource

from simdup.cli.cache import add_inputs
from simdup.cli.guard import protect_inputs
from simdup.cli.inputs import gather
from simdup.cli.options import (
    RunError,
    encode_output,
    fingerprint_options,
    input_options,
    make_progress,
    output_options,
    read_input_bytes,
    read_options,
    stderr_console,
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
    write_result,
)
from simdup.index import (
    BATCH_DOCUMENTS,
    DB_ENV,
    DEFAULT_DB,
    DEFAULT_TIMEOUT,
    AddReport,
    FingerprintIndex,
    index_exists,
    open_index,
)
from simdup.inputs.files import decode
from simdup.model import Document, Skip
from simdup.params import Params
from simdup.report.render import dumps, printable

#: Options whose stored value is used unless the user gives one.
STORED_OPTIONS = (
    "bits",
    "seed",
    "weighting",
    "ngram",
    "stopwords",
    "segment",
    "scheme",
    "blocks",
    "max_distance",
)

EPILOG = """\b
Examples:
  simdup index add docs/ --db docs.db          store fingerprints (again: only changes)
  simdup index add docs/ --db docs.db --prune  also drop files deleted from docs/
  simdup index query new.txt --db docs.db      stored near-duplicates of new.txt
  simdup index scan --db docs.db --format json every near-duplicate pair in the index
  simdup index export --db docs.db > prints.jsonl && simdup index import prints.jsonl --db b.db
"""


def db_options(func: Any) -> Any:
    """Options naming the index file and how long to wait for a busy one."""
    func = click.option(
        "--timeout",
        type=click.FloatRange(min=0.0),
        default=DEFAULT_TIMEOUT,
        show_default=True,
        help="Seconds to wait while another process writes to the index.",
    )(func)
    return click.option(
        "--db",
        type=click.Path(dir_okay=False),
        envvar=DB_ENV,
        default=DEFAULT_DB,
        show_default=True,
        help=f"Index file (default: ${DB_ENV}, else {DEFAULT_DB} in the current directory).",
    )(func)


def explicit(name: str) -> bool:
    """Tell whether the user gave option ``name`` (rather than its default)."""
    source = click.get_current_context().get_parameter_source(name)
    return source not in (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)


def stored_params(kwargs: dict[str, Any], stored: Params) -> Params:
    """Return the run's settings: stored values for every option the user did not give."""
    merged = dict(kwargs)
    for name in STORED_OPTIONS:
        if not explicit(name):
            merged[name] = getattr(stored, name)
    if not explicit("threshold") and not explicit("recall") and stored.scheme == "auto":
        merged["threshold"], merged["recall"] = stored.threshold, stored.recall
    return build_params(merged)


def opened(kwargs: dict[str, Any]) -> FingerprintIndex:
    """Open the existing index of ``--db`` (library errors become messages)."""
    with user_errors():
        return open_index(kwargs["db"], timeout=kwargs["timeout"])


def open_for_writing(kwargs: dict[str, Any], requested: Params) -> FingerprintIndex:
    """Open ``--db`` for adding: an existing index keeps its settings, a new one takes these.

    Options the user did not give take the stored values; given ones must match them.
    """
    with user_errors():
        if not index_exists(kwargs["db"]):
            return open_index(
                kwargs["db"], create=True, params=requested, timeout=kwargs["timeout"]
            )
        index = open_index(kwargs["db"], timeout=kwargs["timeout"])
    try:
        with user_errors():
            index.check(stored_params(kwargs, index.params))
    except BaseException:
        index.close()
        raise
    return index


@click.group("index", epilog=EPILOG)
def index_group() -> None:
    """Keep fingerprints in an SQLite index: add incrementally, query, rescan.

    The index records the fingerprint settings (bits, seed, weighting, n-grams, stop
    words) and refuses to mix others. tfidf weighting is not available for indexes.
    """


@index_group.command("add")
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@input_options
@fingerprint_options
@blocking_options
@db_options
@click.option("--prune", is_flag=True, help="Drop stored documents that no longer exist.")
@click.option(
    "--batch",
    type=click.IntRange(min=1),
    default=BATCH_DOCUMENTS,
    show_default=True,
    help="Documents committed per transaction.",
)
@output_options(("text", "json"), default="text")
def add_command(paths: tuple[str, ...], **kwargs: Any) -> None:
    """Add or update documents: only changed files are read and fingerprinted again.

    Blocking options (--scheme, --blocks, --max-distance) choose the keys stored for
    queries when the index is created; adds to an existing index keep its keys.
    """
    started = time.perf_counter()
    params = build_params(kwargs)
    protect_inputs(kwargs, paths, kind="added", writes_db=True)
    index = open_for_writing(kwargs, params)
    with index:
        report = add_inputs(index, paths, kwargs, prune=kwargs["prune"], batch=kwargs["batch"])
    counts = report.counts()
    if kwargs["fmt"] == "json":
        text = dumps({"db": kwargs["db"], **counts}) + "\n"
    else:
        text = ", ".join(f"{v:,} {k}" for k, v in counts.items()) + "\n"
    write_output(encode_output(text), kwargs["output"])
    if not kwargs["quiet"]:
        console = stderr_console()
        shown = report.skipped if kwargs["verbose"] else [s for s in report.skipped if s.unreadable]
        if kwargs["verbose"]:
            for skip in shown:
                console.print(f"skipped {printable(skip.path)}: {skip.reason}", markup=False)
        elif shown:
            console.print(f"{len(shown)} input(s) could not be read; -v lists them", markup=False)
        console.print(f"{kwargs['db']}: {time.perf_counter() - started:.2f}s", markup=False)
    if kwargs["strict"] and any(s.unreadable for s in report.skipped):
        raise click.exceptions.Exit(3)


@index_group.command("query")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, allow_dash=True))
@input_options
@fingerprint_options
@blocking_options
@db_options
@report_options
@output_options(("table", "json", "jsonl", "csv"))
def query_command(paths: tuple[str, ...], **kwargs: Any) -> None:
    """Find stored near-duplicates of new documents (PATHS, or - for stdin).

    Candidates come from key lookups in the index; each is verified by its true cosine.
    A stored document with the same name as a query document is not reported.
    """
    started = time.perf_counter()
    protect_inputs(kwargs, paths, kind="pairs", reads=[("--db", kwargs["db"])])
    index = opened(kwargs)
    with index:
        params = stored_params(kwargs, index.params)
        options = report_of(kwargs)
        stdin_text = None
        if "-" in paths:
            stdin_text = read_input_bytes("-")
            paths = tuple(p for p in paths if p != "-")
        documents: list[Document] = []
        skipped: list[Skip] = []
        if paths or kwargs["files_from"] or kwargs["jsonl"]:
            documents, skipped = gather(paths, kwargs, make_progress(kwargs["quiet"]))
        elif stdin_text is None:
            raise click.UsageError("give at least one PATH, - for stdin, or --jsonl FILE")
        with user_errors():
            if stdin_text is not None:
                documents.append(Document("-", decode(stdin_text, read_options(kwargs))))
            result = index.query(documents, params, report_all=options.report_all, skipped=skipped)
    shown = write_result(result, kwargs, options, {"db": kwargs["db"], **input_params(kwargs)})
    report_messages(result, kwargs, shown, time.perf_counter() - started)
    raise click.exceptions.Exit(exit_status(result, kwargs, shown))


@index_group.command("scan")
@fingerprint_options
@blocking_options
@db_options
@report_options
@output_options(("table", "json", "jsonl", "csv"))
def scan_command(**kwargs: Any) -> None:
    """Find every near-duplicate pair inside the index, as `simdup scan` would."""
    started = time.perf_counter()
    protect_inputs(kwargs, kind="pairs", reads=[("--db", kwargs["db"])])
    index = opened(kwargs)
    with index:
        params = stored_params(kwargs, index.params)
        options = report_of(kwargs)
        with user_errors():
            result = index.scan(params, report_all=options.report_all)
    shown = write_result(result, kwargs, options, {"db": kwargs["db"]})
    kwargs["strict"] = False
    report_messages(result, kwargs, shown, time.perf_counter() - started)
    raise click.exceptions.Exit(exit_status(result, kwargs, shown))


@index_group.command("stats")
@db_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("text", "json")),
    default="text",
    show_default=True,
    help="Output format.",
)
def stats_command(**kwargs: Any) -> None:
    """Show what the index holds: documents, settings, keys, size on disk."""
    with opened(kwargs) as index, user_errors():
        stats = index.stats()
    if kwargs["fmt"] == "json":
        text = dumps(stats) + "\n"
    else:
        lines = []
        for key, value in stats.items():
            shown = (
                ", ".join(f"{k}={v}" for k, v in value.items())
                if isinstance(value, dict)
                else value
            )
            lines.append(f"{key}: {shown}")
        text = "\n".join(lines) + "\n"
    write_output(encode_output(text), None)


@index_group.command("remove")
@click.argument("paths", nargs=-1, required=True)
@db_options
@click.option("-q", "--quiet", is_flag=True, help="Print nothing.")
def remove_command(paths: tuple[str, ...], **kwargs: Any) -> None:
    """Remove documents named PATHS, or stored under the directories PATHS."""
    with opened(kwargs) as index, user_errors():
        gone = index.remove(list(paths))
    if not kwargs["quiet"]:
        click.echo(f"{len(gone):,} removed")


@index_group.command("export")
@db_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("jsonl",)),
    default="jsonl",
    show_default=True,
    help="Output format: one JSON object per document.",
)
@click.option(
    "--weights/--no-weights",
    default=True,
    show_default=True,
    help="Include each document's sparse weights (needed for true cosines after import).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write to this file (atomically) instead of stdout.",
)
def export_command(**kwargs: Any) -> None:
    """Write the stored fingerprints as JSON Lines: id, fingerprint hex, params.

    Records carry the fingerprint settings, so `simdup index import` on another machine
    refuses records made with other settings.
    """
    protect_inputs(kwargs, kind="export", reads=[("--db", kwargs["db"])])
    with opened(kwargs) as index, user_errors():
        text = "".join(
            dumps(record) + "\n" for record in index.export_records(weights=kwargs["weights"])
        )
    write_output(encode_output(text), kwargs["output"])


def _records(label: str, data: bytes) -> Iterator[tuple[str, dict[str, Any]]]:
    for number, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{label}:{number}"
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise RunError(
                f"{where}: not valid JSON; expected `simdup index export` output"
            ) from None
        if not isinstance(record, dict):
            raise RunError(f"{where}: not a JSON object; expected `simdup index export` output")
        yield where, record


@index_group.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True))
@db_options
@click.option(
    "--batch",
    type=click.IntRange(min=1),
    default=BATCH_DOCUMENTS,
    show_default=True,
    help="Documents committed per transaction.",
)
def import_command(files: tuple[str, ...], **kwargs: Any) -> None:
    """Store records written by `simdup index export` (FILES, or - for stdin).

    A new index takes the settings of the first record.
    """
    protect_inputs(kwargs, kind="index", reads=[("", path) for path in files], writes_db=True)
    totals = AddReport()
    for path in files:
        label = "<stdin>" if path == "-" else path
        records = _records(label, read_input_bytes(path))
        first = next(records, None)
        if first is None:
            continue
        with user_errors():
            settings = dict(first[1].get("params") or {})
            try:
                params = Params(**Params.stored_settings(settings))
            except (KeyError, TypeError, ValueError):
                raise RunError(f"{first[0]}: expected a record with params") from None
        index = open_for_writing(kwargs, params)
        with index, user_errors():
            report = index.import_records(_chain(first, records), batch=kwargs["batch"])
        totals.added += report.added
        totals.updated += report.updated
    click.echo(f"{totals.added:,} added, {totals.updated:,} updated")


def _chain(
    first: tuple[str, dict[str, Any]], rest: Iterator[tuple[str, dict[str, Any]]]
) -> Iterator[tuple[str, dict[str, Any]]]:
    yield first
    yield from rest
