"""Index stage 5, reading: stored fingerprints and weights back as arrays; scans; statistics.

A rescan of the index is the scan pipeline from the fingerprint stage on: the stored
rows are loaded in name order as the same arrays a scan of the files would build
(weights bit for bit, so the true cosine is the same), and handed to
:func:`simdup.engines.local.pairs.find_pairs`. Nothing here writes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.engines.local.fingerprinting import feature_skip
from simdup.engines.local.pairs import find_pairs
from simdup.fingerprints.weights import WeightMatrix
from simdup.index.packing import decode_name, to_unsigned
from simdup.index.schema import SCHEMA_VERSION
from simdup.index.store import IndexStore
from simdup.model import ScanResult, Skip
from simdup.params import Params

#: What :func:`fingerprinted` returns: names, weights (or None), fingerprints, feature counts.
Stored = tuple[list[str], WeightMatrix | None, npt.NDArray[np.uint64], npt.NDArray[np.int64]]


def fingerprinted(store: IndexStore, names: Iterable[str] | None = None) -> Stored:
    """Return stored documents in name order: names, weights, fingerprints, feature counts.

    Args:
        store: The open index.
        names: Only these documents (those not stored are ignored); None: all.

    Returns:
        ``(names, matrix, fingerprints, feature_counts)``; ``matrix`` is None when
        some document was imported without weights (the true cosine is then unknown).
    """
    wanted = None if names is None else set(names)
    columns = ", ".join(["name", "feature_count", "feature_ids", "weights", *store.fp_columns])
    rows = [
        r
        for r in store.db.execute(f"SELECT {columns} FROM documents")
        if wanted is None or decode_name(r[0]) in wanted
    ]
    decoded = [decode_name(r[0]) for r in rows]
    order = sorted(range(len(rows)), key=decoded.__getitem__)
    rows = [rows[i] for i in order]
    out_names = [decoded[i] for i in order]
    fingerprints = to_unsigned(
        np.array([r[4:] for r in rows], dtype=np.int64).reshape(len(rows), store.words)
    )
    counts = np.array([r[1] for r in rows], dtype=np.int64)
    if any(r[2] is None for r in rows):
        return out_names, None, fingerprints, counts
    matrix = store.matrix([(r[2], r[3]) for r in rows])
    return out_names, matrix, fingerprints, counts


def scan(
    store: IndexStore,
    params: Params | None,
    *,
    names: Iterable[str] | None,
    report_all: bool,
    skipped: Sequence[Skip],
) -> ScanResult:
    """Return the near-duplicate pairs among stored documents; see ``FingerprintIndex.scan``."""
    params = params or store.params
    store.check(params)
    clock = time.perf_counter()
    out_names, matrix, fingerprints, counts = fingerprinted(store, names)
    small = [(n, int(c)) for n, c in zip(out_names, counts, strict=True) if c < params.min_features]
    if small:  # left out as a scan of the files leaves them out
        left = {n for n, _ in small}
        kept = [n for n in out_names if n not in left]
        out_names, matrix, fingerprints, _ = fingerprinted(store, kept)
        few = [feature_skip(n, c, params.min_features) for n, c in small]
        skipped = [*skipped, *(skip for skip in few if skip is not None)]
    timings = {"load": time.perf_counter() - clock}
    return find_pairs(
        out_names,
        matrix,
        fingerprints,
        params,
        report_all=report_all,
        skipped=skipped,
        timings=timings,
    )


def count(store: IndexStore) -> int:
    """Return the number of stored documents."""
    (n,) = store.db.execute("SELECT count(*) FROM documents").fetchone()
    return int(n)


def stats(store: IndexStore) -> dict[str, Any]:
    """Return what the index holds and how large it is, JSON-ready."""
    db = store.db
    store.refresh_keys()
    documents = count(store)
    (features,) = db.execute("SELECT count(*) FROM features").fetchone()
    page_size = db.execute("PRAGMA page_size").fetchone()[0]
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    free = db.execute("PRAGMA freelist_count").fetchone()[0]
    origins = dict(db.execute("SELECT origin, count(*) FROM documents GROUP BY origin").fetchall())
    wal = store.path + "-wal"
    wal_bytes = os.path.getsize(wal) if os.path.exists(wal) else 0
    used = (pages - free) * page_size
    return {
        "path": store.path,
        "schema_version": SCHEMA_VERSION,
        "documents": documents,
        "features": int(features),
        "origins": origins,
        "settings": store.settings,
        "tables": store.tables.description,
        "table_count": len(store.tables.keys),
        "keys": store.keys_summary(),
        "file_bytes": pages * page_size,
        "wal_bytes": wal_bytes,
        "bytes_per_document": round(used / documents, 1) if documents else None,
    }
