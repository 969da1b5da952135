"""``simdup dedupe``: keep one document of each near-duplicate group, report the others."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, BinaryIO

import click

from simdup.cli.options import (
    corpus_options,
    engine_options,
    html_option,
    output_options,
)
from simdup.cli.parsed import Engine, Inputs, Output, build_params, pick
from simdup.cli.status import ExitStatus, RunError, unreadable, user_errors
from simdup.params import KEEP_POLICIES, Params
from simdup.progress import Progress

if TYPE_CHECKING:
    from simdup.cli.dedupe_inputs import References
    from simdup.dedupe.files import FileState
    from simdup.dedupe.jsonl import Dataset, Records
    from simdup.dedupe.keep import DedupePlan, Entry, PairScan
    from simdup.dedupe.tables import TableDataset
    from simdup.model import Skip

EPILOG = """\b
Examples:
  simdup dedupe --jsonl crawl.jsonl.gz -o kept.jsonl.gz --removed removed.jsonl
  simdup dedupe --jsonl new.jsonl --reference old.jsonl -o new-kept.jsonl
  simdup dedupe --parquet 'shards/*.parquet' -o kept.parquet --removed removed.parquet
  simdup dedupe docs/                          # the plan: what would go, and why
  simdup dedupe docs/ --script dedupe.sh       # rm lines to review, then: sh dedupe.sh
  simdup dedupe docs/ --keep newest --prefer 'originals/*' --move-to dupes/ --apply
"""


@dataclass(frozen=True)
class Choices:
    """What ``simdup dedupe`` keeps and writes, beyond the options other commands share.

    Attributes are named as the options' values: ``reference`` holds every
    ``--reference``, ``html_file`` the ``--html`` page.
    """

    keep: str
    prefer: tuple[str, ...]
    time_field: str | None
    reference: tuple[str, ...]
    removed: str | None
    script: str | None
    move_to: str | None
    apply: bool
    html_file: str | None
    fail_on_match: bool

    @classmethod
    def parsed(cls, opts: Mapping[str, Any]) -> Choices:
        """Return the dedupe options of the command line."""
        return cls(**pick(opts, (f.name for f in fields(cls))))


@dataclass(frozen=True)
class Run:
    """Everything a dedupe run was asked, built once from the options."""

    inputs: Inputs
    output: Output
    engine: Engine
    params: Params
    choices: Choices
    progress: Progress

    def settings(self) -> dict[str, Any]:
        """Return every setting that shaped the plan, for JSON ``params``."""
        return {
            **self.params.as_dict(),
            **self.inputs.settings(),
            "keep": self.choices.keep,
            "prefer": list(self.choices.prefer),
            "time_field": self.choices.time_field,
            "references": len(self.choices.reference),
            **self.engine.settings(),
        }


def dataset_option(inputs: Inputs) -> str | None:
    """Return the option naming the dataset deduplicated (None: files are)."""
    for option, given in (("--jsonl", inputs.jsonl), ("--parquet", inputs.parquet)):
        if given:
            return option
    return "--arrow" if inputs.arrow else None


def _check_inputs(inputs: Inputs, choices: Choices) -> None:
    """Refuse inputs that cannot be deduplicated together, before anything is read."""
    jsonl = dataset_option(inputs)
    if not inputs.paths and not inputs.files_from and not jsonl:
        raise click.UsageError("give at least one PATH, --files-from FILE or --jsonl FILE")
    if sum(map(bool, (inputs.jsonl, inputs.parquet, inputs.arrow))) > 1:
        raise click.UsageError(
            "give one dataset: --jsonl, --parquet or --arrow; "
            "use --reference for documents that must win"
        )
    if len(inputs.jsonl) > 1:
        raise click.UsageError(
            f"--jsonl names {len(inputs.jsonl)} files; dedupe writes back one dataset: "
            "give one file (join shards first: cat part-*.jsonl > all.jsonl)"
        )
    if jsonl and (inputs.paths or inputs.files_from):
        raise click.UsageError(
            f"give files (PATHS or --files-from) or {jsonl}, not both; "
            "use --reference for documents that must win"
        )
    if jsonl and (choices.script or choices.move_to):
        raise click.UsageError(f"--script and --move-to act on files; with {jsonl} use -o")


def _check_outputs(inputs: Inputs, output: Output, choices: Choices) -> Inputs:
    """Refuse actions and outputs that cannot work; return the inputs the guard leaves."""
    jsonl = dataset_option(inputs)
    if choices.apply and not choices.move_to:
        raise click.UsageError("--apply moves files: give --move-to DIR")
    if choices.move_to and not (choices.apply or choices.script):
        raise click.UsageError(
            "--move-to needs --script FILE (to review the moves) or --apply (to move now)"
        )
    if jsonl and choices.keep in ("newest", "oldest") and not choices.time_field:
        raise click.UsageError(f"--keep {choices.keep} with {jsonl} needs --time-field FIELD")
    if choices.time_field and not jsonl:
        raise click.UsageError("--time-field reads JSON Lines; files are ordered by mtime")
    if inputs.jsonl and output.path and _is_parquet(output.path):
        raise click.UsageError(
            "-o: kept JSON Lines are written as they were read, not as Parquet; "
            "give a .jsonl name (or read the dataset with --parquet)"
        )
    sources: dict[str, str | None] = {
        "--jsonl": inputs.jsonl[0] if inputs.jsonl else None,
        "--files-from": inputs.files_from,
    }
    sources.update({f"--parquet {p}": p for p in inputs.parquet})
    sources.update({f"PATH {p}": p for p in inputs.paths})
    sources.update({f"--reference {p}": p for p in choices.reference})
    outputs = {
        "-o": output.path,
        "--removed": choices.removed,
        "--script": choices.script,
        "--html": choices.html_file,
    }
    if output.path == "-" and choices.removed == "-":
        raise click.UsageError("-o and --removed cannot both write to stdout; name a file")
    from simdup.cli.dedupe_inputs import check_outputs
    from simdup.cli.guard import Written, protect_inputs

    # -o and --html as every command checks them; --removed and --script here.
    whole = [("--reference", p) for p in choices.reference if os.path.isfile(p)]
    protected = protect_inputs(Written("pairs", output.path, choices.html_file), inputs, whole)
    check_outputs(outputs, sources, guarded=("-o", "--html"))
    return protected


def _is_parquet(path: str) -> bool:
    """Tell whether an output's name asks for Parquet."""
    return path.lower().endswith(".parquet")


