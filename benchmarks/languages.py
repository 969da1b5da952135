"""Noise words per language and Chinese segmentation: what they change, and what they cost.

Measurements, each printed as a Markdown table:

``manpages``
    Debian's translated manual pages (``apt-get install manpages-de manpages-fr groff``;
    files under ``/usr/share/man/LANG``, formatted by groff, or left as troff source with
    ``--troff``). Each setting (English noise
    words only against ``auto``) is scanned at the default
    threshold; truth is every pair whose true cosine under that setting reaches the
    threshold, found by computing the cosine of *all* pairs. Reported: candidates per
    document, pairs, recall against truth, and the scan's time (median of ``--runs``,
    the settings run alternately).
``kernel``
    The same on the Linux kernel's documentation (``apt-get install linux-doc``; the
    ``*.rst`` files under ``/usr/share/doc/linux-doc-*/Documentation``, English with
    Italian, Chinese, Japanese and Korean translations).
``chinese``
    The paraphrase pairs of ``tests/data/languages/zh_paraphrases.json`` (six paragraphs
    of a Chinese SimHash explainer, each written twice): cosine of paraphrase pairs and of
    pairs of different paragraphs, with character bigrams and with words.
``segmenter``
    Import time of the ``zh`` extra's segmenter (in a fresh interpreter, less a bare one)
    and tokenizing speed of Chinese text with words and with bigrams.
``throughput``
    Counting (the tokenize stage, one process) with English noise words and with
    ``auto``, run alternately ``--runs`` times on each corpus: the synthetic English
    corpus of ``generate.py``, the copyright files of ``/usr/share/doc`` (English), the
    kernel's documentation and the German and French manual pages (troff source). The
    ratio is taken run by run, the two settings back to back, and its median reported:
    the cost of the language guess.

Usage: ``python benchmarks/languages.py [manpages|kernel|chinese|segmenter|throughput ...]
[--runs 5]``.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from simdup.engines.local import find_duplicates
from simdup.engines.local.counting import count_matrix
from simdup.engines.local.fingerprinting import fingerprint_documents
from simdup.fingerprints.weights import term_weights
from simdup.model import Document
from simdup.params import Params
from simdup.search.verify import cosine, cosine_many
from simdup.text.tokens import noise_report, tokenize

ROOT = Path(__file__).resolve().parent.parent
PARAPHRASES = ROOT / "tests" / "data" / "languages" / "zh_paraphrases.json"


def manual_pages(language: str, render: bool) -> list[Document]:
    """Return the translated manual pages of ``language`` by path, as text.

    With ``render`` the troff source is formatted by groff (``groff -k -man -Tutf8``), so
    the documents are the text a reader sees; otherwise the markup stays in.
    """
    root = Path("/usr/share/man") / language
    docs = []
    for path in sorted(root.rglob("*.gz")):
        if path.is_symlink() or not path.is_file():
            continue
        source = gzip.decompress(path.read_bytes())
        if render:
            done = subprocess.run(
                ["groff", "-k", "-man", "-Tutf8", "-P-cbou"],
                input=source,
                capture_output=True,
                check=False,
            )
            source = done.stdout
        try:
            text = source.decode("utf-8")
        except UnicodeDecodeError:
            continue
        docs.append(Document(str(path.relative_to(root)), text))
    return docs


def exhaustive_pairs(docs: list[Document], params: Params) -> set[tuple[str, str]]:
    """Return every pair whose true cosine is at least the threshold (all pairs computed)."""
    corpus = fingerprint_documents(docs, params)
    n = len(corpus.names)
    rows = np.array(list(itertools.combinations(range(n), 2)), dtype=np.int64).reshape(-1, 2)
    found = rows[cosine_many(corpus.matrix, rows) >= params.threshold]
    return {(corpus.names[i], corpus.names[j]) for i, j in found.tolist()}


def kernel_documents() -> list[Document]:
    """Return the kernel's ``*.rst`` documentation files (the ``linux-doc`` package) by path."""
    roots = sorted(Path("/usr/share/doc").glob("linux-doc-*/Documentation"))
    if not roots:
        return []
    docs = []
    for path in sorted(roots[-1].rglob("*.rst.gz")):
        try:
            text = gzip.decompress(path.read_bytes()).decode("utf-8")
        except UnicodeDecodeError:
            continue
        docs.append(Document(str(path.relative_to(roots[-1])), text))
    return docs


