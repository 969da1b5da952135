"""The HTML report of a deduplication: each kept document with what was removed for it.

A group is one kept document (or reference document) and the documents removed because
they duplicate it, each with its true cosine to it. Groups never chain: every removed
document is shown under the one document it was compared with. Names are untrusted and
are escaped (:func:`simdup.report.html.text`); the page is self-contained.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from simdup.report.html.frame import page, text

#: Groups shown in full; a larger plan is summarised (the JSON Lines output has it all).
MAX_GROUPS = 2_000


def _where(name: str, line: int | None) -> str:
    shown = text(name)
    return shown if line is None else f"{shown} <span class='muted'>line {line}</span>"


def dedupe_page(
    records: Sequence[dict[str, Any]],
    stats: dict[str, int],
    params: dict[str, Any],
    *,
    max_groups: int = MAX_GROUPS,
) -> str:
    """Return the page of ``simdup dedupe --html`` from removal records and counts.

    Groups are ordered by their largest number of removals, then by the kept name.
    """
    groups: dict[tuple[str, int | None, bool], list[dict[str, Any]]] = {}
    for record in records:
        key = (record["kept"], record["kept_line"], record["kept_reference"])
        groups.setdefault(key, []).append(record)
    ordered = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0][0], item[0][1] or 0))
    cards = "".join(
        f'<div class="card"><div class="num">{value:,}</div>'
        f'<div class="label">{escape(label)}</div></div>'
        for label, value in (
            ("input", stats["input"]),
            ("kept", stats["kept"]),
            ("removed", stats["removed"]),
            ("bytes saved", stats["bytes_saved"]),
            ("groups", len(groups)),
        )
    )
    sections = []
    for (kept, line, reference), removed in ordered[:max_groups]:
        tag = ' <span class="tag chosen">reference</span>' if reference else ""
        rows = "".join(
            f"<tr><td>{_where(r['id'], r['line'])}</td><td class='num'>{r['cosine']:.3f}</td>"
            f"<td class='num'>{r['hamming']}</td><td class='num'>{r['estimated_cosine']:.3f}</td>"
            f"<td class='num'>{r['bytes']:,}</td></tr>"
            for r in removed
        )
        sections.append(
            f"<section class='group'><h2>Kept: {_where(kept, line)}{tag}</h2>"
            "<table><thead><tr><th>Removed</th><th class='num'>Cosine to kept</th>"
            "<th class='num'>Hamming</th><th class='num'>Est. cosine</th>"
            f"<th class='num'>Bytes</th></tr></thead><tbody>{rows}</tbody></table></section>"
        )
    if len(ordered) > max_groups:
        sections.append(
            f"<p class='lead'>{len(ordered) - max_groups:,} more groups are not shown; "
            "write them all with --removed or --format jsonl.</p>"
        )
    settings = "".join(
        f"<dt>{escape(str(k))}</dt><dd>{text(str(v))}</dd>" for k, v in params.items()
    )
    body = (
        f'<div class="cards">{cards}</div>'
        "<p class='lead'>Each group is a kept document and the documents removed because "
        "their true cosine with it is at or above the threshold. Nothing is removed through "
        "another removed document.</p>"
        + "".join(sections)
        + f'<section id="settings"><h2>Settings</h2><dl class="params">{settings}</dl></section>'
    )
    subtitle = f"{stats['removed']:,} of {stats['input']:,} documents removed"
    return page("dedupe", subtitle, body)
