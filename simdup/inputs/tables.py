"""Parquet files and saved Arrow datasets: rows to documents, a batch of rows at a time.

Text at scale is kept in Parquet (``part-00.parquet`` ...) and in Hugging Face datasets
saved to disk (``datasets.save_to_disk``: Arrow IPC streams listed, in order, by the
directory's ``state.json``). Both are read with pyarrow (the ``parquet`` extra) and
without the ``datasets`` package, one record batch at a time, so memory follows the batch
and not the file. This module is also the one place that writes Parquet.

A row is a record as a JSON Lines line is: ``--text-field`` and ``--id-field`` (a nested
struct field by dotted path, ``meta.url``) give its text and its id, and it is named by
:func:`simdup.inputs.jsonl.record_name`. A row whose text is null is skipped as
``FILE:ROW``. Content that cannot be read as asked (a file that is not Parquet or is
damaged, a text column that is missing or holds no strings, shards whose schemas differ)
is a :class:`~simdup.errors.DatasetError`.

A :class:`TablePart` is what one reader reads: a whole file, or one row group of a Parquet
file (a read task of the Dask engine). So that the cut never changes a result, repeated
ids are left to the rule every scan applies to repeated names (the first in input order
is kept), whichever row group they are in.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from io import RawIOBase
from typing import Any, BinaryIO, Literal

from simdup.errors import DatasetError, InputError
from simdup.inputs.files import os_reason
from simdup.inputs.jsonl import JsonlOptions, expand_names, record_name
from simdup.inputs.streams import import_fsspec, is_url
from simdup.model import Document, Skip
from simdup.text.display import printable

#: How to get pyarrow, named in the error of a run that needs it.
PARQUET_HINT = "install it with: pip install 'simdup[parquet]'"

#: Rows read at a time: the unit of memory while reading.
BATCH_ROWS = 8192

#: Rows per row group of a Parquet file written from Arrow streams.
GROUP_ROWS = 65_536

#: What a table input is: a Parquet file, or an Arrow IPC stream of a saved dataset.
Kind = Literal["parquet", "arrow"]

#: The option that names each kind, for messages.
OPTION: dict[Kind, str] = {"parquet": "--parquet", "arrow": "--arrow"}


@dataclass(frozen=True)
class TablePart:
    """A table input read where it is needed: a file, or some row groups of a Parquet file.

    Attributes:
        label: The path or URL.
        kind: ``parquet`` or ``arrow``.
        groups: The row groups read (None: the whole file).
        first_row: The number (1-based) in its file of the part's first row.
    """

    label: str
    kind: Kind = "parquet"
    groups: tuple[int, ...] | None = None
    first_row: int = 1


def import_arrow() -> Any:
    """Return pyarrow with its Parquet, IPC and compute modules loaded.

    Raises:
        DatasetError: naming the extra to install, when pyarrow is not installed.
    """
    try:
        for module in ("pyarrow.parquet", "pyarrow.ipc", "pyarrow.compute"):
            importlib.import_module(module)
    except ImportError:
        raise DatasetError(f"Parquet and Arrow need pyarrow; {PARQUET_HINT}") from None
    return importlib.import_module("pyarrow")


def expand_parquet(patterns: Sequence[str]) -> list[str]:
    """Return the Parquet files that ``patterns`` name (as for ``--jsonl``, without stdin).

    >>> expand_parquet([])
    []
    """
    return expand_names(patterns, "Parquet files", "*.parquet", stdin=False)


def saved_dataset_files(directory: str) -> list[str]:
    """Return the Arrow files of a dataset saved with ``save_to_disk``, in their order.

    A dataset lists its files in ``state.json`` (``_data_files``); a dictionary of datasets
    (``dataset_dict.json``) lists its splits, each a saved dataset below it.

    Raises:
        DatasetError: when the directory holds neither, or they cannot be read.
    """
    splits = os.path.join(directory, "dataset_dict.json")
    if os.path.isfile(splits):
        names = _json_entry(splits, "splits")
        return [f for split in names for f in saved_dataset_files(_inside(directory, split))]
    state = os.path.join(directory, "state.json")
    if not os.path.isfile(state):
        raise DatasetError(
            f"{printable(directory)}: not a saved dataset (no state.json or "
            "dataset_dict.json, as datasets.save_to_disk writes)"
        )
    files = _json_entry(state, "_data_files")
    try:
        return [_inside(directory, entry["filename"]) for entry in files]
    except (TypeError, KeyError):
        raise DatasetError(f"{printable(state)}: _data_files lists no file names") from None


def _json_entry(path: str, key: str) -> list[Any]:
    """Return the list under ``key`` of a JSON file."""
    try:
        with open(path, "rb") as handle:
            value = json.load(handle)[key]
    except OSError as exc:
        raise InputError(f"{printable(path)}: {os_reason(exc)}") from None
    except (ValueError, TypeError, KeyError):
        raise DatasetError(f"{printable(path)}: no list {key!r} in it") from None
    if not isinstance(value, list):
        raise DatasetError(f"{printable(path)}: no list {key!r} in it")
    return value


def _inside(directory: str, name: Any) -> str:
    """Return ``name`` joined to ``directory``, refusing names that lead elsewhere."""
    if not isinstance(name, str) or not name or os.path.basename(name) != name or name == "..":
        raise DatasetError(f"{printable(directory)}: {printable(str(name))} is not a file name")
    return os.path.join(directory, name)


def _reason(exc: BaseException) -> str:
    """Return the first line of an error's message, cut short."""
    lines = str(exc).strip().splitlines()
    first = lines[0] if lines else type(exc).__name__
    return printable(first[:200])


