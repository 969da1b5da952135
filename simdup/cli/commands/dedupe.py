"""``simdup dedupe``: keep one document of each near-duplicate group, report the others."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO

import click

from simdup.atomic import atomic_files
from simdup.cli.dedupe_inputs import References, check_outputs, named_lines, read_references
from simdup.cli.guard import protect_inputs
from simdup.cli.inputs import input_paths
from simdup.cli.options import (
    ExitStatus,
    RunError,
    check_engine,
    encode_output,
    engine_options,
    fingerprint_options,
    input_options,
    jsonl_options,
    make_progress,
    output_options,
    read_input_bytes,
    read_options,
    stderr_console,
    user_errors,
    write_output,
)
from simdup.cli.output import emit_rich
from simdup.cli.pairs import blocking_options, build_params, input_params
from simdup.dedupe.files import Step, move_files, read_files, shell_script
from simdup.dedupe.jsonl import Dataset, compressed, read_dataset, removed_lines, write_kept
from simdup.dedupe.keep import KEEP_POLICIES, DedupePlan, Entry, PairScan, dedupe
from simdup.inputs.jsonl import STDIN, STDIN_LABEL, is_url, read_url
from simdup.model import Skip
from simdup.report.dedupe import (
    Named,
    dedupe_stats,
    removal_records,
    removal_table,
    summary,
    to_csv,
    to_json,
    to_jsonl,
)
from simdup.report.html.dedupe import dedupe_page
from simdup.report.render import printable

EPILOG = """\b
Examples:
  simdup dedupe --jsonl crawl.jsonl.gz -o kept.jsonl.gz --removed removed.jsonl
  simdup dedupe --jsonl new.jsonl --reference old.jsonl -o new-kept.jsonl
  simdup dedupe docs/                          # the plan: what would go, and why
  simdup dedupe docs/ --script dedupe.sh       # rm lines to review, then: sh dedupe.sh
  simdup dedupe docs/ --keep newest --prefer 'originals/*' --move-to dupes/ --apply
"""


def _check_usage(paths: Sequence[str], kwargs: dict[str, Any]) -> None:
    """Refuse option combinations that cannot work, before anything is read."""
    jsonl = kwargs["jsonl"][0] if kwargs["jsonl"] else None
    if not paths and not kwargs["files_from"] and not jsonl:
        raise click.UsageError("give at least one PATH, --files-from FILE or --jsonl FILE")
    if len(kwargs["jsonl"]) > 1:
        raise click.UsageError(
            f"--jsonl names {len(kwargs['jsonl'])} files; dedupe writes back one dataset: "
            "give one file (join shards first: cat part-*.jsonl > all.jsonl)"
        )
    if jsonl and (paths or kwargs["files_from"]):
        raise click.UsageError(
            "give files (PATHS or --files-from) or --jsonl, not both; "
            "use --reference for documents that must win"
        )
    if jsonl and (kwargs["script"] or kwargs["move_to"]):
        raise click.UsageError("--script and --move-to act on files; with --jsonl use -o")
    check_engine(kwargs)
    if kwargs["apply"] and not kwargs["move_to"]:
        raise click.UsageError("--apply moves files: give --move-to DIR")
    if kwargs["move_to"] and not (kwargs["apply"] or kwargs["script"]):
        raise click.UsageError(
            "--move-to needs --script FILE (to review the moves) or --apply (to move now)"
        )
    if jsonl and kwargs["keep"] in ("newest", "oldest") and not kwargs["time_field"]:
        raise click.UsageError(f"--keep {kwargs['keep']} with --jsonl needs --time-field FIELD")
    if kwargs["time_field"] and not jsonl:
        raise click.UsageError("--time-field reads JSON Lines; files are ordered by mtime")
    inputs: dict[str, str | None] = {"--jsonl": jsonl, "--files-from": kwargs["files_from"]}
    inputs.update({f"PATH {p}": p for p in paths})
    inputs.update({f"--reference {p}": p for p in kwargs["reference"]})
    outputs = {
        "-o": kwargs["output"],
        "--removed": kwargs["removed"],
        "--script": kwargs["script"],
        "--html": kwargs["html_file"],
    }
    if kwargs["output"] == "-" and kwargs["removed"] == "-":
        raise click.UsageError("-o and --removed cannot both write to stdout; name a file")
    # -o and --html as every command checks them; --removed and --script here.
    whole = [("--reference", p) for p in kwargs["reference"] if os.path.isfile(p)]
    protect_inputs(kwargs, paths, kind="pairs", reads=whole)
    check_outputs(outputs, inputs, guarded=("-o", "--html"))


@dataclass
class Outcome:
    """What a run did: counts, skipped inputs, warnings, and whether some step failed."""

    stats: dict[str, int]
    skipped: list[Skip]
    warnings: list[str]
    failed: bool = False


@contextmanager
def pair_scan(kwargs: dict[str, Any], progress: Any) -> Iterator[PairScan | None]:
    """Yield the pair scan ``--engine`` asks for (None: the local one)."""
    if kwargs["engine"] != "dask":
        yield None
        return
    from simdup.cli.distributed import dask_pair_scan

    with dask_pair_scan(kwargs, progress) as scan:
        yield scan


def run_plan(
    entries: Sequence[Entry], refs: References, kwargs: dict[str, Any], progress: Any
) -> DedupePlan:
    """Deduplicate ``entries`` against ``refs`` with the options' settings.

    The stored documents of indexes that were matched join ``refs`` (after the others,
    as the plan numbers them).
    """
    params = build_params(kwargs)
    with pair_scan(kwargs, progress) as scan, user_errors():
        plan = dedupe(
            entries,
            params,
            policy=kwargs["keep"],
            prefer=kwargs["prefer"],
            references=refs.entries,
            stores=refs.indexes,
            progress=progress,
            jobs=kwargs["jobs"],
            scan=scan,
        )
    refs.named += [Named(name) for name in plan.stored]
    refs.files += [None] * len(plan.stored)
    return plan


def plan_params(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Return every setting that shaped the plan, for JSON ``params``."""
    return {
        **build_params(kwargs).as_dict(),
        **input_params(kwargs),
        "keep": kwargs["keep"],
        "prefer": list(kwargs["prefer"]),
        "time_field": kwargs["time_field"],
        "references": len(kwargs["reference"]),
        **({"engine": "dask"} if kwargs["engine"] == "dask" else {}),
    }


