"""What a scan reads: files found under its roots and documents given, in name order.

Inputs travel as names (a :class:`~simdup.inputs.files.Source` per file, a
:class:`~simdup.inputs.jsonl.JsonlPart` per JSON Lines input, a
:class:`~simdup.inputs.tables.TablePart` per Parquet file, row group or Arrow stream;
documents already in memory as themselves) until a worker reads them, a chunk at a time, with
:func:`read_chunk`: the one reader behind every engine and command that reads inputs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from simdup.inputs.columns import first_names
from simdup.inputs.files import FileState, ReadOptions, Source, read_documents, read_source
from simdup.inputs.jsonl import (
    JsonlLine,
    JsonlOptions,
    JsonlPart,
    LineReader,
    read_jsonl,
    read_jsonl_bytes,
)
from simdup.inputs.lines import LineColumns
from simdup.inputs.names import DUPLICATE_NAME, first_named
from simdup.inputs.tables import TablePart, read_table_part
from simdup.inputs.walk import find_files
from simdup.model import Document, Skip
from simdup.packed import MadeSequence, PackedStrings, Positions
from simdup.progress import Meter, Progress, no_meter, no_progress
from simdup.text.markup import read_text

#: An input of a scan: a file, a JSON Lines input, record or table part to read, or a document.
Input = Source | Document | JsonlPart | JsonlLine | TablePart

#: An input named by its own name, as a scan sorts them: a file, a record, a document.
Named = Source | Document | JsonlLine


@dataclass(frozen=True)
class InputSet:
    """What a scan reads: inputs in name order, and what was skipped before reading.

    Attributes:
        inputs: Files, records and documents, each name once, sorted by name.
        skipped: Inputs left out while walking (links, special files, unreadable roots).
        duplicates: Documents left out for sharing a name with an earlier input.
        unmatched: ``--include`` globs that matched no file while walking.
        arrival: For each input, a rank in the order given (the files in name order,
            then the documents and records as given): a listing made in that order
            sorts by it (None: the inputs' own order).
    """

    inputs: Sequence[Named]
    skipped: list[Skip]
    duplicates: list[Skip]
    unmatched: list[str] = field(default_factory=list)
    arrival: Positions | None = None

    def arrival_of(self, names: Sequence[str]) -> Positions:
        """Return the rank in :attr:`arrival` of each of ``names``, some inputs' in order.

        ``names`` are those of the inputs a stage kept (those it could read, and with
        features), in the inputs' order.

        >>> found = gather_inputs([], ReadOptions(), [Document("b", "x"), Document("a", "y")])
        >>> found.arrival_of(["a", "b"]).tolist(), found.arrival_of(["b"]).tolist()
        ([1, 0], [0])
        """
        count = len(self.inputs)
        arrival = np.arange(count, dtype=np.int64) if self.arrival is None else self.arrival
        if len(names) == count:
            return arrival
        ranks = np.zeros(len(names), dtype=np.int64)
        found = 0
        for lo in range(0, count, _NAMES_AT_ONCE):
            for k, name in enumerate(input_names(self.inputs, lo, lo + _NAMES_AT_ONCE), lo):
                if found < len(names) and name == names[found]:
                    ranks[found] = arrival[k]
                    found += 1
        if found != len(names):
            raise ValueError("names are not those of some inputs, in their order")
        return ranks


#: Inputs whose names are looked at together (records in columns are made a batch at a time).
_NAMES_AT_ONCE = 1 << 16


def input_names(inputs: Sequence[Named], lo: int, hi: int) -> list[str]:
    """Return the names of ``inputs[lo:hi]``; records in columns are not made for them.

    >>> input_names([Document("a", "x"), Document("b", "y")], 1, 2)
    ['b']
    """
    if isinstance(inputs, NamedView):
        return inputs.names(range(lo, min(hi, len(inputs))))
    return [item.name for item in inputs[lo:hi]]


def gather_inputs(
    paths: Iterable[str],
    options: ReadOptions,
    documents: Iterable[Document | JsonlLine | LineColumns] = (),
    *,
    meter: Meter = no_meter,
) -> InputSet:
    """Return the files under ``paths`` and the given ``documents``, in name order.

    A document (or record) named like a file, or like an earlier one, is skipped as a
    duplicate. ``documents`` may hold a JSON Lines file's records as columns
    (:func:`~simdup.inputs.lines.index_jsonl`): they stay columns.
    ``meter`` is told each file found while walking (label ``walk``).
    """
    unmatched: list[str] = []
    sources, skipped = find_files(paths, options, meter=meter, unmatched=unmatched)
    inputs, duplicates, arrival = first_in_name_order(sources, list(documents))
    return InputSet(inputs, skipped, duplicates, unmatched, arrival)


def first_in_name_order(
    sources: Sequence[Source], items: Sequence[Document | JsonlLine | LineColumns]
) -> tuple[Sequence[Named], list[Skip], Positions]:
    """Return the files and the first item of each other name, in name order; skip the rest.

    The rule of :func:`~simdup.inputs.names.first_named`: a file keeps its name (files are
    named once each), then the first in ``items`` does. Records in columns keep theirs by
    :func:`~simdup.inputs.columns.first_names` on their packed names, so that millions of
    records are never each an object. Also returns each input's rank in the order given
    (``sources``, then ``items``): see :attr:`InputSet.arrival`.

    >>> kept, skipped, arrival = first_in_name_order(
    ...     [], [Document("b", "x"), Document("a", "y"), Document("b", "z")])
    >>> [d.text for d in kept], [(s.path, s.reason) for s in skipped], arrival.tolist()
    (['y', 'x'], [('b', 'duplicate document name')], [1, 0])
    """
    held = [item for item in items if not isinstance(item, LineColumns)]
    if len(held) == len(items):  # no columns: objects are sorted as they are, sooner
        kept, duplicates = unique_names(held, {source.name for source in sources})
        listed: list[Named] = [*sources, *kept]
        order = sorted(range(len(listed)), key=lambda k: listed[k].name)
        return [listed[k] for k in order], duplicates, np.array(order, dtype=np.int64)
    objects: list[Named] = []
    blocks: list[LineColumns] = []
    parts: list[PackedStrings] = []
    which: list[npt.NDArray[np.int64]] = []
    held_records = 0  # records in the blocks so far
    for more in _runs([*sources, *items]):
        if isinstance(more, LineColumns):
            parts.append(more.names)
            which.append(np.arange(held_records, held_records + len(more), dtype=np.int64))
            blocks.append(more)
            held_records += len(more)
        else:
            parts.append(PackedStrings.of(item.name for item in more))
            which.append(-1 - np.arange(len(objects), len(objects) + len(more), dtype=np.int64))
            objects += more
    if not objects and len(blocks) == 1:  # its names are unique already
        return NamedView([], blocks, blocks[0].by_name), [], blocks[0].by_name
    names = PackedStrings.joined(parts) if parts else PackedStrings.of([])
    first, repeats = first_names(names)
    duplicates = [Skip(names[k], DUPLICATE_NAME) for k in repeats.tolist()]
    chosen = np.concatenate([np.zeros(0, np.int64), *which])[first]
    return NamedView(objects, blocks, chosen), duplicates, first


def _runs(items: Sequence[Named | LineColumns]) -> Iterator[LineColumns | list[Named]]:
    """Yield the blocks of records in ``items``, and the inputs between them as lists."""
    run: list[Named] = []
    for item in items:
        if isinstance(item, LineColumns):
            if run:
                yield run
                run = []
            yield item
        else:
            run.append(item)
    if run:
        yield run


class NamedView(MadeSequence[Named]):
    """Inputs in a chosen order, some held as objects and some as records in columns.

    ``which[k]`` is item ``k``: a record of ``blocks`` (counted across them) when at
    least 0, else ``objects[-1 - which[k]]``. Items are made as they are asked for.
    """

    def __init__(
        self, objects: list[Named], blocks: list[LineColumns], which: npt.NDArray[np.int64]
    ) -> None:
        self.objects = objects
        self.blocks = blocks
        self.which = which
        self._starts = np.cumsum([0, *(len(block) for block in blocks)])

    def __len__(self) -> int:
        return len(self.which)

    def made(self, position: int) -> Named:
        """Return the input at ``position``."""
        return self.made_many(range(position, position + 1))[0]

    def made_many(self, positions: range) -> list[Named]:
        """Return the inputs at ``positions``, looking their blocks up together."""
        picked, blocks = self._located(positions)
        items: list[Named] = []
        for k, b in zip(picked.tolist(), blocks.tolist(), strict=True):
            if k < 0:
                items.append(self.objects[-1 - k])
            else:
                items.append(self.blocks[b][k - int(self._starts[b])])
        return items

    def names(self, positions: range) -> list[str]:
        """Return the names of the inputs at ``positions``, without making them.

        A block's are taken from its packed names a batch at a time: a third of the time
        of making its records.
        """
        picked, blocks = self._located(positions)
        out = [self.objects[-1 - k].name if k < 0 else "" for k in picked.tolist()]
        for b, block in enumerate(self.blocks):
            at = np.flatnonzero(blocks == b)
            local = picked[at] - int(self._starts[b])
            for i, name in zip(at.tolist(), block.names.take(local), strict=True):
                out[i] = name
        return out

    def _located(self, positions: range) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.intp]]:
        """Return ``which`` of ``positions``, and the block of each (-1: an object)."""
        picked = self.which[np.arange(positions.start, positions.stop, positions.step)]
        return picked, np.searchsorted(self._starts, picked, side="right") - 1


D = TypeVar("D", bound=Document | JsonlLine)


def unique_names(
    documents: Iterable[D], taken: set[str] | None = None
) -> tuple[list[D], list[Skip]]:
    """Return the documents whose name is not ``taken`` or earlier, and skips for the rest.

    >>> kept, skipped = unique_names([Document("a", "x"), Document("a", "y")])
    >>> [d.text for d in kept], [s.reason for s in skipped]
    (['x'], ['duplicate document name'])
    """
    kept, repeats = first_named(documents, lambda doc: doc.name, taken or ())
    return kept, [Skip(doc.name, DUPLICATE_NAME) for doc in repeats]


@dataclass
class ReadChunk:
    """A chunk of inputs as read.

    Attributes:
        documents: The documents read, in input order (a JSON Lines input gives many).
        skipped: The inputs that were not read, with the reason, in input order.
        size: Bytes read (characters for documents already in memory).
        states: One per document: its file as read when asked for, else None.
    """

    documents: list[Document] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    size: int = 0
    states: list[FileState | None] = field(default_factory=list)


def read_chunk(
    inputs: Iterable[Input],
    options: ReadOptions,
    fields: JsonlOptions | None = None,
    *,
    state: bool = False,
) -> ReadChunk:
    """Read and decode inputs: files, JSON Lines and table inputs, documents in memory.

    Args:
        inputs: The inputs, read in order.
        options: How files are read and decoded.
        fields: Which fields of a record (JSON Lines line, table row) hold the text and id.
        state: Also keep each file's :class:`~simdup.inputs.files.FileState`, taken in
            the same read.

    Raises:
        InputError: a JSON Lines or table input cannot be read (a file that cannot be
            read is a skip instead).
    """
    chunk = ReadChunk()
    lines = LineReader()
    try:
        for item in inputs:
            _read_item(item, options, fields, chunk, lines, state=state)
    finally:
        lines.close()
    return chunk


def _read_item(
    item: Input,
    options: ReadOptions,
    fields: JsonlOptions | None,
    chunk: ReadChunk,
    lines: LineReader,
    *,
    state: bool,
) -> None:
    """Read one input into ``chunk`` (see :func:`read_chunk`)."""
    if isinstance(item, JsonlLine):  # read as the document it was indexed for
        item = records_text([lines.read(item)], options.text, words=options.words)[0]
    if isinstance(item, Document):
        chunk.documents.append(item)
        chunk.states.append(None)
        chunk.size += len(item.text)
    elif isinstance(item, (JsonlPart, TablePart)):
        documents, skipped, size = read_records(item, fields or JsonlOptions())
        documents = records_text(documents, options.text, words=options.words)
        chunk.documents += documents
        chunk.states += [None] * len(documents)
        chunk.skipped += skipped
        chunk.size += size
    else:
        found, size, held = read_source(item, options, state=state)
        if isinstance(found, Skip):
            chunk.skipped.append(found)
            return
        chunk.documents.append(found)
        chunk.states.append(held)
        chunk.size += size


def read_records(
    item: JsonlPart | TablePart, fields: JsonlOptions
) -> tuple[list[Document], list[Skip], int]:
    """Return the documents of a JSON Lines or table input, its skips, and the bytes read."""
    if isinstance(item, TablePart):
        return read_table_part(item, fields)
    data = read_jsonl_bytes(item.label, item.data)
    return (*read_jsonl(item.label, data, fields), len(data))


def records_text(documents: list[Document], mode: str, *, words: bool = False) -> list[Document]:
    """Return records (lines, table rows) read as ``--text`` asks: as they are, or as markup.

    Records have no file name to choose by, so ``auto`` reads them as plain text.
    ``words``: only their words are kept (:func:`simdup.text.markup.read_text`).
    """
    if mode in ("auto", "plain"):
        return documents
    return [Document(doc.name, read_text(doc.text, mode, words=words)) for doc in documents]


def read_named(
    inputs: Iterable[Named], names: Iterable[str], options: ReadOptions
) -> list[Document]:
    """Return the documents of the inputs named ``names``, reading those files again.

    For reports that show a few texts (the HTML pair views) after a scan that kept none.
    A file that can no longer be read is left out.
    """
    wanted = set(names)
    return read_chunk([item for item in inputs if item.name in wanted], options).documents


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
