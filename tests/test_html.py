"""Tests of the HTML pages: escaping, self-containment, bit strips, and a real browser."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from simdup.cli import cli
from simdup.engines.local import find_duplicates
from simdup.evaluate import EvalOptions, evaluate
from simdup.inputs.files import ReadOptions
from simdup.inputs.gather import load_corpus
from simdup.model import Document
from simdup.params import Params
from simdup.report.explain import compare_documents
from simdup.report.html import bit_strip, compare_page, eval_page, scan_page
from simdup.report.render import ReportOptions, selected_pairs

EVIL = "<script>alert(1)</script>.txt"
EVIL_SHOWN = "&lt;script&gt;alert(1)&lt;/script&gt;.txt"


def _chromium() -> str | None:
    found = shutil.which("chromium")
    if found is None and os.access("/usr/bin/chromium", os.X_OK):
        found = "/usr/bin/chromium"
    return found


CHROMIUM = _chromium()
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="headless Chromium is not installed (Debian: apt-get install -y chromium); "
    "the pages are still checked without a browser by the other tests",
)


@pytest.fixture
def evil_corpus(sample_copy: Path) -> Path:
    """The sample corpus plus a copy of doc2 whose path ends in <script>alert(1)</script>.txt."""
    # "/" cannot be part of a file name: the name is a directory "<script>alert(1)<" holding
    # "script>.txt", and the document's name (its path) ends in the literal markup.
    folder = sample_copy / "<script>alert(1)<"
    folder.mkdir()
    shutil.copy(sample_copy / "doc2.txt", folder / "script>.txt")
    (sample_copy / "quote\"amp&apos'.txt").write_text("an unrelated note about quoting rules")
    return sample_copy


def _scan(corpus: Path) -> tuple[list[Document], str]:
    documents, skipped = load_corpus([str(corpus)], ReadOptions())
    result = find_duplicates(documents, Params(), skipped=skipped)
    return documents, scan_page(result, documents)


def _only_own_script(page: str) -> None:
    assert page.count("<script") == 1
    assert "alert(1)</script>" not in page
    assert "<script>alert" not in page


def test_scan_page_shows_markup_in_names_literally(evil_corpus: Path) -> None:
    _, page = _scan(evil_corpus)
    assert EVIL_SHOWN in page
    assert 'data-v="' + str(evil_corpus).replace("&", "&amp;") in page
    _only_own_script(page)


def test_every_html_option_escapes_names(
    runner: CliRunner, evil_corpus: Path, tmp_path: Path
) -> None:
    evil = evil_corpus / "<script>alert(1)<" / "script>.txt"
    pages = {name: tmp_path / f"{name}.html" for name in ("scan", "compare", "eval")}
    commands = [
        ["scan", str(evil_corpus), "--html", str(pages["scan"])],
        ["compare", str(evil), str(evil_corpus / "doc3.txt"), "--html", str(pages["compare"])],
        ["eval", str(evil_corpus), "--hash-seeds", "3", "--html", str(pages["eval"])],
    ]
    for args in commands:
        result = runner.invoke(cli, [*args, "-q"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
    for name, path in pages.items():
        page = path.read_text("utf-8")
        assert EVIL_SHOWN in page, name
        _only_own_script(page)


def test_jsonl_ids_with_markup_are_escaped() -> None:
    name = "<img src=x onerror=alert(1)>"
    docs = [Document(name, "red fox jumps over the lazy dog"), Document("b\"'&", "red fox jumps")]
    result = find_duplicates(docs, Params(threshold=0.5))
    page = scan_page(result, docs)
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<img" not in page
    assert "b&quot;&#x27;&amp;" in page


def test_pages_are_self_contained_and_deterministic(sample_corpus: Path) -> None:
    _, page = _scan(sample_corpus)
    assert page == _scan(sample_corpus)[1]
    for forbidden in ("http:", "https:", "src=", "url(", "@import", "//cdn", "fetch("):
        assert forbidden not in page.lower(), forbidden
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert csp is not None
    assert "default-src 'none'" in csp.group(1)
    script = re.search(r"<script>(.*?)</script>", page, re.S)
    assert script is not None
    digest = base64.b64encode(hashlib.sha256(script.group(1).encode()).digest()).decode()
    assert f"'sha256-{digest}'" in csp.group(1)  # the page's own script is allowed to run


@given(st.integers(1, 300), st.data())
@settings(deadline=None)  # a loaded machine can take longer than the default 200 ms
def test_bit_strip_marks_every_bit(bits: int, data: st.DataObject) -> None:
    a = data.draw(st.integers(0, 2**bits - 1))
    b = data.draw(st.integers(0, 2**bits - 1))
    svg = bit_strip(a, b, bits)
    differing = (a ^ b).bit_count()
    assert svg.count('class="df"') == differing
    assert svg.count('class="caret"') == differing
    assert svg.count('class="ag"') == bits - differing
    assert svg.count('class="b1"') == a.bit_count() + b.bit_count()
    assert svg.count('class="b0"') == 2 * bits - a.bit_count() - b.bit_count()


def test_scan_page_sections_and_views(sample_corpus: Path) -> None:
    documents, skipped = load_corpus([str(sample_corpus)], ReadOptions())
    result = find_duplicates(documents, Params(), skipped=skipped)
    pairs = selected_pairs(result, ReportOptions())
    page = scan_page(result, documents)
    assert page.count('<tr data-href="#pair-') == len(pairs) == 4
    assert page.count('class="pair-view"') == 4
    for section in ('id="pairs"', 'id="clusters"', 'id="settings"', "Top shared terms"):
        assert section in page
    # Without texts (a cached scan) the views keep fingerprints and cosines but no terms.
    bare = scan_page(result, None, max_views=1)
    assert bare.count('class="pair-view"') == 1
    assert "Top shared terms" not in bare
    assert "3 more are listed only" in bare


def test_scan_page_with_no_pairs() -> None:
    docs = [Document("a", "red fox"), Document("b", "blue whale")]
    page = scan_page(find_duplicates(docs, Params()), docs)
    assert "No pair reaches the threshold 0.8" in page
    assert 'class="pair-view"' not in page


def test_compare_page_numbers(sample_corpus: Path) -> None:
    a = Document("a", (sample_corpus / "doc0.txt").read_text())
    b = Document("b", (sample_corpus / "doc1.txt").read_text())
    comparison = compare_documents(a, b, Params())
    page = compare_page(comparison)
    assert page.count('class="df"') == comparison.hamming
    assert f"{comparison.cosine:.3f}" in page
    assert f"{comparison.estimated_cosine:.3f}" in page
    assert "morning" in page  # the term whose weight differs


# --- a real browser ------------------------------------------------------------------------


def png_pixels(path: Path) -> npt.NDArray[np.uint8]:
    """Decode an 8-bit RGB or RGBA PNG (as Chromium writes them) to (height, width, 3)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", (0, 0, 0, 0)
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            header = (width, height, depth, color)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color = header
    assert depth == 8
    assert color in (2, 6)
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    out = np.zeros((height, stride), dtype=np.uint8)
    previous = np.zeros(stride, dtype=np.int64)
    for y in range(height):
        method = raw[y * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int64)
        if method == 0:
            row = line
        elif method == 1:
            row = np.empty(stride, dtype=np.int64)
            for c in range(bpp):
                row[c::bpp] = np.cumsum(line[c::bpp]) % 256
        elif method == 2:
            row = (line + previous) % 256
        else:
            values, above = line.tolist(), previous.tolist()
            rec = [0] * stride
            for i in range(stride):
                left = rec[i - bpp] if i >= bpp else 0
                up = above[i]
                if method == 3:
                    rec[i] = (values[i] + (left + up) // 2) & 255
                else:
                    corner = above[i - bpp] if i >= bpp else 0
                    p = left + up - corner
                    pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                    guess = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                    rec[i] = (values[i] + guess) & 255
            row = np.array(rec, dtype=np.int64)
        out[y] = row
        previous = row
    return out.reshape(height, width, bpp)[:, :, :3]


def _has_colour(pixels: npt.NDArray[np.uint8], hex_colour: str, at_least: int = 20) -> bool:
    target = np.array([int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)])
    close = np.abs(pixels.astype(np.int64) - target).max(axis=2) <= 4
    return int(close.sum()) >= at_least


