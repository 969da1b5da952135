"""A deduplication plan as output: JSON, JSON Lines, CSV, a rich table and a summary.

Nothing here prints. Names are untrusted: JSON keeps them exactly (surrogate escapes for
undecodable bytes, as :mod:`simdup.report.render` does), tables show their printable form.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.table import Table
from rich.text import Text

from simdup import __version__
from simdup.model import Pair, Skip
from simdup.report.fields import dumps, pair_record
from simdup.search.groups import Removal
from simdup.text.display import printable

#: Columns of a removal record, in output order (the ``--removed`` and CSV schema).
RECORD_FIELDS = (
    "id",
    "line",
    "kept",
    "kept_line",
    "kept_reference",
    "cosine",
    "hamming",
    "estimated_cosine",
    "bytes",
)

#: The Arrow type of each record field, for Parquet output (see :data:`RECORD_FIELDS`).
RECORD_TYPES = (
    ("id", "string"),
    ("line", "int64"),
    ("kept", "string"),
    ("kept_line", "int64"),
    ("kept_reference", "bool_"),
    ("cosine", "float64"),
    ("hamming", "int64"),
    ("estimated_cosine", "float64"),
    ("bytes", "int64"),
)


@dataclass(frozen=True)
class Named:
    """A document as one side of a removal: its name and its line (None for a file)."""

    name: str
    line: int | None = None


def removal_record(removal: Removal, removed: Named, kept: Named, size: int) -> dict[str, Any]:
    """Return the JSON record of one removal (keys in :data:`RECORD_FIELDS` order)."""
    return {
        "id": removed.name,
        "line": removed.line,
        "kept": kept.name,
        "kept_line": kept.line,
        "kept_reference": removal.reference,
        "cosine": round(removal.cosine, 6),
        "hamming": removal.hamming,
        "estimated_cosine": round(removal.estimated_cosine, 6),
        "bytes": size,
    }


def removal_records(
    removals: Sequence[Removal],
    inputs: Sequence[Named],
    references: Sequence[Named],
    sizes: Sequence[int],
) -> list[dict[str, Any]]:
    """Return the records of ``removals``, in input order."""
    return [
        removal_record(
            r,
            inputs[r.index],
            references[r.kept] if r.reference else inputs[r.kept],
            sizes[r.index],
        )
        for r in removals
    ]


def dedupe_stats(
    inputs: int, records: Sequence[dict[str, Any]], skipped: Sequence[Skip], references: int
) -> dict[str, int]:
    """Return the counts of a plan: inputs, kept, removed, bytes saved, skipped, references.

    ``inputs`` counts every input (a file read, or a JSON Lines line); lines that hold no
    document are kept as they are, so ``kept + removed == input``.
    """
    return {
        "input": inputs,
        "kept": inputs - len(records),
        "removed": len(records),
        "bytes_saved": sum(int(r["bytes"]) for r in records),
        "skipped": len(skipped),
        "references": references,
    }


def to_json(
    params: dict[str, Any],
    stats: dict[str, int],
    records: Sequence[dict[str, Any]],
    skipped: Sequence[Skip],
    warnings: Sequence[str],
    pairs: Sequence[Pair] | None = None,
) -> str:
    """Return the whole plan as one JSON document (with a trailing newline).

    ``pairs`` (``--all``): the candidate pairs measured, listed after the removals.
    """
    document: dict[str, Any] = {
        "simdup": __version__,
        "params": params,
        "stats": stats,
        "removed": list(records),
        "skipped": [{"path": s.path, "reason": s.reason} for s in skipped],
        "warnings": list(warnings),
    }
    if pairs is not None:
        document["pairs"] = [pair_record(pair) for pair in pairs]
    return dumps(document) + "\n"


def to_jsonl(records: Sequence[dict[str, Any]]) -> str:
    """Return one removal record per line."""
    return "".join(dumps(r) + "\n" for r in records)


def to_csv(records: Sequence[dict[str, Any]]) -> str:
    """Return a header row and one row per removal (RFC 4180 quoting)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(RECORD_FIELDS)
    for record in records:
        writer.writerow(["" if record[f] is None else record[f] for f in RECORD_FIELDS])
    return out.getvalue()


def _where(name: str, line: int | None) -> str:
    return printable(name) if line is None else f"{printable(name)} (line {line})"


def removal_table(records: Sequence[dict[str, Any]]) -> Table:
    """Return the removals as a rich table; names are literal text, never markup."""
    table = Table(show_edge=False, header_style="bold")
    table.add_column("Removed", overflow="fold")
    table.add_column("Kept", overflow="fold")
    table.add_column("Cosine", justify="right")
    for r in records:
        kept = _where(r["kept"], r["kept_line"]) + (" [reference]" if r["kept_reference"] else "")
        table.add_row(Text(_where(r["id"], r["line"])), Text(kept), f"{r['cosine']:.3f}")
    return table


def summary(
    stats: dict[str, int], elapsed: float | None = None, *, skipped: str = "skipped"
) -> str:
    """Return the one-line summary for stderr (``skipped`` names what skipped inputs are).

    >>> summary({"input": 10, "kept": 7, "removed": 3, "bytes_saved": 2048, "skipped": 1,
    ...          "references": 0})
    '10 input, 7 kept, 3 removed, 2,048 bytes saved, 1 skipped'
    """
    parts = [
        f"{stats['input']:,} input",
        f"{stats['kept']:,} kept",
        f"{stats['removed']:,} removed",
        f"{stats['bytes_saved']:,} bytes saved",
        f"{stats['skipped']:,} {skipped}",
    ]
    if stats["references"]:
        parts.append(f"{stats['references']:,} reference documents")
    if elapsed is not None:
        parts.append(f"{elapsed:.2f}s")
    return ", ".join(parts)