@contextmanager
def reading(label: str, kind: Kind) -> Iterator[None]:
    """Turn pyarrow's errors while reading ``label`` into one-line simdup errors.

    A file that cannot be opened is an :class:`InputError`; one that is not of its kind,
    or damaged, a :class:`DatasetError`.
    """
    what = "Parquet file" if kind == "parquet" else "Arrow stream"
    try:
        yield
    except (FileNotFoundError, PermissionError, IsADirectoryError) as exc:
        raise InputError(f"{printable(label)}: {os_reason(exc)}") from None
    except (OSError, ValueError, EOFError) as exc:  # pyarrow's errors are among these
        raise DatasetError(
            f"{printable(label)}: not a readable {what}, or damaged ({_reason(exc)})"
        ) from None


def _open_source(label: str) -> Any:
    """Return a path as it is, or an fsspec file for a URL."""
    if not is_url(label):
        return label
    fs, path = import_fsspec(label).core.url_to_fs(label)
    return fs.open(path, "rb")


def _arrow_reader(pa: Any, label: str) -> Any:
    """Open an Arrow IPC stream (as ``save_to_disk`` writes), or else an IPC file."""
    source = pa.memory_map(label) if not is_url(label) else _open_source(label)
    try:
        return pa.ipc.open_stream(source)
    except pa.ArrowInvalid:
        return pa.ipc.open_file(source)


@dataclass(frozen=True)
class Layout:
    """What a table file's footer or header tells: its schema and its row groups' rows."""

    schema: Any
    group_rows: tuple[int, ...] = ()


def layout(label: str, kind: Kind) -> Layout:
    """Return a table file's schema and row groups, reading no rows of a Parquet file."""
    pa = import_arrow()
    with reading(label, kind):
        if kind == "arrow":
            return Layout(_arrow_reader(pa, label).schema)
        metadata = pa.parquet.ParquetFile(_open_source(label)).metadata
        groups = tuple(metadata.row_group(g).num_rows for g in range(metadata.num_row_groups))
        return Layout(metadata.schema.to_arrow_schema(), groups)


def batches(part: TablePart, columns: Sequence[str] | None = None) -> Iterator[Any]:
    """Yield the record batches of a part in row order (only ``columns`` of a Parquet file)."""
    pa = import_arrow()
    with reading(part.label, part.kind):
        if part.kind == "arrow":
            yield from _arrow_reader(pa, part.label)
            return
        parquet = pa.parquet.ParquetFile(_open_source(part.label))
        groups = range(parquet.num_row_groups) if part.groups is None else part.groups
        for group in groups:
            yield from parquet.iter_batches(
                batch_size=BATCH_ROWS,
                row_groups=[group],
                columns=None if columns is None else list(columns),
            )


