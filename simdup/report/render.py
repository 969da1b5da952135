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
from collections.abc import Iterator, Sequence
from typing import Any

import regex
from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

from simdup import __version__
from simdup.model import FEW_FEATURES, Cluster, Pair, ScanResult
from simdup.report.fields import (
    FEW_MARK,
    IDENTICAL_MARK,
    cosine_texts,
    dumps,
    pair_rows,
    pair_texts,
    relative,
    round_cosine,
    table_number,
)
from simdup.report.shown import ReportOptions as ReportOptions  # re-exported: the report API
from simdup.report.shown import ShownPairs, field_batches
from simdup.report.shown import selected_pairs as selected_pairs
from simdup.search.groups import clusters
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
    "identical",
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
    ("identical", "bool_"),
)

#: Columns a CSV of pairs gains with ``--clusters``: the group both documents are in.
CLUSTER_COLUMNS = ("cluster", "representative")


def _pair_of(names: tuple[str, str] | None, cosine: float | None) -> dict[str, Any] | None:
    return None if names is None else {"a": names[0], "b": names[1], "cosine": round_cosine(cosine)}


def cluster_record(cluster: Cluster) -> dict[str, Any]:
    """Return one cluster as an ordered JSON-ready dict.

    A group around a representative gives each member's cosine to it (``min_cosine``: the
    lowest); a chain (``linked``) its weakest link. ``least_similar`` is the least similar
    pair within the group when all ``size (size - 1) / 2`` of its pairs were measured
    (``measured_pairs``), else null.
    """
    record: dict[str, Any] = {
        "kind": "linked" if cluster.representative is None else "representative",
        "size": cluster.size,
    }
    if cluster.representative is not None:
        record["representative"] = cluster.representative
    record["min_cosine"] = round_cosine(cluster.min_cosine)
    record["members"] = list(cluster.members)
    if cluster.representative is not None:
        cosines = cluster.cosines or (None,) * cluster.size
        record["cosines"] = [round_cosine(c) for c in cosines]
    else:
        record["weakest_link"] = _pair_of(cluster.weakest_link, cluster.min_cosine)
    least = cluster.least_similar
    record["least_similar"] = _pair_of(least and least[:2], least and least[2])
    record["measured_pairs"] = cluster.measured_pairs
    return record


def report_clusters(result: ScanResult, options: ReportOptions) -> list[Cluster]:
    """Return the groups ``options`` ask for (none without ``clusters``)."""
    return clusters(result, options.clusters) if options.clusters else []


def stats_record(result: ScanResult, options: ReportOptions, shown: int) -> dict[str, Any]:
    """Return the JSON ``stats`` object (timings only when asked for)."""
    stats: dict[str, Any] = dict(result.stats)
    stats["shown"] = shown
    stats["few_features"] = int(result.few_features().sum())
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
    return "".join(json_pieces(result, options, extra_params, pairs))


def json_pieces(
    result: ScanResult,
    options: ReportOptions,
    extra_params: dict[str, Any],
    pairs: Sequence[Pair],
) -> Iterator[str]:
    """Yield :func:`to_json`'s text in pieces: the pairs a batch at a time.

    The document is ``simdup``, ``params``, ``stats``, ``pairs``, ``clusters``,
    ``skipped`` and ``plan``, in that order; the objects around the pairs are encoded
    whole and joined to them as the encoder joins list items and members (``", "``).
    """
    head = dumps(
        {
            "simdup": __version__,
            "params": {**result.params.as_dict(), **options.as_dict(), **extra_params},
            "stats": stats_record(result, options, len(pairs)),
        }
    )
    tail = dumps(
        {
            "clusters": [cluster_record(c) for c in report_clusters(result, options)],
            "skipped": [{"path": s.path, "reason": s.reason} for s in result.skipped],
            "plan": result.plan,
        }
    )
    yield head[:-1] + ', "pairs": ['
    joint = ""
    for fields in field_batches(pairs):
        yield joint + ", ".join(pair_texts(fields))
        joint = ", "
    yield "], " + tail[1:] + "\n"


def to_jsonl(pairs: Sequence[Pair], groups: Sequence[Cluster] = ()) -> str:
    """Return one JSON object per pair per line, then one per group (``"cluster": k``)."""
    return "".join(jsonl_pieces(pairs, groups))


