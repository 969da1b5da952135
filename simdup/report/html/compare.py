"""HTML, the compare page: what ``simdup compare --html`` writes, one pair on its own.

The pair view (:mod:`simdup.report.html.pair`) of two documents with the full comparison
(features, top shared and differing terms), and the fingerprint settings it was made
with.
"""

from __future__ import annotations

from simdup.fingerprints.listing import fingerprint_settings
from simdup.model import FEW_FEATURES
from simdup.report.comparison import Comparison
from simdup.report.html.frame import page, params_list
from simdup.report.html.pair import PairView, pair_view
from simdup.text.display import printable


def compare_page(comparison: Comparison) -> str:
    """Return the page of ``simdup compare --html``: the pair view on its own."""
    c = comparison
    view = PairView(
        a=c.a,
        b=c.b,
        bits=c.params.fixed_bits,
        fingerprint_a=c.fingerprint_a,
        fingerprint_b=c.fingerprint_b,
        hamming=c.hamming,
        estimated=c.estimated_cosine,
        cosine=c.cosine,
        threshold=c.params.threshold,
        few_features=min(c.features_a, c.features_b) < FEW_FEATURES,
        comparison=c,
    )
    settings = fingerprint_settings(c.params)
    body = (
        f'<section><div class="sheet" id="pair">{pair_view(view)}</div></section>'
        f'<section><h2>Settings</h2><div class="panel">{params_list(settings)}</div></section>'
    )
    return page("compare", f"{printable(c.a)} · {printable(c.b)}", body)
