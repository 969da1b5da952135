"""The HTML pages of the sample corpus, byte for byte.

Layout, charts and escaping are plain string building, so any change to them shows up
here as a diff of the stored pages (review it in a browser before accepting it);
regenerate them with ``pytest tests/test_html_golden.py --update-golden``. The eval
page's timings vary from run to run; they are fixed before rendering.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from simdup.engines.local import find_duplicates
from simdup.evaluate import EvalOptions, Evaluation, evaluate
from simdup.inputs.files import ReadOptions
from simdup.inputs.gather import load_corpus
from simdup.model import Document, Skip
from simdup.params import Params
from simdup.report.comparison import compare_documents
from simdup.report.html import compare_page, eval_page, scan_page
from simdup.report.render import ReportOptions

GOLDEN = Path(__file__).parent / "data" / "golden_html"
ROOT = Path(__file__).resolve().parent.parent


def _documents() -> list[Document]:
    documents, _ = load_corpus(["sample_corpus"], ReadOptions())
    return documents


def _steady(evaluation: Evaluation) -> Evaluation:
    """Return the evaluation with its measured seconds replaced by fixed ones."""
    schemes = tuple(
        dataclasses.replace(s, seconds=0.001 * (k + 1)) for k, s in enumerate(evaluation.schemes)
    )
    return dataclasses.replace(evaluation, schemes=schemes, timings={})


def _scan_default() -> str:
    documents = _documents()
    return scan_page(find_duplicates(documents, Params()), documents)


def _scan_all_wide() -> str:
    documents = _documents()
    params = Params(bits=128, weighting="log", max_distance=40)
    skipped = [Skip("sample_corpus/<b>broken</b>.txt", "not valid UTF-8 (byte 0xe9 at 3)")]
    result = find_duplicates(documents, params, report_all=True, skipped=skipped)
    return scan_page(
        result, documents, ReportOptions(report_all=True, clusters="representative"), max_views=3
    )


def _scan_bare() -> str:
    documents = _documents()
    return scan_page(find_duplicates(documents, Params(threshold=0.5)), None, max_views=1)


def _scan_empty() -> str:
    documents = [Document("a.txt", "red fox"), Document("b.txt", "blue whale")]
    return scan_page(find_duplicates(documents, Params()), documents)


def _compare() -> str:
    by_name = {d.name: d for d in _documents()}
    pair = by_name["sample_corpus/doc0.txt"], by_name["sample_corpus/doc1.txt"]
    return compare_page(compare_documents(*pair, Params()))


def _eval() -> str:
    options = EvalOptions(hash_seeds=12, bits=(16, 32, 64, 128), max_distances=(4,))
    return eval_page(_steady(evaluate(_documents(), Params(), options)))


def _eval_sampled() -> str:
    options = EvalOptions(hash_seeds=5, bits=(8, 64), sample=5)
    return eval_page(_steady(evaluate(_documents(), Params(threshold=0.99, blocks=3), options)))


PAGES: dict[str, Callable[[], str]] = {
    "scan.html": _scan_default,
    "scan_all_wide.html": _scan_all_wide,
    "scan_bare.html": _scan_bare,
    "scan_empty.html": _scan_empty,
    "compare.html": _compare,
    "eval.html": _eval,
    "eval_sampled.html": _eval_sampled,
}


@pytest.mark.parametrize("name", sorted(PAGES))
def test_page_is_byte_identical(
    name: str, update_golden: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    rendered = PAGES[name]().encode("utf-8")
    path = GOLDEN / name
    if update_golden:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(rendered)
    assert rendered == path.read_bytes()
