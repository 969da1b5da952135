"""Results to output: JSON, JSON Lines, CSV text and rich tables. Nothing here prints.

Output is deterministic: the same result renders to the same bytes, so timings never
appear in machine-readable output unless asked for.

Untrusted strings (file names, document ids) are handled per format:

* JSON and JSON Lines keep names exactly. Bytes of a file name that are not valid UTF-8
  are written as ``\\udc80``-``\\udcff`` escapes (Python's surrogate escapes), so the output is
  valid UTF-8 JSON and ``os.fsencode(name)`` recovers the original bytes.
* CSV keeps names exactly and quotes them as RFC 4180 requires; its bytes are the name's
  bytes (the caller encodes with ``surrogateescape``).
* Tables show a printable form: control characters (escape sequences, newlines, tabs) and
  undecodable bytes appear as ``\\x1b``, ``\\n``, ``\\xff``..., and names are wrapped in
  :class:`rich.text.Text`, so ``[bold]`` is shown, never interpreted as markup.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import regex
from rich.table import Table
from rich.text import Text

from simdup import __version__
from simdup.errors import ParameterError
from simdup.model import FEW_FEATURES, Cluster, Pair, ScanResult
from simdup.params import SORT_KEYS, SortKey
from simdup.search.result import clusters
from simdup.text.display import printable

FORMATS = ("table", "json", "jsonl", "csv")
PAIR_FIELDS = (
    "a",
    "b",
    "hamming",
    "estimated_cosine",
    "cosine",
    "above_threshold",
    "few_features",
)

#: The Arrow type of each pair field, for Parquet output (see :data:`PAIR_FIELDS`).
PAIR_TYPES = (
    ("a", "string"),
    ("b", "string"),
    ("hamming", "int64"),
    ("estimated_cosine", "float64"),
    ("cosine", "float64"),
    ("above_threshold", "bool_"),
    ("few_features", "bool_"),
)

_SURROGATE = regex.compile(r"[\ud800-\udfff]")


@dataclass(frozen=True)
class ReportOptions:
    """Which pairs are shown and how.

    Attributes:
        report_all: Show every candidate pair, marking those below the threshold.
        clusters: Also report groups of connected near-duplicates.
        limit: Show at most this many pairs (None: all).
        sort: ``cosine`` (default, highest first), ``hamming`` (lowest first) or ``path``.
        timings: Include per-stage seconds in JSON ``stats`` (makes output vary by run).
    """

    report_all: bool = False
    clusters: bool = False
    limit: int | None = None
    sort: SortKey = "cosine"
    timings: bool = False

    def __post_init__(self) -> None:
        if self.sort not in SORT_KEYS:
            raise ParameterError(f"unknown sort {self.sort!r}; choose one of {SORT_KEYS}")
        if self.limit is not None and self.limit < 0:
            raise ParameterError(f"limit must not be negative, got {self.limit}")

    def as_dict(self) -> dict[str, Any]:
        """Return the options that shape the report, for JSON ``params``."""
        return {
            "all": self.report_all,
            "clusters": self.clusters,
            "limit": self.limit,
            "sort": self.sort,
        }


def dumps(value: Any) -> str:
    """Return compact, valid-UTF-8 JSON; lone surrogates become ``\\udcXX`` escapes."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _round(value: float | None) -> float | None:
    """Round a cosine to 6 decimals for output (None stays None)."""
    if value is None or math.isnan(value):
        return None
    return round(value, 6)


def selected_pairs(result: ScanResult, options: ReportOptions) -> list[Pair]:
    """Return the pairs to show, sorted and limited."""
    pairs = result.pair_list()
    if options.sort == "hamming":
        pairs.sort(key=lambda p: (p.hamming, p.a, p.b))
    elif options.sort == "path":
        pairs.sort(key=lambda p: (p.a, p.b))
    if options.limit is not None:
        pairs = pairs[: options.limit]
    return pairs


def pair_record(pair: Pair) -> dict[str, Any]:
    """Return one pair as an ordered JSON-ready dict (the JSON Lines schema)."""
    return {
        "a": pair.a,
        "b": pair.b,
        "hamming": pair.hamming,
        "estimated_cosine": _round(pair.estimated_cosine),
        "cosine": _round(pair.cosine),
        "above_threshold": pair.above_threshold,
        "few_features": pair.few_features,
    }


def cluster_record(cluster: Cluster) -> dict[str, Any]:
    """Return one cluster as an ordered JSON-ready dict."""
    return {
        "size": cluster.size,
        "min_cosine": _round(cluster.min_cosine),
        "members": list(cluster.members),
    }


