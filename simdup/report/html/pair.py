"""HTML, the pair view: two fingerprints bit by bit, their distance, cosines and terms.

One pair of documents as ``simdup compare --html`` shows it, and as each pair of a scan
page opens: both fingerprints as a strip of coloured bits (agreeing bits on green,
differing ones on red), the Hamming distance and the estimate it gives next to the true
cosine on one scale, and, when the texts are at hand, the terms that make the two
similar and those that set them apart. Shared by the scan and compare pages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from simdup.fingerprints.simhash import to_hex
from simdup.model import FEW_FEATURES
from simdup.report.comparison import Comparison, TermWeight
from simdup.report.html.frame import doc_name, meter, number, text

#: Bits per row of a bit strip.
STRIP_BITS = 64


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
            cells += f'<td class="num">{t.contribution:.3f}{meter(t.contribution / top)}</td>'
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
        f'<div><div class="num">{number(view.estimated)}</div>'
        '<div class="label">estimated cosine</div></div>'
        f'<div><div class="num">{number(view.cosine)}</div>'
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
        f"cos(π &times; {view.hamming} / {bits}) = {number(view.estimated)}. The true cosine is "
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
