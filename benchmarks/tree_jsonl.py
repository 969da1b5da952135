"""Real trees as one JSON Lines corpus: each text file a record, its path the id.

For the benchmarks that take ``--corpus FILE.jsonl`` (``serve_bench.py``) or a scan's
``--jsonl``, on text nobody here wrote. Files are read as they are (``.gz`` decompressed,
manual pages left as troff), decoded as UTF-8 with replacement; symbolic links, files
with a NUL byte in their first 8 KiB (binary), files over ``--max-bytes`` and texts of
fewer than ``--min-words`` words are left out. Paths are walked in name order, so the
same trees always give the same bytes.

Usage::

    python benchmarks/tree_jsonl.py /usr/lib/python3.11 /usr/share/doc /usr/share/man \\
        -o realtext.jsonl
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
from collections.abc import Iterator
from pathlib import Path


def texts(roots: list[Path], max_bytes: int, min_words: int) -> Iterator[tuple[str, str]]:
    """Yield ``(path, text)`` of every text file under ``roots``, in name order."""
    for root in roots:
        for directory, folders, files in os.walk(root):
            folders.sort()
            for name in sorted(files):
                path = os.path.join(directory, name)
                if os.path.islink(path) or os.path.getsize(path) > max_bytes:
                    continue
                try:
                    data = Path(path).read_bytes()
                    if name.endswith(".gz"):
                        data = gzip.decompress(data)
                except (OSError, EOFError, gzip.BadGzipFile):
                    continue
                if b"\0" in data[:8192]:
                    continue
                text = data.decode("utf-8", errors="replace")
                if len(text.split()) >= min_words:
                    yield path, text


def main() -> None:
    """Write the trees' text files as JSON Lines records."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="+", type=Path)
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("--max-bytes", type=int, default=500_000)
    parser.add_argument("--min-words", type=int, default=20)
    args = parser.parse_args()
    count = 0
    with args.output.open("w", encoding="utf-8") as out:
        for path, text in texts(args.roots, args.max_bytes, args.min_words):
            out.write(json.dumps({"id": path, "text": text}) + "\n")
            count += 1
    print(f"{count} records written to {args.output}")


if __name__ == "__main__":
    main()
