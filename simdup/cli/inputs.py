"""Gather documents from PATH arguments, ``--files-from`` and ``--jsonl``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from simdup.cli.options import jsonl_options, read_input_bytes, read_options, user_errors
from simdup.inputs.gather import InputSet, gather_inputs, load_corpus, read_path_list, unique_names
from simdup.inputs.jsonl import STDIN, STDIN_LABEL, read_jsonl_input
from simdup.model import Document, Skip
from simdup.progress import Meter, Progress
from simdup.report.render import printable


def input_paths(paths: Sequence[str], kwargs: dict[str, Any]) -> list[str]:
    """Return the PATH arguments followed by the ``--files-from`` list.

    Raises:
        click.UsageError: when no input was given at all, or two inputs claim stdin.
    """
    if not paths and not kwargs["files_from"] and not kwargs["jsonl"]:
        raise click.UsageError("give at least one PATH, --files-from FILE or --jsonl FILE")
    if kwargs["files_from"] == "-" and STDIN in kwargs["jsonl"]:
        raise click.UsageError("--files-from and --jsonl cannot both read stdin")
    all_paths = list(paths)
    _warn_unquoted_glob(paths, kwargs)
    if "listed" in kwargs:  # read already, to check the outputs against it
        all_paths += kwargs["listed"]
    elif kwargs["files_from"]:
        all_paths += read_path_list(read_input_bytes(kwargs["files_from"]), null=kwargs["null"])
    return all_paths


#: Names of JSON Lines files, as a shell-expanded ``--jsonl`` glob leaves them as PATHs.
_JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz")


def _warn_unquoted_glob(paths: Sequence[str], kwargs: dict[str, Any]) -> None:
    """Warn when PATHs look like the rest of a ``--jsonl`` glob the shell expanded.

    ``--jsonl data/*.jsonl`` unquoted becomes ``--jsonl data/a.jsonl data/b.jsonl``: the
    second file is then a PATH, read as one text document. simdup cannot tell that from a
    deliberate PATH, so it reads it as asked and says how to read it as records.
    """
    if not kwargs.get("jsonl") or kwargs.get("quiet"):
        return
    looks = [p for p in paths if p.lower().endswith(_JSONL_SUFFIXES)]
    if looks:
        click.echo(
            f"warning: {printable(looks[0])} is a PATH, read as one text document; to read "
            "JSON Lines files as records, quote the glob (--jsonl 'data/*.jsonl') or repeat "
            "--jsonl",
            err=True,
        )


def read_jsonl_inputs(kwargs: dict[str, Any]) -> tuple[list[Document], list[Skip]]:
    """Return the records of every ``--jsonl`` input, in the option's order, and their skips.

    Ids repeated within a file are skipped there (``FILE:LINE``); a name repeated across
    inputs is left for the caller to skip as a duplicate document name.

    Raises:
        SimdupError: when an input cannot be opened or is a corrupt gzip stream.
    """
    fields = jsonl_options(kwargs)
    documents: list[Document] = []
    skipped: list[Skip] = []
    for name in kwargs["jsonl"]:
        if name == STDIN:
            more, more_skipped = read_jsonl_input(STDIN_LABEL, fields, read_input_bytes(STDIN))
        else:
            more, more_skipped = read_jsonl_input(name, fields)
        documents += more
        skipped += more_skipped
    return documents, skipped


def gather(
    paths: Sequence[str], kwargs: dict[str, Any], progress: Progress
) -> tuple[list[Document], list[Skip]]:
    """Return the documents named on the command line and the inputs skipped.

    Raises:
        click.UsageError: when no input was given at all.
    """
    options = read_options(kwargs)
    all_paths = input_paths(paths, kwargs)
    documents: list[Document] = []
    skipped: list[Skip] = []
    with user_errors():
        if all_paths:
            documents, skipped = load_corpus(all_paths, options, progress=progress)
        more, more_skipped = read_jsonl_inputs(kwargs)
        documents += more
        skipped += more_skipped
    unique, duplicates = unique_names(documents)
    return unique, [*skipped, *duplicates]


def gather_names(
    paths: Sequence[str], kwargs: dict[str, Any], meter: Meter
) -> tuple[InputSet, list[Skip]]:
    """Return the files (as names, not yet read) and records named on the command line.

    Also returns the JSON Lines records that were skipped. Files are read later, by the
    workers that count them (see :mod:`simdup.streaming`).

    Raises:
        click.UsageError: when no input was given at all.
    """
    options = read_options(kwargs)
    all_paths = input_paths(paths, kwargs)
    with user_errors():
        documents, skipped = read_jsonl_inputs(kwargs)
        found = gather_inputs(all_paths, options, documents, meter=meter)
    return found, skipped
