"""Tables written off a terminal without rich's renderer: byte for byte rich's layout."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from simdup.cli.output import emit_plain, rich_text
from simdup.model import Pair, PairFields
from simdup.report.fields import FEW_MARK, IDENTICAL_MARK, pair_rows
from simdup.report.plain_table import plain_batch_lines, plain_lines, plain_table
from simdup.report.render import PAIR_COLUMNS, pair_table
from simdup.text.display import printable

#: Cell text: names in many scripts, wide and combining characters, empty cells, lines.
CELL = st.one_of(
    st.lists(
        st.one_of(
            st.characters(codec="utf-8", exclude_categories=["Cc", "Cs", "Zl", "Zp"]),
            st.sampled_from(["中", "文", "é", "e\u0301", " ", "/", "-", "\n", "😀", "ｱ"]),
        ),
        max_size=30,
    ).map("".join),
    st.sampled_from(["", " ", "0.95", "a\nb\nc", "  padded  "]),
)


def rich_only(table: Table) -> str:
    """Render ``table`` through rich itself, as :func:`rich_text` did for every table."""
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=100_000,
        force_terminal=False,
        no_color=True,
        highlight=False,
        emoji=False,
        markup=False,
        soft_wrap=False,
    )
    table.box = None
    console.print(table)
    return "\n".join(line.rstrip() for line in buffer.getvalue().split("\n"))


def build(headers: list[str], justify: list[bool], rows: list[list[str]], text: bool) -> Table:
    """Return a table shaped like simdup's own (no edge, bold header, fold overflow)."""
    table = Table(title=None, show_edge=False, header_style="bold")
    for header, right in zip(headers, justify, strict=True):
        table.add_column(header, justify="right" if right else "left", overflow="fold")
    for row in rows:
        table.add_row(*(Text(cell) if text else cell for cell in row), style="dim")
    return table


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[str], list[bool], list[list[str]], bool]:
    """Draw the parts of a table: headers, justifications, rows and the cell type."""
    width = draw(st.integers(1, 5))
    headers = draw(st.lists(CELL, min_size=width, max_size=width))
    justify = draw(st.lists(st.booleans(), min_size=width, max_size=width))
    rows = draw(st.lists(st.lists(CELL, min_size=width, max_size=width), max_size=8))
    return headers, justify, rows, draw(st.booleans())


@given(tables())
@settings(max_examples=400, deadline=None)
def test_tables_off_a_terminal_are_what_rich_writes(
    parts: tuple[list[str], list[bool], list[list[str]], bool],
) -> None:
    assert rich_text([build(*parts)], terminal=False) == rich_only(build(*parts))
    table = build(*parts)
    table.box = None  # as off a terminal (rich_text)
    plain = plain_table(table)
    cells = [*parts[0], *(cell for row in parts[2] for cell in row)]
    columns = [[header, *(row[k] for row in parts[2])] for k, header in enumerate(parts[0])]
    unseen = any(
        any(column) and max(cell_len(c) for c in column) == 0 for column in columns
    )  # text of no width in a column of no width: left to rich
    if all(cell.isprintable() for cell in cells) and not unseen:
        assert plain is not None  # one line of printable text per cell: the plain road
        assert plain == rich_only(build(*parts))


def test_the_pair_table_is_written_plainly_and_as_rich_wrote_it() -> None:
    pairs = [
        Pair("docs/a.txt", "docs/中文.txt", 3, 0.9532, 0.97, True, False),
        Pair("b", "c \u200b d", 12, 0.81, None, False, True),
    ]
    table = pair_table(pairs)
    table.box = None
    assert plain_table(table) is not None
    assert rich_text([pair_table(pairs)], terminal=False) == rich_only(pair_table(pairs))


def test_a_column_of_no_width_is_left_to_rich() -> None:
    """Rich leaves out a column whose text takes no cell (a lone skin-tone mark)."""
    parts: tuple[list[str], list[bool], list[list[str]], bool] = (
        ["\U0001f3fb"],
        [False],
        [],
        False,
    )
    assert plain_table(build(*parts)) is None
    assert rich_text([build(*parts)], terminal=False) == rich_only(build(*parts))


def test_tables_with_other_layouts_are_left_to_rich() -> None:
    titled = Table(title="Pairs", box=None, show_edge=False)
    titled.add_column("A")
    titled.add_row("x")
    assert plain_table(titled) is None
    centred = Table(box=None, show_edge=False)
    centred.add_column("A", justify="center")
    centred.add_row("x")
    assert plain_table(centred) is None
    tabs = Table(box=None, show_edge=False)
    tabs.add_column("A")
    tabs.add_row("a\tb")
    assert plain_table(tabs) is None
    nested = Table(box=None, show_edge=False)
    nested.add_column("A")
    nested.add_row(Table())
    assert plain_table(nested) is None
    # rich_text still renders them, through rich
    assert rich_text([titled], terminal=False) == rich_only(titled)


