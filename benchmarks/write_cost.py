"""What storing one new document costs an index, batch after batch, as its key indexes fill.

Stores ``--docs`` new generated texts in an existing index (``benchmarks/generate.py``,
``--seed`` apart from the index's own), one document a transaction as ``simdup serve``
stores a check-and-add, its request connection leaving the write-ahead log to be copied
elsewhere as the server's does. After each ``--batch`` it copies the log into the file and
reports the mean milliseconds a document (processor time in the program and in the
system), and the pages of log a document wrote: SQLite writes every page a transaction
changed in full, once to the log and once more when the log is copied.

Each key table is an index of the documents table. SQLite packs every page of an index it
builds whole: the first document stored after that splits a page of each key index, moving
cells into its neighbours, and writes about four pages for each; later documents find room
left by those splits, so the cost falls as the index takes writes, toward one page a key
table. ``index optimize`` (and the server's own replanning) now leaves room in the pages of
the key indexes it builds; an index optimized by an earlier build shows the packed pages.

The index is written to: give a copy. Usage::

    cp big.db copy.db && python benchmarks/write_cost.py copy.db --docs 6000 --batch 1000
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from typing import Any

from index_bench import _generator  # benchmarks/ is on the path of its scripts

from simdup.index import open_index
from simdup.index.ingest import Incoming

#: Bytes of write-ahead log past which the log starts again (the server's own bound).
LOG_LIMIT = 64 << 20


def new_texts(docs: int, seed: int, source: str | None) -> list[str]:
    """Return ``docs`` texts: generated, or the first of a JSON Lines file's ``text`` fields."""
    if source is None:
        return [text for _, text in _generator().generate(docs, seed)[0]]
    texts: list[str] = []
    with open(source, encoding="utf-8") as lines:
        for line in lines:
            if len(texts) == docs:
                break
            texts.append(str(json.loads(line)["text"]))
    return texts


def measure(path: str, texts: list[str], batch: int, seed: int) -> list[dict[str, Any]]:
    """Store ``texts`` one at a time in ``path`` as new documents; return a record a batch."""
    docs = len(texts)
    rows: list[dict[str, Any]] = []
    with open_index(path, threads=True) as index:
        index.leave_checkpoints(LOG_LIMIT)
        params = index.params
        page = int(index.store.db.execute("PRAGMA page_size").fetchone()[0])
        index.checkpoint(restart=True)
        for lo in range(0, docs, batch):
            part = [
                Incoming(f"write-{seed}-{k}", texts[k]) for k in range(lo, min(docs, lo + batch))
            ]
            before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            for document in part:
                index.put([document], params)
            seconds = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_SELF)
            logged = index.checkpoint(restart=True)
            n = len(part)
            rows.append(
                {
                    "documents": f"{lo + 1}-{lo + n}",
                    "ms_per_document": round(1000 * seconds / n, 2),
                    "user_ms": round(1000 * (after.ru_utime - before.ru_utime) / n, 2),
                    "system_ms": round(1000 * (after.ru_stime - before.ru_stime) / n, 2),
                    "log_pages_per_document": round(logged / page / n),
                }
            )
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def main() -> None:
    """Measure, then print the batches as a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index", help="An index to write to (a copy).")
    parser.add_argument("--docs", type=int, default=6000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1000, help="Of the new texts.")
    parser.add_argument(
        "--texts", help="Take the new texts from this JSON Lines file (its 'text' fields)."
    )
    args = parser.parse_args()
    texts = new_texts(args.docs, args.seed, args.texts)
    rows = measure(args.index, texts, max(1, args.batch), args.seed)
    print("| documents stored | ms a document | user ms | system ms | log pages a document |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(f"| {' | '.join(str(value) for value in row.values())} |")


if __name__ == "__main__":
    main()
