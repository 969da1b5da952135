"""Table datasets for deduplication: Parquet files and saved Arrow datasets, and their kept rows.

A table is deduplicated as a JSON Lines file is (:mod:`simdup.dedupe.jsonl`): each row is
a record, rows with a null text are kept as they are and reported, ids may repeat. Only
the text, id and time columns are held while the plan is made; the kept output is then
written by reading the shards again, a row group at a time, every column and the schema
unchanged, rows in input order. Rows are numbered across the shards (1-based), and a
removal names its row by that number.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from simdup.dedupe.jsonl import Records
from simdup.inputs.jsonl import JsonlOptions, record_name
from simdup.inputs.tables import KeptWriter, TablePart, codecs, null_text, read_rows, row_groups
from simdup.model import Document, Skip


@dataclass
class TableDataset(Records):
    """The records of a table dataset (its shards in order), without their other columns.

    Attributes:
        parts: The shards, in order.
        schema: Their schema (the first shard's, which every other one has).
        rows: How many rows the shards hold.
    """

    parts: list[TablePart] = field(default_factory=list)
    schema: Any = None
    rows: int = 0

    def __len__(self) -> int:
        return self.rows


def read_table_dataset(
    parts: Sequence[TablePart],
    schema: Any,
    columns: Any,
    fields: JsonlOptions,
    *,
    label: str,
    time_field: str | None = None,
) -> TableDataset:
    """Read the text, id and time of every row of checked shards, a batch at a time.

    Args:
        parts: The shards (from :func:`simdup.inputs.tables.table_parts`), whole files.
        schema: Their schema.
        columns: Where the fields are (:class:`simdup.inputs.tables.Columns`, with the
            time field as its extra field).
        fields: Which fields hold the text and the id.
        label: The dataset's name in messages.
        time_field: See :func:`simdup.dedupe.jsonl.parse_dataset`.

    Raises:
        InputError: when a shard cannot be read (``DatasetError`` when it is damaged).
    """
    dataset = TableDataset(label, parts=list(parts), schema=schema, time_field=time_field)
    reason = null_text(fields)
    for part in parts:
        for rows, _ in read_rows(part, columns):
            for number, text, raw_id, raw_time in rows:
                row = dataset.rows + 1
                dataset.rows = row
                if text is None:
                    skip = Skip(f"{part.label}:{number}", reason, unreadable=False)
                    dataset.add(row, skip, 0, "row")
                else:
                    document = Document(record_name(raw_id, row), text)
                    size = len(text.encode("utf-8", "replace"))
                    dataset.add(row, (document, raw_time), size, "row")
    dataset.finish()
    return dataset


def write_kept_rows(dataset: TableDataset, removed: npt.NDArray[np.bool_], handle: BinaryIO) -> int:
    """Write every row not ``removed`` as Parquet, in input order; return the rows written.

    A Parquet row group stays a row group of the output (its kept rows), compressed as
    the first shard's columns are; an Arrow dataset's batches are gathered into row groups.

    Raises:
        InputError: when a shard can no longer be read (``DatasetError`` when damaged).
    """
    first = dataset.parts[0] if dataset.parts else None
    writer = KeptWriter(dataset.schema, handle, codecs(first) if first else None)
    kept = ~removed
    done = written = 0
    for part in dataset.parts:
        for table in row_groups(part):
            written += writer.write(table, kept[done : done + table.num_rows])
            done += table.num_rows
            writer.flush(whole=part.kind == "parquet")
    writer.close()
    return written
