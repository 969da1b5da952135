"""``simdup fingerprint`` (one fingerprint per document) and ``simdup match``."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import click

from simdup.cli.checked import PairCommand
from simdup.cli.options import (
    blocking_options,
    fingerprint_options,
    input_options,
    jobs_option,
    output_options,
    report_options,
    size_options,
    spill_options,
)
from simdup.cli.parsed import Inputs, Output, PairReport, build_params
from simdup.cli.status import ExitStatus, unreadable, user_errors

if TYPE_CHECKING:
    from collections.abc import Iterator

    from simdup.engines.local.fingerprinting import Fingerprinted
    from simdup.fingerprints.listing import StoredFingerprints
    from simdup.model import Skip
    from simdup.packed import Positions
    from simdup.params import Params

FINGERPRINT_EPILOG = """\b
Examples:
  simdup fingerprint *.txt > prints.txt
  simdup fingerprint --format jsonl --bits 128 docs/ > prints.jsonl
  echo "some text" | simdup fingerprint -
"""

MATCH_EPILOG = """\b
Examples:
  simdup fingerprint docs/ > prints.txt && simdup match prints.txt
  simdup fingerprint --format jsonl a/ b/ | simdup match - --max-distance 3 --format jsonl
"""


#: Lines of a listing rendered and written at a time.
LISTING_BATCH = 1 << 16


def listing(corpus: Fingerprinted, params: Params, fmt: str, order: Positions) -> Iterator[str]:
    """Yield the lines of a listing, rows in ``order``: ``HEX  NAME``, or JSON (``jsonl``).

    A batch of :data:`LISTING_BATCH` lines at a time, so that a listing of millions of
    documents is never held whole.
    """
    from simdup.fingerprints.listing import fingerprint_settings
    from simdup.fingerprints.simhash import to_hex_many
    from simdup.report.fields import dumps
    from simdup.text.display import printable

    settings = fingerprint_settings(params)
    lengths = corpus.matrix.row_lengths()
    for lo in range(0, len(order), LISTING_BATCH):
        rows = order[lo : lo + LISTING_BATCH]
        hexes = to_hex_many(corpus.fingerprints[rows], params.fixed_bits)
        names = [corpus.names[k] for k in rows.tolist()]
        if fmt != "jsonl":
            yield "".join(f"{h}  {printable(n)}\n" for h, n in zip(hexes, names, strict=True))
            continue
        counts = lengths[rows].tolist()
        yield "".join(
            dumps({"path": name, **settings, "fingerprint": hexes[i], "features": counts[i]}) + "\n"
            for i, name in enumerate(names)
        )


def tell_skips(output: Output, skipped: list[Skip]) -> None:
    """Name every input skipped, on stderr (not with ``-q``)."""
    from simdup.cli.output import skip_line, stderr_console

    if not output.quiet:
        console = stderr_console()
        for skip in skipped:
            console.print(skip_line(skip), markup=False)


@click.command("fingerprint", epilog=FINGERPRINT_EPILOG)
@click.argument("paths", nargs=-1, type=click.Path(exists=True, allow_dash=True))
@input_options
@size_options
@fingerprint_options
@jobs_option("Workers for reading, tokenizing and fingerprinting (0: every core). Output "
             "never depends on it.")  # fmt: skip
@spill_options
@output_options(("text", "jsonl"), default="text")
def fingerprint_command(paths: tuple[str, ...], **opts: Any) -> None:
    """Print the fingerprint of each document: HEX  PATH, like sha256sum.

    Hex is zero-padded to bits/4 digits; - reads one document from stdin. Files are
    listed in name order, then records in the order of their inputs and lines, then -.
    """
    from simdup.cli.guard import Written, protect_inputs
    from simdup.cli.inputs import gather_names_with_stdin
    from simdup.cli.meter import make_meter
    from simdup.cli.output import encode_output, write_output
    from simdup.engines.local import fingerprinted
    from simdup.engines.local.counting import pieces_over
    from simdup.spill import SpillDir

    params = build_params(opts)
    output = Output.parsed(opts)
    meter = make_meter(output.quiet)
    inputs = protect_inputs(Written("fingerprints", output.path), Inputs.parsed(paths, opts))
    jobs, memory, tmp_dir = opts["jobs"], opts["memory"], opts["tmp_dir"]
    with SpillDir(tmp_dir) as spool:  # copies of inputs read again, kept to the end
        found, skipped = gather_names_with_stdin(
            inputs, meter, quiet=output.quiet, spool=spool, over=pieces_over(jobs)
        )
        with (
            user_errors(),
            fingerprinted(
                found, params, inputs.read, jobs=jobs, meter=meter, memory=memory, tmp_dir=tmp_dir
            ) as (corpus, order, more),
        ):
            lines = listing(corpus, params, output.fmt, order)
            write_output(map(encode_output, lines), output.path)
    tell_skips(output, skipped + more)
    if unreadable(inputs.strict, skipped + more):
        raise click.exceptions.Exit(ExitStatus.UNREADABLE)


def read_fingerprints(files: tuple[str, ...], bits: int | None) -> StoredFingerprints:
    """Read every listing of FILES (``-``: stdin) as one, sorted by name.

    Raises:
        click.UsageError: when a name appears twice.
    """
    import numpy as np

    from simdup.cli.inputs import input_label, read_input_bytes
    from simdup.errors import FingerprintFormatError
    from simdup.fingerprints.listing import StoredFingerprints, parse_fingerprints

    names: list[str] = []
    features: list[int] = []
    arrays = []
    seed = None
    with user_errors():
        for path in files:
            data = read_input_bytes(path).decode("utf-8", errors="surrogateescape")
            label = input_label(path)
            stored = parse_fingerprints(label, data, bits=bits)
            if seed is not None and stored.seed is not None and stored.seed != seed:
                raise FingerprintFormatError(f"{label}: seed {stored.seed} differs from {seed}")
            bits, seed = stored.bits, stored.seed if stored.seed is not None else seed
            names += stored.names
            features += stored.features
            arrays.append(stored.fingerprints)
    if len(set(names)) != len(names):
        raise click.UsageError("the same name appears twice among the fingerprints")
    fingerprints = np.concatenate(arrays) if arrays else np.zeros((0, 1), dtype=np.uint64)
    order = sorted(range(len(names)), key=lambda i: names[i])
    return StoredFingerprints(
        [names[i] for i in order],
        fingerprints[order],
        bits or 64,
        seed,
        [features[i] for i in order],
    )


@click.command(cls=PairCommand, epilog=MATCH_EPILOG)
@click.argument(
    "files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, allow_dash=True)
)
@click.option(
    "--bits",
    type=click.IntRange(min=1),
    help="Width of HEX  NAME lines (default: from the hex length).",
)
@blocking_options
@report_options
@output_options(("table", "json", "jsonl", "csv"))
def match(files: tuple[str, ...], **opts: Any) -> None:
    """Find near-duplicate pairs among stored fingerprints, without the texts.

    Reads the output of `simdup fingerprint` (either format). The true cosine is unknown
    without the texts: pairs are selected and sorted by the estimated cosine, and the
    cosine field is null.
    """
    import numpy as np

    from simdup.cli.guard import Written, protect_reads
    from simdup.cli.pairs import list_pairs
    from simdup.engines.local.pairs import find_pairs

    started = time.perf_counter()
    report = PairReport.parsed(opts)
    protect_reads(Written("pairs", report.output.path), [("", path) for path in files])
    stored = read_fingerprints(files, opts["bits"])
    params = build_params({**opts, "bits": stored.bits, "seed": stored.seed or 0})
    with user_errors():
        result = find_pairs(
            stored.names,
            None,
            stored.fingerprints,
            params,
            report_all=report.options.report_all,
            feature_counts=np.array(stored.features, dtype=np.int64),
        )
    extra = {"fingerprints": list(files), "cosine": "unavailable: fingerprints without texts"}
    list_pairs(result, report, extra, started=started, strict=False)
