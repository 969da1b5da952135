"""Gather documents from PATH arguments, ``--files-from`` and records (``--jsonl``, tables)."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import click

from simdup.cli.interrupts import checkpoint
from simdup.cli.parsed import Inputs
from simdup.cli.status import RunError, user_errors
from simdup.inputs.files import decode
from simdup.inputs.gather import (
    InputSet,
    gather_inputs,
    load_corpus,
    read_path_list,
    records_text,
    unique_names,
)
from simdup.inputs.jsonl import (
    STDIN,
    STDIN_LABEL,
    is_jsonl_name,
    read_jsonl_input,
    spool_jsonl,
)
from simdup.inputs.lines import LineColumns, PieceMap, index_jsonl, index_pieces
from simdup.inputs.streams import opened
from simdup.model import Document, Skip
from simdup.progress import Meter, Progress
from simdup.spill import SpillDir, SpillError
from simdup.text.display import printable

if TYPE_CHECKING:
    from simdup.inputs.tables import TablePart


def read_input_bytes(path: str) -> bytes:
    """Return the bytes of a file argument, or of stdin for ``-``."""
    if path == "-":
        try:
            return sys.stdin.buffer.read()
        except OSError as exc:
            raise RunError(f"cannot read standard input: {exc.strerror or exc}") from exc
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise RunError(f"cannot read {path}: {exc.strerror}") from exc


def input_label(path: str) -> str:
    """Return how messages name an input argument: ``<stdin>`` for ``-``."""
    return STDIN_LABEL if path == STDIN else path


def read_listed(inputs: Inputs) -> tuple[str, ...]:
    """Return the paths of the ``--files-from`` list (none without one)."""
    if not inputs.files_from:
        return ()
    return tuple(read_path_list(read_input_bytes(inputs.files_from), null=inputs.null))


def input_paths(inputs: Inputs, *, quiet: bool) -> list[str]:
    """Return the PATH arguments followed by the ``--files-from`` list.

    Raises:
        click.UsageError: when no input was given at all, or two inputs claim stdin.
    """
    if not inputs.paths and not inputs.files_from and not inputs.records:
        raise click.UsageError("give at least one PATH, --files-from FILE or --jsonl FILE")
    if inputs.files_from == "-" and STDIN in inputs.jsonl:
        raise click.UsageError("--files-from and --jsonl cannot both read stdin")
    if inputs.jsonl and not quiet:
        _warn_unquoted_glob(inputs.paths)
    listed = read_listed(inputs) if inputs.listed is None else inputs.listed
    return [*inputs.paths, *listed]


def _warn_unquoted_glob(paths: Sequence[str]) -> None:
    """Warn when PATHs look like the rest of a ``--jsonl`` glob the shell expanded.

    ``--jsonl data/*.jsonl`` unquoted becomes ``--jsonl data/a.jsonl data/b.jsonl``: the
    second file is then a PATH, read as one text document. simdup cannot tell that from a
    deliberate PATH, so it reads it as asked and says how to read it as records.
    """
    looks = [p for p in paths if is_jsonl_name(p)]
    if looks:
        names = ", ".join(printable(p) for p in looks)
        what = "is a PATH," if len(looks) == 1 else f"are {len(looks)} PATHs, each"
        checkpoint()
        click.echo(
            f"warning: {names} {what} read as one text document; to read JSON Lines files "
            "as records, quote the glob (--jsonl 'data/*.jsonl') or repeat --jsonl",
            err=True,
        )


def table_parts(inputs: Inputs, *, split: bool = False) -> list[TablePart]:
    """Return the ``--parquet`` files, then the ``--arrow`` datasets' files, as parts.

    Each option's shards are checked first (one schema, a text column of strings), from
    their footers and headers, before any row is read; ``split`` cuts Parquet files into
    their row groups.
    """
    from simdup.inputs.tables import saved_dataset_files
    from simdup.inputs.tables import table_parts as checked_parts

    parts: list[TablePart] = []
    if inputs.parquet:
        parts += checked_parts(inputs.parquet, "parquet", inputs.fields, split=split)[0]
    if inputs.arrow:
        files = [f for directory in inputs.arrow for f in saved_dataset_files(directory)]
        parts += checked_parts(files, "arrow", inputs.fields)[0]
    return parts


def record_inputs(inputs: Inputs) -> Iterator[tuple[str, list[Document], list[Skip]]]:
    """Yield each record input: ``--jsonl`` in the option's order, then the table files.

    Each comes with its origin (``jsonl:LABEL``, ``parquet:FILE``, ``arrow:FILE``),
    documents and skips. Ids repeated within a JSON Lines file
    are skipped there (``FILE:LINE``); a name repeated across inputs, or within a table,
    is left for the caller.

    Raises:
        SimdupError: when an input cannot be opened, is a corrupt gzip stream, or is a
            table that cannot be read as asked.
    """
    fields = inputs.fields
    for name in inputs.jsonl:
        yield f"jsonl:{input_label(name)}", *jsonl_records(inputs, name)
    if inputs.tables:
        from simdup.inputs.gather import read_records

        for part in table_parts(inputs):
            documents, skipped, _ = read_records(part, fields)
            yield f"{part.kind}:{part.label}", records_text(documents, inputs.read.text), skipped


def _spooled(name: str, spool: SpillDir) -> str:
    """Copy the ``--jsonl`` input ``name`` (decompressed) into ``spool``; return the copy."""
    if name != STDIN:
        with opened(name) as handle:
            return spool_jsonl(name, handle, spool)
    try:
        return spool_jsonl(STDIN_LABEL, sys.stdin.buffer, spool)
    except SpillError:
        raise
    except OSError as exc:
        raise RunError(f"cannot read standard input: {exc.strerror or exc}") from exc


def jsonl_records(inputs: Inputs, name: str) -> tuple[list[Document], list[Skip]]:
    """Return the documents and skips of the ``--jsonl`` input ``name``, read whole."""
    label = input_label(name)
    data = read_input_bytes(STDIN) if name == STDIN else None
    documents, skipped = read_jsonl_input(label, inputs.fields, data)
    return records_text(documents, inputs.read.text), skipped


def read_record_inputs(inputs: Inputs) -> tuple[list[Document], list[Skip]]:
    """Return the records of every record input, in the options' order, and their skips."""
    documents: list[Document] = []
    skipped: list[Skip] = []
    for _, more, more_skipped in record_inputs(inputs):
        documents += more
        skipped += more_skipped
    return documents, skipped


def name_record_inputs(
    inputs: Inputs, spool: SpillDir | None = None, over: PieceMap = index_pieces
) -> tuple[list[Document | LineColumns], list[Skip]]:
    """Return the records of every record input as :func:`read_record_inputs` does, but named.

    JSON Lines records come as :class:`LineColumns` (where their lines are, not their
    texts), read again by the workers that count them: those of local, uncompressed files
    from the files, those of other inputs (gzip, pipes, URLs, standard input) from a copy
    in ``spool``, or, without one, read whole; ``over`` indexes their pieces. Table
    inputs are read whole.
    """
    documents: list[Document | LineColumns] = []
    skipped: list[Skip] = []
    for name in inputs.jsonl:
        indexed = index_jsonl(name, inputs.fields, over=over) if name != STDIN else None
        if indexed is None and spool is not None:
            copy, label = _spooled(name, spool), input_label(name)
            indexed = index_jsonl(copy, inputs.fields, label=label, over=over)
        if indexed is None:
            more, more_skipped = jsonl_records(inputs, name)
            documents += more
        else:
            documents.append(indexed[0])
            more_skipped = indexed[1]
        skipped += more_skipped
    for _, more, more_skipped in record_inputs(replace(inputs, jsonl=())):
        documents += more
        skipped += more_skipped
    return documents, skipped


def gather(inputs: Inputs, progress: Progress, *, quiet: bool) -> tuple[list[Document], list[Skip]]:
    """Return the documents named on the command line and the inputs skipped.

    Raises:
        click.UsageError: when no input was given at all.
    """
    all_paths = input_paths(inputs, quiet=quiet)
    documents: list[Document] = []
    skipped: list[Skip] = []
    with user_errors():
        if all_paths:
            documents, skipped = load_corpus(all_paths, inputs.read, progress=progress)
        more, more_skipped = read_record_inputs(inputs)
        documents += more
        skipped += more_skipped
    unique, duplicates = unique_names(documents)
    return unique, [*skipped, *duplicates]


def gather_with_stdin(
    inputs: Inputs, progress: Progress, *, quiet: bool
) -> tuple[list[Document], list[Skip]]:
    """Return the documents named on the command line, where a PATH ``-`` is one from stdin.

    The document read from stdin, named ``-``, comes after the others.
    """
    others, stdin = split_stdin(inputs)
    documents, skipped = gather(others, progress, quiet=quiet) if others else ([], [])
    return [*documents, *stdin], skipped


def split_stdin(inputs: Inputs) -> tuple[Inputs | None, list[Document]]:
    """Return the inputs but a PATH ``-``, and the document read from stdin for it.

    The inputs are None when there are no others; the document is named ``-`` (none
    without a PATH ``-``).
    """
    text = read_input_bytes("-") if "-" in inputs.paths else None
    others = replace(inputs, paths=tuple(p for p in inputs.paths if p != "-"))
    with user_errors():
        stdin = [] if text is None else [Document("-", decode(text, inputs.read))]
    return (others if others.paths or others.files_from or others.records else None), stdin


def gather_names(
    inputs: Inputs,
    meter: Meter,
    *,
    quiet: bool,
    spool: SpillDir | None = None,
    over: PieceMap = index_pieces,
    documents: Sequence[Document] = (),
) -> tuple[InputSet, list[Skip]]:
    """Return the files (as names, not yet read) and records named on the command line.

    Also returns the JSON Lines records that were skipped. Files and records are read
    later, by the workers that count them (records of inputs that cannot be read by byte
    ranges from their copy in ``spool``, their pieces indexed by ``over``: see
    :func:`name_record_inputs`). ``documents`` come after the records.

    Raises:
        click.UsageError: when no input was given at all.
    """
    all_paths = input_paths(inputs, quiet=quiet)
    with user_errors():
        records, skipped = name_record_inputs(inputs, spool, over)
        found = gather_inputs(all_paths, inputs.read, [*records, *documents], meter=meter)
    if not quiet:
        warn_unmatched(found.unmatched)
    return found, skipped


def gather_names_with_stdin(
    inputs: Inputs,
    meter: Meter,
    *,
    quiet: bool,
    spool: SpillDir | None = None,
    over: PieceMap = index_pieces,
) -> tuple[InputSet, list[Skip]]:
    """:func:`gather_names`, where a PATH ``-`` is one document from stdin, named ``-``.

    It comes after the others in the order given (:attr:`InputSet.arrival`).
    """
    others, stdin = split_stdin(inputs)
    if others is None:
        return gather_inputs([], inputs.read, stdin), []
    return gather_names(others, meter, quiet=quiet, spool=spool, over=over, documents=stdin)


def warn_unmatched(patterns: Sequence[str]) -> None:
    """Warn of each ``--include`` glob that matched no file (a typo reads nothing)."""
    for pattern in patterns:
        checkpoint()
        click.echo(
            f"warning: --include {printable(pattern)!s} matched no file; a glob matches a "
            "file's name or its path under the PATH given (quote it from the shell)",
            err=True,
        )
