"""Put the command line's inputs into an index, and scan through one (``scan --cache``).

Shared by ``simdup index add`` and ``simdup scan --cache``, which otherwise know nothing of
each other.
"""

from __future__ import annotations

from simdup.cli.guard import index_files
from simdup.cli.inputs import input_paths, record_inputs
from simdup.cli.meter import make_progress
from simdup.cli.parsed import Inputs
from simdup.cli.status import user_errors
from simdup.index import BATCH_DOCUMENTS, AddReport, FingerprintIndex, open_index
from simdup.model import ScanResult
from simdup.params import Params


def add_inputs(
    index: FingerprintIndex,
    inputs: Inputs,
    *,
    quiet: bool,
    prune: bool = False,
    batch: int = BATCH_DOCUMENTS,
) -> AddReport:
    """Add the files, ``--files-from`` list and records (``--jsonl``, tables) of the command line.

    The index and the files SQLite keeps beside it are never documents.
    """
    inputs = inputs.leaving_out(index_files(index.path))
    all_paths = input_paths(inputs, quiet=quiet)
    progress = make_progress(quiet)
    report = AddReport()
    with user_errors():
        if all_paths:
            report = index.add_files(
                all_paths, inputs.read, prune=prune, batch=batch, progress=progress
            )
        for origin, documents, skipped in record_inputs(inputs):
            more = index.add_documents(documents, origin=origin, prune=prune, batch=batch)
            report.added += more.added
            report.updated += more.updated
            report.unchanged += more.unchanged
            report.removed += more.removed
            report.skipped += skipped + more.skipped
            report.names = sorted({*report.names, *more.names})
    return report


def cached_scan(
    path: str, inputs: Inputs, params: Params, *, report_all: bool, quiet: bool
) -> ScanResult:
    """Scan through the index ``path``: unchanged files are not read again.

    Used by ``simdup scan --cache FILE``; the pairs are those of a scan without a cache.
    """
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
        index = open_index(path, create=True, params=keys)
    with index:
        report = add_inputs(index, inputs, quiet=quiet)
        with user_errors():
            return index.scan(
                params, names=report.names, report_all=report_all, skipped=report.skipped
            )
