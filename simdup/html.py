"""Self-contained HTML reports: scan results, one pair bit by bit, and eval charts.

Each page is one file that needs nothing else: CSS and SVG are inline, a few lines of
vanilla JavaScript sort tables, and a Content-Security-Policy allows no fetch of any kind
(only the page's own script, by hash), so a report can be mailed, archived or opened from
a CI artifact offline. Every document name and term passes through :func:`text` (control
characters made visible as in the terminal table, then ``html.escape``), so a file named
``<script>alert(1)</script>.txt`` is shown literally and never runs. Pages are
deterministic: the same result renders to the same bytes.
"""

from __future__ import annotations

import base64
import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from simdup import __version__
from simdup.evaluate import Evaluation, SchemeResult
from simdup.explain import Comparison, TermWeight, compare_documents
from simdup.model import FEW_FEATURES, Document, Pair, ScanResult
from simdup.pipeline import clusters
from simdup.render import ReportOptions, printable, selected_pairs
from simdup.simhash import to_hex, words_to_int

#: Pairs of a scan page that get a bit-by-bit view (each is a few kilobytes of SVG).
MAX_PAIR_VIEWS = 200

#: Pairs listed in a scan page's table (about 600 bytes each); --limit or JSON for more.
MAX_TABLE_ROWS = 10_000

#: Bits per row of a bit strip.
STRIP_BITS = 64

#: Terms listed per pair view.
TOP_TERMS = 8

_SCRIPT = """
(function () {
  function sortBy(table, th, col) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var numeric = th.getAttribute("data-sort") === "num";
    var down = th.getAttribute("aria-sort") !== "descending";
    rows.sort(function (a, b) {
      var x = a.cells[col].getAttribute("data-v") || a.cells[col].textContent;
      var y = b.cells[col].getAttribute("data-v") || b.cells[col].textContent;
      var c = numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
      if (c !== c) { c = 0; }
      return down ? -c : c;
    });
    var heads = table.tHead.rows[0].cells;
    for (var i = 0; i < heads.length; i++) { heads[i].removeAttribute("aria-sort"); }
    th.setAttribute("aria-sort", down ? "descending" : "ascending");
    rows.forEach(function (r) { body.appendChild(r); });
  }
  var tables = document.querySelectorAll("table.sortable");
  Array.prototype.forEach.call(tables, function (table) {
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      if (!th.hasAttribute("data-sort")) { return; }
      th.tabIndex = 0;
      th.addEventListener("click", function () { sortBy(table, th, col); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(table, th, col); }
      });
    });
  });
  Array.prototype.forEach.call(document.querySelectorAll("tr[data-href]"), function (tr) {
    tr.addEventListener("click", function (e) {
      if (e.target.tagName !== "A") { location.hash = tr.getAttribute("data-href"); }
    });
  });
  document.addEventListener("keydown", function (e) {
    if (e.key === "Escape" && location.hash.indexOf("#pair-") === 0) { location.hash = "#pairs"; }
  });
  document.documentElement.setAttribute("data-ready", "1");
})();
"""

_SCRIPT_HASH = base64.b64encode(hashlib.sha256(_SCRIPT.encode("utf-8")).digest()).decode("ascii")

_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    f"script-src 'sha256-{_SCRIPT_HASH}'; base-uri 'none'; form-action 'none'"
)

