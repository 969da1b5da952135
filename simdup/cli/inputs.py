"""Gather documents from PATH arguments, ``--files-from`` and ``--jsonl``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from simdup.cli.options import jsonl_options, read_input_bytes, read_options, user_errors
from simdup.corpus import load_corpus, read_path_list
from simdup.jsonl_inputs import STDIN, STDIN_LABEL, read_jsonl_input
from simdup.model import Document, Skip
from simdup.progress import Meter, Progress
from simdup.streaming import InputSet, gather_inputs


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
    if "listed" in kwargs:  # read already, to check the outputs against it
        all_paths += kwargs["listed"]
    elif kwargs["files_from"]:
        all_paths += read_path_list(read_input_bytes(kwargs["files_from"]), null=kwargs["null"])
    return all_paths


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
    seen: set[str] = set()
    unique: list[Document] = []
    for doc in documents:
        if doc.name in seen:
            skipped.append(Skip(doc.name, "duplicate document name"))
            continue
        seen.add(doc.name)
        unique.append(doc)
    return unique, skipped


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
    documents: list[Document] = []
    skipped: list[Skip] = []
    with user_errors():
        documents, skipped = read_jsonl_inputs(kwargs)
        found = gather_inputs(all_paths, options, documents, meter=meter)
    return found, skipped
