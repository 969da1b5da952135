"""``simdup index``: a persistent SQLite fingerprint index (add, query, scan, ...).

Every subcommand opens the index named by ``--db`` (default ``$SIMDUP_DB`` or
``simdup.db``). Fingerprint and blocking options default to the values stored in the
index; giving a fingerprint option that differs from the stored one is an error, since
fingerprints made with other settings cannot be compared.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from simdup.cli.checked import PairCommand
from simdup.cli.options import (
    blocking_options,
    compose,
    corpus_options,
    fingerprint_options,
    format_option,
    output_options,
    report_options,
)
from simdup.cli.parsed import PARAM_OPTIONS, Inputs, Output, PairReport, build_params, pick
from simdup.cli.status import ExitStatus, RunError, unreadable, user_errors
from simdup.params import BATCH_DOCUMENTS, DB_ENV, DEFAULT_DB, DEFAULT_TIMEOUT, Params

if TYPE_CHECKING:
    from simdup.index import AddReport, FingerprintIndex

#: Options whose stored value is used unless the user gives one (threshold and recall
#: too, when the stored scheme is ``auto``).
STORED_OPTIONS = tuple(name for name in PARAM_OPTIONS if name not in ("threshold", "recall"))

EPILOG = """\b
Examples:
  simdup index add docs/ --db docs.db          store fingerprints (again: only changes)
  simdup index add docs/ --db docs.db --prune  also drop files deleted from docs/
  simdup index query new.txt --db docs.db      stored near-duplicates of new.txt
  simdup index scan --db docs.db --format json every near-duplicate pair in the index
  simdup index optimize --db docs.db           plan the keys again once the index grew
  simdup index export --db docs.db > prints.jsonl && simdup index import prints.jsonl --db b.db
"""


#: Give the index file and how long to wait for a busy one.
db_options = compose(
    click.option(
        "--db",
        type=click.Path(dir_okay=False),
        envvar=DB_ENV,
        default=DEFAULT_DB,
        show_default=True,
        help=f"Index file (default: ${DB_ENV}, else {DEFAULT_DB} in the current directory).",
    ),
    click.option(
        "--timeout",
        type=click.FloatRange(min=0.0),
        default=DEFAULT_TIMEOUT,
        show_default=True,
        help="Seconds to wait while another process writes to the index.",
    ),
)

#: How many documents each transaction commits.
batch_option = click.option(
    "--batch",
    type=click.IntRange(min=1),
    default=BATCH_DOCUMENTS,
    show_default=True,
    help="Documents committed per transaction.",
)


@dataclass(frozen=True)
class Database:
    """The index a command opens (:data:`db_options`)."""

    path: str
    timeout: float

    @classmethod
    def parsed(cls, opts: Mapping[str, Any]) -> Database:
        """Return the ``--db`` and ``--timeout`` of a command."""
        return cls(opts["db"], opts["timeout"])

    @property
    def read(self) -> list[tuple[str, str]]:
        """The index as an input read whole, for the guard."""
        return [("--db", self.path)]

    @property
    def written(self) -> tuple[str, str] | None:
        """The index as a file written (and read), for the guard."""
        return ("--db", self.path) if self.path else None

    def open(self) -> FingerprintIndex:
        """Open the existing index (library errors become messages)."""
        from simdup.index import open_index

        with user_errors():
            return open_index(self.path, timeout=self.timeout)


@dataclass(frozen=True)
class Requested:
    """The fingerprint and blocking options of a command, and which of them the user gave.

    Options not given take the values stored in the index.
    """

    values: Mapping[str, Any] = field(default_factory=dict)
    given: frozenset[str] = frozenset()

    @classmethod
    def parsed(cls, opts: Mapping[str, Any]) -> Requested:
        """Return the options of the current command, noting those given (not defaults)."""
        context = click.get_current_context()
        given = frozenset(
            name
            for name in PARAM_OPTIONS
            if context.get_parameter_source(name)
            not in (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)
        )
        return cls(pick(opts, PARAM_OPTIONS), given)

    def against(self, stored: Params) -> Params:
        """Return the run's settings: stored values for every option the user did not give."""
        merged = dict(self.values)
        for name in STORED_OPTIONS:
            if name not in self.given:
                merged[name] = getattr(stored, name)
        if not {"threshold", "recall"} & self.given and stored.scheme == "auto":
            merged["threshold"], merged["recall"] = stored.threshold, stored.recall
        return build_params(merged)


