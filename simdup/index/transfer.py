"""Index stage 7, export and import: fingerprints as portable JSON records, and back.

An exported record carries the fingerprint settings it was made with, so an index on
another machine can take it only when its own settings match (fingerprints made with
other settings are not comparable). Records with weights keep the true cosine through
the round trip; records without them report the estimate only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from simdup.fingerprints.simhash import from_hex, int_to_words, to_hex, words_to_int
from simdup.index.packing import (
    decode_name,
    print_digest,
    to_unsigned,
    unpack_weights,
    weights_matrix,
)
from simdup.index.schema import IndexFileError, IndexSettingsError, describe_settings
from simdup.index.store import IndexStore, State
from simdup.index.writing import AddReport

#: One record waiting to be imported: name, fingerprint, weights (or None), feature count.
_Imported = tuple[str, int, dict[str, float] | None, int]


def export_records(store: IndexStore, *, weights: bool) -> Iterator[dict[str, Any]]:
    """Yield one JSON-ready record per stored document; see ``FingerprintIndex.export_records``."""
    texts: dict[int, str] = {}
    columns = ", ".join(["name", "feature_count", "feature_ids", "weights", *store.fp_columns])
    with store.database_errors():
        if weights:
            texts = {fid: decode_name(t) for fid, t in store.feature_texts().items()}
        rows = store.db.execute(f"SELECT {columns} FROM documents").fetchall()
    rows.sort(key=lambda r: decode_name(r[0]))
    for row in rows:
        value = words_to_int(to_unsigned(np.array(row[4:], dtype=np.int64)))
        record: dict[str, Any] = {
            "id": decode_name(row[0]),
            "fingerprint": to_hex(value, store.params.fixed_bits),
            "features": int(row[1]),
            "params": store.settings,
        }
        if weights and row[2] is not None:
            ids, values = unpack_weights(row[2], row[3])
            record["weights"] = {
                texts[i]: w for i, w in zip(ids.tolist(), values.tolist(), strict=True)
            }
        yield record


def _parsed(store: IndexStore, where: str, record: dict[str, Any]) -> _Imported:
    """Return one exported record ready to store; refuse malformed or foreign ones."""
    try:
        name = str(record["id"])
        settings = dict(record["params"])
        value = from_hex(str(record["fingerprint"]), store.params.fixed_bits)
        raw = record.get("weights")
        weights = None if raw is None else {str(k): float(v) for k, v in raw.items()}
        count = int(record.get("features", len(weights or {})))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise IndexFileError(
            f"{where}: expected an exported record with id, fingerprint and params ({exc})"
        ) from None
    if weights is not None and count != len(weights):  # memory is planned on the count
        raise IndexFileError(
            f"{where}: the record gives {count} features and {len(weights)} weights; "
            "an exported record has one weight per feature"
        )
    if settings != store.settings:
        ours = store.settings
        differ = sorted(k for k in ours if settings.get(k) != ours[k])
        raise IndexSettingsError(
            f"{where}: record made with "
            f"{describe_settings({k: settings.get(k) for k in differ})}, index "
            f"{store.path} holds {describe_settings({k: ours[k] for k in differ})}"
            "; import into an index with the same settings"
        )
    return name, value, weights, count


def import_records(
    store: IndexStore, records: Iterable[tuple[str, dict[str, Any]]], *, batch: int
) -> AddReport:
    """Store exported records; see ``FingerprintIndex.import_records``."""
    report = AddReport()
    stored = store.stored_state()
    buffer: list[_Imported] = []
    for where, record in records:
        buffer.append(_parsed(store, where, record))
        if len(buffer) >= batch:
            _import_batch(store, buffer, stored, report)
            buffer = []
    if buffer:
        _import_batch(store, buffer, stored, report)
    return report


def _import_batch(
    store: IndexStore, buffer: list[_Imported], stored: State, report: AddReport
) -> None:
    """Write one batch of imported records in one transaction."""
    bits = store.params.fixed_bits
    with store.transaction():
        store.refresh_features()
        for weighted in (True, False):
            group = [b for b in buffer if (b[2] is not None) == weighted]
            if not group:
                continue
            matrix = weights_matrix([b[2] or {} for b in group]) if weighted else None
            store.write(
                [b[0] for b in group],
                [("import", None, None, print_digest(b[0], b[1])) for b in group],
                np.stack([int_to_words(b[1], bits) for b in group]),
                matrix,
                [b[3] for b in group],
            )
    for name, _, _, _ in buffer:
        if name in stored:
            report.updated += 1
        else:
            report.added += 1
            stored[name] = ("import", None, None, b"")
    report.names += [b[0] for b in buffer]
