"""What is read as a document: binary files, too-small documents, markup, recorded features.

Each behaviour is checked through click's runner and through the installed script.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from simdup.cli import cli
from simdup.engines.local.counting import read_counts
from simdup.inputs.files import ReadOptions, decompressed, file_text
from simdup.inputs.jsonl import JsonlOptions, JsonlPart
from simdup.inputs.walk import find_files
from simdup.text.counting import count_chunk
from simdup.text.counts import ChunkCounts
from simdup.text.markup import troff_text

TEXT = (
    "Near duplicate detection compares what documents say: the quick brown fox jumps "
    "over the lazy dog while seven wise owls watch the river flow past the old mill.\n"
)


def run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([script, *args], capture_output=True, text=True, timeout=120)


def scan_json(runner: CliRunner, *args: str) -> dict[str, Any]:
    result = runner.invoke(cli, ["scan", "--format", "json", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def skips(data: dict[str, Any]) -> dict[str, str]:
    return {os.path.basename(s["path"]): s["reason"] for s in data["skipped"]}


# -- binary files ---------------------------------------------------------------------------


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """Two copies of a text, a compiled file, a gzip stream of binary, and links."""
    (tmp_path / "a.txt").write_text(TEXT)
    (tmp_path / "b.txt").write_text(TEXT)
    (tmp_path / "mod.pyc").write_bytes(b"\xa7\r\r\n\x00\x00\x00\x00" + TEXT.encode())
    (tmp_path / "blob.gz").write_bytes(gzip.compress(b"\x00\x01" + TEXT.encode()))
    (tmp_path / "text.gz").write_bytes(gzip.compress(TEXT.encode()))
    (tmp_path / "to-pyc.pyc").symlink_to("mod.pyc")
    return tmp_path


def test_binary_files_are_skipped_not_errors(mixed: Path, simdup_script: str) -> None:
    done = run(simdup_script, "scan", "--strict", str(mixed))
    assert done.returncode == 0, done.stderr  # binary files are no failure under --strict
    assert "2 binary file(s) skipped; -v lists them" in done.stderr
    assert "could not be read" not in done.stderr
    verbose = run(simdup_script, "scan", "-v", str(mixed))
    assert "mod.pyc: binary file" in verbose.stderr
    assert "blob.gz: binary file" in verbose.stderr  # judged after gzip decoding
    assert "text.gz: binary" not in verbose.stderr


def test_binary_and_unreadable_counted_apart(mixed: Path, runner: CliRunner) -> None:
    (mixed / "bad.gz").write_bytes(b"not gzip at all")
    result = runner.invoke(cli, ["scan", str(mixed)], catch_exceptions=False)
    assert "1 input(s) could not be read; 2 binary file(s) skipped; -v lists them" in (
        result.stderr
    )
    strict = runner.invoke(cli, ["scan", "--strict", str(mixed)], catch_exceptions=False)
    assert strict.exit_code == 3  # the corrupt gzip file still fails --strict


def test_include_leaves_out_links_it_filters(mixed: Path, runner: CliRunner) -> None:
    data = scan_json(runner, "--include", "*.txt", str(mixed))
    assert data["skipped"] == []  # the .pyc link was never meant to be read
    assert data["stats"]["skipped"] == 0
    linked = scan_json(runner, "--include", "*.pyc", str(mixed))
    assert skips(linked) == {
        "to-pyc.pyc": "symbolic link (use --follow-symlinks)",
        "mod.pyc": "binary file",
    }


# -- match and recorded feature counts --------------------------------------------------------


def test_match_uses_recorded_feature_counts(
    tmp_path: Path, sample_corpus: Path, simdup_script: str
) -> None:
    (tmp_path / "tiny-1.txt").write_text("fox owl\n")
    (tmp_path / "tiny-2.txt").write_text("fox owl\n")
    paths = [
        *sorted(str(p) for p in sample_corpus.glob("*.txt")),
        str(tmp_path / "tiny-1.txt"),
        str(tmp_path / "tiny-2.txt"),
    ]
    listing = tmp_path / "fp.jsonl"
    made = run(simdup_script, "fingerprint", "--min-features", "0", "--format", "jsonl", *paths)
    listing.write_text(made.stdout)
    done = run(simdup_script, "match", "--format", "json", str(listing))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    flagged = {
        (os.path.basename(p["a"]), os.path.basename(p["b"])): p["few_features"]
        for p in data["pairs"]
    }
    assert flagged[("tiny-1.txt", "tiny-2.txt")] is True
    assert flagged[("doc0.txt", "doc6.txt")] is False  # 40 features recorded
    assert data["stats"]["few_features"] == 2
    table = run(simdup_script, "match", str(listing))
    lines = table.stdout.splitlines()
    assert [line.endswith("n/a *") for line in lines if "tiny-1.txt" in line] == [True]
    assert [line.endswith("n/a") for line in lines if "doc0.txt" in line and "doc6" in line] == [
        True
    ]


def test_match_without_recorded_counts_flags_nothing(
    tmp_path: Path, sample_corpus: Path, runner: CliRunner
) -> None:
    paths = sorted(str(p) for p in sample_corpus.glob("*.txt"))
    listing = tmp_path / "fp.txt"
    listing.write_text(runner.invoke(cli, ["fingerprint", *paths]).stdout)
    result = runner.invoke(cli, ["match", str(listing)], catch_exceptions=False)
    assert "*" not in result.stdout
    assert "estimate unreliable" not in result.stderr


# -- stubs: --min-size and --min-features -------------------------------------------------------


@pytest.fixture
def with_stubs(tmp_path: Path) -> Path:
    """Two copies of a text and two copies of a ``.so`` stub, as ``/usr/share/man`` has them."""
    (tmp_path / "a.txt").write_text(TEXT)
    (tmp_path / "b.txt").write_text(TEXT)
    (tmp_path / "queue.3").write_text("see man7/queue.7\n")
    (tmp_path / "sigval.3").write_text("see man7/queue.7\n")
    return tmp_path


def pair_names(data: dict[str, Any]) -> set[tuple[str, str]]:
    return {(os.path.basename(p["a"]), os.path.basename(p["b"])) for p in data["pairs"]}


def test_stubs_are_left_out_by_default_and_reported(with_stubs: Path, simdup_script: str) -> None:
    done = run(simdup_script, "scan", "--format", "json", str(with_stubs))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert pair_names(data) == {("a.txt", "b.txt")}
    assert skips(data)["queue.3"] == "3 features, fewer than --min-features 8"
    assert data["params"]["min_features"] == 8
    assert "2 document(s) under --min-size or --min-features skipped; -v lists them" in (
        done.stderr
    )
    every = run(simdup_script, "scan", "--min-features", "0", "--format", "json", str(with_stubs))
    assert pair_names(json.loads(every.stdout)) == {("a.txt", "b.txt"), ("queue.3", "sigval.3")}


def test_min_size_skips_small_files(with_stubs: Path, runner: CliRunner) -> None:
    data = scan_json(runner, "--min-features", "0", "--min-size", "100", str(with_stubs))
    assert pair_names(data) == {("a.txt", "b.txt")}
    assert skips(data)["queue.3"] == "smaller than --min-size (17 < 100 bytes)"
    assert data["params"]["min_size"] == 100


def test_min_features_in_dedupe_and_on_dask(with_stubs: Path, runner: CliRunner) -> None:
    plan = runner.invoke(cli, ["dedupe", "--format", "json", str(with_stubs)])
    assert [os.path.basename(r["id"]) for r in json.loads(plan.stdout)["removed"]] == ["b.txt"]
    every = runner.invoke(
        cli, ["dedupe", "--min-features", "0", "--format", "json", str(with_stubs)]
    )
    assert len(json.loads(every.stdout)["removed"]) == 2
    dask = scan_json(runner, "--engine", "dask", "--jobs", "1", str(with_stubs))
    assert skips(dask)["queue.3"] == "3 features, fewer than --min-features 8"


def test_min_features_with_a_cache(with_stubs: Path, runner: CliRunner, tmp_path: Path) -> None:
    plain = scan_json(runner, str(with_stubs))
    cache = str(tmp_path.parent / f"{tmp_path.name}-cache.db")
    cached = scan_json(runner, "--cache", cache, str(with_stubs))
    assert cached["pairs"] == plain["pairs"]
    assert skips(cached) == skips(plain)


# -- markup: --text ------------------------------------------------------------------------------

PAGE = """<html><head><title>Owls</title><style>p {{ font: bold }}</style></head>
<body><p>{text}</p><script>var html = "content";</script></body></html>
"""

MAN = """.\\" a comment
.TH OWL 1
.SH NAME
owl \\- {text}
.PP
\\fBbold\\fR words and \\fIitalic\\fP ones
"""


def test_auto_reads_the_text_of_markup(tmp_path: Path, simdup_script: str) -> None:
    (tmp_path / "owls.html").write_text(PAGE.format(text=TEXT))
    (tmp_path / "owls.txt").write_text("Owls\n" + TEXT)
    (tmp_path / "owl.1.gz").write_bytes(gzip.compress(MAN.format(text=TEXT).encode()))
    (tmp_path / "owl.md").write_text(f"# Owls\n\n*{TEXT.strip()}* [more](http://x/html/font)\n")
    done = run(simdup_script, "scan", "--threshold", "0.97", "--format", "json", str(tmp_path))
    pairs = pair_names(json.loads(done.stdout))
    assert ("owls.html", "owls.txt") in pairs  # the page says what the text says
    assert ("owl.md", "owls.html") in pairs
    plain = run(
        simdup_script, "scan", "--text", "plain", "--threshold", "0.97", "--format", "json",
        str(tmp_path),
    )  # fmt: skip
    assert ("owls.html", "owls.txt") not in pair_names(json.loads(plain.stdout))


def test_man_pages_lose_troff(tmp_path: Path, runner: CliRunner) -> None:
    page = tmp_path / "owl.1.gz"
    page.write_bytes(gzip.compress(MAN.format(text=TEXT).encode()))
    result = runner.invoke(cli, ["compare", "--format", "json", str(page), str(page)])
    assert result.exit_code == 0
    listing = runner.invoke(cli, ["fingerprint", "--format", "jsonl", str(page)])
    as_plain = runner.invoke(
        cli, ["fingerprint", "--text", "plain", "--format", "jsonl", str(page)]
    )
    assert json.loads(listing.stdout)["features"] < json.loads(as_plain.stdout)["features"]


def test_plain_text_is_untouched(tmp_path: Path, sample_corpus: Path, runner: CliRunner) -> None:
    paths = sorted(str(p) for p in sample_corpus.glob("*.txt"))
    auto = runner.invoke(cli, ["fingerprint", *paths]).stdout
    plain = runner.invoke(cli, ["fingerprint", "--text", "plain", *paths]).stdout
    assert auto == plain


def test_records_take_an_explicit_text_mode(tmp_path: Path, runner: CliRunner) -> None:
    corpus = tmp_path / "pages.jsonl"
    corpus.write_text(
        json.dumps({"id": "page", "text": PAGE.format(text=TEXT)})
        + "\n"
        + json.dumps({"id": "text", "text": "Owls\n" + TEXT})
        + "\n"
    )
    as_plain = scan_json(runner, "--threshold", "0.97", "--jsonl", str(corpus))
    as_html = scan_json(runner, "--threshold", "0.97", "--text", "html", "--jsonl", str(corpus))
    assert as_plain["pairs"] == []
    assert pair_names(as_html) == {("page", "text")}


@pytest.mark.parametrize("ngram", [1, 3])
def test_a_count_reads_the_words_of_markup_as_its_folded_text(tmp_path: Path, ngram: int) -> None:
    # A count keeps only the words, so it reads markup without folding its lines: the
    # same counts as the folded text gives, for files and for records read as markup.
    (tmp_path / "owls.html").write_text(PAGE.format(text=TEXT) + "<p>\u3000 a\u00a0b </p>\n\n")
    (tmp_path / "owl.1.gz").write_bytes(gzip.compress(MAN.format(text=TEXT).encode()))
    (tmp_path / "owl.md").write_text(f"# Owls\n\n\n  *{TEXT.strip()}*  \n\n中文 分词\n")
    (tmp_path / "owls.txt").write_text("Owls\n\n  " + TEXT)
    sources, _ = find_files([str(tmp_path)], ReadOptions())
    data = [decompressed(Path(s.path).read_bytes()) for s in sources]
    folded = [file_text(s.name, d, ReadOptions()) for s, d in zip(sources, data, strict=True)]
    words = [
        file_text(s.name, d, ReadOptions(words=True)) for s, d in zip(sources, data, strict=True)
    ]
    assert folded != words  # the lines of markup are left as they were
    counted = read_counts(sources, ReadOptions(), None, "auto", ngram)
    assert counted.names == [s.name for s in sources]
    _assert_same_counts(counted.counts, count_chunk(folded, "auto", ngram))
    pages = [d.decode() for d in data]
    lines = "".join(json.dumps({"id": str(k), "text": page}) + "\n" for k, page in enumerate(pages))
    records = [JsonlPart("pages.jsonl", lines.encode())]
    as_html = read_counts(records, ReadOptions(text="html"), JsonlOptions(), "auto", ngram)
    texts = [file_text("x.html", page.encode(), ReadOptions()) for page in pages]
    _assert_same_counts(as_html.counts, count_chunk(texts, "auto", ngram))


def _assert_same_counts(got: ChunkCounts, expected: ChunkCounts) -> None:
    assert got.vocabulary == expected.vocabulary
    assert got.lengths.tolist() == expected.lengths.tolist()
    assert got.ids.tolist() == expected.ids.tolist()
    assert got.counts.tolist() == expected.counts.tolist()


def test_compare_explains_the_text_not_the_markup(tmp_path: Path, simdup_script: str) -> None:
    (tmp_path / "a.html").write_text(PAGE.format(text=TEXT))
    (tmp_path / "b.html").write_text(PAGE.format(text=TEXT.replace("owls", "cats")))
    done = run(simdup_script, "compare", "--format", "json", *map(str, tmp_path.glob("*.html")))
    assert done.returncode == 0, done.stderr
    shared = {t["term"] for t in json.loads(done.stdout)["shared_terms"]}
    assert "html" not in shared
    assert "font" not in shared
    assert "fox" in shared
    plain = run(
        simdup_script, "compare", "--text", "plain", "--format", "json",
        *map(str, tmp_path.glob("*.html")),
    )  # fmt: skip
    assert json.loads(plain.stdout)["features_a"] > json.loads(done.stdout)["features_a"]


#: A German page's words, written in UTF-8 and in groff's names of its letters.
GERMAN = "Die Größe der Datei für jeden Benutzer, übergeben an die Straße; é, ç, å, š, ø.\n"
GERMAN_ESCAPED = (
    "Die Gr\\(:o\\(sse der Datei f\\[u00FC]r jeden Benutzer, \\(:ubergeben an die "
    "Stra\\[char223]e; \\('e, \\(,c, \\(oa, \\(vs, \\(/o.\n"
)


def test_letters_named_by_groff_are_letters_of_their_words() -> None:
    assert troff_text(".SH NAME\n" + GERMAN_ESCAPED) == "NAME\n" + GERMAN
    # Code points are written in capitals; "va" is an arrow, not a letter; a surrogate and
    # an unknown name are word breaks, as before.
    named = "\\[u0065_0301]t\\[u00e9]x \\(vay \\[uD800]z \\[nonesuch]w\n"
    assert troff_text(named) == "ét x y z w\n"


def test_a_page_in_escapes_is_a_copy_of_the_page_in_utf8(
    tmp_path: Path, simdup_script: str
) -> None:
    body = ".TH GROESSE 1\n.SH BESCHREIBUNG\n{}" + TEXT
    (tmp_path / "escaped.1").write_text(body.format(GERMAN_ESCAPED))
    (tmp_path / "utf8.1").write_text(body.format(GERMAN))
    done = run(simdup_script, "compare", "--format", "json", *sorted(map(str, tmp_path.iterdir())))
    assert done.returncode == 0, done.stderr
    compared = json.loads(done.stdout)
    assert compared["hamming"] == 0
    assert compared["cosine"] == pytest.approx(1.0)
    assert compared["features_a"] == compared["features_b"]
