"""Reading markup: how fast each reader of ``--text auto`` gets the text of this machine's files.

For each kind of markup simdup reads (HTML, Markdown, manual pages), every file of that kind
under ``--roots`` (default ``/usr/share/doc``, ``/usr/share/man`` and the interpreter's
``site-packages``, walked as ``simdup scan`` walks them, ``.gz`` read through) is decoded
once, then read by :func:`simdup.text.markup.read_text` in this process; the best of
``--runs`` passes is reported in characters per second of markup.

Markdown is also read by markdown-it-py's CommonMark parser (installed with ``rich``), the
way simdup read it before it used pulldown-cmark, and the two texts are compared file by
file: the table says how many differ, and their words (``text_words``) too.

Usage: ``python benchmarks/markup.py [--runs 3] [--roots DIR ...]``.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import sysconfig
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from realtext import files  # noqa: E402 - a sibling script

from simdup.text import markup  # noqa: E402
from simdup.text.tokens import text_words  # noqa: E402

#: Where the files come from by default.
ROOTS = ("/usr/share/doc", "/usr/share/man", sysconfig.get_paths()["purelib"])


def texts(roots: list[str]) -> dict[str, list[tuple[str, str]]]:
    """Return the decoded texts of the files under ``roots``, by the mode ``auto`` reads."""
    found: dict[str, list[tuple[str, str]]] = {"html": [], "markdown": [], "man": []}
    for root in roots:
        for path in files(root, ()):
            data = Path(path).read_bytes()
            if path.endswith(".gz"):
                try:
                    data = gzip.decompress(data)
                except (OSError, EOFError):
                    continue
            if b"\0" in data[:8192]:
                continue
            text = data.decode("utf-8", errors="replace")
            mode = markup.mode_for(path, "auto", text)
            if mode in found:
                found[mode].append((path, text))
    return found


def best(read: Callable[[str], str], documents: list[tuple[str, str]], runs: int) -> float:
    """Return the fewest seconds of ``runs`` passes of ``read`` over the documents."""
    fewest = float("inf")
    for _ in range(runs):
        clock = time.perf_counter()
        for _, text in documents:
            read(text)
        fewest = min(fewest, time.perf_counter() - clock)
    return fewest


def markdown_it_text(text: str) -> str:
    """Return the text of Markdown as markdown-it-py's CommonMark parser gives it."""
    from markdown_it import MarkdownIt

    parts: list[str] = []
    for token in MarkdownIt("commonmark").parse(text):
        if token.type == "inline" and token.children is not None:
            for child in token.children:
                if child.type in ("text", "code_inline", "image"):
                    parts.append(child.content)
                elif child.type in ("softbreak", "hardbreak"):
                    parts.append("\n")
            parts.append("\n")
        elif token.type in ("fence", "code_block"):
            parts.append(token.content + "\n")
        elif token.type == "html_block":
            parts.append(markup.html_text(token.content))
    return markup._lines("".join(parts))


def main() -> None:
    """Time every reader and compare the Markdown readers."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--roots", nargs="+", default=list(ROOTS))
    args = parser.parse_args()
    found = texts(args.roots)
    print("| markup | files | characters | reader | best s | characters/s |")
    print("|---|---|---|---|---|---|")
    readers: list[tuple[str, str, Callable[[str], str]]] = [
        ("html", "html_text (html.parser)", markup.html_text),
        ("markdown", "markdown_text (pulldown-cmark)", markup.markdown_text),
        ("markdown", "markdown-it-py", markdown_it_text),
        ("man", "troff_text", markup.troff_text),
    ]
    for mode, name, read in readers:
        documents = found[mode]
        size = sum(len(text) for _, text in documents)
        seconds = best(read, documents, args.runs)
        print(
            f"| {mode} | {len(documents):,} | {size:,} | {name} | {seconds:.2f} "
            f"| {size / max(seconds, 1e-9):,.0f} |"
        )
    differ = words = 0
    for _, text in found["markdown"]:
        ours, theirs = markup.markdown_text(text), markdown_it_text(text)
        differ += ours != theirs
        words += Counter(text_words(ours)) != Counter(text_words(theirs))
    print(
        f"\nMarkdown: {differ} of {len(found['markdown']):,} files read to a different text "
        f"by the two parsers, {words} to different words."
    )


if __name__ == "__main__":
    main()