def open_for_writing(db: Database, params: Params, requested: Requested) -> FingerprintIndex:
    """Open ``--db`` for adding: an existing index keeps its settings, a new one takes ``params``.

    Options the user did not give take the stored values; given ones must match them.
    """
    from simdup.index import index_exists, open_index

    with user_errors():
        if not index_exists(db.path):
            return open_index(db.path, create=True, params=params, timeout=db.timeout)
        index = open_index(db.path, timeout=db.timeout)
    try:
        with user_errors():
            index.check(requested.against(index.params))
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
@corpus_options
@db_options
@click.option("--prune", is_flag=True, help="Drop stored documents that no longer exist.")
@batch_option
@output_options(("text", "json"), default="text")
def add_command(paths: tuple[str, ...], **opts: Any) -> None:
    """Add or update documents: only changed files are read and fingerprinted again.

    Blocking options (--scheme, --blocks, --max-distance) choose the keys stored for
    queries when the index is created; adds to an existing index keep its keys.
    """
    from simdup.cli.cache import add_inputs
    from simdup.cli.guard import Written, protect_inputs
    from simdup.cli.output import stderr_console, tell_skipped, write_text

    started = time.perf_counter()
    params = build_params(opts)
    output, db = Output.parsed(opts), Database.parsed(opts)
    written = Written("added", output.path, index=db.written)
    inputs = protect_inputs(written, Inputs.parsed(paths, opts))
    with open_for_writing(db, params, Requested.parsed(opts)) as index:
        report = add_inputs(
            index, inputs, quiet=output.quiet, prune=opts["prune"], batch=opts["batch"]
        )
    write_text(added_text(report, db, output.fmt), output.path)
    if not output.quiet:
        console = stderr_console()
        tell_skipped(console, report.skipped, verbose=output.verbose)
        console.print(f"{db.path}: {time.perf_counter() - started:.2f}s", markup=False)
    if unreadable(inputs.strict, report.skipped):
        raise click.exceptions.Exit(ExitStatus.UNREADABLE)


def added_text(report: AddReport, db: Database, fmt: str) -> str:
    """Return what ``index add`` did: counts as a line, or JSON naming the index."""
    from simdup.report.fields import dumps

    counts = report.counts()
    if fmt == "json":
        return dumps({"db": db.path, **counts}) + "\n"
    return ", ".join(f"{v:,} {k}" for k, v in counts.items()) + "\n"


@index_group.command("query", cls=PairCommand)
@click.argument("paths", nargs=-1, type=click.Path(exists=True, allow_dash=True))
@corpus_options
@db_options
@report_options
@output_options(("table", "json", "jsonl", "csv"))
def query_command(paths: tuple[str, ...], **opts: Any) -> None:
    """Find stored near-duplicates of new documents (PATHS, or - for stdin).

    Candidates come from key lookups in the index; each is verified by its true cosine.
    A stored document with the same name as a query document is not reported.
    """
    from simdup.cli.guard import Written, protect_inputs
    from simdup.cli.inputs import gather_with_stdin
    from simdup.cli.meter import make_progress
    from simdup.cli.pairs import list_pairs
    from simdup.report.render import QUERY_LABELS

    started = time.perf_counter()
    report, db = PairReport.parsed(opts), Database.parsed(opts)
    report = replace(report, labels=QUERY_LABELS)
    quiet = report.output.quiet
    written = Written("pairs", report.output.path)
    inputs = protect_inputs(written, Inputs.parsed(paths, opts), reads=db.read)
    with db.open() as index:
        params = Requested.parsed(opts).against(index.params)
        if not inputs.paths and not inputs.files_from and not inputs.records:
            raise click.UsageError("give at least one PATH, - for stdin, or --jsonl FILE")
        documents, skipped = gather_with_stdin(inputs, make_progress(quiet), quiet=quiet)
        with user_errors():
            result = index.query(
                documents, params, report_all=report.options.report_all, skipped=skipped
            )
    extra = {"db": db.path, **inputs.settings()}
    list_pairs(result, report, extra, started=started, strict=inputs.strict)


@index_group.command("scan", cls=PairCommand)
@fingerprint_options
@blocking_options
@db_options
@report_options
@output_options(("table", "json", "jsonl", "csv"))
def scan_command(**opts: Any) -> None:
    """Find every near-duplicate pair inside the index, as `simdup scan` would."""
    from simdup.cli.guard import Written, protect_reads
    from simdup.cli.pairs import list_pairs

    started = time.perf_counter()
    report, db = PairReport.parsed(opts), Database.parsed(opts)
    protect_reads(Written("pairs", report.output.path), db.read)
    with db.open() as index:
        params = Requested.parsed(opts).against(index.params)
        with user_errors():
            result = index.scan(params, report_all=report.options.report_all)
    list_pairs(result, report, {"db": db.path}, started=started, strict=False)


