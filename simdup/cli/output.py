"""Results and messages out: exact bytes to stdout or a file, rich renderings, stderr.

stdout carries data; stderr carries messages for people. A results file is written
atomically, and names that are not valid UTF-8 go out as the bytes they were.
"""

from __future__ import annotations

import codecs
import io
import itertools
import os
import shutil
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from rich.console import Console, RenderableType
from rich.table import Table

from simdup.atomic import write_atomic, write_pieces
from simdup.cli.interrupts import checkpoint
from simdup.cli.status import RunError
from simdup.model import BINARY, SMALL, Skip
from simdup.report.plain_table import plain_table
from simdup.text.display import printable


def stderr_console() -> Console:
    """Return the console for messages (stderr; colour only on a terminal, NO_COLOR honoured).

    A run interrupted on the way (see :mod:`simdup.cli.interrupts`) ends here instead.
    """
    checkpoint()
    return Console(stderr=True, highlight=False, soft_wrap=True)


def write_output(data: bytes | Iterable[bytes], output: str | None) -> None:
    """Write result bytes (or pieces of them, in order) to stdout or, atomically, to ``output``.

    The file is written to a temporary file in the same directory and renamed into place,
    so an interrupted run leaves the old file or the complete new one, never a part. A
    symbolic link is written through (the link stays), and an existing special file
    (``/dev/null``, a FIFO) is written in place, never replaced.

    A run interrupted on the way (see :mod:`simdup.cli.interrupts`) ends here instead.

    Raises:
        RunError: when the file cannot be written (exit status 4).
    """
    checkpoint()
    if output is None or output == "-":
        try:
            write_pieces(sys.stdout.buffer, data)
            sys.stdout.buffer.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:  # a full disk or a closed descriptor behind stdout
            raise RunError(f"cannot write to standard output: {exc.strerror or exc}") from exc
        return
    try:
        write_atomic(output, data)
    except OSError as exc:
        raise RunError(f"cannot write {output}: {exc.strerror or exc}") from exc


def _name_bytes(exc: UnicodeError) -> tuple[bytes, int]:
    """Encode escaped name bytes (U+DC80-U+DCFF) as those bytes, other surrogates as ``\\uXXXX``."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    chunk = exc.object[exc.start : exc.end]
    out = b"".join(
        bytes([ord(ch) - 0xDC00]) if 0xDC80 <= ord(ch) <= 0xDCFF else b"\\u%04x" % ord(ch)
        for ch in chunk
    )
    return out, exc.end


codecs.register_error("simdup-names", _name_bytes)


def encode_output(text: str) -> bytes:
    """Encode rendered text; undecodable name bytes go out as the original bytes.

    A lone surrogate that is not an escaped byte (a JSON Lines id such as ``"\\ud800"``)
    has no bytes to go back to and is written as the six characters ``\\ud800``.

    >>> encode_output("a\\udcffb\\ud800")
    b'a\\xffb\\\\ud800'
    """
    return text.encode("utf-8", errors="simdup-names")


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


def write_text(text: str, output: str | None) -> None:
    """Write rendered text to stdout or, atomically, to ``output`` (see :func:`write_output`)."""
    write_output(encode_output(text), output)


class _Taken(io.RawIOBase):
    """A sink that keeps what is written until it is taken (a Parquet file in pieces)."""

    def __init__(self) -> None:
        super().__init__()
        self._parts: list[bytes] = []
        self._position = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        piece = bytes(data)
        self._parts.append(piece)
        self._position += len(piece)
        return len(piece)

    def tell(self) -> int:
        return self._position

    def take(self) -> bytes:
        """Return what was written since the last call, and forget it."""
        taken, self._parts = b"".join(self._parts), []
        return taken


def parquet_pieces(
    batches: Iterable[Sequence[dict[str, Any]] | dict[str, list[Any]]],
    types: Sequence[tuple[str, str]],
    group_rows: int | None = None,
) -> Iterator[bytes]:
    """Yield JSON-ready records (or their columns), arriving in batches, as a Parquet file's bytes.

    See :func:`simdup.inputs.tables.record_batch_writes`: a row group's records are held as
    columns, and a row group's compressed bytes until they are written out (not the file).
    ``group_rows``: rows of a row group (default: pyarrow's).

    Raises:
        BadInput: when pyarrow is not installed (naming the extra).
    """
    from simdup.cli.status import user_errors
    from simdup.inputs.tables import record_batch_writes

    sink = _Taken()
    groups = {} if group_rows is None else {"group_rows": group_rows}
    with user_errors():
        for _ in record_batch_writes(batches, types, sink, **groups):
            yield sink.take()
    yield sink.take()  # the last group and the footer


def skip_line(skip: Skip, verb: str = "skipped") -> str:
    """Return the message naming an input that was not read, and why."""
    return f"{verb} {printable(skip.path)}: {skip.reason}"


def skipped_counts(skipped: Sequence[Skip]) -> list[str]:
    """Count the inputs not read that people would miss: errors, binary files, small ones.

    >>> from simdup.model import BINARY
    >>> skipped_counts([Skip("a", "x"), Skip("b", "binary file", False, BINARY)])
    ['1 input(s) could not be read', '1 binary file(s) skipped']
    """
    counts = [
        (sum(skip.unreadable for skip in skipped), "input(s) could not be read"),
        (sum(skip.kind == BINARY for skip in skipped), "binary file(s) skipped"),
        (
            sum(skip.kind == SMALL for skip in skipped),
            "document(s) under --min-size or --min-features skipped",
        ),
    ]
    return [f"{count:,} {what}" for count, what in counts if count]


def tell_skipped(console: Console, skipped: Sequence[Skip], *, verbose: bool) -> None:
    """List every skipped input (``-v``), or else count those people would miss."""
    if verbose:
        for skip in skipped:
            console.print(skip_line(skip), markup=False)
    elif counts := skipped_counts(skipped):
        console.print("; ".join(counts) + "; -v lists them", markup=False)