_CSS = """
:root {
  --bg: #f6f5f1; --card: #ffffff; --ink: #1c2430; --muted: #667085; --line: #e4e2dc;
  --accent: #2f6fde; --accent-soft: #dbe7fb; --warm: #e07b39; --warm-soft: #fbe3d3;
  --agree: #c9efd6; --agree-ink: #17683a; --differ: #f5a5a5; --differ-ink: #b42318;
  --one: #1c2430; --zero: #ffffff;
}
* { box-sizing: border-box; }
html { background: var(--bg); }
body { margin: 0; color: var(--ink); font: 15px/1.55 system-ui, -apple-system, "Segoe UI",
  Roboto, "Helvetica Neue", Arial, sans-serif; }
header.top { background: #17202c; color: #f4f1ea; padding: 28px 0 30px; }
header.top .wrap { display: flex; align-items: baseline; gap: 18px; flex-wrap: wrap; }
header.top h1 { margin: 0; font-size: 26px; font-weight: 650; letter-spacing: -0.01em; }
header.top .sub { color: #b8c0cc; font-size: 14px; }
.logo { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; color: #8fb4f5;
  font-weight: 600; }
.wrap { max-width: 1120px; margin: 0 auto; padding: 0 28px; }
main { padding-bottom: 72px; }
section { margin-top: 34px; }
h2 { font-size: 19px; margin: 0 0 4px; letter-spacing: -0.005em; }
h3 { font-size: 15px; margin: 18px 0 6px; }
p.lead { margin: 0 0 14px; color: var(--muted); max-width: 820px; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 12px;
  margin-top: 24px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 12px;
  padding: 14px 16px 12px; box-shadow: 0 1px 2px rgba(28, 36, 48, 0.04); }
.card .num { font-size: 28px; font-weight: 650; font-variant-numeric: tabular-nums;
  line-height: 1.2; }
.card .label { color: var(--muted); font-size: 12px; text-transform: uppercase;
  letter-spacing: 0.06em; }
.panel { background: var(--card); border: 1px solid var(--line); border-radius: 12px;
  padding: 18px 20px; box-shadow: 0 1px 2px rgba(28, 36, 48, 0.04); }
table { border-collapse: separate; border-spacing: 0; width: 100%; background: var(--card);
  border: 1px solid var(--line); border-radius: 12px; overflow: hidden; }
th, td { padding: 8px 12px; text-align: left; border-bottom: 1px solid var(--line);
  vertical-align: middle; }
tbody tr:last-child td { border-bottom: 0; }
th { background: #efede7; font-size: 12px; font-weight: 650; text-transform: uppercase;
  letter-spacing: 0.05em; color: #475467; white-space: nowrap; }
th[data-sort] { cursor: pointer; user-select: none; }
th[data-sort]::after { content: " \\2195"; color: #98a2b3; }
th[aria-sort="ascending"]::after { content: " \\2191"; color: var(--accent); }
th[aria-sort="descending"]::after { content: " \\2193"; color: var(--accent); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.small { font-size: 13px; }
.dir { color: var(--muted); }
tbody tr:hover td { background: #f8f7f3; }
tr[data-href] { cursor: pointer; }
tr.below td { color: var(--muted); }
.name { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 13px;
  word-break: break-all; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
.meter { display: inline-block; width: 70px; height: 7px; border-radius: 4px;
  background: #ebe9e3; vertical-align: middle; margin-left: 8px; overflow: hidden; }
.meter i { display: block; height: 100%; background: var(--accent); border-radius: 4px; }
.meter.warm i { background: var(--warm); }
.tag { display: inline-block; font-size: 11px; padding: 1px 7px; border-radius: 999px;
  background: #efede7; color: #475467; margin-left: 6px; letter-spacing: 0.02em; }
.tag.warn { background: var(--warm-soft); color: #9a3f0b; }
.tag.chosen { background: var(--accent-soft); color: #1d4ea8; }
.grid2 { display: grid; grid-template-columns: 1fr 1fr; gap: 16px; }
@media (max-width: 820px) { .grid2 { grid-template-columns: 1fr; } }
.clusters { display: grid; grid-template-columns: repeat(auto-fill, minmax(300px, 1fr));
  gap: 12px; }
.clusters ul { margin: 8px 0 0; padding-left: 18px; }
.clusters .tags { display: block; margin: 4px 0 0 -6px; }
dl.params { display: grid; grid-template-columns: max-content 1fr; gap: 4px 18px; margin: 0; }
dl.params dt { color: var(--muted); }
dl.params dd { margin: 0; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 13px; word-break: break-all; }
.muted { color: var(--muted); }
.note { color: var(--muted); font-size: 13px; margin-top: 8px; }
.pair-view { display: none; }
.pair-view:target { display: block; position: fixed; inset: 0; z-index: 10; overflow: auto;
  background: rgba(23, 32, 44, 0.6); padding: 36px 16px; }
.pair-view:target .sheet { max-width: 1080px; margin: 0 auto; }
.sheet { background: var(--card); border-radius: 14px; padding: 22px 26px 26px;
  box-shadow: 0 20px 50px rgba(0, 0, 0, 0.25); position: relative; }
.close { position: absolute; right: 18px; top: 14px; font-size: 26px; line-height: 1;
  color: var(--muted); }
.docs { display: grid; grid-template-columns: auto 1fr auto; gap: 6px 12px; align-items: center;
  margin: 6px 0 16px; }
.badge { display: inline-flex; width: 22px; height: 22px; border-radius: 6px;
  align-items: center; justify-content: center; font-weight: 700; font-size: 12px;
  background: #17202c; color: #fff; }
.hex { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px;
  color: var(--muted); word-break: break-all; }
.verdict { display: flex; flex-wrap: wrap; gap: 10px 26px; margin: 14px 0 4px; }
.verdict div { min-width: 120px; }
.verdict .num { font-size: 24px; font-weight: 650; font-variant-numeric: tabular-nums; }
.verdict .label { color: var(--muted); font-size: 12px; text-transform: uppercase;
  letter-spacing: 0.06em; }
svg { display: block; max-width: 100%; height: auto; }
svg.wide { width: 100%; }
svg.strip { width: 100%; }
svg text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
.strip .ag { fill: var(--agree); }
.strip .df { fill: var(--differ); }
.strip .b1 { fill: var(--one); }
.strip .b0 { fill: var(--zero); stroke: #c9c6bd; stroke-width: 0.8; }
.strip .pos { fill: #98a2b3; font-size: 10px; }
.strip .caret { fill: var(--differ-ink); }
.strip .lab { fill: #475467; font-size: 11px; font-weight: 700; }
.legend { display: flex; gap: 18px; flex-wrap: wrap; color: var(--muted); font-size: 13px;
  margin: 8px 0 0; }
.legend span::before { content: ""; display: inline-block; width: 12px; height: 12px;
  border-radius: 3px; margin-right: 6px; vertical-align: -2px; }
.legend .l1::before { background: var(--one); }
.legend .l0::before { background: var(--zero); border: 1px solid #c9c6bd; }
.legend .lag::before { background: var(--agree); }
.legend .ldf::before { background: var(--differ); }
.chart .axis { stroke: #98a2b3; stroke-width: 1; }
.chart .gridline { stroke: #ebe9e3; stroke-width: 1; }
.chart .tick { fill: #667085; font-size: 11px; }
.chart .title { fill: #1c2430; font-size: 13px; font-weight: 650; }
.chart .axislabel { fill: #475467; font-size: 12px; }
.chart .value { fill: #344054; font-size: 11px; }
.chart .s-blue { stroke: var(--accent); fill: none; stroke-width: 2.2; }
.chart .s-gray { stroke: #98a2b3; fill: none; stroke-width: 1.8; stroke-dasharray: 5 4; }
.chart .s-warm { stroke: var(--warm); fill: none; stroke-width: 2.2; }
.chart .s-faint { stroke: #c9c6bd; fill: none; stroke-width: 1.2; }
.chart .d-blue { fill: var(--accent); }
.chart .d-gray { fill: #98a2b3; }
.chart .d-warm { fill: var(--warm); }
.chart .bar-blue { fill: var(--accent); }
.chart .bar-warm { fill: var(--warm); }
.chart .thr { stroke: #b42318; stroke-width: 1; stroke-dasharray: 3 3; }
.chart .thrlabel { fill: #b42318; font-size: 11px; }
footer { color: var(--muted); font-size: 13px; margin-top: 48px; }
"""


