"""``simdup fingerprint`` (one fingerprint per document) and ``simdup match``."""

from __future__ import annotations

import time
from typing import Any

import click
import numpy as np

from simdup.cli.guard import protect_inputs
from simdup.cli.inputs import gather
from simdup.cli.options import (
    ExitStatus,
    encode_output,
    fingerprint_options,
    input_options,
    make_progress,
    output_options,
    read_input_bytes,
    read_options,
    stderr_console,
    user_errors,
    write_output,
)
from simdup.cli.pairs import (
    blocking_options,
    build_params,
    exit_status,
    report_messages,
    report_of,
    report_options,
    write_result,
)
from simdup.engines.local.fingerprinting import fingerprint_documents
from simdup.engines.local.pairs import find_pairs
from simdup.errors import FingerprintFormatError
from simdup.fingerprints.listing import fingerprint_settings, parse_fingerprints
from simdup.fingerprints.simhash import to_hex_many
from simdup.inputs.files import decode
from simdup.model import Document, Skip
from simdup.params import Params
from simdup.report.render import dumps, printable

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


@click.command("fingerprint", epilog=FINGERPRINT_EPILOG)
@click.argument("paths", nargs=-1, type=click.Path(exists=True, allow_dash=True))
@input_options
@fingerprint_options
@output_options(("text", "jsonl"), default="text")
def fingerprint_command(paths: tuple[str, ...], **kwargs: Any) -> None:
    """Print the fingerprint of each document: HEX  PATH, like sha256sum.

    Hex is zero-padded to bits/4 digits; - reads one document from stdin.
    """
    params = build_params(kwargs)
    progress = make_progress(kwargs["quiet"])
    protect_inputs(kwargs, paths, kind="fingerprints")
    stdin_text = None
    if "-" in paths:
        stdin_text = read_input_bytes("-")
        paths = tuple(p for p in paths if p != "-")
    documents: list[Document] = []
    skipped: list[Skip] = []
    if paths or kwargs["files_from"] or kwargs["jsonl"]:
        documents, skipped = gather(paths, kwargs, progress)
    if stdin_text is not None:
        with user_errors():
            documents.append(Document("-", decode(stdin_text, read_options(kwargs))))
    with user_errors():
        corpus = fingerprint_documents(documents, params, progress=progress)
    hexes = to_hex_many(corpus.fingerprints, params.fixed_bits)
    counts = corpus.matrix.row_lengths().tolist()
    if kwargs["fmt"] == "jsonl":
        text = "".join(
            dumps(
                {
                    "path": name,
                    **fingerprint_settings(params),
                    "fingerprint": hexes[i],
                    "features": counts[i],
                }
            )
            + "\n"
            for i, name in enumerate(corpus.names)
        )
    else:
        text = "".join(f"{h}  {printable(n)}\n" for h, n in zip(hexes, corpus.names, strict=True))
    write_output(encode_output(text), kwargs["output"])
    all_skipped = skipped + corpus.skipped
    if not kwargs["quiet"]:
        console = stderr_console()
        for skip in all_skipped:
            console.print(f"skipped {printable(skip.path)}: {skip.reason}", markup=False)
    if kwargs["strict"] and any(s.unreadable for s in all_skipped):
        raise click.exceptions.Exit(ExitStatus.UNREADABLE)


@click.command(epilog=MATCH_EPILOG)
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
def match(files: tuple[str, ...], **kwargs: Any) -> None:
    """Find near-duplicate pairs among stored fingerprints, without the texts.

    Reads the output of `simdup fingerprint` (either format). The true cosine is unknown
    without the texts: pairs are selected and sorted by the estimated cosine, and the
    cosine field is null.
    """
    started = time.perf_counter()
    protect_inputs(kwargs, kind="pairs", reads=[("", path) for path in files])
    names: list[str] = []
    arrays = []
    bits = kwargs["bits"]
    seed = None
    with user_errors():
        for path in files:
            data = read_input_bytes(path).decode("utf-8", errors="surrogateescape")
            label = "<stdin>" if path == "-" else path
            stored = parse_fingerprints(label, data, bits=bits)
            if seed is not None and stored.seed is not None and stored.seed != seed:
                raise FingerprintFormatError(f"{label}: seed {stored.seed} differs from {seed}")
            bits, seed = stored.bits, stored.seed if stored.seed is not None else seed
            names += stored.names
            arrays.append(stored.fingerprints)
    if len(set(names)) != len(names):
        raise click.UsageError("the same name appears twice among the fingerprints")
    fingerprints = np.concatenate(arrays) if arrays else np.zeros((0, 1), dtype=np.uint64)
    order = sorted(range(len(names)), key=lambda i: names[i])
    with user_errors():
        params = Params(
            bits=bits or 64,
            seed=seed or 0,
            scheme=kwargs["scheme"],
            blocks=kwargs["blocks"],
            max_distance=kwargs["max_distance"],
            threshold=kwargs["threshold"],
            recall=kwargs["recall"],
        )
    options = report_of(kwargs)
    with user_errors():
        result = find_pairs(
            [names[i] for i in order],
            None,
            fingerprints[order],
            params,
            report_all=options.report_all,
        )
    extra = {"fingerprints": list(files), "cosine": "unavailable: fingerprints without texts"}
    shown = write_result(result, kwargs, options, extra)
    report_messages(result, kwargs, shown, time.perf_counter() - started)
    raise click.exceptions.Exit(exit_status(result, kwargs, shown))
