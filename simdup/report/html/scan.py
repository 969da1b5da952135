"""HTML, the scan page: what ``simdup scan --html`` writes.

Headline numbers, the table of reported pairs (sortable; a row opens that pair's view),
the clusters they form, the parameters and statistics of the run, the inputs that were
skipped, and a bit-by-bit view (:mod:`simdup.report.html.pair`) of the first pairs. Each
section is its own function; :func:`scan_page` puts them in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simdup.fingerprints.simhash import words_to_int
from simdup.model import Cluster, Document, Pair, ScanResult
from simdup.report.comparison import compare_documents
from simdup.report.html.frame import (
    doc_name,
    meter,
    number,
    page,
    params_list,
    sort_key,
    stat_cards,
    text,
)
from simdup.report.html.pair import PairView, pair_view
from simdup.report.shown import ReportOptions, selected_pairs
from simdup.search.groups import clusters
from simdup.text.display import common_dir

#: Pairs of a scan page that get a bit-by-bit view (each is a few kilobytes of SVG).
MAX_PAIR_VIEWS = 200

#: Pairs listed in a scan page's table (about 600 bytes each); --limit or JSON for more.
MAX_TABLE_ROWS = 10_000

#: Terms listed per pair view.
TOP_TERMS = 8


def _pair_row(k: int, pair: Pair, viewable: bool, base: str, bits: int) -> str:
    link = f"#pair-{k}"
    cells = [
        f'<td class="num" data-v="{k}">{k}</td>',
        f'<td class="name" data-v="{text(pair.a)}">{doc_name(pair.a, base)}</td>',
        f'<td class="name" data-v="{text(pair.b)}">{doc_name(pair.b, base)}</td>',
        f'<td class="num" data-v="{pair.hamming}">{pair.hamming}/{bits}</td>',
        f'<td class="num" data-v="{sort_key(pair.estimated_cosine)}">'
        f"{number(pair.estimated_cosine)}{meter(pair.estimated_cosine, warm=True)}</td>",
        f'<td class="num" data-v="{sort_key(pair.cosine)}">{number(pair.cosine)}'
        f"{meter(pair.cosine)}</td>",
        f'<td><a href="{link}">view</a></td>' if viewable else "<td></td>",
    ]
    classes = [] if pair.above_threshold else ["below"]
    href = f' data-href="{link}"' if viewable else ""
    cls = f' class="{" ".join(classes)}"' if classes else ""
    return f"<tr{cls}{href}>{''.join(cells)}</tr>"


def _pairs_section(
    result: ScanResult, pairs: Sequence[Pair], options: ReportOptions, max_views: int, base: str
) -> str:
    """Return the sortable table of pairs, with notes on what is left out."""
    s = result.stats
    listed = pairs[:MAX_TABLE_ROWS]
    rows = "".join(
        _pair_row(k + 1, p, k < max_views, base, result.bits) for k, p in enumerate(listed)
    )
    if pairs:
        table = (
            '<table class="sortable" id="pairs-table"><thead><tr>'
            '<th class="num" data-sort="num">#</th><th data-sort="text">Document A</th>'
            '<th data-sort="text">Document B</th><th class="num" data-sort="num">Hamming</th>'
            '<th class="num" data-sort="num">Est. cosine</th>'
            '<th class="num" data-sort="num" aria-sort="descending">True cosine</th><th></th>'
            f"</tr></thead><tbody>{rows}</tbody></table>"
        )
    else:
        table = (
            f'<div class="panel">No pair reaches the threshold {result.params.threshold:g}.</div>'
        )
    more = ""
    if len(pairs) < s.get("pairs", len(result.pairs)):
        more += (
            f'<p class="note">{_count_shown(result, pairs)} are shown here (--limit); '
            "--format json or csv writes them all.</p>"
        )
    if len(pairs) > max_views:
        more = (
            f'<p class="note">The first {max_views} pairs open a bit-by-bit view; '
            f"{max(0, len(listed) - max_views):,} more are listed only.</p>"
        )
    if len(pairs) > len(listed):
        more += (
            f'<p class="note">{len(pairs) - len(listed):,} more pairs are not listed here; '
            "--format json or csv writes them all.</p>"
        )
    threshold = f"{result.params.threshold:g}"
    scope = (
        f"Every candidate pair; those below the threshold {threshold} are dimmed"
        if options.report_all
        else f"Pairs whose true cosine is at least {threshold}"
    )
    relative = (
        f' Names are shown relative to <span class="name">{text(base)}</span>.' if base else ""
    )
    return (
        '<section id="pairs"><h2>Pairs</h2>'
        f'<p class="lead">{scope}, found among {s.get("candidates", 0):,} candidate pairs. '
        "Click a column to sort, a row to see both fingerprints bit by bit."
        f"{relative}</p>"
        f"{table}{more}</section>"
    )


def _clusters_section(groups: Sequence[Cluster], base: str) -> str:
    """Return one card per cluster, its members listed (nothing without clusters)."""
    if not groups:
        return ""
    cluster_cards = "".join(_cluster_card(i, g, base) for i, g in enumerate(groups, 1))
    chains = groups[0].representative is None
    lead = (
        "Chains: documents connected by reported pairs (single link), largest first. Two "
        "members can be far apart; each chain names its weakest link."
        if chains
        else "Each member is at or above the threshold with its cluster's representative "
        "(listed first, with each member's cosine to it), largest first."
    )
    return (
        f'<section id="clusters"><h2>Clusters</h2><p class="lead">{lead}</p>'
        f'<div class="clusters">{cluster_cards}</div></section>'
    )


def _cluster_card(k: int, group: Cluster, base: str) -> str:
    """Return one cluster: its size, labels and members (cosines to the representative)."""
    least = group.least_similar
    tags = [f"{group.size} documents"]
    if group.representative is None:
        tags.append(f"weakest link {number(group.min_cosine)}")
    tags.append("least similar pair " + ("n/a" if least is None else number(least[2])))
    cosines = group.cosines or (None,) * group.size
    items = []
    for m, name in enumerate(group.members):
        note = ""
        if group.representative is not None:
            note = " (representative)" if m == 0 else f" {number(cosines[m])}"
        items.append(f'<li class="name">{doc_name(name, base)}{note}</li>')
    return (
        f'<div class="panel"><strong>Cluster {k}</strong><span class="tags">'
        + "".join(f'<span class="tag">{t}</span>' for t in tags)
        + f"</span><ul>{''.join(items)}</ul></div>"
    )


def _settings_section(result: ScanResult, options: ReportOptions) -> str:
    """Return the parameters and statistics of the run (seconds only with ``timings``)."""
    params = {**result.params.as_dict(), "tables": result.tables}
    stats: dict[str, Any] = dict(result.stats)
    stats["few_features"] = int(result.few_features().sum())
    timings = {f"{k} (s)": f"{v:.3f}" for k, v in result.timings.items()} if options.timings else {}
    return (
        '<section id="settings"><div class="grid2">'
        f'<div><h2>Parameters</h2><div class="panel">{params_list(params)}</div></div>'
        f'<div><h2>Statistics</h2><div class="panel">{params_list({**stats, **timings})}'
        "</div></div></div></section>"
    )


def _skipped_section(result: ScanResult) -> str:
    """Return the table of skipped inputs and why (nothing when none was skipped)."""
    if not result.skipped:
        return ""
    items = "".join(
        f'<tr><td class="name">{text(sk.path)}</td><td>{text(sk.reason)}</td></tr>'
        for sk in result.skipped
    )
    return (
        '<section id="skipped"><h2>Skipped inputs</h2><table><thead><tr><th>Input</th>'
        f"<th>Reason</th></tr></thead><tbody>{items}</tbody></table></section>"
    )


def _views(
    result: ScanResult, pairs: Sequence[Pair], documents: Sequence[Document] | None, count: int
) -> list[str]:
    """Return the pair views of the first ``count`` pairs (terms only with the texts)."""
    by_name = {d.name: d for d in documents or ()}
    row_of = {name: i for i, name in enumerate(result.names)}
    views = []
    for k, p in enumerate(pairs[:count], 1):
        i, j = row_of[p.a], row_of[p.b]
        comparison = None
        if p.a in by_name and p.b in by_name:
            comparison = compare_documents(by_name[p.a], by_name[p.b], result.params, top=TOP_TERMS)
        view = PairView(
            a=p.a,
            b=p.b,
            bits=result.params.fixed_bits,
            fingerprint_a=words_to_int(result.fingerprints[i]),
            fingerprint_b=words_to_int(result.fingerprints[j]),
            hamming=p.hamming,
            estimated=p.estimated_cosine,
            cosine=p.cosine,
            threshold=result.params.threshold,
            few_features=p.few_features,
            comparison=comparison,
        )
        views.append(
            f'<div class="pair-view" id="pair-{k}" role="dialog" aria-label="pair {k}">'
            f'<div class="sheet"><a class="close" href="#pairs" aria-label="close">&times;</a>'
            f"<h2>Pair {k}</h2>{pair_view(view)}</div></div>"
        )
    return views


def _count_shown(result: ScanResult, pairs: Sequence[Pair]) -> str:
    """Return how many pairs a page shows, and of how many when some were cut."""
    found = result.stats.get("pairs", len(result.pairs))
    if len(pairs) < found:
        return f"{len(pairs):,} of {found:,} pairs"
    return f"{len(pairs):,} pairs"


def scan_page(
    result: ScanResult,
    documents: Sequence[Document] | None = None,
    options: ReportOptions | None = None,
    *,
    max_views: int = MAX_PAIR_VIEWS,
) -> str:
    """Return the page of ``simdup scan --html``.

    Args:
        result: The scan.
        documents: The scanned texts; with them each pair view lists its top shared and
            differing terms (computed for the pair alone, as ``simdup compare`` does).
        options: Which pairs are shown and in what order (as in the other formats); with
            ``timings`` the statistics include seconds per stage (the page then varies).
        max_views: Pairs that get a bit-by-bit view (the first ones shown).
    """
    options = options or ReportOptions(clusters="representative")
    pairs = selected_pairs(result, options)
    groups = clusters(result, options.clusters or "representative")  # the page always has them
    s = result.stats
    cards = stat_cards(
        [
            ("documents", f"{s.get('documents', len(result.names)):,}"),
            ("candidate pairs", f"{s.get('candidates', 0):,}"),
            ("pairs reported", f"{s.get('pairs', len(result.pairs)):,}"),
            ("clusters", f"{len(groups):,}"),
            ("skipped inputs", f"{len(result.skipped):,}"),
        ]
    )
    base = common_dir(result.names)
    body = (
        cards
        + _pairs_section(result, pairs, options, max_views, base)
        + _clusters_section(groups, base)
        + _settings_section(result, options)
        + _skipped_section(result)
    )
    subtitle = (
        f"{s.get('documents', len(result.names)):,} documents · {_count_shown(result, pairs)} · "
        f"{result.bits}-bit fingerprints"
    )
    views = _views(result, pairs, documents, max_views)
    return page("near-duplicate report", subtitle, body + "".join(views))