def text(value: str) -> str:
    """Return a name or term as HTML text: control characters visible, markup escaped.

    >>> text("<script>alert(1)</script>.txt")
    '&lt;script&gt;alert(1)&lt;/script&gt;.txt'
    >>> text('a"b\\x1b')
    'a&quot;b\\\\x1b'
    """
    return escape(printable(value), quote=True)


def doc_name(name: str, base: str = "") -> str:
    """Return a document name as HTML: directory muted, ``base`` left out, full name on hover.

    Escaped like :func:`text`.

    >>> doc_name("a/<b>.txt")
    '<span title="a/&lt;b&gt;.txt"><span class="dir">a/</span>&lt;b&gt;.txt</span>'
    >>> doc_name("docs/a/b.txt", "docs/")
    '<span title="docs/a/b.txt"><span class="dir">a/</span>b.txt</span>'
    """
    shown = printable(name[len(base) :] if base and name.startswith(base) else name)
    cut = shown.rfind("/") + 1
    head, tail = escape(shown[:cut], quote=True), escape(shown[cut:], quote=True)
    inner = f'<span class="dir">{head}</span>{tail}' if cut else tail
    return f'<span title="{text(name)}">{inner}</span>'


def common_dir(names: Sequence[str]) -> str:
    """Return the longest directory prefix (ending in ``/``) all names share, or ``""``.

    >>> common_dir(["a/b/c.txt", "a/b/d/e.txt", "a/bc.txt"])
    'a/'
    >>> common_dir(["x.txt", "a/y.txt"])
    ''
    """
    if not names:
        return ""
    first, last = min(names), max(names)  # the prefix all share is the one these two share
    size = next(
        (k for k, (x, y) in enumerate(zip(first, last, strict=False)) if x != y),
        min(len(first), len(last)),
    )
    return first[: first.rfind("/", 0, size) + 1]


def _num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def _attr(value: float | None) -> str:
    """Return a sort key attribute value for a number (missing values sort lowest)."""
    return "-1" if value is None or math.isnan(value) else repr(round(float(value), 6))


def _meter(value: float | None, *, warm: bool = False) -> str:
    if value is None or math.isnan(value):
        return ""
    width = max(0.0, min(1.0, value)) * 100
    kind = " warm" if warm else ""
    return f'<span class="meter{kind}" aria-hidden="true"><i style="width:{width:.1f}%"></i></span>'