@index_group.command("stats")
@db_options
@format_option(("text", "json"), "text")
def stats_command(**opts: Any) -> None:
    """Show what the index holds: documents, settings, keys, size on disk."""
    from simdup.cli.output import write_text
    from simdup.report.fields import dumps

    with Database.parsed(opts).open() as index, user_errors():
        stats = index.stats()
    if opts["fmt"] == "json":
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
    write_text(text, None)


@index_group.command("optimize")
@db_options
@click.option("--force", is_flag=True, help="Plan the keys again even when they are not due.")
@format_option(("text", "json"), "text")
def optimize_command(**opts: Any) -> None:
    """Plan the index keys again on every stored fingerprint when the corpus outgrew them.

    Keys are planned on the first documents added; once the index holds four times as
    many (or 1,000 after a smaller first add), queries read more candidates than they
    need. This plans them again in one transaction: queries from other processes go on
    with the old keys meanwhile, and an interrupted run keeps them. Keys chosen with
    --scheme, --blocks or --max-distance are kept.
    """
    from simdup.cli.output import write_text
    from simdup.report.fields import dumps

    with Database.parsed(opts).open() as index, user_errors():
        done = index.optimize(force=opts["force"])
    if opts["fmt"] == "json":
        text = dumps(done) + "\n"
    else:
        keys = done["keys"]
        if done["replanned"]:
            head = f"keys planned again on {done['documents']:,} documents: "
        else:
            head = f"keys kept ({done['documents']:,} documents): "
        text = head + f"{keys['source']}, {done['tables']} tables"
        if "recall" in keys:
            text += f", recall {keys['recall']}"
        nxt = done["next"]
        text += f"; due again at {nxt:,} documents\n" if nxt is not None else "\n"
    write_text(text, None)


@index_group.command("remove")
@click.argument("paths", nargs=-1, required=True)
@db_options
@click.option("-q", "--quiet", is_flag=True, help="Print nothing.")
def remove_command(paths: tuple[str, ...], **opts: Any) -> None:
    """Remove documents named PATHS, or stored under the directories PATHS."""
    from simdup.cli.output import write_text

    with Database.parsed(opts).open() as index, user_errors():
        gone = index.remove(list(paths))
    if not opts["quiet"]:
        write_text(f"{len(gone):,} removed\n", None)


@index_group.command("export")
@db_options
@format_option(("jsonl",), "jsonl", "Output format: one JSON object per document.")
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
def export_command(**opts: Any) -> None:
    """Write the stored fingerprints as JSON Lines: id, fingerprint hex, params.

    Records carry the fingerprint settings, so `simdup index import` on another machine
    refuses records made with other settings.
    """
    from simdup.cli.guard import Written, protect_reads
    from simdup.cli.output import write_text
    from simdup.report.fields import dumps

    db, output = Database.parsed(opts), opts["output"]
    protect_reads(Written("export", output), db.read)
    with db.open() as index, user_errors():
        records = index.export_records(weights=opts["weights"])
        text = "".join(dumps(record) + "\n" for record in records)
    write_text(text, output)


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
@batch_option
def import_command(files: tuple[str, ...], **opts: Any) -> None:
    """Store records written by `simdup index export` (FILES, or - for stdin).

    A new index takes the settings of the first record.
    """
    from simdup.cli.guard import Written, protect_reads
    from simdup.cli.inputs import input_label, read_input_bytes
    from simdup.cli.output import write_text
    from simdup.index import AddReport

    db = Database.parsed(opts)
    protect_reads(Written("index", index=db.written), [("", path) for path in files])
    totals = AddReport()
    for path in files:
        label = input_label(path)
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
        with open_for_writing(db, params, Requested()) as index, user_errors():
            report = index.import_records(_chain(first, records), batch=opts["batch"])
        totals.added += report.added
        totals.updated += report.updated
    write_text(f"{totals.added:,} added, {totals.updated:,} updated\n", None)


def _chain(
    first: tuple[str, dict[str, Any]], rest: Iterator[tuple[str, dict[str, Any]]]
) -> Iterator[tuple[str, dict[str, Any]]]:
    yield first
    yield from rest