def row_groups(part: TablePart) -> Iterator[Any]:
    """Yield a Parquet part's row groups (an Arrow stream's batches) as tables, in order."""
    pa = import_arrow()
    if part.kind == "arrow":
        yield from (pa.Table.from_batches([batch]) for batch in batches(part))
        return
    with reading(part.label, part.kind):
        parquet = pa.parquet.ParquetFile(_open_source(part.label))
        groups = range(parquet.num_row_groups) if part.groups is None else part.groups
        for group in groups:
            yield parquet.read_row_group(group)


def field_path(schema: Any, name: str) -> list[str] | None:
    """Return the column path of a field: its own name, else its dotted path through structs.

    None when there is no such field.
    """
    if name in schema.names:
        return [name]
    path: list[str] = []
    node = schema  # a schema, then the struct types along the path
    for step in name.split("."):
        index = node.get_field_index(step) if hasattr(node, "get_field_index") else -1
        if index < 0:
            return None
        path.append(step)
        node = node.field(index).type
    return path


def field_type(schema: Any, path: Sequence[str]) -> Any:
    """Return the Arrow type of the field at ``path``."""
    kind = schema.field(path[0]).type
    for step in path[1:]:
        kind = kind.field(step).type
    return kind


def is_text_type(pa: Any, kind: Any) -> bool:
    """Tell whether a column of this type holds strings (dictionary-encoded or not)."""
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return bool(
        pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)
    )


def _is_id_type(pa: Any, kind: Any) -> bool:
    """Tell whether ids of this type name records as JSON Lines ids do."""
    t = pa.types
    return bool(
        is_text_type(pa, kind)
        or t.is_integer(kind)
        or t.is_floating(kind)
        or t.is_boolean(kind)
        or t.is_null(kind)
        or t.is_nested(kind)
    )


@dataclass(frozen=True)
class Columns:
    """Where the text, the id and one more field (a time) are in a table's rows."""

    text: list[str]
    id: list[str] | None = None
    extra: list[str] | None = None

    def reads(self) -> list[str]:
        """Return the top-level columns to read."""
        paths = (self.text, self.id, self.extra)
        return list(dict.fromkeys(p[0] for p in paths if p is not None))


def find_columns(
    label: str, schema: Any, fields: JsonlOptions, extra: str | None = None
) -> Columns:
    """Return where the fields are in ``schema``; refuse a missing or non-string text column.

    An id field that is absent names rows by number, as in JSON Lines; so does an absent
    ``extra`` field leave every row without it.

    Raises:
        DatasetError: the text column is missing or holds no strings, or the id column
            holds values that cannot name a record.
    """
    pa = import_arrow()
    name = printable(label)
    text = field_path(schema, fields.text_field)
    if text is None:
        raise DatasetError(
            f"{name}: text field {fields.text_field!r} is missing (columns: "
            f"{', '.join(map(repr, schema.names))}); choose it with --text-field"
        )
    kind = field_type(schema, text)
    if not is_text_type(pa, kind):
        raise DatasetError(
            f"{name}: text field {fields.text_field!r} is a {kind} column, not strings"
        )
    found = field_path(schema, fields.id_field) if fields.id_field else None
    if found is not None and not _is_id_type(pa, kind := field_type(schema, found)):
        raise DatasetError(
            f"{name}: id field {fields.id_field!r} is a {kind} column; give strings or numbers"
        )
    return Columns(text, found, field_path(schema, extra) if extra else None)


def _values(pa: Any, batch: Any, path: list[str] | None) -> list[Any]:
    """Return a field's values in a batch as Python objects (a null struct: null fields)."""
    if path is None:
        return [None] * batch.num_rows
    column = batch.column(path[0])
    for step in path[1:]:
        column = pa.compute.struct_field(column, step)
    return list(column.to_pylist())


def _plain(value: Any) -> Any:
    """Return a time value as JSON Lines would hold it (dates and times as ISO 8601)."""
    return value.isoformat() if isinstance(value, date) else value


#: A row as read: its number, text (None: null), raw id and ``extra`` field value.
Row = tuple[int, str | None, Any, Any]


def read_rows(part: TablePart, columns: Columns) -> Iterator[tuple[list[Row], int]]:
    """Yield the rows of a part a batch at a time, with the batch's bytes in memory."""
    pa = import_arrow()
    number = part.first_row
    for batch in batches(part, columns.reads()):
        texts = _values(pa, batch, columns.text)
        ids = _values(pa, batch, columns.id)
        extras = [_plain(v) for v in _values(pa, batch, columns.extra)]
        rows = list(zip(range(number, number + len(texts)), texts, ids, extras, strict=True))
        number += len(texts)
        yield rows, int(batch.nbytes)