def page(title: str, subtitle: str, body: str) -> str:
    """Return a complete HTML document around ``body`` (title and subtitle are plain text)."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<link rel="icon" href="data:,">\n'
        f"<title>{escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        '<header class="top"><div class="wrap">'
        f'<h1><span class="logo">simdup</span> {escape(title)}</h1>'
        f'<span class="sub">{escape(subtitle)}</span></div></header>\n'
        f'<main class="wrap">\n{body}\n'
        f"<footer>Made by simdup {escape(__version__)} · SimHash (Charikar 2002) · "
        "self-contained page: no network access.</footer>\n</main>\n"
        f"<script>{_SCRIPT}</script>\n</body>\n</html>\n"
    )


def _cards(items: Iterable[tuple[str, str]]) -> str:
    cells = "".join(
        f'<div class="card"><div class="num">{escape(value)}</div>'
        f'<div class="label">{escape(label)}</div></div>'
        for label, value in items
    )
    return f'<div class="cards">{cells}</div>'


def _params_list(values: Mapping[str, Any]) -> str:
    rows = "".join(
        f"<dt>{escape(str(k))}</dt><dd>{text(_plain(v))}</dd>" for k, v in values.items()
    )
    return f'<dl class="params">{rows}</dl>'


def _plain(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(_plain(v) for v in value) or "—"
    return str(value)


# --- bit strips and the pair view ---------------------------------------------------------


def bit_strip(fingerprint_a: int, fingerprint_b: int, bits: int) -> str:
    """Return both fingerprints as an SVG strip: one column per bit, coloured by agreement.

    Each column holds bit ``i`` of A above bit ``i`` of B (dark square = 1, light = 0) on a
    green band where they agree and a red band where they differ; rows hold 64 bits,
    grouped by 8, with bit positions above.
    """
    cell, gap, label_w, pos_h = 11, 3, 22, 13
    row_h = pos_h + 2 * cell + 4 + 16
    per_row = min(STRIP_BITS, bits)
    rows = -(-bits // per_row)

    def x_of(k: int) -> int:
        return label_w + k * (cell + 1) + (k // 8) * gap

    width = x_of(per_row - 1) + cell + 2
    height = rows * row_h
    diff = fingerprint_a ^ fingerprint_b
    parts = [
        f'<svg class="strip" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'style="max-width:{width * 1.35:.0f}px" '
        f'role="img" aria-label="fingerprint bits of A and B, {bits} bits, '
        f'{diff.bit_count()} differ">'
    ]
    for r in range(rows):
        top = r * row_h
        y_a = top + pos_h
        y_b = y_a + cell + 2
        parts.append(f'<text class="lab" x="2" y="{y_a + cell - 2}">A</text>')
        parts.append(f'<text class="lab" x="2" y="{y_b + cell - 2}">B</text>')
        for k in range(min(per_row, bits - r * per_row)):
            i = r * per_row + k
            x = x_of(k)
            if k % 8 == 0:
                parts.append(f'<text class="pos" x="{x}" y="{top + 10}">{i}</text>')
            band = "df" if (diff >> i) & 1 else "ag"
            parts.append(
                f'<rect class="{band}" x="{x - 1}" y="{y_a - 2}" width="{cell + 2}" '
                f'height="{2 * cell + 6}" rx="2"/>'
            )
            if band == "df":
                tip, mid = y_b + cell + 5, x + cell / 2
                parts.append(f'<path class="caret" d="M{mid:.1f} {tip} l-3.5 5 h7 z"/>')
            for y, value in ((y_a, fingerprint_a), (y_b, fingerprint_b)):
                bit = (value >> i) & 1
                parts.append(
                    f'<rect class="b{bit}" x="{x + 1}" y="{y + 1}" width="{cell - 2}" '
                    f'height="{cell - 2}" rx="1.5"/>'
                )
    parts.append("</svg>")
    return "".join(parts)


def _cosine_gauge(estimated: float, cosine: float | None, threshold: float) -> str:
    """Return an SVG scale from 0 to 1 marking the estimated and true cosine."""
    width, left, right = 640, 12, 140
    span = width - left - right
    legend = width - right + 24

    def x(v: float) -> float:
        return left + max(0.0, min(1.0, v)) * span

    parts = [
        f'<svg class="chart" viewBox="0 0 {width} 58" width="{width}" height="58" role="img" '
        'aria-label="estimated and true cosine on a scale from 0 to 1">',
        f'<rect x="{left}" y="24" width="{span}" height="8" rx="4" fill="#ebe9e3"/>',
        f'<line class="thr" x1="{x(threshold):.1f}" y1="16" x2="{x(threshold):.1f}" y2="40"/>',
        f'<text class="thrlabel" x="{x(threshold):.1f}" y="52" text-anchor="middle">'
        f"threshold {threshold:g}</text>",
    ]
    for v in (0.0, 0.5, 1.0):
        parts.append(f'<text class="tick" x="{x(v):.1f}" y="14" text-anchor="middle">{v:g}</text>')
    if cosine is not None:
        parts.append(
            f'<circle class="d-blue" cx="{x(cosine):.1f}" cy="28" r="7"><title>true cosine '
            f"{cosine:.3f}</title></circle>"
        )
    parts.append(
        f'<circle class="d-blue" cx="{legend}" cy="20" r="4.5"/>'
        f'<text class="tick" x="{legend + 10}" y="24">true cosine</text>'
        f'<rect class="d-warm" x="{legend - 4}" y="36" width="8" height="8" '
        f'transform="rotate(45 {legend} 40)"/>'
        f'<text class="tick" x="{legend + 10}" y="44">estimated cosine</text>'
    )
    parts.append(
        f'<rect class="d-warm" x="{x(estimated) - 5:.1f}" y="23" width="10" height="10" '
        f'transform="rotate(45 {x(estimated):.1f} 28)"><title>estimated cosine '
        f"{estimated:.3f}</title></rect>"
    )
    parts.append("</svg>")
    return "".join(parts)


def _term_rows(terms: Sequence[TermWeight], shared: bool) -> str:
    if not terms:
        return '<p class="note">None.</p>'
    head = "<th>Term</th><th class='num'>Weight A</th><th class='num'>Weight B</th>"
    if shared:
        head += "<th class='num'>Share of cosine</th>"
    rows = []
    top = max((t.contribution for t in terms), default=0.0) or 1.0
    for t in terms:
        cells = (
            f'<td class="name">{text(t.term)}</td><td class="num">{t.weight_a:g}</td>'
            f'<td class="num">{t.weight_b:g}</td>'
        )
        if shared:
            cells += f'<td class="num">{t.contribution:.3f}{_meter(t.contribution / top)}</td>'
        rows.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


@dataclass(frozen=True)
class PairView:
    """Everything one pair view shows (from a scan row or a :class:`Comparison`)."""

    a: str
    b: str
    bits: int
    fingerprint_a: int
    fingerprint_b: int
    hamming: int
    estimated: float
    cosine: float | None
    threshold: float
    few_features: bool = False
    comparison: Comparison | None = None


def pair_view(view: PairView) -> str:
    """Return the HTML of one pair: names, bit strips, distance, cosines and terms."""
    agree = view.bits - view.hamming
    bits = view.bits
    c = view.comparison
    features = (
        (f"{c.features_a} features", f"{c.features_b} features") if c is not None else ("", "")
    )
    docs = (
        '<div class="docs">'
        f'<span class="badge">A</span><span class="name">{doc_name(view.a)}</span>'
        f'<span class="muted">{features[0]}</span>'
        f'<span></span><span class="hex">{to_hex(view.fingerprint_a, bits)}</span><span></span>'
        f'<span class="badge">B</span><span class="name">{doc_name(view.b)}</span>'
        f'<span class="muted">{features[1]}</span>'
        f'<span></span><span class="hex">{to_hex(view.fingerprint_b, bits)}</span><span></span>'
        "</div>"
    )
    warn = (
        f'<span class="tag warn">fewer than {FEW_FEATURES} features: estimate unreliable</span>'
        if view.few_features
        else ""
    )
    verdict = (
        '<div class="verdict">'
        f'<div><div class="num">{view.hamming}</div><div class="label">Hamming distance '
        f"of {bits}</div></div>"
        f'<div><div class="num">{agree}</div><div class="label">bits agree</div></div>'
        f'<div><div class="num">{_num(view.estimated)}</div>'
        '<div class="label">estimated cosine</div></div>'
        f'<div><div class="num">{_num(view.cosine)}</div>'
        '<div class="label">true cosine</div></div>'
        "</div>"
    )
    legend = (
        '<div class="legend"><span class="l1">bit 1</span><span class="l0">bit 0</span>'
        f'<span class="lag">{agree} agreeing bits</span>'
        f'<span class="ldf">{view.hamming} differing bits</span></div>'
    )
    explanation = (
        f'<p class="note">Each bit is the side of one random hyperplane; two documents '
        f"at angle θ disagree on a bit with probability θ/π, so the estimate is "
        f"cos(π &times; {view.hamming} / {bits}) = {_num(view.estimated)}. The true cosine is "
        "computed from the weights.</p>"
    )
    terms = ""
    if c is not None:
        terms = (
            '<div class="grid2"><div><h3>Top shared terms (what makes them similar)</h3>'
            f"{_term_rows(c.shared, True)}</div>"
            "<div><h3>Top differing terms (what sets them apart)</h3>"
            f"{_term_rows(c.differing, False)}</div></div>"
        )
    gauge = _cosine_gauge(view.estimated, view.cosine, view.threshold)
    return (
        f"{docs}{warn}<h3>Fingerprints bit by bit</h3>"
        f"{bit_strip(view.fingerprint_a, view.fingerprint_b, bits)}"
        f"{legend}{verdict}{gauge}{explanation}{terms}"
    )


def compare_page(comparison: Comparison) -> str:
    """Return the page of ``simdup compare --html``: the pair view on its own."""
    c = comparison
    view = PairView(
        a=c.a,
        b=c.b,
        bits=c.params.bits,
        fingerprint_a=c.fingerprint_a,
        fingerprint_b=c.fingerprint_b,
        hamming=c.hamming,
        estimated=c.estimated_cosine,
        cosine=c.cosine,
        threshold=c.params.threshold,
        few_features=min(c.features_a, c.features_b) < FEW_FEATURES,
        comparison=c,
    )
    settings = c.params.fingerprint_settings()
    body = (
        f'<section><div class="sheet" id="pair">{pair_view(view)}</div></section>'
        f'<section><h2>Settings</h2><div class="panel">{_params_list(settings)}</div></section>'
    )
    return page("compare", f"{printable(c.a)} · {printable(c.b)}", body)


# --- scan page ----------------------------------------------------------------------------


def _pair_row(k: int, pair: Pair, viewable: bool, base: str) -> str:
    link = f"#pair-{k}"
    cells = [
        f'<td class="num" data-v="{k}">{k}</td>',
        f'<td class="name" data-v="{text(pair.a)}">{doc_name(pair.a, base)}</td>',
        f'<td class="name" data-v="{text(pair.b)}">{doc_name(pair.b, base)}</td>',
        f'<td class="num" data-v="{pair.hamming}">{pair.hamming}</td>',
        f'<td class="num" data-v="{_attr(pair.estimated_cosine)}">'
        f"{_num(pair.estimated_cosine)}{_meter(pair.estimated_cosine, warm=True)}</td>",
        f'<td class="num" data-v="{_attr(pair.cosine)}">{_num(pair.cosine)}'
        f"{_meter(pair.cosine)}</td>",
        f'<td><a href="{link}">view</a></td>' if viewable else "<td></td>",
    ]
    classes = [] if pair.above_threshold else ["below"]
    href = f' data-href="{link}"' if viewable else ""
    cls = f' class="{" ".join(classes)}"' if classes else ""
    return f"<tr{cls}{href}>{''.join(cells)}</tr>"


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
    options = options or ReportOptions(clusters=True)
    pairs = selected_pairs(result, options)
    groups = clusters(result)
    by_name = {d.name: d for d in documents or ()}
    row_of = {name: i for i, name in enumerate(result.names)}
    bits = result.params.bits
    s = result.stats
    cards = _cards(
        [
            ("documents", f"{s.get('documents', len(result.names)):,}"),
            ("candidate pairs", f"{s.get('candidates', 0):,}"),
            ("pairs reported", f"{s.get('pairs', len(result.pairs)):,}"),
            ("clusters", f"{len(groups):,}"),
            ("skipped inputs", f"{len(result.skipped):,}"),
        ]
    )
    base = common_dir(result.names)
    listed = pairs[:MAX_TABLE_ROWS]
    rows = "".join(_pair_row(k + 1, p, k < max_views, base) for k, p in enumerate(listed))
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
    pairs_section = (
        '<section id="pairs"><h2>Pairs</h2>'
        f'<p class="lead">{scope}, found among {s.get("candidates", 0):,} candidate pairs. '
        "Click a column to sort, a row to see both fingerprints bit by bit."
        f"{relative}</p>"
        f"{table}{more}</section>"
    )
    if groups:
        cluster_cards = "".join(
            f'<div class="panel"><strong>Cluster {i}</strong><span class="tags">'
            f'<span class="tag">{g.size} documents</span>'
            f'<span class="tag">weakest cosine {_num(g.min_cosine)}</span></span>'
            "<ul>"
            + "".join(f'<li class="name">{doc_name(m, base)}</li>' for m in g.members)
            + "</ul></div>"
            for i, g in enumerate(groups, 1)
        )
        cluster_section = (
            '<section id="clusters"><h2>Clusters</h2><p class="lead">Documents connected by '
            f'reported pairs, largest first.</p><div class="clusters">{cluster_cards}</div>'
            "</section>"
        )
    else:
        cluster_section = ""
    params = {**result.params.as_dict(), "tables": result.tables}
    stats: dict[str, Any] = dict(s)
    stats["few_features"] = int((result.feature_counts < FEW_FEATURES).sum())
    timings = {f"{k} (s)": f"{v:.3f}" for k, v in result.timings.items()} if options.timings else {}
    settings_section = (
        '<section id="settings"><div class="grid2">'
        f'<div><h2>Parameters</h2><div class="panel">{_params_list(params)}</div></div>'
        f'<div><h2>Statistics</h2><div class="panel">{_params_list({**stats, **timings})}'
        "</div></div></div></section>"
    )
    skipped_section = ""
    if result.skipped:
        items = "".join(
            f'<tr><td class="name">{text(sk.path)}</td><td>{text(sk.reason)}</td></tr>'
            for sk in result.skipped
        )
        skipped_section = (
            '<section id="skipped"><h2>Skipped inputs</h2><table><thead><tr><th>Input</th>'
            f"<th>Reason</th></tr></thead><tbody>{items}</tbody></table></section>"
        )
    views = []
    for k, p in enumerate(pairs[:max_views], 1):
        i, j = row_of[p.a], row_of[p.b]
        comparison = None
        if p.a in by_name and p.b in by_name:
            comparison = compare_documents(by_name[p.a], by_name[p.b], result.params, top=TOP_TERMS)
        view = PairView(
            a=p.a,
            b=p.b,
            bits=bits,
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
    subtitle = (
        f"{s.get('documents', len(result.names)):,} documents · {len(pairs):,} pairs · "
        f"{bits}-bit fingerprints"
    )
    body = cards + pairs_section + cluster_section + settings_section + skipped_section
    return page("near-duplicate report", subtitle, body + "".join(views))


# --- charts -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Series:
    """One line of a chart: points, style class, legend label, dots or not."""

    label: str
    points: tuple[tuple[float, float], ...]
    style: str = "blue"
    dots: bool = True
    dashed: bool = False
    line: bool = True


def _ticks_log(low: float, high: float) -> list[float]:
    out = []
    exponent = math.floor(math.log10(low))
    while 10**exponent <= high * 1.0001:
        for m in (1, 2, 5):
            v = m * 10**exponent
            if low * 0.9999 <= v <= high * 1.0001:
                out.append(v)
        exponent += 1
    return out


def _nice_log_bounds(low: float, high: float) -> tuple[float, float]:
    """Return the 1-2-5 values just below ``low`` and just above ``high``.

    >>> _nice_log_bounds(0.049, 0.35)
    (0.02, 0.5)
    """
    steps = [m * 10.0**e for e in range(-7, 7) for m in (1, 2, 5)]
    below = max((v for v in steps if v <= low * 1.0001), default=steps[0])
    above = min((v for v in steps if v >= high * 0.9999), default=steps[-1])
    if above <= below:
        above = below * 2
    return float(f"{below:.6g}"), float(f"{above:.6g}")


def line_chart(
    series: Sequence[Series],
    *,
    title: str,
    x_label: str,
    y_label: str,
    x_log2: bool = False,
    y_log: bool = False,
    x_range: tuple[float, float] | None = None,
    y_range: tuple[float, float] | None = None,
    x_ticks: Sequence[float] | None = None,
    marker: tuple[float, str] | None = None,
    legend_left: bool = False,
    width: int = 520,
    height: int = 320,
) -> str:
    """Return an SVG line chart; every label and title is escaped.

    Args:
        series: Lines (or dots) to draw, first drawn first.
        title: Chart title.
        x_label: Label under the x axis.
        y_label: Label beside the y axis.
        x_log2: Place x by log2 (fingerprint widths double).
        y_log: Place y by log10 between 1-2-5 bounds (errors shrink as 1/sqrt(bits)).
        x_range: Fixed x bounds (default: the data's).
        y_range: Fixed y bounds (default: the data's).
        x_ticks: Tick values on the x axis (default: six even ticks).
        marker: A vertical dashed line at ``x`` with a label (the threshold).
        legend_left: Put the legend top left instead of top right.
        width: Width of the view box.
        height: Height of the view box.
    """
    left, right, top, bottom = 58, 16, 34, 48
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points if not (y_log and y <= 0)]
    x_lo, x_hi = x_range or (min(xs, default=0.0), max(xs, default=1.0))
    y_lo, y_hi = y_range or (min(ys, default=0.0), max(ys, default=1.0))
    if y_log:
        y_lo, y_hi = _nice_log_bounds(max(y_lo, 1e-6), max(y_hi, 1e-6))
    if x_hi <= x_lo:
        x_hi = x_lo + 1
    if y_hi <= y_lo:
        y_hi = y_lo + 1

    def fx(x: float) -> float:
        if x_log2:
            t = (math.log2(x) - math.log2(x_lo)) / (math.log2(x_hi) - math.log2(x_lo))
        else:
            t = (x - x_lo) / (x_hi - x_lo)
        return left + t * (width - left - right)

    def fy(y: float) -> float:
        if y_log:
            t = (math.log10(max(y, 1e-12)) - math.log10(y_lo)) / (
                math.log10(y_hi) - math.log10(y_lo)
            )
        else:
            t = (y - y_lo) / (y_hi - y_lo)
        return height - bottom - t * (height - top - bottom)

    parts = [
        f'<svg class="chart wide" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="{escape(title)}">',
        f'<text class="title" x="{left}" y="18">{escape(title)}</text>',
    ]
    y_ticks = _ticks_log(y_lo, y_hi) if y_log else [y_lo + (y_hi - y_lo) * k / 5 for k in range(6)]
    for v in y_ticks:
        y = fy(v)
        parts.append(
            f'<line class="gridline" x1="{left}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}"/>'
        )
        parts.append(
            f'<text class="tick" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{v:g}</text>'
        )
    for v in x_ticks if x_ticks is not None else [x_lo + (x_hi - x_lo) * k / 5 for k in range(6)]:
        x = fx(v)
        parts.append(
            f'<text class="tick" x="{x:.1f}" y="{height - bottom + 16}" '
            f'text-anchor="middle">{v:g}</text>'
        )
    parts.append(
        f'<line class="axis" x1="{left}" y1="{height - bottom}" x2="{width - right}" '
        f'y2="{height - bottom}"/><line class="axis" x1="{left}" y1="{top}" x2="{left}" '
        f'y2="{height - bottom}"/>'
    )
    parts.append(
        f'<text class="axislabel" x="{(left + width - right) / 2:.1f}" y="{height - 10}" '
        f'text-anchor="middle">{escape(x_label)}</text>'
        f'<text class="axislabel" transform="translate(14 {(top + height - bottom) / 2:.1f}) '
        f'rotate(-90)" text-anchor="middle">{escape(y_label)}</text>'
    )
    if marker is not None:
        mx = fx(marker[0])
        parts.append(
            f'<line class="thr" x1="{mx:.1f}" y1="{top}" x2="{mx:.1f}" y2="{height - bottom}"/>'
            f'<text class="thrlabel" x="{mx - 4:.1f}" y="{top + 10}" text-anchor="end">'
            f"{escape(marker[1])}</text>"
        )
    for s in series:
        pts = [(fx(x), fy(y)) for x, y in s.points if not (y_log and y <= 0)]
        if not pts:
            continue
        style = "s-gray" if s.dashed else f"s-{s.style}"
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
        if s.line and len(pts) > 1:
            parts.append(
                f'<polyline class="{style}" points="{path}"><title>{escape(s.label)}'
                "</title></polyline>"
            )
        if s.dots:
            dot = "d-gray" if s.dashed else f"d-{s.style}"
            for (x, y), (vx, vy) in zip(pts, s.points, strict=False):
                parts.append(
                    f'<circle class="{dot}" cx="{x:.1f}" cy="{y:.1f}" r="3.5"><title>'
                    f"{escape(s.label)}: {vx:g}, {vy:.4f}</title></circle>"
                )
    # Legend, top right.
    ly = top + 6
    for s in series:
        if not s.label:
            continue
        style = "s-gray" if s.dashed else f"s-{s.style}"
        lx = left + 14 if legend_left else width - right - 190
        key = (
            f'<line class="{style}" x1="{lx}" y1="{ly}" x2="{lx + 22}" y2="{ly}"/>'
            if s.line
            else f'<circle class="d-{s.style}" cx="{lx + 11}" cy="{ly}" r="3.5"/>'
        )
        parts.append(f'{key}<text class="tick" x="{lx + 28}" y="{ly + 4}">{escape(s.label)}</text>')
        ly += 16
    parts.append("</svg>")
    return "".join(parts)


def bar_chart(
    rows: Sequence[tuple[str, float | None, float | None]],
    *,
    title: str,
    labels: tuple[str, str],
    highlight: str | None = None,
    width: int = 520,
) -> str:
    """Return grouped horizontal bars (two values per row, 0 to 1), names escaped."""
    left, right, top = 130, 70, 44
    bar_h = 12
    group_h = max(38, (300 - top) // max(len(rows), 1))
    height = top + group_h * len(rows) + 12
    span = width - left - right
    parts = [
        f'<svg class="chart wide" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="{escape(title)}">',
        f'<text class="title" x="8" y="18">{escape(title)}</text>',
        f'<rect class="bar-blue" x="{left}" y="26" width="12" height="10" rx="2"/>'
        f'<text class="tick" x="{left + 18}" y="35">{escape(labels[0])}</text>'
        f'<rect class="bar-warm" x="{left + 120}" y="26" width="12" height="10" rx="2"/>'
        f'<text class="tick" x="{left + 138}" y="35">{escape(labels[1])}</text>',
    ]
    for k in range(6):
        x = left + span * k / 5
        parts.append(
            f'<line class="gridline" x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{height - 12}"/>'
        )
    for r, (name, first, second) in enumerate(rows):
        y = top + r * group_h + 6
        weight = ' font-weight="700"' if name == highlight else ""
        parts.append(
            f'<text class="axislabel" x="{left - 8}" y="{y + bar_h + 4}" '
            f'text-anchor="end"{weight}>{escape(name)}</text>'
        )
        for k, (value, cls) in enumerate(((first, "bar-blue"), (second, "bar-warm"))):
            yy = y + k * (bar_h + 2)
            w = 0.0 if value is None else max(0.0, min(1.0, value)) * span
            parts.append(
                f'<rect class="{cls}" x="{left}" y="{yy}" width="{max(w, 1.0):.1f}" '
                f'height="{bar_h}" rx="2"/>'
                f'<text class="value" x="{left + w + 6:.1f}" y="{yy + bar_h - 2}">'
                f"{_num(value)}</text>"
            )
    parts.append("</svg>")
    return "".join(parts)


# --- eval page ----------------------------------------------------------------------------


def _accuracy_table(evaluation: Evaluation) -> str:
    rows = []
    for w in evaluation.widths:
        ratio = (
            _num(w.similar_binary_mae / w.similar_mae, 2)
            if w.similar_mae and w.similar_binary_mae is not None
            else "n/a"
        )
        rows.append(
            f'<tr><td class="num">{w.bits}</td><td class="num">{_num(w.mae)}</td>'
            f'<td class="num">{_num(w.mae_theory)}</td><td class="num">±{_num(w.mae_stderr, 4)}'
            f'</td><td class="num">{_num(w.similar_mae)}</td>'
            f'<td class="num">{_num(w.similar_binary_mae)}</td><td class="num">{ratio}</td></tr>'
        )
    return (
        "<table><thead><tr><th class='num'>Bits</th><th class='num'>MAE measured</th>"
        "<th class='num'>MAE theory</th><th class='num'>Std. error</th>"
        "<th class='num'>Similar pairs:<br>weighted</th><th class='num'>Similar pairs:<br>"
        "binary</th><th class='num'>Binary ÷<br>weighted</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _scheme_table(evaluation: Evaluation) -> str:
    rows = []
    for s in evaluation.schemes:
        tag = '<span class="tag chosen">chosen</span>' if s.name == evaluation.chosen else ""
        cut = f" · Hamming ≤ {s.max_hamming}" if s.max_hamming is not None else ""
        rows.append(
            f'<tr><td style="white-space:nowrap"><strong>{escape(s.name)}</strong>{tag}</td>'
            f'<td class="muted small" style="min-width:220px">{escape(s.tables)}{escape(cut)}</td>'
            f'<td class="num">{_num(s.recall)}{_meter(s.recall)}</td>'
            f'<td class="num">{_num(s.false_positive_rate, 4)}</td>'
            f'<td class="num">{s.candidates_per_document:.2f}</td>'
            f'<td class="num">{s.seconds * 1000:.2f} ms</td>'
            f'<td class="num">{_num(s.expected_recall)}</td></tr>'
        )
    return (
        "<table><thead><tr><th>Scheme</th><th>Tables</th><th class='num'>Recall</th>"
        "<th class='num'>False-<br>positive rate</th><th class='num'>Candidates<br>per doc</th>"
        "<th class='num'>Time<br>per run</th><th class='num'>Recall at<br>threshold (theory)</th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _recall_chart(evaluation: Evaluation, chosen: SchemeResult) -> str:
    others = [
        Series("other schemes" if k == 0 else "", tuple(s.curve), style="faint", dots=False)
        for k, s in enumerate(x for x in evaluation.schemes if x.name != chosen.name)
    ]
    series = [
        *others,
        Series(f"{chosen.name}: predicted", tuple(chosen.curve), dots=False),
        Series(
            f"{chosen.name}: measured",
            tuple((c, r) for c, r, _ in chosen.measured_curve),
            style="warm",
            line=False,
        ),
    ]
    threshold = evaluation.params.threshold
    return line_chart(
        series,
        title=f"Chance of becoming a candidate, {chosen.name} at {evaluation.params.bits} bits",
        x_label="true cosine of the pair",
        y_label="recall",
        x_range=(0.0, 1.0),
        y_range=(0.0, 1.0),
        x_ticks=[0, 0.2, 0.4, 0.6, 0.8, 1.0],
        marker=(threshold, f"threshold {threshold:g}"),
        legend_left=True,
    )


def eval_page(evaluation: Evaluation) -> str:
    """Return the page of ``simdup eval --html``: the tables and their charts."""
    e = evaluation
    widths = [w.bits for w in e.widths]
    sampled = f" (sampled from {e.sampled_from:,})" if e.sampled_from else ""
    cards = _cards(
        [
            ("documents" + (" sampled" if e.sampled_from else ""), f"{e.documents:,}"),
            ("pairs", f"{e.pairs:,}"),
            (f"similar (cos ≥ {e.params.threshold:g})", f"{e.similar_pairs:,}"),
            ("identical pairs", f"{e.identical_pairs:,}"),
            ("hash seeds", f"{e.options.hash_seeds:,}"),
        ]
    )
    mae_chart = line_chart(
        [
            Series(
                "theory: Binomial(bits, θ/π)",
                tuple((w.bits, w.mae_theory) for w in e.widths),
                dashed=True,
                dots=False,
            ),
            Series("measured", tuple((w.bits, w.mae) for w in e.widths)),
        ],
        title="Mean absolute error of the estimated cosine, all pairs",
        x_label="fingerprint bits (log scale)",
        y_label="mean absolute error (log scale)",
        x_log2=True,
        y_log=True,
        x_ticks=widths,
    )
    similar_points = [w for w in e.widths if w.similar_mae is not None]
    if similar_points:
        weighted_chart = line_chart(
            [
                Series(
                    f"{e.params.weighting} weights",
                    tuple((w.bits, w.similar_mae or 0.0) for w in similar_points),
                ),
                Series(
                    "binary (unweighted)",
                    tuple((w.bits, w.similar_binary_mae or 0.0) for w in similar_points),
                    style="warm",
                ),
            ],
            title="Error on the truly similar pairs: weighted vs binary",
            x_label="fingerprint bits (log scale)",
            y_label="mean absolute error (log scale)",
            x_log2=True,
            y_log=True,
            x_ticks=widths,
        )
    else:
        weighted_chart = (
            '<div class="panel muted">No truly similar (non-identical) pairs: nothing to '
            "compare weighted and binary fingerprints on.</div>"
        )
    accuracy = (
        '<section id="accuracy"><h2>How accurate is the estimated cosine?</h2>'
        '<p class="lead">Every pair of documents, fingerprinted with '
        f"{e.options.hash_seeds} independent hash seeds at each width. The error shrinks as "
        "1/√bits (each doubling of bits cuts it by about 30%); where measured and theory "
        "agree, the fingerprints behave like ideal random hyperplanes on this corpus. On the "
        "right, the same error on the truly similar pairs only, for weighted fingerprints "
        "and for binary ones that ignore how often a term occurs: binary fingerprints "
        "estimate the cosine of the unweighted vectors, so where near-duplicates differ in "
        "emphasis their error stops falling as bits grow.</p>"
        f'<div class="grid2"><div class="panel">{mae_chart}</div>'
        f'<div class="panel">{weighted_chart}</div></div>'
        f'<div style="margin-top:14px">{_accuracy_table(e)}</div></section>'
    )
    chosen = e.scheme(e.chosen)
    bars = bar_chart(
        [(s.name, s.recall, s.false_positive_rate) for s in e.schemes],
        title=f"Blocking at {e.params.bits} bits: candidates among pairs",
        labels=("recall", "false-positive rate"),
        highlight=e.chosen,
    )
    blocking = (
        '<section id="blocking"><h2>Which blocking scheme?</h2>'
        '<p class="lead">Recall: the share of truly similar pairs (true cosine ≥ '
        f"{e.params.threshold:g}) that become candidates; false-positive rate: the share of "
        "the other pairs that do (they cost a verification each, never a wrong report). "
        "The curve shows the chance that a pair becomes a candidate against its true cosine: "
        "predicted from the Binomial model, and measured in bins of true cosine.</p>"
        f'<div class="grid2"><div class="panel">{bars}</div>'
        f'<div class="panel">{_recall_chart(e, chosen)}</div></div>'
        f'<div style="margin-top:14px">{_scheme_table(e)}</div></section>'
    )
    if e.similar:
        base = common_dir([name for p in e.similar for name in (p.a, p.b)])
        rows = "".join(
            f'<tr><td class="name" data-v="{text(p.a)}">{doc_name(p.a, base)}</td>'
            f'<td class="name" data-v="{text(p.b)}">{doc_name(p.b, base)}</td>'
            f'<td class="num">{p.cosine:.3f}{_meter(p.cosine)}</td>'
            f'<td class="num">{p.found:.3f}</td></tr>'
            for p in e.similar
        )
        similar = (
            '<section id="similar"><h2>Truly similar pairs</h2>'
            f'<p class="lead">Found: share of the hash seeds in which {escape(e.chosen)} made '
            "the pair a candidate.</p>"
            '<table class="sortable"><thead><tr><th data-sort="text">Document A</th>'
            '<th data-sort="text">Document B</th><th class="num" data-sort="num">True cosine'
            '</th><th class="num" data-sort="num">Found</th></tr></thead>'
            f"<tbody>{rows}</tbody></table></section>"
        )
    else:
        similar = ""
    params = e.settings()
    settings = (
        f'<section id="settings"><h2>Settings</h2><div class="panel">{_params_list(params)}'
        "</div></section>"
    )
    subtitle = f"{e.documents:,} documents{sampled} · {e.options.hash_seeds} hash seeds"
    return page("eval", subtitle, cards + accuracy + blocking + similar + settings)