def write_plan(
    records: list[dict[str, Any]],
    stats: dict[str, int],
    skipped: Sequence[Skip],
    warnings: Sequence[str],
    kwargs: dict[str, Any],
) -> None:
    """Write the plan in the chosen format to stdout or ``-o``."""
    fmt, output = kwargs["fmt"], kwargs["output"]
    if fmt == "json":
        text = to_json(plan_params(kwargs), stats, records, skipped, warnings)
        write_output(encode_output(text), output)
    elif fmt == "jsonl":
        write_output(encode_output(to_jsonl(records)), output)
    elif fmt == "csv":
        write_output(encode_output(to_csv(records)), output)
    else:
        emit_rich([removal_table(records)], output)


def write_html(
    records: list[dict[str, Any]], stats: dict[str, int], kwargs: dict[str, Any]
) -> None:
    """Write the HTML report of groups when ``--html`` asks for it."""
    if kwargs["html_file"]:
        page = dedupe_page(records, stats, plan_params(kwargs))
        write_output(encode_output(page), kwargs["html_file"])


def report(
    outcome: Outcome, reference_skips: Sequence[Skip], kwargs: dict[str, Any], elapsed: float
) -> None:
    """Print skips (with -v), warnings and the summary on stderr.

    Lines of a JSON Lines input that hold no document are kept as they are, not skipped.
    """
    if kwargs["quiet"]:
        return
    console = stderr_console()
    what = "kept as is" if kwargs["jsonl"] else "skipped"
    groups = ((what, outcome.skipped), ("skipped reference", reference_skips))
    for verb, skips in groups:
        if kwargs["verbose"]:
            for skip in skips:
                console.print(f"{verb} {printable(skip.path)}: {skip.reason}", markup=False)
        elif skips:
            console.print(f"{len(skips):,} input(s) {verb}; -v lists them", markup=False)
    for warning in outcome.warnings:
        console.print(f"warning: {printable(warning)}", markup=False)
    console.print(summary(outcome.stats, elapsed, skipped=what), markup=False)


def _kept_to(dataset: Dataset, removed: Any, handle: BinaryIO, *, gz: bool) -> None:
    """Write the kept lines to ``handle`` (gzip-compressed with ``gz``)."""
    if gz:
        with compressed(handle) as zipped:
            write_kept(dataset, removed, zipped)
    else:
        write_kept(dataset, removed, handle)


def _removed_to(records: list[dict[str, Any]], handle: BinaryIO, *, gz: bool) -> None:
    """Write the removal records to ``handle`` (gzip-compressed with ``gz``)."""
    data = encode_output(to_jsonl(records))
    if gz:
        with compressed(handle) as zipped:
            zipped.write(data)
    else:
        handle.write(data)


def _write_dataset(
    dataset: Dataset, removed: Any, records: list[dict[str, Any]], kwargs: dict[str, Any]
) -> None:
    """Write KEPT (``-o``) and REMOVED (``--removed``), renamed into place together."""
    kept_path, removed_path = kwargs["output"], kwargs["removed"]
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
                _removed_to(records, opened.get(removed_path, stdout), gz=gz)
    except OSError as exc:
        names = ", ".join(printable(f) for f in files) or "standard output"
        raise RunError(f"cannot write {names}: {(exc.strerror or str(exc)).lower()}") from exc


