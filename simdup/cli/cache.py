"""Put the command line's inputs into an index, and scan through one (``scan --cache``).

Shared by ``simdup index add`` and ``simdup scan --cache``, which otherwise know nothing of
each other.
"""

from __future__ import annotations

from typing import Any

from simdup.cli.guard import leave_out_index
from simdup.cli.inputs import input_paths
from simdup.cli.options import (
    jsonl_options,
    make_progress,
    read_input_bytes,
    read_options,
    user_errors,
)
from simdup.index import BATCH_DOCUMENTS, DEFAULT_TIMEOUT, AddReport, FingerprintIndex, open_index
from simdup.inputs.jsonl import STDIN, STDIN_LABEL, read_jsonl_input
from simdup.model import ScanResult
from simdup.params import Params


def add_inputs(
    index: FingerprintIndex,
    paths: tuple[str, ...],
    kwargs: dict[str, Any],
    *,
    prune: bool = False,
    batch: int = BATCH_DOCUMENTS,
) -> AddReport:
    """Add the files, ``--files-from`` list and ``--jsonl`` records of the command line."""
    leave_out_index(kwargs, index.path)
    options = read_options(kwargs)
    all_paths = input_paths(paths, kwargs)
    progress = make_progress(kwargs["quiet"])
    report = AddReport()
    with user_errors():
        if all_paths:
            report = index.add_files(
                all_paths, options, prune=prune, batch=batch, progress=progress
            )
        fields = jsonl_options(kwargs)
        for name in kwargs["jsonl"]:
            if name == STDIN:
                label = STDIN_LABEL
                documents, skipped = read_jsonl_input(label, fields, read_input_bytes(STDIN))
            else:
                label = name
                documents, skipped = read_jsonl_input(label, fields)
            more = index.add_documents(documents, origin=f"jsonl:{label}", prune=prune, batch=batch)
            report.added += more.added
            report.updated += more.updated
            report.unchanged += more.unchanged
            report.removed += more.removed
            report.skipped += skipped + more.skipped
            report.names = sorted({*report.names, *more.names})
    return report


def cached_scan(
    paths: tuple[str, ...], kwargs: dict[str, Any], params: Params, report_all: bool
) -> ScanResult:
    """Scan through the index ``kwargs["cache"]``: unchanged files are not read again.

    Used by ``simdup scan --cache FILE``; the pairs are those of a scan without a cache.
    """
    kwargs = {"db": kwargs["cache"], "timeout": DEFAULT_TIMEOUT, **kwargs}
    # The scan blocks in memory; a new cache keeps the default keys for later queries.
    keys = Params(
        bits=params.bits,
        seed=params.seed,
        weighting=params.weighting,
        ngram=params.ngram,
        stopwords=params.stopwords,
        segment=params.segment,
    )
    with user_errors():
        index = open_index(kwargs["cache"], create=True, params=keys)
    with index:
        report = add_inputs(index, paths, kwargs)
        with user_errors():
            return index.scan(
                params, names=report.names, report_all=report_all, skipped=report.skipped
            )
