"""What a distributed scan reads, named rather than read, and its read partitions.

The client of a distributed scan never holds the corpus: it walks directories for names,
and each partition (a group of files, or one JSON Lines input) is read by a worker.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from simdup.inputs.files import ReadOptions
from simdup.inputs.gather import Input
from simdup.inputs.jsonl import JsonlOptions, JsonlPart
from simdup.inputs.tables import TablePart
from simdup.inputs.walk import find_files
from simdup.model import Document, Skip

#: Files read by one task: enough to outweigh a task's overhead (about a millisecond).
FILES_PER_PARTITION = 2_000

#: Partitions of the files per worker, at least (while partitions stay above one file).
TASKS_PER_WORKER = 4


@dataclass(frozen=True)
class Inputs:
    """What a distributed scan reads: the local engine's inputs, named, not read.

    Attributes:
        paths: Files and directories, walked by the client (names only), read by workers.
        jsonl: JSON Lines inputs, one read task each: paths or fsspec URLs (as strings or
            :class:`JsonlPart`), or bytes already read (stdin) as ``JsonlPart(label, data)``.
            Globs are not expanded here: :func:`simdup.inputs.jsonl.expand_jsonl` does it.
        tables: Table inputs, one read task each (a Parquet row group, an Arrow file).
        read_options: How files are found and decoded.
        fields: Which fields of a JSON Lines record hold the text and the id.
    """

    paths: Sequence[str] = ()
    jsonl: Sequence[JsonlPart | str] = ()
    tables: Sequence[TablePart] = ()
    read_options: ReadOptions = field(default_factory=ReadOptions)
    fields: JsonlOptions = field(default_factory=JsonlOptions)


#: Documents per partition of texts already in memory (see :func:`document_inputs`).
DOCUMENTS_PER_PARTITION = 2_000


def document_inputs(
    documents: Sequence[Document], workers: int = 1, per_partition: int = DOCUMENTS_PER_PARTITION
) -> Inputs:
    """Return documents already read (names unique) as inputs of a distributed scan.

    For callers that hold the texts anyway (``simdup dedupe`` writes the kept lines back):
    the documents travel to the workers as JSON Lines partitions of at most
    ``per_partition`` records, at least :data:`TASKS_PER_WORKER` per worker, and are read
    back to the same names and texts (JSON escapes every character, lone surrogates too).
    """
    spread = -(-len(documents) // (TASKS_PER_WORKER * max(1, workers)))
    step = max(1, min(per_partition, spread))
    parts = []
    for lo in range(0, len(documents), step):
        lines = [json.dumps({"id": d.name, "text": d.text}) for d in documents[lo : lo + step]]
        data = "".join(line + "\n" for line in lines).encode("ascii")
        parts.append(JsonlPart(f"<documents {lo + 1}-{lo + len(lines)}>", data))
    return Inputs(jsonl=parts)


def read_partitions(
    inputs: Inputs, files_per_partition: int, workers: int
) -> tuple[list[tuple[Input, ...]], list[Skip]]:
    """Return the read partitions in the local engine's input order, and the walk's skips.

    A partition is a chunk of inputs for :func:`simdup.engines.dask.partitions.read_part`:
    files cut into at least :data:`TASKS_PER_WORKER` partitions per worker (so small
    corpora spread too) of at most ``files_per_partition`` files, then each JSON Lines
    input alone, then each table part alone.
    """
    parts: list[tuple[Input, ...]] = []
    skipped: list[Skip] = []
    if inputs.paths:
        sources, skipped = find_files(inputs.paths, inputs.read_options)
        spread = -(-len(sources) // (TASKS_PER_WORKER * max(1, workers)))
        step = max(1, min(files_per_partition, spread))
        parts += [tuple(sources[lo : lo + step]) for lo in range(0, len(sources), step)]
    parts += [(JsonlPart(p) if isinstance(p, str) else p,) for p in inputs.jsonl]
    parts += [(part,) for part in inputs.tables]
    return parts, skipped
