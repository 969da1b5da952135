"""Run a scan on a Dask cluster, with the local engine's output to the last byte.

The stages are those of :func:`simdup.find_duplicates`, cut into partitions
(:mod:`simdup.engines.dask.partitions`, :mod:`~simdup.engines.dask.shuffle`,
:mod:`~simdup.engines.dask.joins`) and scheduled as Dask tasks (:mod:`~simdup.engines.dask.stages`):

1. **read**: each partition of the inputs (a group of files, or one JSON Lines file) is
   read and counted by a worker. The client sends names (file paths, URLs), never texts,
   and receives names, feature counts and skips.
2. **fingerprint**: the client numbers the documents as the local engine does (duplicate
   names dropped in input order, then sorted by name, documents without features
   skipped) and each partition weighs and fingerprints its own rows; tf-idf's document
   frequencies are a tree reduction over the partitions first.
3. **plan**: the fingerprints (8 bytes per 64 bits per document) are gathered and
   :func:`simdup.search.plan.planner.plan` chooses the tables from them, exactly as locally.
4. **candidates**: every partition splits its rows by table and key; a shuffle brings
   one table's equal keys into one partition, where pairs are made and pre-filtered.
5. **verify**: each candidate partition takes the weight rows of its pairs from the
   partitions holding them and measures its pairs there; the kept pairs are gathered and
   sorted by :func:`simdup.search.result.canonical_order`.

Every piece of data lives in a Dask future computed from its inputs, never scattered
from the client, so a worker lost mid-run costs a recomputation, not the scan.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from simdup.engines.dask.cluster import CONNECT_TIMEOUT, SchedulerError, connect
from simdup.engines.dask.inputs import (
    DOCUMENTS_PER_PARTITION,
    FILES_PER_PARTITION,
    TASKS_PER_WORKER,
    Inputs,
    document_inputs,
)
from simdup.engines.dask.stages import (
    VERIFY_PAIRS,
    candidate_stage,
    fingerprint_stage,
    gathered_rows,
    plan_stage,
    read_stage,
    verify_stage,
)
from simdup.engines.local import spill_for
from simdup.engines.local.pairs import find_pairs
from simdup.fingerprints.simhash import words64
from simdup.inputs.jsonl import JsonlPart
from simdup.model import ScanResult
from simdup.params import Params
from simdup.progress import Progress, no_progress
from simdup.search.result import scan_result

if TYPE_CHECKING:
    from distributed import Client

__all__ = [
    "CONNECT_TIMEOUT",
    "DOCUMENTS_PER_PARTITION",
    "FILES_PER_PARTITION",
    "TASKS_PER_WORKER",
    "VERIFY_PAIRS",
    "Inputs",
    "JsonlPart",
    "SchedulerError",
    "connect",
    "document_inputs",
    "find_duplicates",
]


def find_duplicates(
    client: Client,
    inputs: Inputs,
    params: Params | None = None,
    *,
    report_all: bool = False,
    progress: Progress = no_progress,
    files_per_partition: int = FILES_PER_PARTITION,
    jobs: int = 1,
    memory: int | None = None,
    tmp_dir: str | None = None,
) -> ScanResult:
    """Return what :func:`simdup.find_duplicates` returns for the same inputs, from Dask.

    The plan is the local engine's (:func:`simdup.search.plan.planner.plan` on the gathered
    fingerprints, with the exact scan's work from the reduced document frequencies), so
    the width and the choice of exact mode are the same. Exact mode (small corpora) gathers
    the weight rows to the client, which runs the local engine's own
    :func:`~simdup.engines.local.pairs.find_pairs` on them. Otherwise candidates are
    shuffled and verified on the workers. The plan is checked against ``memory`` before
    any pair work, as the local engine checks it.

    Args:
        client: A connected Dask client (see :func:`connect`).
        inputs: Files, directories and JSON Lines inputs, read by the workers.
        params: Settings (defaults: :class:`Params`).
        report_all: Report every candidate pair, not only those above the threshold.
        progress: Progress hook, advanced as each stage's tasks complete (labels
            ``read``, ``fingerprint``, ``candidates``, ``verify``).
        files_per_partition: Files read by one task.
        jobs: Threads of the client for an exact scan (0: every core).
        memory: Bytes the client may use (default: :func:`~.memory.default_memory`).
        tmp_dir: Where an exact scan writes reported pairs past the budget to disk.
    """
    params = params or Params()
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    read, numbered, skipped = read_stage(client, inputs, params, files_per_partition, progress)
    vectors, fingerprints, work = fingerprint_stage(client, read, numbered, params, progress)
    del read  # the vectors keep their lineage: a lost worker is recomputed
    timings["fingerprint"] = time.perf_counter() - clock

    clock = time.perf_counter()
    planned = (client, vectors, numbered, fingerprints, params, work, memory)
    with spill_for(tmp_dir, memory) as spill:  # an exact scan's pairs past the budget
        chosen = plan_stage(*planned, report_all=report_all, held_spill=spill.held_spill())
        if chosen.exact:  # every pair is cheap: the client scans the gathered rows itself
            return find_pairs(
                numbered.names,
                gathered_rows(client, vectors, progress),
                fingerprints,
                params,
                report_all=report_all,
                skipped=skipped,
                timings=timings,
                jobs=jobs,
                memory=memory,
                spill=spill,
            )
    fingerprints = np.ascontiguousarray(fingerprints[:, : words64(chosen.bits)])
    used = params.replace(bits=chosen.bits) if params.auto_bits else params
    timings["plan"] = time.perf_counter() - clock

    clock = time.perf_counter()
    found = candidate_stage(client, vectors, fingerprints, chosen, report_all, progress)
    timings["candidates"] = time.perf_counter() - clock

    clock = time.perf_counter()
    verified = verify_stage(client, found, vectors, used, report_all, progress)
    timings["verify"] = time.perf_counter() - clock
    return scan_result(
        numbered.names,
        used,
        verified,
        feature_counts=numbered.lengths,
        fingerprints=fingerprints,
        skipped=skipped,
        timings=timings,
        searched=found.searched,
    )