def stats_record(result: ScanResult, options: ReportOptions, shown: int) -> dict[str, Any]:
    """Return the JSON ``stats`` object (timings only when asked for)."""
    stats: dict[str, Any] = dict(result.stats)
    stats["shown"] = shown
    stats["few_features"] = int((result.feature_counts < FEW_FEATURES).sum())
    stats["tables"] = result.tables
    if options.timings:
        stats["seconds"] = {k: round(v, 6) for k, v in result.timings.items()}
    return stats


def to_json(
    result: ScanResult,
    options: ReportOptions,
    extra_params: dict[str, Any],
    pairs: Sequence[Pair],
) -> str:
    """Return the whole result as one JSON document (with a trailing newline).

    ``pairs`` are the pairs to show (:func:`selected_pairs`), computed once by the caller.
    """
    document = {
        "simdup": __version__,
        "params": {**result.params.as_dict(), **options.as_dict(), **extra_params},
        "stats": stats_record(result, options, len(pairs)),
        "pairs": [pair_record(p) for p in pairs],
        "clusters": [cluster_record(c) for c in clusters(result)] if options.clusters else [],
        "skipped": [{"path": s.path, "reason": s.reason} for s in result.skipped],
        "plan": result.plan,
    }
    return dumps(document) + "\n"


def to_jsonl(pairs: Sequence[Pair]) -> str:
    """Return one JSON object per pair per line."""
    return "".join(dumps(pair_record(p)) + "\n" for p in pairs)


def to_csv(pairs: Sequence[Pair]) -> str:
    """Return a header row and one row per pair (RFC 4180 quoting, ``\\r\\n`` rows)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(PAIR_FIELDS)
    for pair in pairs:
        record = pair_record(pair)
        writer.writerow(["" if record[f] is None else record[f] for f in PAIR_FIELDS])
    return out.getvalue()


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


#: The pair table's columns: header, and whether it is aligned right.
PAIR_COLUMNS = (
    ("Document A", False),
    ("Document B", False),
    ("Hamming", True),
    ("Est. cosine", True),
    ("Cosine", True),
)


def pair_cells(pair: Pair) -> tuple[str, str, str, str, str]:
    """Return the text of a pair's row in the table (names escaped by :func:`printable`)."""
    note = "" if pair.above_threshold else " (below)"
    flag = " *" if pair.few_features else ""
    return (
        printable(pair.a),
        printable(pair.b),
        str(pair.hamming),
        _fmt(pair.estimated_cosine),
        _fmt(pair.cosine) + note + flag,
    )


def pair_table(pairs: Sequence[Pair]) -> Table:
    """Return the pairs as a rich table; names are literal text, never markup."""
    table = Table(title=None, show_edge=False, header_style="bold")
    for header, right in PAIR_COLUMNS:
        if right:
            table.add_column(header, justify="right")
        else:
            table.add_column(header, overflow="fold")
    for pair in pairs:
        a, b, hamming, estimated, cosine = pair_cells(pair)
        style = "" if pair.above_threshold else "dim"
        table.add_row(Text(a), Text(b), hamming, estimated, Text(cosine), style=style)
    return table


def cluster_table(result: ScanResult) -> Table:
    """Return the clusters as a rich table."""
    table = Table(show_edge=False, header_style="bold")
    table.add_column("Size", justify="right")
    table.add_column("Weakest cosine", justify="right")
    table.add_column("Members", overflow="fold")
    for cluster in clusters(result):
        members = Text("\n".join(printable(m) for m in cluster.members))
        table.add_row(str(cluster.size), _fmt(cluster.min_cosine), members)
    return table


def summary(result: ScanResult, pairs: Sequence[Pair], elapsed: float | None = None) -> str:
    """Return the one-line summary shown after the pairs ``pairs`` (on stderr)."""
    shown = len(pairs)
    s = result.stats
    parts = [
        f"{s['documents']:,} documents",
        f"{s['skipped']:,} skipped",
        f"{s['candidates']:,} candidates",
        f"{shown:,} pairs shown",
    ]
    if s["pairs"] != shown:
        parts[-1] += f" of {s['pairs']:,}"
    if elapsed is not None:
        parts.append(f"{elapsed:.2f}s")
    line = ", ".join(parts)
    if any(p.few_features for p in pairs):
        line += f"; * = fewer than {FEW_FEATURES} features, estimate unreliable"
    return line