def jsonl_pieces(pairs: Sequence[Pair], groups: Sequence[Cluster] = ()) -> Iterator[str]:
    """Yield :func:`to_jsonl`'s text in pieces: the pairs a batch at a time."""
    for fields in field_batches(pairs):
        texts = pair_texts(fields)
        texts.append("")  # the last line's end
        yield "\n".join(texts)
    yield "".join(
        dumps({"cluster": k, **cluster_record(c)}) + "\n" for k, c in enumerate(groups, 1)
    )


def _csv_cell(value: Any) -> Any:
    """Return a CSV cell: empty for null, ``true``/``false`` as in JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def to_csv(pairs: Sequence[Pair], groups: Sequence[Cluster] | None = None) -> str:
    """Return a header row and one row per pair (RFC 4180 quoting, ``\\r\\n`` rows).

    With ``groups`` (``--clusters``) each row also names the group holding both documents
    (its number in the JSON list, largest first) and its representative (empty for none).
    """
    return "".join(csv_pieces(pairs, groups))


def csv_pieces(pairs: Sequence[Pair], groups: Sequence[Cluster] | None = None) -> Iterator[str]:
    """Yield :func:`to_csv`'s text in pieces: the header, then the pairs a batch at a time."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(PAIR_FIELDS if groups is None else PAIR_FIELDS + CLUSTER_COLUMNS)
    group_of = {m: (k, c.representative) for k, c in enumerate(groups or (), 1) for m in c.members}
    flag = {True: "true", False: "false", None: ""}
    for fields in field_batches(pairs):
        columns: list[list[Any]] = [
            fields.a,
            fields.b,
            fields.hamming,
            cosine_texts(fields.estimated, ""),  # the same text: the writer writes repr()
            cosine_texts(fields.cosine, ""),
            *([flag[v] for v in column] for column in (fields.above, fields.few, fields.identical)),
        ]
        if groups is not None:
            cells = []
            for a, b in zip(fields.a, fields.b, strict=True):
                group = group_of.get(a)
                same = group is not None and group == group_of.get(b)
                cells.append([_csv_cell(v) for v in (group if same and group else (None, None))])
            columns += [[c[0] for c in cells], [c[1] for c in cells]]
        writer.writerows(zip(*columns, strict=True))
        yield out.getvalue()
        out.seek(0)
        out.truncate()
    yield out.getvalue()


#: The pair table's columns: header, and whether it is aligned right.
PAIR_COLUMNS = (
    ("Document A", False),
    ("Document B", False),
    ("Hamming", True),
    ("Est. cosine", True),
    ("Cosine", True),
)

#: How the table of pairs starts when there is none.
NO_PAIRS = "No pairs"


def no_pairs_line(result: ScanResult, options: ReportOptions) -> str:
    """Return the line a table shows instead of an empty table."""
    if options.report_all:
        return f"{NO_PAIRS}: no candidate pair was found.\n"
    return f"{NO_PAIRS} at or above cosine {result.params.threshold:g}.\n"


#: The name columns of an index query's table: each query document, and what it matched.
QUERY_LABELS = ("Query", "Match")


def pair_columns(labels: tuple[str, str] | None = None) -> tuple[tuple[str, bool], ...]:
    """Return the pair table's columns, the name columns labelled ``labels``."""
    if labels is None:
        return PAIR_COLUMNS
    return ((labels[0], False), (labels[1], False), *PAIR_COLUMNS[2:])


def wrap_path(name: str, width: int) -> str:
    """Return ``name`` broken into lines of at most ``width`` cells after a ``/``.

    A part without a ``/`` that is wider than a line is cut where the line ends.

    >>> wrap_path("usr/share/common-licenses/LGPL-2", 16)
    'usr/share/\\ncommon-licenses/\\nLGPL-2'
    """
    lines: list[str] = []
    line = ""
    for part in regex.findall(r"[^/]*/|[^/]+$", name):
        if line and cell_len(line + part) > width:
            lines.append(line)
            line = ""
        line += part
        while cell_len(line) > width:
            cut = _cut(line, width)
            lines.append(line[:cut])
            line = line[cut:]
    lines.append(line)
    return "\n".join(lines)


def _cut(line: str, width: int) -> int:
    """Return how many characters of ``line`` fill ``width`` cells (at least one)."""
    used = 0
    for k, ch in enumerate(line):
        used += cell_len(ch)
        if used > width:
            return max(k, 1)
    return len(line)