@dataclass
class Outcome:
    """What a run did: counts, skipped inputs, warnings, and whether some step failed."""

    stats: dict[str, int]
    skipped: list[Skip]
    warnings: list[str]
    failed: bool = False


@contextmanager
def pair_scan(engine: Engine, progress: Progress) -> Iterator[PairScan | None]:
    """Yield the pair scan ``--engine`` asks for (None: the local one)."""
    if not engine.dask:
        yield None
        return
    from simdup.cli.distributed import dask_pair_scan

    with dask_pair_scan(engine, progress) as scan:
        yield scan


def run_plan(entries: Sequence[Entry], refs: References, run: Run) -> DedupePlan:
    """Deduplicate ``entries`` against ``refs`` with the options' settings.

    The stored documents of indexes that were matched join ``refs`` (after the others,
    as the plan numbers them).
    """
    from simdup.dedupe.keep import dedupe
    from simdup.report.dedupe import Named

    with pair_scan(run.engine, run.progress) as scan, user_errors():
        plan = dedupe(
            entries,
            run.params,
            policy=run.choices.keep,
            prefer=run.choices.prefer,
            references=refs.entries,
            stores=refs.indexes,
            progress=run.progress,
            jobs=run.engine.jobs,
            scan=scan,
        )
    refs.named += [Named(name) for name in plan.stored]
    refs.files += [None] * len(plan.stored)
    return plan


def write_removals(
    records: list[dict[str, Any]],
    stats: dict[str, int],
    skipped: Sequence[Skip],
    warnings: Sequence[str],
    run: Run,
) -> None:
    """Write what goes and why, in the chosen format, to stdout or ``-o``."""
    from simdup.cli.output import emit_rich, write_text
    from simdup.report.dedupe import removal_table, to_csv, to_json, to_jsonl

    fmt, output = run.output.fmt, run.output.path
    if fmt == "json":
        write_text(to_json(run.settings(), stats, records, skipped, warnings), output)
    elif fmt == "jsonl":
        write_text(to_jsonl(records), output)
    elif fmt == "csv":
        write_text(to_csv(records), output)
    else:
        emit_rich([removal_table(records)], output)


