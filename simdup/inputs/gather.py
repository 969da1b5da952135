"""What a scan reads: files found under its roots and documents given, in name order.

Inputs travel as names (a :class:`~simdup.inputs.files.Source` per file; documents
already in memory, such as JSON Lines records, as themselves) until a worker reads them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from simdup.inputs.files import (
    ReadOptions,
    Source,
    read_documents,
    read_source,
)
from simdup.inputs.walk import find_files
from simdup.model import Document, Skip
from simdup.progress import Meter, Progress, no_meter, no_progress

#: An input of a scan: a file to read, or a document already in memory.
Input = Source | Document


@dataclass(frozen=True)
class InputSet:
    """What a scan reads: inputs in name order, and what was skipped before reading.

    Attributes:
        inputs: Files and documents, each name once, sorted by name.
        skipped: Inputs left out while walking (links, special files, unreadable roots).
        duplicates: Documents left out for sharing a name with an earlier input.
    """

    inputs: list[Input]
    skipped: list[Skip]
    duplicates: list[Skip]


def gather_inputs(
    paths: Iterable[str],
    options: ReadOptions,
    documents: Iterable[Document] = (),
    *,
    meter: Meter = no_meter,
) -> InputSet:
    """Return the files under ``paths`` and the given ``documents``, in name order.

    A document named like a file, or like an earlier document, is skipped as a duplicate.
    ``meter`` is told each file found while walking (label ``walk``).
    """
    sources, skipped = find_files(paths, options, meter=meter)
    kept, duplicates = unique_names(documents, {s.name for s in sources})
    inputs: list[Input] = [*sources, *kept]
    inputs.sort(key=lambda item: item.name)
    return InputSet(inputs, skipped, duplicates)


def unique_names(
    documents: Iterable[Document], taken: set[str] | None = None
) -> tuple[list[Document], list[Skip]]:
    """Return the documents whose name is not ``taken`` or earlier, and skips for the rest.

    >>> kept, skipped = unique_names([Document("a", "x"), Document("a", "y")])
    >>> [d.text for d in kept], [s.reason for s in skipped]
    (['x'], ['duplicate document name'])
    """
    names = set() if taken is None else set(taken)
    kept: list[Document] = []
    duplicates: list[Skip] = []
    for doc in documents:
        if doc.name in names:
            duplicates.append(Skip(doc.name, "duplicate document name"))
            continue
        names.add(doc.name)
        kept.append(doc)
    return kept, duplicates


def read_named(
    inputs: Iterable[Input], names: Iterable[str], options: ReadOptions
) -> list[Document]:
    """Return the documents of the inputs named ``names``, reading those files again.

    For reports that show a few texts (the HTML pair views) after a scan that kept none.
    A file that can no longer be read is left out.
    """
    wanted = set(names)
    out = []
    for item in inputs:
        if item.name not in wanted:
            continue
        found = item if isinstance(item, Document) else read_source(item, options)[0]
        if isinstance(found, Document):
            out.append(found)
    return out


def read_path_list(data: bytes, *, null: bool = False) -> list[str]:
    """Split a ``--files-from`` list: NUL-separated with ``null``, else one path per line.

    Empty entries are ignored; paths are decoded like file names (surrogate escapes).

    >>> read_path_list(b"a.txt\\nb c.txt\\n\\n")
    ['a.txt', 'b c.txt']
    """
    parts = data.split(b"\0") if null else data.splitlines()
    return [os.fsdecode(p) for p in parts if p]


def load_corpus(
    paths: Sequence[str],
    options: ReadOptions,
    *,
    progress: Progress = no_progress,
) -> tuple[list[Document], list[Skip]]:
    """Find and read every file under ``paths``: documents sorted by name, and skips."""
    sources, skipped = find_files(paths, options)
    documents, unread = read_documents(sources, options, progress=progress)
    return documents, skipped + unread