def dedupe_jsonl(kwargs: dict[str, Any], refs: References, progress: Any) -> Outcome:
    """Deduplicate a JSON Lines dataset; write KEPT and REMOVED or print the plan."""
    path = kwargs["jsonl"][0]
    with user_errors():
        data = None
        if path == STDIN:
            data = read_input_bytes(STDIN)
        elif is_url(path):
            data = read_url(path)
        dataset = read_dataset(
            STDIN_LABEL if path == STDIN else path,
            jsonl_options(kwargs),
            time_field=kwargs["time_field"],
            data=data,
        )
    plan = run_plan(dataset.entries, refs, kwargs, progress)
    named = named_lines(dataset)
    records = removal_records(plan.removed, named, refs.named, [e.size for e in dataset.entries])
    skipped = dataset.skipped
    stats = dedupe_stats(len(dataset), records, skipped, len(refs.entries))
    warnings = list(dataset.warnings)
    if dataset.duplicate_ids:
        shown = list(dataset.duplicate_ids.items())[:3]
        examples = "; ".join(
            f"{name!r} on lines {', '.join(map(str, lines[:5]))}" for name, lines in shown
        )
        warnings.append(
            f"{dataset.label}: {len(dataset.duplicate_ids):,} id(s) on more than one line "
            f"({examples}); each line is its own document, told apart by line number"
        )
    if kwargs["output"] is None and kwargs["removed"] is None:
        write_plan(records, stats, [*skipped, *refs.skipped], warnings, kwargs)
    else:
        _write_dataset(dataset, removed_lines(dataset, plan.removed), records, kwargs)
    write_html(records, stats, kwargs)
    return Outcome(stats, skipped, warnings)


def dedupe_paths(
    paths: Sequence[str], kwargs: dict[str, Any], refs: References, progress: Any
) -> Outcome:
    """Deduplicate files: print the plan, write a script, or move files with --apply."""
    options = read_options(kwargs)
    all_paths = input_paths(paths, kwargs)
    with user_errors():
        entries, states, skipped = read_files(
            all_paths, options, exclude=[f for f in refs.files if f], progress=progress
        )
    plan = run_plan(entries, refs, kwargs, progress)
    named = [Named(e.name) for e in entries]
    records = removal_records(plan.removed, named, refs.named, [s.size for s in states])
    stats = dedupe_stats(len(entries), records, skipped, len(refs.entries))
    warnings: list[str] = []
    write_plan(records, stats, [*skipped, *refs.skipped], warnings, kwargs)
    write_html(records, stats, kwargs)
    if kwargs["script"]:
        steps = [
            Step(
                r["id"],
                r["kept"],
                r["cosine"],
                kept_is_file=r["kept_line"] is None,
            )
            for r in records
        ]
        write_output(shell_script(steps, move_to=kwargs["move_to"]), kwargs["script"])
    if kwargs["apply"]:
        moves = []
        for removal in plan.removed:
            kept = refs.files[removal.kept] if removal.reference else states[removal.kept]
            moves.append((states[removal.index], kept))
        outcomes = move_files(moves, kwargs["move_to"], options)
        refused = [o for o in outcomes if o.refused]
        console = stderr_console()
        for outcome in refused:
            console.print(f"not moved {printable(outcome.name)}: {outcome.refused}", markup=False)
        moved = len(outcomes) - len(refused)
        if not kwargs["quiet"]:
            console.print(
                f"moved {moved:,} file(s) under {printable(kwargs['move_to'])}", markup=False
            )
        return Outcome(stats, skipped, warnings, failed=bool(refused))
    return Outcome(stats, skipped, warnings)


@click.command("dedupe", epilog=EPILOG)
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@input_options
@fingerprint_options
@blocking_options
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
    help="Write one JSON record per removed document to this file (gzip if .gz).",
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
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False),
    help="Also write a self-contained HTML report: each kept document and what it replaced.",
)
@click.option(
    "--fail-on-match", is_flag=True, help="Exit with status 1 if any document is removed."
)
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help=(
        "Workers for fingerprinting and checking pairs (0: every core). Output never depends on it."
    ),
)
@engine_options
@output_options(("table", "json", "jsonl", "csv"))
def dedupe_command(paths: tuple[str, ...], **kwargs: Any) -> None:
    """Keep one document of each near-duplicate group; say what goes and what it matched.

    Documents are taken in --keep order (--prefer first); one is removed only if its true
    cosine with a document already kept is at or above --threshold, so nothing is removed
    through a chain. With --jsonl, -o writes the kept lines byte for byte and --removed
    what went; for files, the plan is printed and nothing is deleted or moved unless asked.
    """
    started = time.perf_counter()
    _check_usage(paths, kwargs)
    params = build_params(kwargs)  # bad settings fail before anything is read
    progress = make_progress(kwargs["quiet"])
    options = read_options(kwargs)
    refs = read_references(kwargs["reference"], options, params, kwargs, progress)
    try:
        if kwargs["jsonl"]:
            outcome = dedupe_jsonl(kwargs, refs, progress)
        else:
            outcome = dedupe_paths(paths, kwargs, refs, progress)
    finally:
        refs.close()
    elapsed = time.perf_counter() - started
    report(outcome, refs.skipped, kwargs, elapsed)
    if outcome.failed:
        raise click.exceptions.Exit(ExitStatus.ERROR)
    if kwargs["strict"] and any(s.unreadable for s in [*outcome.skipped, *refs.skipped]):
        raise click.exceptions.Exit(ExitStatus.UNREADABLE)
    if kwargs["fail_on_match"] and outcome.stats["removed"]:
        raise click.exceptions.Exit(ExitStatus.MATCHES)