def write_html(records: list[dict[str, Any]], stats: dict[str, int], run: Run) -> None:
    """Write the HTML report of groups when ``--html`` asks for it."""
    if run.choices.html_file:
        from simdup.cli.output import write_text
        from simdup.report.html.dedupe import dedupe_page

        write_text(dedupe_page(records, stats, run.settings()), run.choices.html_file)


def tell_outcome(
    outcome: Outcome, reference_skips: Sequence[Skip], run: Run, elapsed: float
) -> None:
    """Print skips (with -v), warnings and the summary on stderr.

    Lines of a JSON Lines input that hold no document are kept as they are, not skipped.
    """
    from simdup.cli.output import skip_line, stderr_console
    from simdup.report.dedupe import summary
    from simdup.text.display import printable

    if run.output.quiet:
        return
    console = stderr_console()
    what = "kept as is" if run.inputs.records else "skipped"
    groups = ((what, outcome.skipped), ("skipped reference", reference_skips))
    for verb, skips in groups:
        if run.output.verbose:
            for skip in skips:
                console.print(skip_line(skip, verb), markup=False)
        elif skips:
            console.print(f"{len(skips):,} input(s) {verb}; -v lists them", markup=False)
    for warning in outcome.warnings:
        console.print(f"warning: {printable(warning)}", markup=False)
    console.print(summary(outcome.stats, elapsed, skipped=what), markup=False)


def _kept_to(dataset: Records, removed: Any, handle: BinaryIO, *, gz: bool) -> None:
    """Write the kept lines to ``handle`` (gzip-compressed with ``gz``), or the kept rows."""
    from simdup.dedupe.jsonl import Dataset, compressed, write_kept

    if not isinstance(dataset, Dataset):
        from simdup.dedupe.tables import TableDataset, write_kept_rows

        assert isinstance(dataset, TableDataset)
        with user_errors():
            write_kept_rows(dataset, removed, handle)
    elif gz:
        with compressed(handle) as zipped:
            write_kept(dataset, removed, zipped)
    else:
        write_kept(dataset, removed, handle)


def _removed_to(
    records: list[dict[str, Any]], handle: BinaryIO, *, gz: bool, parquet: bool
) -> None:
    """Write the removal records to ``handle`` (gzip-compressed with ``gz``; or Parquet)."""
    from simdup.cli.output import encode_output
    from simdup.dedupe.jsonl import compressed
    from simdup.report.dedupe import RECORD_TYPES, to_jsonl

    if parquet:
        from simdup.inputs.tables import write_records

        with user_errors():
            write_records(records, RECORD_TYPES, handle)
        return
    data = encode_output(to_jsonl(records))
    if gz:
        with compressed(handle) as zipped:
            zipped.write(data)
    else:
        handle.write(data)


def _write_dataset(dataset: Records, removed: Any, records: list[dict[str, Any]], run: Run) -> None:
    """Write KEPT (``-o``) and REMOVED (``--removed``), renamed into place together."""
    from simdup.atomic import atomic_files
    from simdup.text.display import printable

    kept_path, removed_path = run.output.path, run.choices.removed
    files = [p for p in (kept_path, removed_path) if p not in (None, "-")]
    stdout: BinaryIO = sys.stdout.buffer
    try:
        with atomic_files(files) as handles:
            opened = dict(zip(files, handles, strict=True))
            if kept_path is not None:
                gz = kept_path.lower().endswith(".gz")
                _kept_to(dataset, removed, opened.get(kept_path, stdout), gz=gz)
            if removed_path is not None:
                gz = removed_path.lower().endswith(".gz")
                handle = opened.get(removed_path, stdout)
                _removed_to(records, handle, gz=gz, parquet=_is_parquet(removed_path))
    except OSError as exc:
        names = ", ".join(printable(f) for f in files) or "standard output"
        raise RunError(f"cannot write {names}: {(exc.strerror or str(exc)).lower()}") from exc


def read_jsonl_dataset(inputs: Inputs, time_field: str | None) -> Dataset:
    """Read the one ``--jsonl`` dataset (a file, a URL or stdin), every line kept."""
    from simdup.cli.inputs import input_label, read_input_bytes
    from simdup.dedupe.jsonl import read_dataset
    from simdup.inputs.jsonl import STDIN

    path = inputs.jsonl[0]
    with user_errors():
        data = read_input_bytes(STDIN) if path == STDIN else None
        return read_dataset(input_label(path), inputs.fields, time_field=time_field, data=data)


