"""``simdup eval``: the seed's accuracy and blocking tables, measured on your corpus."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click

from simdup import __version__
from simdup.cli.options import (
    DEFAULTS,
    html_option,
    input_options,
    output_options,
    recall_option,
    scheme_option,
    seed_option,
    term_options,
    threshold_option,
)
from simdup.cli.parsed import Inputs, Output, build_params
from simdup.cli.status import user_errors
from simdup.params import EVAL_BITS, EVAL_HASH_SEEDS

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table
    from rich.text import Text

    from simdup.evaluate import EvalOptions, Evaluation
    from simdup.params import Params

EPILOG = """\b
Examples:
  simdup eval sample_corpus/
  simdup eval --bits 32,64,128 --hash-seeds 100 --threshold 0.9 docs/
  simdup eval --sample 300 --max-distance 3 --max-distance 6 --format json big/ | jq .blocking
  simdup eval --html eval.html docs/
"""

#: Columns of ``--format csv``: one row per width (table=accuracy) or scheme (blocking).
CSV_FIELDS = (
    "table",
    "bits",
    "mae",
    "mae_theory",
    "mae_stderr",
    "similar_mae",
    "similar_binary_mae",
    "similar_theory",
    "scheme",
    "tables",
    "recall",
    "false_positive_rate",
    "candidates_per_document",
    "expected_recall_at_threshold",
)


def parse_bits(ctx: click.Context, param: click.Parameter, value: str) -> tuple[int, ...]:
    """Parse ``--bits 8,16,32`` into widths (usage error naming the bad item)."""
    widths = []
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        if not item.isdigit() or int(item) < 1:
            raise click.BadParameter(
                f"{item!r} is not a positive width; give a comma-separated list like 8,64,256"
            )
        widths.append(int(item))
    if not widths:
        raise click.BadParameter("give at least one width, e.g. --bits 64")
    return tuple(widths)


def _f(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def titled_table(
    title: str, left: Sequence[str], right: Sequence[str], rows: Iterable[Sequence[str | Text]]
) -> list[RenderableType]:
    """Return a bold title over a table: ``left`` columns, then right-aligned ``right`` ones."""
    from rich.table import Table
    from rich.text import Text

    table = Table(show_edge=False, header_style="bold")
    for name in left:
        table.add_column(name)
    for name in right:
        table.add_column(name, justify="right")
    for row in rows:
        table.add_row(*row)
    return [Text(title, style="bold"), table]


def accuracy_table(evaluation: Evaluation) -> list[RenderableType]:
    """Return the error-per-width table (the seed's first table, plus weighted vs binary)."""
    e = evaluation
    return titled_table(
        f"Estimated-cosine error: {e.documents:,} documents, {e.pairs:,} pairs, "
        f"{e.options.hash_seeds} hash seeds",
        (),
        ("Bits", "MAE", "Theory", "± s.e.", "Similar: weighted", "Similar: binary"),
        (
            (
                str(w.bits),
                _f(w.mae),
                _f(w.mae_theory),
                _f(w.mae_stderr, 4),
                _f(w.similar_mae),
                _f(w.similar_binary_mae),
            )
            for w in e.widths
        ),
    )


def blocking_table(evaluation: Evaluation) -> list[RenderableType]:
    """Return the per-scheme recall / false-positive table at the scan width."""
    from rich.text import Text

    e = evaluation
    return titled_table(
        f"Blocking at {e.params.fixed_bits} bits: {e.similar_pairs:,} pairs with true cosine >= "
        f"{e.params.threshold:g}",
        ("Scheme", "Tables"),
        ("Recall", "FP rate", "Cand./doc", "ms/run", "Recall@thr (theory)"),
        (
            (
                Text(s.name + (" *" if s.name == e.chosen else "")),
                Text(
                    s.tables
                    + (f", Hamming <= {s.max_hamming}" if s.max_hamming is not None else "")
                ),
                _f(s.recall),
                _f(s.false_positive_rate, 4),
                f"{s.candidates_per_document:.2f}",
                f"{s.seconds * 1000:.2f}",
                _f(s.expected_recall),
            )
            for s in e.schemes
        ),
    )


def similar_table(evaluation: Evaluation) -> Table:
    """Return the truly similar pairs and how often the chosen scheme found them."""
    from rich.table import Table
    from rich.text import Text

    from simdup.text.display import printable

    table = Table(show_edge=False, header_style="bold")
    table.add_column("Document A", overflow="fold")
    table.add_column("Document B", overflow="fold")
    table.add_column("Cosine", justify="right")
    table.add_column(f"Found by {evaluation.chosen}", justify="right")
    for p in evaluation.similar:
        table.add_row(
            Text(printable(p.a)), Text(printable(p.b)), f"{p.cosine:.3f}", f"{p.found:.3f}"
        )
    return table


def to_csv(evaluation: Evaluation) -> str:
    """Return both tables as one CSV: ``table`` is ``accuracy`` or ``blocking`` per row."""
    import csv
    import io

    record = evaluation.as_dict()
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_FIELDS)
    for row in record["accuracy"]:
        writer.writerow(
            ["accuracy"]
            + ["" if row.get(f) is None else row[f] for f in CSV_FIELDS[1:8]]
            + [""] * 6
        )
    for row in record["blocking"]:
        values = {**row, "scheme": row["name"], "bits": evaluation.params.fixed_bits}
        writer.writerow(
            ["blocking", values["bits"]]
            + [""] * 6
            + ["" if values.get(f) is None else values[f] for f in CSV_FIELDS[8:]]
        )
    return out.getvalue()


