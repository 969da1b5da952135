"""HTML, the shared frame: page layout, style, script, and the escaping every page uses.

Each page is one file that needs nothing else: CSS and SVG are inline, a few lines of
vanilla JavaScript sort tables, and a Content-Security-Policy allows no fetch of any kind
(only the page's own script, by hash), so a report can be mailed, archived or opened from
a CI artifact offline. Every document name and term passes through :func:`text` (control
characters made visible as in the terminal table, then ``html.escape``), so a file named
``<script>alert(1)</script>.txt`` is shown literally and never runs. This is the lowest
floor of the HTML package: charts, the pair view and the pages all build on it.
"""

from __future__ import annotations

import base64
import hashlib
import math
from collections.abc import Iterable, Mapping
from html import escape
from typing import Any

from simdup import __version__
from simdup.text.display import printable

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


def number(value: float | None, digits: int = 3) -> str:
    """Return a number with ``digits`` decimals, or ``n/a`` when it is missing.

    >>> number(0.12345), number(None), number(float("nan"), 2)
    ('0.123', 'n/a', 'n/a')
    """
    return "n/a" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def sort_key(value: float | None) -> str:
    """Return a sort key attribute value for a number (missing values sort lowest)."""
    return "-1" if value is None or math.isnan(value) else repr(round(float(value), 6))


def meter(value: float | None, *, warm: bool = False) -> str:
    """Return a small bar showing ``value`` between 0 and 1 (nothing when it is missing)."""
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


def stat_cards(items: Iterable[tuple[str, str]]) -> str:
    """Return the row of headline numbers at the top of a page: ``(label, value)`` cards."""
    cells = "".join(
        f'<div class="card"><div class="num">{escape(value)}</div>'
        f'<div class="label">{escape(label)}</div></div>'
        for label, value in items
    )
    return f'<div class="cards">{cells}</div>'


def params_list(values: Mapping[str, Any]) -> str:
    """Return settings or statistics as a definition list, values shown by :func:`plain`."""
    rows = "".join(f"<dt>{escape(str(k))}</dt><dd>{text(plain(v))}</dd>" for k, v in values.items())
    return f'<dl class="params">{rows}</dl>'


def plain(value: Any) -> str:
    """Return a setting's value as people read it.

    >>> plain(None), plain(True), plain([32, 64]), plain(())
    ('—', 'yes', '32, 64', '—')
    """
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(plain(v) for v in value) or "—"
    return str(value)