def null_text(fields: JsonlOptions) -> str:
    """Return the reason a row with a null text holds no document."""
    return f"text field {fields.text_field!r} is null"


def read_table_part(
    part: TablePart, fields: JsonlOptions, columns: Columns | None = None
) -> tuple[list[Document], list[Skip], int]:
    """Return the documents of a part, the rows skipped (null texts) and the bytes read.

    ``columns`` are found from the file's schema when not given.

    Raises:
        InputError: when the file cannot be read, or is not of its kind (``DatasetError``).
    """
    if columns is None:
        columns = find_columns(part.label, layout(part.label, part.kind).schema, fields)
    documents: list[Document] = []
    skipped: list[Skip] = []
    size = 0
    for rows, nbytes in read_rows(part, columns):
        size += nbytes
        for number, text, raw_id, _ in rows:
            if text is None:
                skip = Skip(f"{part.label}:{number}", null_text(fields), unreadable=False)
                skipped.append(skip)
            else:
                documents.append(Document(record_name(raw_id, number), text))
    return documents, skipped, size


def _difference(a: Any, b: Any) -> str:
    """Say how schema ``b`` differs from ``a``, in a few words."""
    for field in a:
        index = b.get_field_index(field.name)
        if index < 0:
            return f"no column {field.name!r}"
        if not b.field(index).equals(field):
            return f"column {field.name!r} is {b.field(index).type}, not {field.type}"
    extra = [name for name in b.names if name not in a.names]
    if extra:
        return f"an extra column {extra[0]!r}"
    return "columns in another order"


def table_parts(
    names: Sequence[str],
    kind: Kind,
    fields: JsonlOptions,
    *,
    split: bool = False,
    extra: str | None = None,
) -> tuple[list[TablePart], Any, Columns | None]:
    """Check the shards of one table input and return its parts, schema and columns.

    Only footers (a Parquet file's) or headers (an Arrow stream's) are read: every shard
    must have the first one's schema, and the text field must be a string column, before
    any row is read.

    Args:
        names: The files, in reading order.
        kind: What they are.
        fields: Which fields hold the text and the id.
        split: One part per row group of a Parquet file (else one per file).
        extra: One more field to find (a time field), by dotted path.

    Raises:
        DatasetError: a file is not of its kind or damaged, the schemas differ, or the
            text field cannot be read.
    """
    parts: list[TablePart] = []
    first: tuple[str, Any] | None = None
    columns = None
    for label in names:
        found = layout(label, kind)
        if first is None:
            first = (label, found.schema)
            columns = find_columns(label, found.schema, fields, extra)
        elif not found.schema.equals(first[1], check_metadata=False):
            raise DatasetError(
                f"{printable(label)}: its schema differs from {printable(first[0])}'s "
                f"({_difference(first[1], found.schema)}); the shards of a dataset share one"
            )
        if split and found.group_rows:
            row = 1
            for group, rows in enumerate(found.group_rows):
                parts.append(TablePart(label, kind, (group,), row))
                row += rows
        else:
            parts.append(TablePart(label, kind))
    return parts, (first[1] if first else None), columns


#: Arrow types of the record fields simdup writes, by name.
FIELD_TYPES = ("string", "int64", "float64", "bool_")


