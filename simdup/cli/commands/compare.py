"""``simdup compare A B``: two fingerprints bit by bit, and the terms behind them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from simdup.cli.options import (
    encoding_options,
    fingerprint_options,
    html_option,
    output_options,
    text_option,
)
from simdup.cli.parsed import Output, build_params
from simdup.cli.status import user_errors

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table
    from rich.text import Text

    from simdup.inputs.files import ReadOptions
    from simdup.model import Document
    from simdup.params import Params
    from simdup.report.comparison import Comparison, TermWeight
    from simdup.text.tokens import NoiseReport

STRIP_WIDTH = 64

EPILOG = """\b
Examples:
  simdup compare essay1.txt essay2.txt
  simdup compare --bits 256 a.md b.md
  curl -s https://example.org | simdup compare - saved.html --format json | jq .cosine
"""


def read_document(path: str, options: ReadOptions) -> Document:
    """Read one document argument (``-`` is stdin), with the scan's decoding rules."""
    from simdup.cli.inputs import read_input_bytes
    from simdup.errors import InputError
    from simdup.inputs.files import file_text, read_bytes
    from simdup.model import Document

    with user_errors():
        if path == "-":
            return Document("-", file_text("-", read_input_bytes("-"), options))
        try:
            return Document(path, file_text(path, read_bytes(path, options), options))
        except InputError as exc:
            raise InputError(f"{path}: {exc}") from None


def bit_strips(comparison: Comparison) -> list[RenderableType]:
    """Return both fingerprints as rows of 0/1, agreeing bits green, differing red.

    A caret line under each row marks the differing bits, so the view reads without colour.
    """
    from rich.text import Text

    agree = comparison.agreeing_bits
    bits = comparison.params.fixed_bits
    rows: list[RenderableType] = []
    for start in range(0, bits, STRIP_WIDTH):
        stop = min(bits, start + STRIP_WIDTH)
        for label, value in (("A", comparison.fingerprint_a), ("B", comparison.fingerprint_b)):
            line = Text(f"{label} {start:>4} ")
            for i in range(start, stop):
                style = "green" if agree[i] else "bold red"
                line.append(str((value >> i) & 1), style=style)
            rows.append(line)
        marks = "".join(" " if agree[i] else "^" for i in range(start, stop))
        rows.append(Text(" " * 7 + marks))
    return rows


def scan_width(params: Params) -> int:
    """Return the width ``scan`` would choose for two documents (``--bits auto``).

    A scan of two documents measures their one pair exactly: the exact scan costs far
    less than pricing tables (:data:`simdup.search.plan.planner.PLAN_OVERHEAD`), and its
    estimates are at the reference width (``Params.fixed_bits``). So the planner, with
    its start-up cost, is not loaded to say so.
    """
    return params.fixed_bits


def _terms(terms: tuple[TermWeight, ...], shared: bool, top: int) -> RenderableType:
    """Return a table of terms, or a line saying why there is none."""
    from rich.text import Text

    if top == 0:
        return Text("not listed (--top 0)")
    if not terms:
        return Text(
            "none: " + ("no term is in both" if shared else "both have the same terms and weights")
        )
    return _term_table(terms, shared)


def _term_table(terms: tuple[TermWeight, ...], shared: bool) -> Table:
    from rich.table import Table
    from rich.text import Text

    from simdup.text.display import printable

    table = Table(show_edge=False, header_style="bold")
    table.add_column("Term")
    table.add_column("Weight A", justify="right")
    table.add_column("Weight B", justify="right")
    if shared:
        table.add_column("Share of cosine", justify="right")
    for t in terms:
        cells: list[Text | str] = [Text(printable(t.term)), f"{t.weight_a:g}", f"{t.weight_b:g}"]
        if shared:
            cells.append(f"{t.contribution:.3f}")
        table.add_row(*cells)
    return table


def comparison_record(c: Comparison) -> dict[str, Any]:
    """Return the comparison as a JSON-ready dict (the ``compare --format json`` schema)."""
    from simdup.fingerprints.listing import fingerprint_settings
    from simdup.fingerprints.simhash import to_hex

    def terms(items: tuple[TermWeight, ...], shared: bool) -> list[dict[str, Any]]:
        out = []
        for t in items:
            record: dict[str, Any] = {
                "term": t.term,
                "weight_a": t.weight_a,
                "weight_b": t.weight_b,
            }
            if shared:
                record["contribution"] = round(t.contribution, 6)
            out.append(record)
        return out

    bits = c.params.fixed_bits
    return {
        "a": c.a,
        "b": c.b,
        "params": fingerprint_settings(c.params),
        "fingerprint_a": to_hex(c.fingerprint_a, bits),
        "fingerprint_b": to_hex(c.fingerprint_b, bits),
        "agreement": "".join("1" if x else "0" for x in c.agreeing_bits),
        "hamming": c.hamming,
        "estimated_cosine": round(c.estimated_cosine, 6),
        "cosine": round(c.cosine, 6),
        "features_a": c.features_a,
        "features_b": c.features_b,
        "shared_terms": terms(c.shared, True),
        "differing_terms": terms(c.differing, False),
    }


