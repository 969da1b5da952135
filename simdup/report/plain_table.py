"""Tables off a terminal: the layout rich gives them, written line by line.

Off a terminal a table has no colour, no box and no width limit, so its layout is plain
columns: each cell padded by one space on either side, justified within the widest cell
of its column. rich lays out any table, but it holds every cell as a styled object and
renders it through its segment machinery, about a millisecond and a kilobyte per row: a
scan of a tree with two million pairs spent minutes and gigabytes there, more than
reading and tokenising the whole tree. Tables of plain text cells in that layout are
written here directly, from the rows' strings, in two passes (column widths, then lines),
byte for byte what rich writes (a property test compares the two); any other table is
left to rich.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import cast

from rich.cells import cell_len
from rich.table import Table
from rich.text import Text


def _cells(text: str) -> int:
    """Return the cells ``text`` takes (one per character of printable ASCII, as rich counts)."""
    return len(text) if text.isascii() else cell_len(text)


#: Justifications written here; any other is left to rich.
_JUSTIFY = ("default", "left", "right")


def _text(cell: object) -> str | None:
    """Return the text of a plain cell (one printable line), or None for rich to lay out.

    Tabs, line feeds and other control characters follow rich's own rules (expansion,
    several lines, which differ between text objects and strings), so rich keeps them.
    """
    if isinstance(cell, Text):
        text = cell.plain
    elif isinstance(cell, str):
        text = cell
    else:
        return None
    return text if text.isprintable() else None


def _plain_layout(table: Table) -> bool:
    """Tell whether ``table`` is laid out as plain padded columns off a terminal."""
    return (
        table.box is None
        and not table.show_edge
        and table.show_header
        and not table.show_footer
        and table.title is None
        and table.caption is None
        and not table.expand
        and table.width is None
        and table.min_width is None
        and table.padding == (0, 1, 0, 1)
        and table.pad_edge
        and table.leading == 0
        and not any(row.end_section for row in table.rows)
        and all(
            c.justify in _JUSTIFY
            and c.vertical == "top"
            and c.width is None
            and c.min_width is None
            and c.max_width is None
            and c.ratio is None
            for c in table.columns
        )
    )


def plain_table(table: Table) -> str | None:
    """Return ``table`` as rich writes it off a terminal, or None if it is not plain.

    Off a terminal rich is given an unbounded width, and trailing spaces are removed.

    >>> t = Table(box=None, show_edge=False)
    >>> t.add_column("Name"); t.add_column("N", justify="right")
    >>> t.add_row("ab", "7"); t.add_row("c", "12")
    >>> print(plain_table(t), end="")
     Name   N
     ab     7
     c     12
    """
    if not _plain_layout(table):
        return None
    columns = [list(column.cells) for column in table.columns]
    lines = plain_lines(
        [column.header for column in table.columns],
        [column.justify == "right" for column in table.columns],
        lambda: zip(*columns, strict=True),
    )
    return None if lines is None else "".join(lines)


def plain_lines(
    headers: Sequence[object],
    right: Sequence[bool],
    rows: Callable[[], Iterable[Sequence[object]]],
) -> Iterator[str] | None:
    """Return the lines of a plain table (each ending in a line feed), or None.

    ``rows`` is called twice, for the column widths and then for the lines, so a table
    of many rows is never held as cells. None when a cell is not one line of printable
    text, or a column holds text but no width (marks of no width alone).

    >>> print("".join(plain_lines(["A", "N"], [False, True], lambda: [("x", "10")])), end="")
     A   N
     x  10
    """
    return plain_batch_lines(headers, right, lambda: _batched(rows()))


def plain_batch_lines(
    headers: Sequence[object],
    right: Sequence[bool],
    batches: Callable[[], Iterable[Sequence[Sequence[object]]]],
) -> Iterator[str] | None:
    """Return the lines of a plain table whose rows come in batches, or None.

    As :func:`plain_lines`, for rows made a batch at a time (a report's pairs): a batch
    whose cells are all printable ASCII strings is measured and laid out a column at a
    time, several times faster than cell by cell; any other batch cell by cell.
    """
    head = [_text(header) for header in headers]
    if not head or any(text is None for text in head):
        return None
    widths = [_cells(text or "") for text in head]
    written = [bool(text) for text in head]  # columns with some text
    for batch in batches():
        measured = _measured(batch, len(head))
        if measured is None:
            return None
        for k, (width, some) in enumerate(measured):
            widths[k] = max(widths[k], width)
            written[k] = written[k] or some
    if any(width == 0 and text for width, text in zip(widths, written, strict=True)):
        return None  # text of no width in a column of no width: rich leaves it out
    return _lines(headers, batches, widths, right)


def _batched(
    rows: Iterable[Sequence[object]], size: int = 4_096
) -> Iterator[list[Sequence[object]]]:
    """Yield ``rows`` in lists of ``size``."""
    iterator = iter(rows)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


def _plain_columns(batch: Sequence[Sequence[object]], count: int) -> list[tuple[str, ...]] | None:
    """Return the columns of a batch whose cells are all printable ASCII strings, else None."""
    columns = list(zip(*batch, strict=True)) if batch else [() for _ in range(count)]
    for column in columns:
        try:
            joined = "".join(column)
        except TypeError:  # a cell that is not a string
            return None
        if not (joined.isascii() and joined.isprintable()):
            return None
    return cast("list[tuple[str, ...]]", columns)  # joined above: every cell is a string


def _measured(batch: Sequence[Sequence[object]], count: int) -> list[tuple[int, bool]] | None:
    """Return each column's widest cell in ``batch`` and whether it has text, or None."""
    columns = _plain_columns(batch, count)
    if columns is not None:
        return [(max(map(len, column), default=0), any(column)) for column in columns]
    measured = [(0, False)] * count
    for row in batch:
        for k, cell in enumerate(row):
            text = _text(cell)
            if text is None:
                return None
            width, some = measured[k]
            measured[k] = (max(width, _cells(text)), some or bool(text))
    return measured


def _lines(
    headers: Sequence[object],
    batches: Callable[[], Iterable[Sequence[Sequence[object]]]],
    widths: list[int],
    right: Sequence[bool],
) -> Iterator[str]:
    """Yield the lines of the header and of every row."""
    yield _line(headers, widths, right)
    # Each cell padded by a space on either side, flush left or right in its column.
    template = "".join(
        f" {{:>{width}}} " if flush_right else f" {{:<{width}}} "
        for width, flush_right in zip(widths, right, strict=True)
    )
    for batch in batches():
        columns = _plain_columns(batch, len(widths))
        if columns is None:
            yield from (_line(row, widths, right) for row in batch)
            continue
        # rich drops trailing white space before aligning right
        cells = [
            tuple(map(str.rstrip, column)) if flush_right else column
            for column, flush_right in zip(columns, right, strict=True)
        ]
        yield from (template.format(*row).rstrip() + "\n" for row in zip(*cells, strict=True))


def _line(row: Sequence[object], widths: list[int], right: Sequence[bool]) -> str:
    """Return one row's line, laid out cell by cell."""
    parts = []
    for cell, width, flush_right in zip(row, widths, right, strict=True):
        line = _text(cell) or ""
        if flush_right:  # rich drops trailing white space before aligning right
            line = line.rstrip()
        pad = " " * (width - _cells(line))
        parts.append(f" {pad}{line} " if flush_right else f" {line}{pad} ")
    return "".join(parts).rstrip() + "\n"