def _name_width(rows: Sequence[Sequence[str]], names: Sequence[int], width: int) -> int:
    """Return the cells each name column (``names``) gets in a ``width`` terminal.

    The other columns keep their widest cell; each column is padded by one cell on
    either side and columns are parted by a rule of one cell.
    """
    others = [k for k in range(len(rows[0])) if k not in names]
    fixed = sum(max(cell_len(r[k]) for r in rows) for k in others)
    room = width - fixed - 3 * len(rows[0]) + 1
    longest = max(cell_len(r[k]) for r in rows for k in names)
    return max(12, min(room // len(names), longest))


def _table(
    headers: Sequence[tuple[str, bool]],
    rows: Sequence[Sequence[str]],
    names: Sequence[int],
    width: int | None,
    styles: Sequence[str] = (),
) -> Table:
    """Return a rich table of text cells; on a terminal (``width``) names wrap at ``/``.

    ``headers`` are (header, aligned right); ``names`` the positions of name columns.
    """
    table = Table(title=None, show_edge=False, header_style="bold")
    name_width = None
    if width is not None and rows:
        name_width = _name_width([[h for h, _ in headers], *rows], names, width)
    for k, (header, right) in enumerate(headers):
        if right:
            table.add_column(header, justify="right")
        elif k in names and name_width is not None:
            table.add_column(header, width=name_width, overflow="fold")
        else:
            table.add_column(header, overflow="fold")
    for k, row in enumerate(rows):
        cells = [
            Text(wrap_path(c, name_width) if name_width is not None and i in names else c)
            for i, c in enumerate(row)
        ]
        table.add_row(*cells, style=styles[k] if styles else "")
    return table


def pair_table(
    pairs: Sequence[Pair],
    bits: int | None = None,
    *,
    base: str = "",
    width: int | None = None,
    labels: tuple[str, str] | None = None,
) -> Table:
    """Return the pairs as a rich table; names are literal text, never markup.

    On a terminal (``width``: its columns) names are shown without ``base`` and wrapped
    only after a ``/``. ``labels`` name the two name columns (``Document A``, ``B``).
    """
    rows: list[tuple[str, ...]] = []
    styles: list[str] = []
    for fields in field_batches(pairs):
        rows += pair_rows(fields, bits, base)
        styles += ["" if above else "dim" for above in fields.above]
    return _table(pair_columns(labels), rows, (0, 1), width, styles)


def cluster_rows(groups: Sequence[Cluster], base: str = "") -> list[tuple[str, ...]]:
    """Return one table row per member: the group's number, size and label on its first.

    A group around a representative lists it first, then each member with its cosine to
    it; the label is the least similar pair within the group (``n/a``: not every pair was
    measured). A chain's label is its weakest link.
    """
    rows: list[tuple[str, ...]] = []
    for k, group in enumerate(groups, 1):
        least = group.least_similar
        least_text = "n/a" if least is None else f"{least[2]:.3f}"
        label: tuple[str, ...] = (least_text,)
        if group.representative is None:
            label = (table_number(group.min_cosine), least_text)
            cosines: Sequence[str] = [""] * group.size
        else:
            known = group.cosines or (None,) * group.size
            cosines = ["rep."] + [table_number(c) for c in known[1:]]
        for m, (member, cosine) in enumerate(zip(group.members, cosines, strict=True)):
            head = (str(k), str(group.size), *label) if m == 0 else ("", "") + ("",) * len(label)
            last = (cosine,) if group.representative is not None else ()
            rows.append((*head, *last, printable(relative(member, base))))
    return rows


def cluster_table(groups: Sequence[Cluster], *, base: str = "", width: int | None = None) -> Table:
    """Return groups as a rich table: a row per member (names as in :func:`pair_table`)."""
    headers: list[tuple[str, bool]]
    if groups and groups[0].representative is None:
        headers = [("Chain", True), ("Size", True), ("Weakest link", True), ("Least similar", True)]
    else:
        headers = [("Cluster", True), ("Size", True), ("Least similar", True), ("Cosine", True)]
    headers.append(("Members", False))
    return _table(headers, cluster_rows(groups, base), (len(headers) - 1,), width)


def summary(
    result: ScanResult, pairs: Sequence[Pair], elapsed: float | None = None, *, table: bool = True
) -> str:
    """Return the one-line summary shown after the pairs ``pairs`` (on stderr).

    ``table``: the pairs were shown as a table, whose copy mark the line explains.
    """
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
    if isinstance(pairs, ShownPairs):
        identical, few = pairs.marks()
    else:
        identical = any(p.identical for p in pairs)
        few = any(p.few_features for p in pairs)
    if table and identical:
        line += f";{IDENTICAL_MARK} = a copy (true cosine exactly 1)"
    if few:
        line += f";{FEW_MARK} = fewer than {FEW_FEATURES} features, estimate unreliable"
    return line
