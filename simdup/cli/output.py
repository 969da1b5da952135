"""Write rendered results: tables through rich, machine formats as exact bytes."""

from __future__ import annotations

import io
import itertools
import os
import shutil
import sys
from collections.abc import Iterator

from rich.console import Console, RenderableType
from rich.table import Table

from simdup.cli.options import encode_output, write_output
from simdup.report.plain_table import plain_table


def stdout_is_terminal(output: str | None) -> bool:
    """Tell whether results go to an interactive terminal."""
    return (output is None or output == "-") and sys.stdout.isatty()


def rich_text(renderables: list[RenderableType], *, terminal: bool) -> str:
    """Render rich objects to text: styled for a terminal, plain and unwrapped otherwise.

    Off a terminal the width is unbounded, so long names stay on one line and columns stay
    aligned for ``grep`` and ``cut``; trailing padding is removed.
    """
    buffer = io.StringIO()
    width = shutil.get_terminal_size().columns if terminal else 100_000
    console = Console(
        file=buffer,
        width=width,
        force_terminal=terminal,
        no_color=not terminal or "NO_COLOR" in os.environ,
        highlight=False,
        emoji=False,
        markup=False,
        soft_wrap=False,
    )
    for item in renderables:
        if isinstance(item, Table) and not terminal:
            item.box = None
            plain = plain_table(item)
            if plain is not None:  # the same text, without rich's per-cell rendering
                buffer.write(plain)
                continue
        console.print(item)
    text = buffer.getvalue()
    if not terminal:
        text = "\n".join(line.rstrip() for line in text.split("\n"))
    return text


def emit_rich(renderables: list[RenderableType], output: str | None) -> None:
    """Write rich renderables to stdout or a file."""
    text = rich_text(renderables, terminal=stdout_is_terminal(output))
    write_output(encode_output(text), output)


#: Lines of a plain table encoded and written at a time.
_BATCH_LINES = 8192


def emit_plain(
    lines: Iterator[str], output: str | None, after: list[RenderableType] | None = None
) -> None:
    """Write the lines of a plain table, a batch at a time, then ``after`` through rich.

    The same bytes as :func:`emit_rich` of the table and ``after`` off a terminal, but the
    table is never one string: its lines are encoded and written as they are made.
    """

    def pieces() -> Iterator[bytes]:
        while batch := list(itertools.islice(lines, _BATCH_LINES)):
            yield encode_output("".join(batch))
        if after:
            yield encode_output(rich_text(after, terminal=False))

    write_output(pieces(), output)
