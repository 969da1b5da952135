"""Self-contained HTML reports: scan results, one pair bit by bit, and eval charts.

Each page is one file that needs nothing else: CSS and SVG are inline, a few lines of
vanilla JavaScript sort tables, and a Content-Security-Policy allows no fetch of any kind
(only the page's own script, by hash), so a report can be mailed, archived or opened from
a CI artifact offline. Every document name and term passes through :func:`text` (control
characters made visible as in the terminal table, then ``html.escape``), so a file named
``<script>alert(1)</script>.txt`` is shown literally and never runs. Pages are
deterministic: the same result renders to the same bytes.

The package is built in floors, each importing only those below it: :mod:`~simdup.report.html.frame`
(page layout, style, script, escaping), :mod:`~simdup.report.html.charts` (SVG line and bar charts),
:mod:`~simdup.report.html.pair` (one pair bit by bit), and one module per page:
:mod:`~simdup.report.html.scan`, :mod:`~simdup.report.html.compare` and
:mod:`~simdup.report.html.evaluation`.
"""

from simdup.report.html.charts import Series, bar_chart, line_chart
from simdup.report.html.compare import compare_page
from simdup.report.html.evaluation import eval_page
from simdup.report.html.frame import doc_name, page, text
from simdup.report.html.pair import STRIP_BITS, PairView, bit_strip, pair_view
from simdup.report.html.scan import MAX_PAIR_VIEWS, MAX_TABLE_ROWS, TOP_TERMS, scan_page
from simdup.text.display import common_dir

__all__ = [
    "MAX_PAIR_VIEWS",
    "MAX_TABLE_ROWS",
    "STRIP_BITS",
    "TOP_TERMS",
    "PairView",
    "Series",
    "bar_chart",
    "bit_strip",
    "common_dir",
    "compare_page",
    "doc_name",
    "eval_page",
    "line_chart",
    "page",
    "pair_view",
    "scan_page",
    "text",
]