def comparison_view(c: Comparison, top: int = 10, width_note: str = "") -> list[RenderableType]:
    """Return the human view of a comparison (``width_note``: why this width)."""
    from rich.console import Group
    from rich.text import Text

    from simdup.fingerprints.simhash import to_hex
    from simdup.text.display import printable

    bits = c.params.fixed_bits
    head = Text()
    head.append("A ")
    head.append(printable(c.a), style="bold")
    head.append(f"  {c.features_a} features  {to_hex(c.fingerprint_a, bits)}\nB ")
    head.append(printable(c.b), style="bold")
    head.append(f"  {c.features_b} features  {to_hex(c.fingerprint_b, bits)}")
    verdict = Text(
        f"Hamming distance {c.hamming} of {bits} bits ({bits - c.hamming} agree)  "
        f"estimated cosine {c.estimated_cosine:.3f}  true cosine {c.cosine:.3f}"
        + (f"\n{width_note}" if width_note else "")
    )
    return [
        head,
        Text(""),
        Group(*bit_strips(c)),
        verdict,
        Text(""),
        Text("Top shared terms (what makes them similar)", style="bold"),
        _terms(c.shared, True, top),
        Text(""),
        Text("Top differing terms (what sets them apart)", style="bold"),
        _terms(c.differing, False, top),
    ]


#: What compare says of a width it chose.
AUTO_NOTE = "{bits} bits: the width scan would choose for these two documents (--bits auto)"


@click.command(epilog=EPILOG, context_settings={"default_map": {"bits": "auto"}})
@click.argument("first", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@click.argument("second", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
@fingerprint_options
@click.option(
    "--top", type=click.IntRange(min=0), default=10, show_default=True, help="Terms listed."
)
@encoding_options(
    "Codec without a BOM.", "replace: decode bad bytes as U+FFFD; strict: refuse such files."
)
@text_option
@html_option("Also write a self-contained HTML page of the comparison to this file.")
@output_options(("table", "json"))
def compare(first: str, second: str, **opts: Any) -> None:
    """Compare two documents: fingerprints bit by bit, distance, cosines and terms.

    Either argument may be - to read that document from stdin.
    """
    from simdup.cli.guard import Written, protect_reads
    from simdup.cli.output import write_text
    from simdup.report.comparison import compare_documents
    from simdup.text.segment import note_fallback
    from simdup.text.tokens import noise_report

    if first == "-" and second == "-":
        raise click.UsageError("only one of the two documents can be read from stdin")
    params = build_params(opts)
    output, html = Output.parsed(opts), opts["html_file"]
    protect_reads(Written("compare", output.path, html), [("", first), ("", second)])
    options = argument_options(opts["encoding"], opts["encoding_errors"], opts["text"])
    a, b = read_document(first, options), read_document(second, options)
    auto = params.auto_bits
    if auto:
        params = params.replace(bits=scan_width(params))
    with user_errors():
        comparison = compare_documents(a, b, params, top=opts["top"])
        noise = [noise_report(d.text, params.stopwords, params.segment) for d in (a, b)]
    note_fallback(params.segment, (a.text, b.text))  # for the note on bigrams, at the end
    if html:
        from simdup.report.html import compare_page

        write_text(compare_page(comparison), html)
    note = AUTO_NOTE.format(bits=params.fixed_bits) if auto else ""
    write_comparison(comparison, noise, output, top=opts["top"], width_note=note)


def argument_options(encoding: str, errors: str, text: str = "auto") -> ReadOptions:
    """Return how a document argument is read: whatever its name, size or links."""
    from simdup.inputs.files import ReadOptions

    with user_errors():
        return ReadOptions(
            hidden=True,
            follow_symlinks=True,
            max_size=1 << 40,
            encoding=encoding,
            encoding_errors=errors,
            text=text,
        )


def write_comparison(
    comparison: Comparison,
    noise: list[NoiseReport],
    output: Output,
    *,
    top: int = 10,
    width_note: str = "",
) -> None:
    """Write the comparison: JSON, or the view for people with the noise words line.

    JSON says whether the width was chosen (``bits_chosen``: ``auto``) or given.
    """
    from simdup.cli.output import emit_rich, write_text

    if output.fmt == "json":
        from simdup.report.fields import dumps

        record = {**comparison_record(comparison), **noise_record(noise)}
        record["bits_chosen"] = "auto" if width_note else "given"
        write_text(dumps(record) + "\n", output.path)
    else:
        view = comparison_view(comparison, top, width_note)
        emit_rich([view[0], noise_line(noise), *view[1:]], output.path)


# -- languages and noise words (simdup.text.languages) ---------------------------------------------
def noise_record(noise: list[NoiseReport]) -> dict[str, Any]:
    """Return each document's guessed language and removed noise words, for JSON."""
    return {
        f"{key}_{side}": value
        for side, report in zip("ab", noise, strict=True)
        for key, value in (("language", report.language), ("noise_removed", report.removed))
    }


def noise_line(noise: list[NoiseReport]) -> Text:
    """Return one line per document: its guessed language and the noise words removed."""
    from rich.text import Text

    parts = []
    for side, report in zip("AB", noise, strict=True):
        language = f"language {report.language}, " if report.language else ""
        parts.append(f"{side} {language}{report.removed} of {report.tokens} words removed as noise")
    return Text("\n".join(parts))


# ------------------------------------------------------------------------------------------------
