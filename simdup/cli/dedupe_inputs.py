"""``simdup dedupe`` inputs beyond the documents: references, and outputs against inputs."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import click

from simdup.cli.inputs import input_label, read_input_bytes
from simdup.cli.parsed import Inputs
from simdup.cli.status import user_errors
from simdup.dedupe.files import FileState, read_files
from simdup.dedupe.jsonl import Dataset, Records, read_dataset
from simdup.dedupe.keep import Entry
from simdup.index import FingerprintIndex, open_index
from simdup.index.schema import SQLITE_MAGIC
from simdup.inputs.jsonl import STDIN, is_jsonl_name
from simdup.model import Skip
from simdup.params import Params
from simdup.progress import Progress
from simdup.report.dedupe import Named
from simdup.text.display import printable

if TYPE_CHECKING:
    from simdup.dedupe.tables import TableDataset


def _same_file(a: str, b: str) -> bool:
    """Tell whether two paths name one file (existing or not)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def check_outputs(
    outputs: dict[str, str | None],
    inputs: dict[str, str | None],
    *,
    guarded: Sequence[str] = (),
) -> None:
    """Refuse an output that is an input, or two outputs that are one file (before reading).

    Args:
        outputs: Output option -> path.
        inputs: Input (option and path) -> path.
        guarded: Outputs already checked against the inputs by
            :func:`simdup.cli.guard.protect_inputs`; only compared with the other outputs.

    Raises:
        click.UsageError: naming both options and the path.
    """
    given = {k: v for k, v in outputs.items() if v not in (None, "-")}
    sources = {k: v for k, v in inputs.items() if v not in (None, "-")}
    names = list(given)
    for i, name in enumerate(names):
        path = str(given[name])
        for source, input_path in sources.items():
            if name not in guarded and _same_file(path, str(input_path)):
                raise click.UsageError(
                    f"{name} {printable(path)} is the input {source}; "
                    "write the output to another file"
                )
        for other in names[i + 1 :]:
            if _same_file(path, str(given[other])):
                raise click.UsageError(
                    f"{name} and {other} are the same file ({printable(path)}); give two names"
                )


@dataclass
class References:
    """Reference documents read from files, directories and JSON Lines files.

    Attributes:
        entries: The documents.
        named: How each is named in records (its line for JSON Lines).
        files: Each document's file as read (None for a JSON Lines line).
        skipped: Reference inputs not read.
        indexes: simdup indexes (only new documents are fingerprinted against them).
    """

    entries: list[Entry] = field(default_factory=list)
    named: list[Named] = field(default_factory=list)
    files: list[FileState | None] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    indexes: list[FingerprintIndex] = field(default_factory=list)

    def close(self) -> None:
        """Close the indexes opened."""
        for index in self.indexes:
            index.close()


def named_lines(dataset: Records) -> list[Named]:
    """Return how each document of a dataset is named in records: its id and line."""
    return [Named(e.name, n) for e, n in zip(dataset.entries, dataset.lines, strict=True)]


def _is_index(path: str) -> bool:
    """Tell whether ``path`` is an SQLite database (a simdup index) by its first bytes.

    A --reference starting with them is opened as an index.
    """
    try:
        with open(path, "rb") as handle:
            return handle.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def read_references(
    paths: Sequence[str], inputs: Inputs, params: Params, progress: Progress
) -> References:
    """Read every ``--reference``: indexes, JSON Lines files, other files and directories.

    An index is opened and its fingerprint settings checked against ``params`` first, so
    a mismatch is refused (naming both) before any input is read. Files and JSON Lines
    are read as ``inputs`` says.
    """
    refs = References()
    indexes = [p for p in paths if os.path.isfile(p) and _is_index(p)]
    datasets = [p for p in paths if p not in indexes and os.path.isfile(p) and is_jsonl_name(p)]
    files = [p for p in paths if p not in indexes and p not in datasets]
    try:
        with user_errors():
            for path in indexes:
                refs.indexes.append(open_index(path, params=params))
            for path in datasets:
                dataset = read_dataset(path, inputs.fields)
                refs.entries += dataset.entries
                refs.named += named_lines(dataset)
                refs.files += [None] * len(dataset.entries)
                refs.skipped += dataset.skipped
            if files:
                entries, states, skipped = read_files(files, inputs.read, progress=progress)
                refs.entries += entries
                refs.named += [Named(e.name) for e in entries]
                refs.files += states
                refs.skipped += skipped
    except BaseException:
        refs.close()
        raise
    return refs


def read_jsonl_dataset(inputs: Inputs, time_field: str | None) -> Dataset:
    """Read the one ``--jsonl`` dataset (a file, a URL or stdin), every line kept."""
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


def read_records_dataset(inputs: Inputs, time_field: str | None) -> Records:
    """Read the one dataset deduplicated: ``--jsonl``, else the table inputs."""
    if inputs.jsonl:
        return read_jsonl_dataset(inputs, time_field)
    return read_table_dataset(inputs, time_field)


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