def _safe_text(value: Any) -> Any:
    """Return a string Parquet can hold: lone surrogates written as ``\\udcff`` escapes."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def write_records(
    records: Sequence[dict[str, Any]], types: Sequence[tuple[str, str]], sink: BinaryIO
) -> None:
    """Write JSON-ready records as one Parquet table with the given ``(field, type)`` columns.

    The columns are those of the JSON Lines records, in order, with a fixed type each
    (an empty table keeps them).
    """
    for _ in record_batch_writes([records], types, sink):
        pass


#: Rows of a Parquet row group: pyarrow's own default, so that records written in batches
#: make the file one table of them would.
GROUP_ROWS = 1024 * 1024


def record_batch_writes(
    batches: Iterable[Sequence[dict[str, Any]] | dict[str, list[Any]]],
    types: Sequence[tuple[str, str]],
    sink: BinaryIO | RawIOBase,
    *,
    group_rows: int = GROUP_ROWS,
) -> Iterator[int]:
    """Write records that arrive in batches as :func:`write_records` writes them all at once.

    A batch is a list of records, or their columns by field (a dict of lists). Only a row
    group's records are held as columns at a time: a report of millions of pairs is never
    one list of records. Yields the rows written after each row group, so that what the
    sink took can be passed on before the next (the footer comes last).
    """
    pa = import_arrow()
    schema = pa.schema([(name, getattr(pa, kind)()) for name, kind in types])
    with pa.parquet.ParquetWriter(sink, schema) as writer:
        held: list[Any] = [schema.empty_table()]
        rows = written = 0
        for batch in batches:
            if isinstance(batch, dict):
                columns = {name: batch[name] for name, _ in types}
            else:
                columns = {name: [r[name] for r in batch] for name, _ in types}
            for name, kind in types:
                if kind == "string":
                    columns[name] = [_safe_text(value) for value in columns[name]]
            held.append(pa.table(columns, schema=schema))
            rows += held[-1].num_rows
            while rows >= group_rows:
                table = pa.concat_tables(held).combine_chunks()
                writer.write_table(table.slice(0, group_rows), row_group_size=group_rows)
                held, rows, written = [table.slice(group_rows)], rows - group_rows, written + 1
                yield written * group_rows
        if rows or not written:  # an empty table is written too: it keeps the columns
            writer.write_table(pa.concat_tables(held).combine_chunks(), row_group_size=group_rows)


#: Parquet codecs as a file's metadata names them, as the writer is told them (LZO, which
#: pyarrow cannot write, becomes its default).
_WRITER_CODECS = {"UNCOMPRESSED": "none", "SNAPPY": "snappy", "GZIP": "gzip",
                  "BROTLI": "brotli", "ZSTD": "zstd", "LZ4": "lz4", "LZ4_RAW": "lz4"}  # fmt: skip


def codecs(part: TablePart) -> str | dict[str, str] | None:
    """Return how a Parquet part's columns are compressed, for the writer of its kept rows.

    One codec when every column has the same (the usual case), else one per column path;
    None for an Arrow file or a file without row groups (the writer's default then).

    Raises:
        InputError: when the file can no longer be read (``DatasetError`` when damaged).
    """
    if part.kind != "parquet":
        return None
    pa = import_arrow()
    with reading(part.label, part.kind):
        metadata = pa.parquet.ParquetFile(_open_source(part.label)).metadata
    if metadata.num_row_groups == 0:
        return None
    group = metadata.row_group(0)
    columns = [group.column(i) for i in range(group.num_columns)]
    chosen = {c.path_in_schema: _WRITER_CODECS.get(c.compression, "snappy") for c in columns}
    kinds = set(chosen.values())
    return kinds.pop() if len(kinds) == 1 else chosen


class KeptWriter:
    """Writes the kept rows of a table dataset: its schema, rows in order, in row groups.

    ``compression`` is as :func:`codecs` tells it: kept rows are compressed as their input was.
    """

    def __init__(
        self, schema: Any, sink: BinaryIO, compression: str | dict[str, str] | None = None
    ) -> None:
        self._pa = import_arrow()
        self._writer = self._pa.parquet.ParquetWriter(
            sink, schema, compression=compression or "snappy"
        )
        self._held: list[Any] = []
        self._rows = 0

    def write(self, table: Any, keep: Any) -> int:
        """Write the rows of ``table`` where ``keep`` is True; return how many.

        A Parquet row group stays one row group (its kept rows); the batches of an Arrow
        stream are gathered into groups of about :data:`GROUP_ROWS`.
        """
        kept = table.filter(self._pa.array(keep, type=self._pa.bool_()))
        self._held.append(kept)
        self._rows += kept.num_rows
        return int(kept.num_rows)

    def flush(self, *, whole: bool = True) -> None:
        """Write the rows held as one row group (with ``whole=False``: once there are enough)."""
        if self._rows and (whole or self._rows >= GROUP_ROWS):
            held = self._pa.concat_tables(self._held)
            self._writer.write_table(held, row_group_size=max(held.num_rows, 1))
            self._held, self._rows = [], 0

    def close(self) -> None:
        """Write what is held and the file's footer."""
        self.flush()
        self._writer.close()
