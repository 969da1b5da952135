"""``simdup eval``: the seed's accuracy and blocking tables, measured on your corpus."""

from __future__ import annotations

import csv
import io
import time
from typing import Any

import click
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from simdup import __version__
from simdup.cli.guard import protect_inputs
from simdup.cli.inputs import gather
from simdup.cli.options import (
    DEFAULTS,
    encode_output,
    input_options,
    make_progress,
    output_options,
    stderr_console,
    term_options,
    user_errors,
    write_output,
)
from simdup.cli.output import emit_rich
from simdup.evaluate import DEFAULT_BITS, DEFAULT_HASH_SEEDS, EvalOptions, Evaluation, evaluate
from simdup.params import SCHEME_CHOICES, Params
from simdup.report.html import eval_page
from simdup.report.render import dumps, printable

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


def accuracy_table(evaluation: Evaluation) -> list[RenderableType]:
    """Return the error-per-width table (the seed's first table, plus weighted vs binary)."""
    e = evaluation
    title = Text(
        f"Estimated-cosine error: {e.documents:,} documents, {e.pairs:,} pairs, "
        f"{e.options.hash_seeds} hash seeds",
        style="bold",
    )
    table = Table(show_edge=False, header_style="bold")
    for name in ("Bits", "MAE", "Theory", "± s.e.", "Similar: weighted", "Similar: binary"):
        table.add_column(name, justify="right")
    for w in e.widths:
        table.add_row(
            str(w.bits),
            _f(w.mae),
            _f(w.mae_theory),
            _f(w.mae_stderr, 4),
            _f(w.similar_mae),
            _f(w.similar_binary_mae),
        )
    return [title, table]


def blocking_table(evaluation: Evaluation) -> list[RenderableType]:
    """Return the per-scheme recall / false-positive table at the scan width."""
    e = evaluation
    title = Text(
        f"Blocking at {e.params.fixed_bits} bits: {e.similar_pairs:,} pairs with true cosine >= "
        f"{e.params.threshold:g}",
        style="bold",
    )
    table = Table(show_edge=False, header_style="bold")
    table.add_column("Scheme")
    table.add_column("Tables")
    for name in ("Recall", "FP rate", "Cand./doc", "ms/run", "Recall@thr (theory)"):
        table.add_column(name, justify="right")
    for s in e.schemes:
        mark = " *" if s.name == e.chosen else ""
        cut = f", Hamming <= {s.max_hamming}" if s.max_hamming is not None else ""
        table.add_row(
            Text(s.name + mark),
            Text(s.tables + cut),
            _f(s.recall),
            _f(s.false_positive_rate, 4),
            f"{s.candidates_per_document:.2f}",
            f"{s.seconds * 1000:.2f}",
            _f(s.expected_recall),
        )
    return [title, table]


def similar_table(evaluation: Evaluation) -> Table:
    """Return the truly similar pairs and how often the chosen scheme found them."""
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
    default=",".join(str(b) for b in DEFAULT_BITS),
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
    default=DEFAULT_HASH_SEEDS,
    show_default=True,
    help="Independent hash seeds per width: --seed, --seed + 1, ...",
)
@click.option(
    "--seed",
    type=click.IntRange(0, 2**53 - 1),
    default=DEFAULTS.seed,
    show_default=True,
    help="First hash seed.",
)
@term_options
@click.option(
    "--scheme",
    type=click.Choice(SCHEME_CHOICES),
    default=DEFAULTS.scheme,
    show_default=True,
    help="The scheme you plan to use: its recall curve is drawn and marked with *.",
)
@click.option(
    "--max-distance",
    "max_distances",
    type=click.IntRange(min=0),
    multiple=True,
    help="Also compare tables finding every pair within this distance (repeatable).",
)
@click.option(
    "--threshold",
    type=click.FloatRange(0.0, 1.0),
    default=DEFAULTS.threshold,
    show_default=True,
    help="Pairs with at least this true cosine count as truly similar.",
)
@click.option(
    "--recall",
    type=click.FloatRange(0.0, 1.0, min_open=True),
    default=DEFAULTS.recall,
    show_default=True,
    help="Recall scheme auto plans for at the threshold.",
)
@click.option(
    "--sample",
    type=click.IntRange(min=2),
    help="Measure N documents chosen deterministically (by a hash of their names).",
)
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False),
    help="Also write a self-contained HTML page with charts to this file.",
)
@click.option("--timings", is_flag=True, help="Add seconds per scheme and stage to JSON.")
@output_options(("table", "json", "csv"))
def eval_command(paths: tuple[str, ...], **kwargs: Any) -> None:
    """Measure fingerprint accuracy and blocking recall on PATHS.

    Prints the mean absolute error of the estimated cosine for each --bits width (measured
    over --hash-seeds seeds, next to its Binomial theory, and for weighted against binary
    fingerprints on the truly similar pairs), then recall, false-positive rate, candidates
    per document and time of each blocking scheme at --scheme-bits. All pairs are
    compared: large corpora need --sample.
    """
    started = time.perf_counter()
    with user_errors():
        params = Params(
            bits=kwargs["scheme_bits"],
            seed=kwargs["seed"],
            weighting=kwargs["weighting"],
            ngram=kwargs["ngram"],
            stopwords=kwargs["stopwords"],
            segment=kwargs["segment"],
            scheme=kwargs["scheme"],
            threshold=kwargs["threshold"],
            recall=kwargs["recall"],
        )
        options = EvalOptions(
            hash_seeds=kwargs["hash_seeds"],
            bits=kwargs["widths"],
            max_distances=tuple(kwargs["max_distances"]),
            sample=kwargs["sample"],
        )
    progress = make_progress(kwargs["quiet"])
    protect_inputs(kwargs, paths, kind="eval")
    documents, skipped = gather(paths, kwargs, progress)
    with user_errors():
        evaluation = evaluate(documents, params, options, skipped=skipped, progress=progress)
    fmt, output = kwargs["fmt"], kwargs["output"]
    if fmt == "json":
        record = {"simdup": __version__, **evaluation.as_dict(timings=kwargs["timings"])}
        write_output(encode_output(dumps(record) + "\n"), output)
    elif fmt == "csv":
        write_output(encode_output(to_csv(evaluation)), output)
    else:
        items = [*accuracy_table(evaluation), Text(""), *blocking_table(evaluation)]
        if evaluation.similar:
            items += [Text(""), similar_table(evaluation)]
        emit_rich(items, output)
    if kwargs["html_file"]:
        write_output(encode_output(eval_page(evaluation)), kwargs["html_file"])
    if not kwargs["quiet"]:
        console = stderr_console()
        if kwargs["verbose"]:
            for skip in evaluation.skipped:
                console.print(f"skipped {printable(skip.path)}: {skip.reason}", markup=False)
        sampled = f" (sampled from {evaluation.sampled_from:,})" if evaluation.sampled_from else ""
        console.print(
            f"{evaluation.documents:,} documents{sampled}, {evaluation.pairs:,} pairs, "
            f"{evaluation.similar_pairs:,} with true cosine >= {params.threshold:g}, "
            f"{options.hash_seeds} hash seeds, {time.perf_counter() - started:.2f}s",
            markup=False,
        )