@click.command("eval", epilog=EPILOG)
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@input_options
@click.option(
    "--bits",
    "widths",
    metavar="LIST",
    default=",".join(str(b) for b in EVAL_BITS),
    show_default=True,
    callback=parse_bits,
    help="Fingerprint widths whose error is measured (comma-separated).",
)
@click.option(
    "--scheme-bits",
    type=click.IntRange(min=1),
    default=DEFAULTS.fixed_bits,
    show_default=True,
    help="Width at which blocking schemes are compared (the --bits of scan).",
)
@click.option(
    "--hash-seeds",
    type=click.IntRange(min=1),
    default=EVAL_HASH_SEEDS,
    show_default=True,
    help="Independent hash seeds per width: --seed, --seed + 1, ...",
)
@seed_option("First hash seed.")
@term_options
@scheme_option("The scheme you plan to use: its recall curve is drawn and marked with *.")
@click.option(
    "--max-distance",
    "max_distances",
    type=click.IntRange(min=0),
    multiple=True,
    help="Also compare tables finding every pair within this distance (repeatable).",
)
@threshold_option("Pairs with at least this true cosine count as truly similar.")
@recall_option("Recall scheme auto plans for at the threshold.")
@click.option(
    "--sample",
    type=click.IntRange(min=2),
    help="Measure N documents chosen deterministically (by a hash of their names).",
)
@html_option("Also write a self-contained HTML page with charts to this file.")
@click.option("--timings", is_flag=True, help="Add seconds per scheme and stage to JSON.")
@output_options(("table", "json", "csv"))
def eval_command(paths: tuple[str, ...], **opts: Any) -> None:
    """Measure fingerprint accuracy and blocking recall on PATHS.

    Prints the mean absolute error of the estimated cosine for each --bits width (measured
    over --hash-seeds seeds, next to its Binomial theory, and for weighted against binary
    fingerprints on the truly similar pairs), then recall, false-positive rate, candidates
    per document and time of each blocking scheme at --scheme-bits. All pairs are
    compared: large corpora need --sample.
    """
    from simdup.cli.guard import Written, protect_inputs
    from simdup.cli.inputs import gather
    from simdup.cli.meter import make_progress
    from simdup.cli.output import write_text
    from simdup.evaluate import evaluate
    from simdup.report.html import eval_page

    started = time.perf_counter()
    params, options = eval_settings(opts)
    output, html = Output.parsed(opts), opts["html_file"]
    progress = make_progress(output.quiet)
    inputs = protect_inputs(Written("eval", output.path, html), Inputs.parsed(paths, opts))
    documents, skipped = gather(inputs, progress, quiet=output.quiet)
    with user_errors():
        evaluation = evaluate(documents, params, options, skipped=skipped, progress=progress)
    write_evaluation(evaluation, output, timings=opts["timings"])
    if html:
        write_text(eval_page(evaluation), html)
    if not output.quiet:
        tell_summary(evaluation, verbose=output.verbose, elapsed=time.perf_counter() - started)


def eval_settings(opts: Mapping[str, Any]) -> tuple[Params, EvalOptions]:
    """Return the fingerprint and blocking settings, and what to measure (usage errors).

    Schemes are compared at ``--scheme-bits``, the ``--bits`` of a scan.
    """
    from simdup.evaluate import EvalOptions

    params = build_params({**opts, "bits": opts["scheme_bits"]})
    with user_errors():
        options = EvalOptions(
            hash_seeds=opts["hash_seeds"],
            bits=opts["widths"],
            max_distances=tuple(opts["max_distances"]),
            sample=opts["sample"],
        )
    return params, options


def write_evaluation(evaluation: Evaluation, output: Output, *, timings: bool) -> None:
    """Write the tables: JSON, CSV, or tables for people."""
    from rich.text import Text

    from simdup.cli.output import emit_rich, write_text
    from simdup.report.fields import dumps

    if output.fmt == "json":
        record = {"simdup": __version__, **evaluation.as_dict(timings=timings)}
        write_text(dumps(record) + "\n", output.path)
    elif output.fmt == "csv":
        write_text(to_csv(evaluation), output.path)
    else:
        items = [*accuracy_table(evaluation), Text(""), *blocking_table(evaluation)]
        if evaluation.similar:
            items += [Text(""), similar_table(evaluation)]
        emit_rich(items, output.path)


def tell_summary(evaluation: Evaluation, *, verbose: bool, elapsed: float) -> None:
    """Print what was measured on stderr (with ``-v``, the documents skipped first)."""
    from simdup.cli.output import skip_line, stderr_console

    console = stderr_console()
    if verbose:
        for skip in evaluation.skipped:
            console.print(skip_line(skip), markup=False)
    e = evaluation
    sampled = f" (sampled from {e.sampled_from:,})" if e.sampled_from else ""
    console.print(
        f"{e.documents:,} documents{sampled}, {e.pairs:,} pairs, "
        f"{e.similar_pairs:,} with true cosine >= {e.params.threshold:g}, "
        f"{e.options.hash_seeds} hash seeds, {elapsed:.2f}s",
        markup=False,
    )