def copyright_documents() -> list[Document]:
    """Return the copyright files of the installed Debian packages (English, mostly ASCII)."""
    docs = []
    for path in sorted(Path("/usr/share/doc").glob("*/copyright")):
        try:
            docs.append(Document(str(path), path.read_text(encoding="utf-8")))
        except (UnicodeDecodeError, OSError):
            continue
    return docs


SCAN_HEADER = (
    "| corpus | documents | noise words | candidates | per document | pairs >= 0.8 | "
    "recall vs all pairs | scan time (median) |\n|---|---:|---|---:|---:|---:|---:|---:|"
)


def run_scan(label: str, docs: list[Document], runs: int) -> None:
    """Print candidates, pairs, recall and time with English-only and auto noise words."""
    settings = {"English only": Params(stopwords="en"), "auto": Params(stopwords="auto")}
    times: dict[str, list[float]] = {name: [] for name in settings}
    results = {}
    for _ in range(runs):
        for name, params in settings.items():
            started = time.perf_counter()
            results[name] = find_duplicates(docs, params)
            times[name].append(time.perf_counter() - started)
    for name, params in settings.items():
        result = results[name]
        truth = exhaustive_pairs(docs, params)
        found = {(p.a, p.b) for p in result.pair_list()}
        recall = len(found & truth) / len(truth) if truth else 1.0
        candidates = result.stats["candidates"]
        print(
            f"| {label} | {len(docs):,} | {name} | {candidates:,} | "
            f"{candidates / len(docs):.1f} | {len(found):,} | {recall:.3f} "
            f"({len(found & truth)}/{len(truth)}) | "
            f"{statistics.median(times[name]):.2f} s |"
        )


def run_manpages(languages: list[str], runs: int, render: bool) -> None:
    """Print the scan figures of the translated manual pages of each language."""
    print(SCAN_HEADER)
    for language in languages:
        docs = manual_pages(language, render)
        if not docs:
            print(f"no pages under /usr/share/man/{language}: apt-get install manpages-{language}")
            continue
        run_scan(f"man pages, {language}", docs, runs)


def run_kernel(runs: int) -> None:
    """Print the scan figures of the kernel's documentation and the languages guessed."""
    docs = kernel_documents()
    if not docs:
        print("no kernel documentation under /usr/share/doc: apt-get install linux-doc")
        return
    print(SCAN_HEADER)
    run_scan("kernel docs", docs, runs)
    guessed = Counter(noise_report(d.text, "auto").language for d in docs)
    print(f"\nGuessed languages: {', '.join(f'{k} {v:,}' for k, v in guessed.most_common())}")


def run_chinese() -> None:
    """Print the cosine of paraphrase and unrelated pairs with bigrams and with words."""
    paragraphs = json.loads(PARAPHRASES.read_text(encoding="utf-8"))["paragraphs"]
    texts = [(k, text) for k, pair in enumerate(paragraphs) for text in pair]
    print("| segment | noise words | paraphrase cosine mean (min) | "
          "different paragraphs mean (max) | margin min - max |")  # fmt: skip
    print("|---|---|---:|---:|---:|")
    for segment in ("bigrams", "words"):
        for stopwords in (False, "auto"):
            weights = [
                term_weights(tokenize(t, stopwords=stopwords, segment=segment)) for _, t in texts
            ]
            same, other = [], []
            for (a, (pa, _)), (b, (pb, _)) in itertools.combinations(enumerate(texts), 2):
                (same if pa == pb else other).append(cosine(weights[a], weights[b]))
            print(
                f"| {segment} | {stopwords or 'none'} | {np.mean(same):.3f} ({min(same):.3f}) | "
                f"{np.mean(other):.3f} ({max(other):.3f}) | {min(same) - max(other):+.3f} |"
            )


