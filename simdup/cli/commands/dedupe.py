"""``simdup dedupe``: keep one document of each near-duplicate group, report the others."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import click

from simdup.cli.checked import CheckedCommand
from simdup.cli.options import (
    all_option,
    corpus_options,
    engine_options,
    html_option,
    limit_option,
    output_options,
    plan_options,
    size_options,
)
from simdup.cli.parsed import Engine, Inputs, Output, build_params, pick
from simdup.cli.status import ExitStatus, unreadable, user_errors
from simdup.params import KEEP_POLICIES, LINK_KINDS, Params
from simdup.progress import Progress

if TYPE_CHECKING:
    from simdup.cli.dedupe_inputs import References
    from simdup.dedupe.files import FileState
    from simdup.dedupe.keep import DedupePlan, Entry, PairScan
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
    link: str | None
    apply: bool
    html_file: str | None
    fail_on_match: bool
    report_all: bool
    limit: int | None
    plan_only: bool

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
            "all": self.choices.report_all,
            "limit": self.choices.limit,
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
    if jsonl and (choices.script or choices.move_to or choices.link):
        raise click.UsageError(f"--script, --move-to and --link act on files; with {jsonl} use -o")


def _check_outputs(inputs: Inputs, output: Output, choices: Choices) -> Inputs:
    """Refuse actions and outputs that cannot work; return the inputs the guard leaves."""
    jsonl = dataset_option(inputs)
    if choices.move_to and choices.link:
        raise click.UsageError("--move-to and --link both say what becomes of a file: give one")
    if choices.apply and not (choices.move_to or choices.link):
        raise click.UsageError(
            "--apply moves files: give --move-to DIR (or replace them: --link hard|symbolic)"
        )
    if (choices.move_to or choices.link) and not (choices.apply or choices.script):
        flag, verb = ("--move-to", "move") if choices.move_to else ("--link", "link")
        raise click.UsageError(
            f"{flag} needs --script FILE (to review the {verb}s) or --apply (to {verb} now)"
        )
    _check_listing(inputs, output, choices)
    if jsonl and choices.keep in ("newest", "oldest") and not choices.time_field:
        raise click.UsageError(f"--keep {choices.keep} with {jsonl} needs --time-field FIELD")
    if jsonl and (output.path or choices.removed) and output.fmt in ("json", "csv"):
        kept = "JSON Lines" if inputs.jsonl else "rows as Parquet"
        raise click.UsageError(
            f"--format {output.fmt}: with {jsonl}, -o writes the kept {kept} and --removed "
            "the removals as JSON Lines; leave out --format, or -o and --removed to print the "
            f"removals as {output.fmt}"
        )
    if choices.time_field and not jsonl:
        raise click.UsageError("--time-field reads JSON Lines; files are ordered by mtime")
    from simdup.cli.dedupe_outputs import is_parquet

    if inputs.jsonl and output.path and is_parquet(output.path):
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


def _check_listing(inputs: Inputs, output: Output, choices: Choices) -> None:
    """Refuse ``--plan``, ``--all`` and ``--limit`` where they could not do what they say."""
    dataset = dataset_option(inputs)
    writes = dataset and (output.path is not None or choices.removed)
    if choices.plan_only:
        acting = [
            name
            for name, given in (
                ("--apply", choices.apply),
                ("--script", choices.script),
                ("--removed", choices.removed),
                ("--html", choices.html_file),
                (f"-o with {dataset}", writes),
            )
            if given
        ]
        if acting:
            raise click.UsageError(f"--plan prints the plan and stops; it takes no {acting[0]}")
    if choices.report_all and output.fmt not in ("table", "json"):
        raise click.UsageError(
            "--all lists the candidate pairs after the removals in the table and json "
            f"formats, not in {output.fmt}"
        )
    if writes and (choices.report_all or choices.limit is not None):
        raise click.UsageError(
            f"--all and --limit shape the listing of removals; with {dataset} and -o or "
            "--removed nothing is listed"
        )


@dataclass
class Outcome:
    """What a run did: counts, skipped inputs, warnings, and whether some step failed."""

    stats: dict[str, int]
    skipped: list[Skip]
    warnings: list[str]
    failed: bool = False


@contextmanager
def pair_scan(run: Run, progress: Progress) -> Iterator[PairScan | None]:
    """Yield the pair scan ``--engine`` asks for (None: the local one)."""
    if not run.engine.dask:
        yield None
        return
    from simdup.cli.distributed import dask_pair_scan

    with dask_pair_scan(run.engine, progress, report_all=run.choices.report_all) as scan:
        yield scan


def run_plan(entries: Sequence[Entry], refs: References, run: Run) -> DedupePlan:
    """Deduplicate ``entries`` against ``refs`` with the options' settings.

    The stored documents of indexes that were matched join ``refs`` (after the others,
    as the plan numbers them).
    """
    from simdup.dedupe.keep import dedupe
    from simdup.report.dedupe import Named

    with pair_scan(run, run.progress) as scan, user_errors():
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
            report_all=run.choices.report_all,
            memory=run.engine.memory,
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
    plan: DedupePlan,
) -> None:
    """Write what goes and why (at most ``--limit``), in the chosen format, to stdout or ``-o``.

    With ``--all``, the candidate pairs the scan measured follow, as ``scan --all`` lists
    them.
    """
    from simdup.cli.output import emit_rich, write_text
    from simdup.report.dedupe import removal_table, to_csv, to_json, to_jsonl
    from simdup.report.render import pair_table
    from simdup.report.shown import ReportOptions, selected_pairs

    fmt, output, limit = run.output.fmt, run.output.path, run.choices.limit
    shown = records[:limit]
    pairs = None
    if run.choices.report_all:
        pairs = selected_pairs(plan.scan, ReportOptions(report_all=True, limit=limit))
    if fmt == "json":
        write_text(to_json(run.settings(), stats, shown, skipped, warnings, pairs), output)
    elif fmt == "jsonl":
        write_text(to_jsonl(shown), output)
    elif fmt == "csv":
        write_text(to_csv(shown), output)
    else:
        emit_rich([removal_table(shown), *([] if pairs is None else [pair_table(pairs)])], output)


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
    limit, removed = run.choices.limit, outcome.stats["removed"]
    if limit is not None and removed > limit:
        console.print(f"listed {limit:,} of {removed:,} removals (--limit)", markup=False)
    console.print(summary(outcome.stats, elapsed, skipped=what), markup=False)


def dedupe_jsonl(run: Run, refs: References) -> Outcome:
    """Deduplicate a JSON Lines or table dataset; write KEPT and REMOVED or print the plan."""
    from simdup.cli.dedupe_inputs import duplicate_id_warning, named_lines, read_records_dataset
    from simdup.cli.dedupe_outputs import write_dataset
    from simdup.dedupe.jsonl import removed_lines
    from simdup.report.dedupe import dedupe_stats, removal_records

    dataset = read_records_dataset(run.inputs, run.choices.time_field)
    plan = run_plan(dataset.entries, refs, run)
    named = named_lines(dataset)
    records = removal_records(plan.removed, named, refs.named, [e.size for e in dataset.entries])
    skipped = dataset.skipped
    stats = dedupe_stats(len(dataset), records, skipped, len(refs.entries))
    warnings = [*dataset.warnings, *duplicate_id_warning(dataset)]
    if run.output.path is None and run.choices.removed is None:
        write_removals(records, stats, [*skipped, *refs.skipped], warnings, run, plan)
    else:
        removed = removed_lines(dataset, plan.removed)
        write_dataset(dataset, removed, records, run.output.path, run.choices.removed)
    write_html(records, stats, run)
    return Outcome(stats, skipped, warnings)


def move_removed(plan: DedupePlan, refs: References, states: list[FileState], run: Run) -> bool:
    """Move the removed files under ``--move-to``, or replace them with ``--link`` links.

    Done with ``--apply``; tells whether one was refused.
    """
    from simdup.cli.output import stderr_console
    from simdup.dedupe.files import link_files, move_files
    from simdup.text.display import printable

    moves = []
    for removal in plan.removed:
        kept = refs.files[removal.kept] if removal.reference else states[removal.kept]
        moves.append((states[removal.index], kept))
    link, move_to = run.choices.link, str(run.choices.move_to)
    if link:
        outcomes = link_files(moves, link, run.inputs.read)
        verb, done = "linked", f"to their kept files ({link} links)"
    else:
        outcomes = move_files(moves, move_to, run.inputs.read)
        verb, done = "moved", f"under {printable(move_to)}"
    refused = [o for o in outcomes if o.refused]
    console = stderr_console()
    for outcome in refused:
        console.print(f"not {verb} {printable(outcome.name)}: {outcome.refused}", markup=False)
    if not run.output.quiet:
        console.print(f"{verb} {len(outcomes) - len(refused):,} file(s) {done}", markup=False)
    return bool(refused)


def read_entries(run: Run, refs: References) -> tuple[list[Entry], list[FileState], list[Skip]]:
    """Read the files to deduplicate (not the reference files): entries, states, skips."""
    from simdup.cli.inputs import input_paths
    from simdup.dedupe.files import read_files

    all_paths = input_paths(run.inputs, quiet=run.output.quiet)
    with user_errors():
        return read_files(
            all_paths,
            run.inputs.read,
            exclude=[f for f in refs.files if f],
            progress=run.progress,
            jobs=run.engine.jobs,
        )


def dedupe_plan(run: Run, refs: References) -> dict[str, Any]:
    """Return the plan of the pair scan a run would make (``--plan``), before any pair work."""
    from simdup.cli.dedupe_inputs import read_records_dataset
    from simdup.dedupe.keep import plan_dedupe

    if run.inputs.records:
        entries = read_records_dataset(run.inputs, run.choices.time_field).entries
    else:
        entries = read_entries(run, refs)[0]
    with user_errors():
        return plan_dedupe(
            entries,
            run.params,
            references=refs.entries,
            progress=run.progress,
            jobs=run.engine.jobs,
            memory=run.engine.memory,
        )


def dedupe_paths(run: Run, refs: References) -> Outcome:
    """Deduplicate files: print the plan, write a script, or move files with --apply."""
    from simdup.cli.output import write_output
    from simdup.dedupe.files import Step, shell_script
    from simdup.report.dedupe import Named, dedupe_stats, removal_records

    entries, states, skipped = read_entries(run, refs)
    plan = run_plan(entries, refs, run)
    named = [Named(e.name) for e in entries]
    records = removal_records(plan.removed, named, refs.named, [s.size for s in states])
    stats = dedupe_stats(len(entries), records, skipped, len(refs.entries))
    warnings: list[str] = []
    write_removals(records, stats, [*skipped, *refs.skipped], warnings, run, plan)
    write_html(records, stats, run)
    if run.choices.script:
        steps = [
            Step(r["id"], r["kept"], r["cosine"], kept_is_file=r["kept_line"] is None)
            for r in records
        ]
        script = shell_script(steps, move_to=run.choices.move_to, link=run.choices.link)
        write_output(script, run.choices.script)
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


@click.command(
    "dedupe",
    cls=CheckedCommand,
    epilog=EPILOG,
    context_settings={"default_map": {"bits": "auto"}},
)
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@corpus_options
@size_options
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
    "--link",
    type=click.Choice(LINK_KINDS),
    help="Replace each removed file with a hard or symbolic link to its kept file "
    "(--script or --apply; a link is renamed over the file, which is never missing).",
)
@click.option(
    "--apply",
    is_flag=True,
    help="With --move-to or --link: act now (never overwriting; kept files checked first).",
)
@html_option("Also write a self-contained HTML report: each kept document and what it replaced.")
@click.option(
    "--fail-on-match", is_flag=True, help="Exit with status 1 if any document is removed."
)
@all_option("Also list every candidate pair measured, after the removals (table and json).")
@limit_option("List at most N removals (-o, --removed, --script and --apply act on all).")
@engine_options(
    jobs="Workers for fingerprinting and checking pairs (0: every core). "
    "Output never depends on it."
)
@plan_options
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
    if engine.dask and choices.plan_only:
        raise click.UsageError("--engine dask does not take --plan")
    refs = read_references(choices.reference, inputs, params, run.progress)
    if choices.plan_only:
        from simdup.cli.plans import write_plan

        try:
            write_plan(dedupe_plan(run, refs), output)
        finally:
            refs.close()
        return
    try:
        outcome = dedupe_jsonl(run, refs) if inputs.records else dedupe_paths(run, refs)
    finally:
        refs.close()
    tell_outcome(outcome, refs.skipped, run, time.perf_counter() - started)
    if status := exit_status(outcome, refs, run):
        raise click.exceptions.Exit(status)
