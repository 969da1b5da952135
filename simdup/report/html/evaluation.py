"""HTML, the eval page: what ``simdup eval --html`` writes, the tables and their charts.

Headline numbers, then the estimator's accuracy (measured error per width against the
Binomial theory, weighted against binary fingerprints on the truly similar pairs), the
blocking comparison (recall and false-positive rate per scheme, the chosen scheme's
predicted and measured recall curve), the truly similar pairs by name and the settings.
Each section is its own function; :func:`eval_page` puts them in order.
"""

from __future__ import annotations

from html import escape

from simdup.evaluate import Evaluation, SchemeResult
from simdup.report.html.charts import Series, bar_chart, line_chart
from simdup.report.html.frame import (
    doc_name,
    meter,
    number,
    page,
    params_list,
    stat_cards,
    text,
)
from simdup.text.display import common_dir


def _accuracy_table(evaluation: Evaluation) -> str:
    rows = []
    for w in evaluation.widths:
        ratio = (
            number(w.similar_binary_mae / w.similar_mae, 2)
            if w.similar_mae and w.similar_binary_mae is not None
            else "n/a"
        )
        rows.append(
            f'<tr><td class="num">{w.bits}</td><td class="num">{number(w.mae)}</td>'
            f'<td class="num">{number(w.mae_theory)}</td><td class="num">±{number(w.mae_stderr, 4)}'
            f'</td><td class="num">{number(w.similar_mae)}</td>'
            f'<td class="num">{number(w.similar_binary_mae)}</td><td class="num">{ratio}</td></tr>'
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
            f'<td class="num">{number(s.recall)}{meter(s.recall)}</td>'
            f'<td class="num">{number(s.false_positive_rate, 4)}</td>'
            f'<td class="num">{s.candidates_per_document:.2f}</td>'
            f'<td class="num">{s.seconds * 1000:.2f} ms</td>'
            f'<td class="num">{number(s.expected_recall)}</td></tr>'
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
        title=f"Chance of becoming a candidate, {chosen.name} at "
        f"{evaluation.params.fixed_bits} bits",
        x_label="true cosine of the pair",
        y_label="recall",
        x_range=(0.0, 1.0),
        y_range=(0.0, 1.0),
        x_ticks=[0, 0.2, 0.4, 0.6, 0.8, 1.0],
        marker=(threshold, f"threshold {threshold:g}"),
        legend_left=True,
    )


def _accuracy_section(e: Evaluation) -> str:
    """Return the estimator's error per width: both charts and the table."""
    widths = [w.bits for w in e.widths]
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
    return (
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


def _blocking_section(e: Evaluation) -> str:
    """Return the blocking comparison: recall bars, the chosen scheme's curve, the table."""
    chosen = e.scheme(e.chosen)
    bars = bar_chart(
        [(s.name, s.recall, s.false_positive_rate) for s in e.schemes],
        title=f"Blocking at {e.params.fixed_bits} bits: candidates among pairs",
        labels=("recall", "false-positive rate"),
        highlight=e.chosen,
    )
    return (
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


def _similar_section(e: Evaluation) -> str:
    """Return the truly similar pairs by name (nothing when there are none)."""
    if not e.similar:
        return ""
    base = common_dir([name for p in e.similar for name in (p.a, p.b)])
    rows = "".join(
        f'<tr><td class="name" data-v="{text(p.a)}">{doc_name(p.a, base)}</td>'
        f'<td class="name" data-v="{text(p.b)}">{doc_name(p.b, base)}</td>'
        f'<td class="num">{p.cosine:.3f}{meter(p.cosine)}</td>'
        f'<td class="num">{p.found:.3f}</td></tr>'
        for p in e.similar
    )
    return (
        '<section id="similar"><h2>Truly similar pairs</h2>'
        f'<p class="lead">Found: share of the hash seeds in which {escape(e.chosen)} made '
        "the pair a candidate.</p>"
        '<table class="sortable"><thead><tr><th data-sort="text">Document A</th>'
        '<th data-sort="text">Document B</th><th class="num" data-sort="num">True cosine'
        '</th><th class="num" data-sort="num">Found</th></tr></thead>'
        f"<tbody>{rows}</tbody></table></section>"
    )


def eval_page(evaluation: Evaluation) -> str:
    """Return the page of ``simdup eval --html``: the tables and their charts."""
    e = evaluation
    sampled = f" (sampled from {e.sampled_from:,})" if e.sampled_from else ""
    cards = stat_cards(
        [
            ("documents" + (" sampled" if e.sampled_from else ""), f"{e.documents:,}"),
            ("pairs", f"{e.pairs:,}"),
            (f"similar (cos ≥ {e.params.threshold:g})", f"{e.similar_pairs:,}"),
            ("identical pairs", f"{e.identical_pairs:,}"),
            ("hash seeds", f"{e.options.hash_seeds:,}"),
        ]
    )
    settings = (
        f'<section id="settings"><h2>Settings</h2><div class="panel">{params_list(e.settings())}'
        "</div></section>"
    )
    subtitle = f"{e.documents:,} documents{sampled} · {e.options.hash_seeds} hash seeds"
    body = cards + _accuracy_section(e) + _blocking_section(e) + _similar_section(e) + settings
    return page("eval", subtitle, body)