def read_table_dataset(inputs: Inputs, time_field: str | None) -> TableDataset:
    """Read the ``--parquet`` shards or the ``--arrow`` dataset: text, id and time of each row."""
    from simdup.dedupe.tables import read_table_dataset as read_rows
    from simdup.inputs.tables import saved_dataset_files, table_parts

    fields = inputs.fields
    with user_errors():
        if inputs.parquet:
            found = table_parts(inputs.parquet, "parquet", fields, extra=time_field)
            label = inputs.parquet[0]
        else:
            names = [f for d in inputs.arrow for f in saved_dataset_files(d)]
            found = table_parts(names, "arrow", fields, extra=time_field)
            label = inputs.arrow[0]
        parts, schema, columns = found
        return read_rows(parts, schema, columns, fields, label=label, time_field=time_field)


def duplicate_id_warning(dataset: Records) -> list[str]:
    """Warn of ids on more than one line (each line stays its own document)."""
    if not dataset.duplicate_ids:
        return []
    shown = list(dataset.duplicate_ids.items())[:3]
    examples = "; ".join(
        f"{name!r} on lines {', '.join(map(str, lines[:5]))}" for name, lines in shown
    )
    return [
        f"{dataset.label}: {len(dataset.duplicate_ids):,} id(s) on more than one line "
        f"({examples}); each line is its own document, told apart by line number"
    ]


def dedupe_jsonl(run: Run, refs: References) -> Outcome:
    """Deduplicate a JSON Lines or table dataset; write KEPT and REMOVED or print the plan."""
    from simdup.cli.dedupe_inputs import named_lines
    from simdup.dedupe.jsonl import removed_lines
    from simdup.report.dedupe import dedupe_stats, removal_records

    time_field = run.choices.time_field
    dataset: Records
    if run.inputs.jsonl:
        dataset = read_jsonl_dataset(run.inputs, time_field)
    else:
        dataset = read_table_dataset(run.inputs, time_field)
    plan = run_plan(dataset.entries, refs, run)
    named = named_lines(dataset)
    records = removal_records(plan.removed, named, refs.named, [e.size for e in dataset.entries])
    skipped = dataset.skipped
    stats = dedupe_stats(len(dataset), records, skipped, len(refs.entries))
    warnings = [*dataset.warnings, *duplicate_id_warning(dataset)]
    if run.output.path is None and run.choices.removed is None:
        write_removals(records, stats, [*skipped, *refs.skipped], warnings, run)
    else:
        _write_dataset(dataset, removed_lines(dataset, plan.removed), records, run)
    write_html(records, stats, run)
    return Outcome(stats, skipped, warnings)


def move_removed(plan: DedupePlan, refs: References, states: list[FileState], run: Run) -> bool:
    """Move the removed files under ``--move-to`` (``--apply``); tell whether one was refused."""
    from simdup.cli.output import stderr_console
    from simdup.dedupe.files import move_files
    from simdup.text.display import printable

    moves = []
    for removal in plan.removed:
        kept = refs.files[removal.kept] if removal.reference else states[removal.kept]
        moves.append((states[removal.index], kept))
    outcomes = move_files(moves, str(run.choices.move_to), run.inputs.read)
    refused = [o for o in outcomes if o.refused]
    console = stderr_console()
    for outcome in refused:
        console.print(f"not moved {printable(outcome.name)}: {outcome.refused}", markup=False)
    moved = len(outcomes) - len(refused)
    if not run.output.quiet:
        console.print(
            f"moved {moved:,} file(s) under {printable(str(run.choices.move_to))}", markup=False
        )
    return bool(refused)


def dedupe_paths(run: Run, refs: References) -> Outcome:
    """Deduplicate files: print the plan, write a script, or move files with --apply."""
    from simdup.cli.inputs import input_paths
    from simdup.cli.output import write_output
    from simdup.dedupe.files import Step, read_files, shell_script
    from simdup.report.dedupe import Named, dedupe_stats, removal_records

    all_paths = input_paths(run.inputs, quiet=run.output.quiet)
    with user_errors():
        entries, states, skipped = read_files(
            all_paths,
            run.inputs.read,
            exclude=[f for f in refs.files if f],
            progress=run.progress,
            jobs=run.engine.jobs,
        )
    plan = run_plan(entries, refs, run)
    named = [Named(e.name) for e in entries]
    records = removal_records(plan.removed, named, refs.named, [s.size for s in states])
    stats = dedupe_stats(len(entries), records, skipped, len(refs.entries))
    warnings: list[str] = []
    write_removals(records, stats, [*skipped, *refs.skipped], warnings, run)
    write_html(records, stats, run)
    if run.choices.script:
        steps = [
            Step(r["id"], r["kept"], r["cosine"], kept_is_file=r["kept_line"] is None)
            for r in records
        ]
        write_output(shell_script(steps, move_to=run.choices.move_to), run.choices.script)
    failed = run.choices.apply and move_removed(plan, refs, states, run)
    return Outcome(stats, skipped, warnings, failed=failed)