def throughput_corpora(docs: int) -> dict[str, list[str]]:
    """Return the texts of each corpus the throughput measurement counts."""
    sys.path.insert(0, str(Path(__file__).parent))
    from generate import generate  # type: ignore[import-not-found]

    return {
        f"synthetic English (generate.py, {docs:,})": [text for _, text in generate(docs)[0]],
        "Debian copyright files (English)": [d.text for d in copyright_documents()],
        "kernel documentation (*.rst)": [d.text for d in kernel_documents()],
        "man pages, de (troff)": [d.text for d in manual_pages("de", render=False)],
        "man pages, fr (troff)": [d.text for d in manual_pages("fr", render=False)],
    }


def run_throughput(docs: int, runs: int) -> None:
    """Print the counting time of each corpus with both settings, and their ratio."""
    print("| corpus | documents | MB | English only | auto | auto / English (median of runs) |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, texts in throughput_corpora(docs).items():
        if not texts:
            continue
        megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6
        count_matrix(texts[:100], stopwords="auto", jobs=1)  # load the lists once
        times: dict[str, list[float]] = {"en": [], "auto": []}
        for _ in range(runs):
            for setting in times:
                started = time.perf_counter()
                count_matrix(texts, stopwords=setting, jobs=1)
                times[setting].append(time.perf_counter() - started)
        en, auto = (statistics.median(times[s]) for s in ("en", "auto"))
        ratio = statistics.median(a / e for a, e in zip(times["auto"], times["en"], strict=True))
        print(
            f"| {name} | {len(texts):,} | {megabytes:.1f} | {en:.2f} s ({megabytes / en:.1f} MB/s) "
            f"| {auto:.2f} s ({megabytes / auto:.1f} MB/s) | {ratio:.3f}x |"
        )


def run_segmenter(runs: int) -> None:
    """Print the segmenter's import time (fresh interpreter) and its speed on Chinese text."""
    paragraphs = json.loads(PARAPHRASES.read_text(encoding="utf-8"))["paragraphs"]
    text = "".join(t for pair in paragraphs for t in pair) * 200
    megabytes = len(text.encode("utf-8")) / 1e6
    imports, speeds = [], []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import rjieba; rjieba.cut('中文')"], check=True)
        imports.append(time.perf_counter() - started)
        started = time.perf_counter()
        tokenize(text, stopwords=False, segment="words")
        speeds.append(megabytes / (time.perf_counter() - started))
    baseline = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        baseline.append(time.perf_counter() - started)
    bigrams = []
    for _ in range(runs):
        started = time.perf_counter()
        tokenize(text, stopwords=False, segment="bigrams")
        bigrams.append(megabytes / (time.perf_counter() - started))
    load = statistics.median(imports) - statistics.median(baseline)
    print("| text | import and dictionary | tokenize, words | tokenize, bigrams |")
    print("|---:|---:|---:|---:|")
    print(
        f"| {megabytes:.1f} MB | {load:.2f} s | {statistics.median(speeds):.1f} MB/s | "
        f"{statistics.median(bigrams):.1f} MB/s |"
    )


def main() -> None:
    """Parse the command line and run the chosen measurements."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("what", nargs="*", default=["manpages", "kernel", "chinese", "throughput"])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--languages", default="de,fr")
    parser.add_argument("--troff", action="store_true", help="scan manual pages unformatted")
    parser.add_argument("--docs", type=int, default=20_000, help="throughput corpus size")
    args = parser.parse_args()
    for what in args.what:
        print(f"\n## {what}\n")
        if what == "manpages":
            run_manpages(args.languages.split(","), args.runs, not args.troff)
        elif what == "kernel":
            run_kernel(args.runs)
        elif what == "chinese":
            run_chinese()
        elif what == "segmenter":
            run_segmenter(args.runs)
        elif what == "throughput":
            run_throughput(args.docs, args.runs)
        else:
            parser.error(f"unknown measurement {what!r}")


if __name__ == "__main__":
    main()