def browse(url: str, work: Path, size: str) -> tuple[str, str, npt.NDArray[np.uint8]]:
    """Load ``url`` in headless Chromium: return the DOM, the log and the screenshot pixels."""
    assert CHROMIUM is not None
    shot = work / "shot.png"
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={work / 'profile'}",
        "--hide-scrollbars",
        "--force-color-profile=srgb",
        f"--window-size={size}",
        f"--screenshot={shot}",
        "--dump-dom",
        "--enable-logging=stderr",
        "--v=0",
        url,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, done.stderr, png_pixels(shot)


def _console(log: str) -> list[str]:
    return [line for line in log.splitlines() if ":CONSOLE" in line]


@needs_chromium
def test_pages_render_in_chromium(evil_corpus: Path, tmp_path: Path) -> None:
    documents, skipped = load_corpus([str(evil_corpus)], ReadOptions())
    params = Params()
    result = find_duplicates(documents, params, skipped=skipped)
    pairs = selected_pairs(result, ReportOptions())
    differing = next(k for k, p in enumerate(pairs, 1) if p.hamming > 0)
    by_name = {d.name: d for d in documents}
    comparison = compare_documents(
        by_name[f"{evil_corpus}/doc0.txt"], by_name[f"{evil_corpus}/doc1.txt"], params
    )
    evaluation = evaluate(documents, params, EvalOptions(hash_seeds=10))
    pages = {
        "scan": scan_page(result, documents),
        "compare": compare_page(comparison),
        "eval": eval_page(evaluation),
    }
    for name, text in pages.items():
        (tmp_path / f"{name}.html").write_text(text, "utf-8")

    # The scan report, opened on a pair that differs in some bits (the :target view).
    work = tmp_path / "scan"
    work.mkdir()
    url = (tmp_path / "scan.html").as_uri() + f"#pair-{differing}"
    dom, log, pixels = browse(url, work, "1200,900")
    assert _console(log) == []  # no script error, no blocked fetch, no CSP violation
    assert 'data-ready="1"' in dom  # the sorting script ran to its end
    assert dom.count("<script") == 1
    assert EVIL_SHOWN in dom
    assert dom.count('<tr data-href="#pair-') == len(pairs)
    assert dom.count('class="pair-view"') == len(pairs)
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50  # not blank
    for colour in ("#c9efd6", "#f5a5a5", "#1c2430"):  # agree, differ, bit 1
        assert _has_colour(pixels, colour), colour

    # compare: the pair view on its own.
    work = tmp_path / "compare"
    work.mkdir()
    dom, log, pixels = browse((tmp_path / "compare.html").as_uri(), work, "1100,700")
    assert _console(log) == []
    assert 'data-ready="1"' in dom
    assert dom.count('class="df"') == comparison.hamming
    for colour in ("#c9efd6", "#f5a5a5", "#1c2430", "#2f6fde"):
        assert _has_colour(pixels, colour), colour

    # eval: the charts.
    work = tmp_path / "eval"
    work.mkdir()
    dom, log, pixels = browse((tmp_path / "eval.html").as_uri(), work, "1200,1200")
    assert _console(log) == []
    assert 'data-ready="1"' in dom
    assert dom.count('class="chart wide"') == 4
    assert dom.count("<polyline") >= 6
    assert EVIL_SHOWN in dom
    for colour in ("#2f6fde", "#e07b39"):  # measured / recall, and binary / false positives
        assert _has_colour(pixels, colour, at_least=200), colour


def test_scan_page_caps_the_listed_pairs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("simdup.report.html.scan.MAX_TABLE_ROWS", 2)
    docs = [Document(str(i), "red fox jumps over the lazy dog") for i in range(4)]
    page = scan_page(find_duplicates(docs, Params()), docs, max_views=1)  # 6 pairs
    assert page.count("<tr data-href=") == 1
    assert page.count('<tr><td class="num"') == 1
    assert "4 more pairs are not listed here" in page