def exit_status(outcome: Outcome, refs: References, run: Run) -> ExitStatus:
    """Return the exit status: a failed move, unreadable inputs (--strict), removals."""
    if outcome.failed:
        return ExitStatus.ERROR
    if unreadable(run.inputs.strict, [*outcome.skipped, *refs.skipped]):
        return ExitStatus.UNREADABLE
    if run.choices.fail_on_match and outcome.stats["removed"]:
        return ExitStatus.MATCHES
    return ExitStatus.OK


@click.command("dedupe", epilog=EPILOG)
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@corpus_options
@click.option(
    "--keep",
    type=click.Choice(KEEP_POLICIES),
    default="first",
    show_default=True,
    help=(
        "Which document of a group stays: first/last in input order, longest/shortest "
        "text, newest/oldest (file mtime, or --time-field)."
    ),
)
@click.option(
    "--prefer",
    multiple=True,
    metavar="GLOB",
    help="Keep documents whose name or path matches first, whatever --keep says (repeatable).",
)
@click.option(
    "--time-field",
    metavar="FIELD",
    help="JSON Lines field with a time (number or ISO 8601) for --keep newest/oldest.",
)
@click.option(
    "--reference",
    multiple=True,
    type=click.Path(exists=True),
    help=(
        "Documents that always win and are never output: a directory, file, JSON Lines "
        "file or simdup index (repeatable)."
    ),
)
@click.option(
    "--removed",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write one JSON record per removed document to this file (gzip if .gz; "
    "Parquet if .parquet).",
)
@click.option(
    "--script",
    type=click.Path(dir_okay=False),
    help="Write a POSIX shell script of rm (or mv with --move-to) lines to review and run.",
)
@click.option(
    "--move-to",
    type=click.Path(file_okay=False),
    help="Move removed files under this directory, their paths kept (--script or --apply).",
)
@click.option(
    "--apply",
    is_flag=True,
    help="With --move-to: move the files now (never overwriting; kept files checked first).",
)
@html_option("Also write a self-contained HTML report: each kept document and what it replaced.")
@click.option(
    "--fail-on-match", is_flag=True, help="Exit with status 1 if any document is removed."
)
@engine_options(
    jobs="Workers for fingerprinting and checking pairs (0: every core). "
    "Output never depends on it."
)
@output_options(("table", "json", "jsonl", "csv"))
def dedupe_command(paths: tuple[str, ...], **opts: Any) -> None:
    """Keep one document of each near-duplicate group; say what goes and what it matched.

    Documents are taken in --keep order (--prefer first); one is removed only if its true
    cosine with a document already kept is at or above --threshold, so nothing is removed
    through a chain. With --jsonl, -o writes the kept lines byte for byte and --removed
    what went; with --parquet or --arrow, -o writes the kept rows as Parquet, every column
    kept; for files, the plan is printed and nothing is deleted or moved unless asked.
    """
    from simdup.cli.dedupe_inputs import read_references
    from simdup.cli.meter import make_progress

    started = time.perf_counter()
    inputs, output, choices = Inputs.parsed(paths, opts), Output.parsed(opts), Choices.parsed(opts)
    _check_inputs(inputs, choices)
    engine = Engine.parsed(opts)
    inputs = _check_outputs(inputs, output, choices)
    params = build_params(opts)  # bad settings fail before anything is read
    run = Run(inputs, output, engine, params, choices, make_progress(output.quiet))
    refs = read_references(choices.reference, inputs, params, run.progress)
    try:
        outcome = dedupe_jsonl(run, refs) if inputs.records else dedupe_paths(run, refs)
    finally:
        refs.close()
    tell_outcome(outcome, refs.skipped, run, time.perf_counter() - started)
    if status := exit_status(outcome, refs, run):
        raise click.exceptions.Exit(status)
