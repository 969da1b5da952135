"""Write rendered results: tables through rich, machine formats as exact bytes."""

from __future__ import annotations

import io
import os
import shutil
import sys

from rich.console import Console, RenderableType
from rich.table import Table

from simdup.cli.options import encode_output, write_output
from simdup.cli.plain_table import plain_table


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
