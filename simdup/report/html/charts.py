"""HTML, charts: SVG line and bar charts drawn as text, with every label escaped.

The eval page's charts need no library and no script: a chart is a string of SVG
elements placed by two scale functions. A line chart is built in parts (its frame and
scales, the axes, the threshold marker, the series, the legend), each a small function
of the frame, so the parts can be read and changed one at a time; the output is the
same bytes for the same data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from simdup.report.html.frame import number


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


#: Margins of a line chart's plot area inside its view box.
_LEFT, _RIGHT, _TOP, _BOTTOM = 58, 16, 34, 48


@dataclass(frozen=True)
class _Frame:
    """A line chart's view box, data bounds and scales (data to view-box coordinates)."""

    width: int
    height: int
    x_lo: float
    x_hi: float
    y_lo: float
    y_hi: float
    x_log2: bool
    y_log: bool
    left: int = _LEFT
    right: int = _RIGHT
    top: int = _TOP
    bottom: int = _BOTTOM

    def fx(self, x: float) -> float:
        """Return the view-box x of data value ``x``."""
        if self.x_log2:
            t = (math.log2(x) - math.log2(self.x_lo)) / (
                math.log2(self.x_hi) - math.log2(self.x_lo)
            )
        else:
            t = (x - self.x_lo) / (self.x_hi - self.x_lo)
        return self.left + t * (self.width - self.left - self.right)

    def fy(self, y: float) -> float:
        """Return the view-box y of data value ``y``."""
        if self.y_log:
            t = (math.log10(max(y, 1e-12)) - math.log10(self.y_lo)) / (
                math.log10(self.y_hi) - math.log10(self.y_lo)
            )
        else:
            t = (y - self.y_lo) / (self.y_hi - self.y_lo)
        return self.height - self.bottom - t * (self.height - self.top - self.bottom)


def _frame(
    series: Sequence[Series],
    *,
    x_log2: bool,
    y_log: bool,
    x_range: tuple[float, float] | None,
    y_range: tuple[float, float] | None,
    width: int,
    height: int,
) -> _Frame:
    """Return the frame whose bounds hold every point (or the fixed ranges)."""
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
    return _Frame(width, height, x_lo, x_hi, y_lo, y_hi, x_log2, y_log)


def _axes(f: _Frame, x_label: str, y_label: str, x_ticks: Sequence[float] | None) -> list[str]:
    """Return the grid lines, tick labels, both axes and their labels."""
    left, right, top, bottom = f.left, f.right, f.top, f.bottom
    width, height = f.width, f.height
    parts = []
    y_lo, y_hi = f.y_lo, f.y_hi
    y_ticks = (
        _ticks_log(y_lo, y_hi) if f.y_log else [y_lo + (y_hi - y_lo) * k / 5 for k in range(6)]
    )
    for v in y_ticks:
        y = f.fy(v)
        parts.append(
            f'<line class="gridline" x1="{left}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}"/>'
        )
        parts.append(
            f'<text class="tick" x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{v:g}</text>'
        )
    x_lo, x_hi = f.x_lo, f.x_hi
    for v in x_ticks if x_ticks is not None else [x_lo + (x_hi - x_lo) * k / 5 for k in range(6)]:
        x = f.fx(v)
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
    return parts


def _marker(f: _Frame, marker: tuple[float, str]) -> str:
    """Return a labelled vertical dashed line at ``marker[0]`` (the threshold)."""
    mx = f.fx(marker[0])
    return (
        f'<line class="thr" x1="{mx:.1f}" y1="{f.top}" x2="{mx:.1f}" y2="{f.height - f.bottom}"/>'
        f'<text class="thrlabel" x="{mx - 4:.1f}" y="{f.top + 10}" text-anchor="end">'
        f"{escape(marker[1])}</text>"
    )


def _lines(f: _Frame, series: Sequence[Series]) -> list[str]:
    """Return each series as a polyline and dots, in order (points at y <= 0 left out on log y)."""
    parts = []
    for s in series:
        pts = [(f.fx(x), f.fy(y)) for x, y in s.points if not (f.y_log and y <= 0)]
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
    return parts


def _legend(f: _Frame, series: Sequence[Series], legend_left: bool) -> list[str]:
    """Return the legend, top right (or top left): a key and the label of each series."""
    parts = []
    ly = f.top + 6
    for s in series:
        if not s.label:
            continue
        style = "s-gray" if s.dashed else f"s-{s.style}"
        lx = f.left + 14 if legend_left else f.width - f.right - 190
        key = (
            f'<line class="{style}" x1="{lx}" y1="{ly}" x2="{lx + 22}" y2="{ly}"/>'
            if s.line
            else f'<circle class="d-{s.style}" cx="{lx + 11}" cy="{ly}" r="3.5"/>'
        )
        parts.append(f'{key}<text class="tick" x="{lx + 28}" y="{ly + 4}">{escape(s.label)}</text>')
        ly += 16
    return parts


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
    f = _frame(
        series,
        x_log2=x_log2,
        y_log=y_log,
        x_range=x_range,
        y_range=y_range,
        width=width,
        height=height,
    )
    parts = [
        f'<svg class="chart wide" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="{escape(title)}">',
        f'<text class="title" x="{f.left}" y="18">{escape(title)}</text>',
        *_axes(f, x_label, y_label, x_ticks),
    ]
    if marker is not None:
        parts.append(_marker(f, marker))
    parts += _lines(f, series)
    parts += _legend(f, series, legend_left)
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
                f"{number(value)}</text>"
            )
    parts.append("</svg>")
    return "".join(parts)
