"""``--engine dask``: the command line's inputs, or documents read, handed to the Dask engine.

Imported only when that engine is chosen, so ``simdup --help`` and every other command
never import Dask.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from simdup.cli.inputs import input_paths, read_input_bytes, table_parts
from simdup.cli.parsed import Engine, Inputs
from simdup.cli.status import user_errors
from simdup.dedupe.keep import PairScan
from simdup.inputs.jsonl import STDIN, STDIN_LABEL
from simdup.model import Document, ScanResult
from simdup.params import Params
from simdup.progress import Progress

TYPE_CHECKING = False  # mypy reads the imports below; nothing here needs them at run time
if TYPE_CHECKING:
    from distributed import Client

    from simdup.engines.dask import Inputs as Parts


def _scan_on(
    client: Client,
    parts: Parts,
    params: Params,
    engine: Engine,
    progress: Progress,
    *,
    report_all: bool,
) -> ScanResult:
    """Find the pairs of ``parts`` on the cluster, with the engine's workers and budget."""
    from simdup.engines.dask import find_duplicates

    return find_duplicates(
        client,
        parts,
        params,
        report_all=report_all,
        progress=progress,
        jobs=engine.jobs,
        memory=engine.memory,
        tmp_dir=engine.tmp_dir,
    )


def dask_scan(
    inputs: Inputs,
    engine: Engine,
    params: Params,
    *,
    report_all: bool,
    progress: Progress,
    quiet: bool,
) -> ScanResult:
    """Scan the command line's inputs on a Dask cluster (``--scheduler``, or a local one).

    Files are walked here (names only) and read by the workers; JSON Lines files and URLs
    (every ``--jsonl`` input a partition) are read by the workers too, standard input here,
    and so are tables (every Parquet row group, every Arrow file a partition).
    """
    with user_errors():
        from simdup.engines.dask import Inputs as Parts
        from simdup.engines.dask import connect
        from simdup.inputs.jsonl import JsonlPart

        jsonl = [
            JsonlPart(STDIN_LABEL, read_input_bytes(STDIN)) if name == STDIN else JsonlPart(name)
            for name in inputs.jsonl
        ]
        parts = Parts(
            paths=input_paths(inputs, quiet=quiet),
            jsonl=jsonl,
            tables=table_parts(inputs, split=True),
            read_options=inputs.read,
            fields=inputs.fields,
        )
        with connect(
            engine.scheduler, jobs=engine.jobs, memory=engine.memory, tmp_dir=engine.tmp_dir
        ) as client:
            return _scan_on(client, parts, params, engine, progress, report_all=report_all)


@contextmanager
def dask_pair_scan(
    engine: Engine, progress: Progress, *, report_all: bool = False
) -> Iterator[PairScan]:
    """Yield a pair scan of documents already read, run on a Dask cluster.

    Used by ``simdup dedupe --engine dask``, which holds the texts to write the kept lines
    back: they travel to the workers as JSON Lines partitions. The cluster (``--scheduler``,
    or a local one of ``--jobs`` workers) stays open for the whole ``with`` block. The
    scan keeps every candidate pair with ``report_all``, within ``--memory``.
    """
    with user_errors():
        from simdup.engines.dask import connect, document_inputs

        with connect(
            engine.scheduler, jobs=engine.jobs, memory=engine.memory, tmp_dir=engine.tmp_dir
        ) as client:
            workers = len(client.nthreads())  # type: ignore[no-untyped-call]

            def scan(documents: Sequence[Document], params: Params) -> ScanResult:
                inputs = document_inputs(documents, workers)
                return _scan_on(client, inputs, params, engine, progress, report_all=report_all)

            yield scan