#: Cells of printable ASCII (laid out a column at a time), padded, empty, now and then not.
ASCII_CELL = st.one_of(
    st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=12),
    st.sampled_from(["", " ", "x  ", "  0.950", "n/a"]),
    CELL,
)


@given(st.data())
@settings(max_examples=300, deadline=None)
def test_rows_in_batches_are_laid_out_as_rich_lays_the_whole_table(data: st.DataObject) -> None:
    width = data.draw(st.integers(1, 5))
    headers = data.draw(st.lists(ASCII_CELL, min_size=width, max_size=width))
    justify = data.draw(st.lists(st.booleans(), min_size=width, max_size=width))
    row = st.lists(ASCII_CELL, min_size=width, max_size=width)
    batches = data.draw(st.lists(st.lists(row, max_size=6), max_size=4))
    rows = [r for batch in batches for r in batch]
    lines = plain_batch_lines(headers, justify, lambda: batches)
    expected = rich_only(build(headers, justify, rows, text=False))
    if lines is None:  # a cell rich lays out itself: the table goes through rich
        assert plain_table(build(headers, justify, rows, text=False)) is None
    else:
        assert "".join(lines) == expected


NAMES = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["docs/a.txt", "[bold]x[/bold]", "\x1b[31mred", "中文.txt", "a\tb", "e\u0301"]),
)
PAIRS = st.lists(
    st.builds(
        Pair,
        NAMES,
        NAMES,
        st.integers(0, 512),
        st.floats(-1, 1),
        st.one_of(st.none(), st.floats(-1, 1)),
        st.booleans(),
        st.booleans(),
    ),
    max_size=12,
)


@given(PAIRS)
@settings(max_examples=200, deadline=None)
def test_the_streamed_pair_table_is_what_rich_writes(pairs: list[Pair]) -> None:
    headers = [header for header, _ in PAIR_COLUMNS]
    right = [flush_right for _, flush_right in PAIR_COLUMNS]
    lines = plain_lines(headers, right, lambda: pair_rows(PairFields.of(pairs)))
    expected = rich_only(pair_table(pairs))
    if lines is not None:
        assert "".join(lines) == expected
    else:  # a name rich must lay out itself: the table goes through rich
        assert rich_text([pair_table(pairs)], terminal=False) == expected


def reference_cells(pair: Pair, bits: int | None) -> tuple[str, str, str, str, str]:
    """A pair's row as the table shows it, made from the pair alone."""

    def number(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f}"

    marks = (IDENTICAL_MARK if pair.identical else "") + (FEW_MARK if pair.few_features else "")
    return (
        printable(pair.a),
        printable(pair.b),
        str(pair.hamming) if bits is None else f"{pair.hamming}/{bits}",
        number(pair.estimated_cosine),
        number(pair.cosine) + ("" if pair.above_threshold else " (below)") + marks,
    )


@given(PAIRS, st.sampled_from([None, 64, 512]))
@settings(max_examples=200, deadline=None)
def test_rows_from_a_batch_of_fields_are_each_pairs_cells(
    pairs: list[Pair], bits: int | None
) -> None:
    # Names repeat within a batch: each is escaped once and used again.
    doubled = pairs + [dataclasses.replace(p, hamming=p.hamming + 1) for p in pairs]
    expected = [reference_cells(p, bits) for p in doubled]
    assert pair_rows(PairFields.of(doubled), bits) == expected
    assert [pair_rows(PairFields.of([p]), bits)[0] for p in doubled] == expected


def test_a_table_written_in_batches_is_the_table(tmp_path: Path) -> None:
    pairs = [
        Pair(f"doc{k}.txt", f"copy of doc{k}.txt", k % 9, 0.9, 0.95, True, False)
        for k in range(9_000)
    ]
    headers = [header for header, _ in PAIR_COLUMNS]
    right = [flush_right for _, flush_right in PAIR_COLUMNS]
    lines = plain_lines(headers, right, lambda: pair_rows(PairFields.of(pairs)))
    assert lines is not None
    out = tmp_path / "table.txt"
    emit_plain(lines, str(out))
    assert out.read_text(encoding="utf-8") == rich_only(pair_table(pairs))


@given(st.text(st.characters(max_codepoint=0x7F)))
def test_printable_ascii_is_shown_as_it_is_and_anything_else_escaped(text: str) -> None:
    """Names of printable ASCII (the usual case) skip the search; the rest are escaped."""
    from simdup.text import display

    plain = text.isprintable() and "\\" not in text
    assert (display._UNPRINTABLE.search(text) is None) == plain
    shown = display.printable(text)
    assert (shown == text) == plain
    assert shown.isprintable()
