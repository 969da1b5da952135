"""Index stage 4, writing: add, update, prune and remove documents, a batch per transaction.

An add reads only what may have changed and fingerprints only what did: a file whose
size and modification time match the stored ones is not read again, and a document
whose text hash matches is not fingerprinted again. Documents are written in batches of
whole documents, one transaction each, so a process killed in the middle of an add
leaves the last committed batch and the next add carries on from there.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from simdup.engines.local.fingerprinting import fingerprint_documents
from simdup.index.packing import encode_name, text_digest
from simdup.index.store import IndexStore, State
from simdup.inputs.files import ReadOptions, Source, read_documents
from simdup.inputs.walk import find_files
from simdup.model import Document, Skip
from simdup.progress import Progress, no_progress

#: Files modified less than this many seconds before they were read are read again by
#: the next add: a change within the file system's timestamp granularity would keep size
#: and mtime (the "racy" case git guards against the same way).
RACY_SECONDS = 2.0


@dataclass
class AddReport:
    """What an add or import did.

    Attributes:
        added: Documents new to the index.
        updated: Stored documents whose text changed (fingerprinted again).
        unchanged: Stored documents left as they were (not read, or same text).
        removed: Stored documents dropped (``prune``).
        skipped: Inputs not stored, with reasons (unreadable, too large, no features).
        names: Every document name this run saw and stored or kept, sorted.
    """

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: list[Skip] = field(default_factory=list)
    names: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Return the counts as a JSON-ready dict."""
        return {
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "skipped": len(self.skipped),
        }


@dataclass
class _Pending:
    """A document waiting to be written: its text (or ready fingerprint) and file stat."""

    document: Document
    origin: str
    size: int | None
    mtime_ns: int | None
    digest: bytes


def under(name: str, root: str) -> bool:
    """Tell whether ``name`` is ``root`` or a path below it.

    >>> under("docs/a.txt", "docs"), under("docs2/a.txt", "docs"), under("x", "x")
    (True, False, True)
    """
    return name == root or name.startswith(root if root.endswith("/") else root + "/")


def _flush(
    store: IndexStore, pending: list[_Pending], stored: State, report: AddReport
) -> list[str]:
    """Fingerprint and write one batch in one transaction; return the names kept."""
    changed = [
        p
        for p in pending
        if p.document.name not in stored or stored[p.document.name][3] != p.digest
    ]
    changed_names = {p.document.name for p in changed}
    same = [p for p in pending if p.document.name not in changed_names]
    corpus = fingerprint_documents([p.document for p in changed], store.params)
    by_name = {p.document.name: p for p in changed}
    gone = [s.path for s in corpus.skipped if s.path in stored]
    with store.transaction():
        store.refresh_features()
        store.write(
            corpus.names,
            [
                (by_name[n].origin, by_name[n].size, by_name[n].mtime_ns, by_name[n].digest)
                for n in corpus.names
            ],
            corpus.fingerprints,
            corpus.matrix,
            corpus.matrix.row_lengths().tolist(),
        )
        store.db.executemany(
            "UPDATE documents SET size = ?, mtime_ns = ?, origin = ? WHERE name = ?",
            [(p.size, p.mtime_ns, p.origin, encode_name(p.document.name)) for p in same],
        )
        store.delete(gone)
    for name in corpus.names:
        if name in stored:
            report.updated += 1
        else:
            report.added += 1
        p = by_name[name]
        stored[name] = (p.origin, p.size, p.mtime_ns, p.digest)
    report.unchanged += len(same)
    report.removed += len(gone)
    report.skipped += corpus.skipped
    for name in gone:
        stored.pop(name, None)
    return [*corpus.names, *(p.document.name for p in same)]


def _add(
    store: IndexStore,
    documents: Iterable[Document],
    origin: str,
    stored: State,
    report: AddReport,
    batch: int,
    stats: dict[str, tuple[int, int]] | None = None,
) -> list[str]:
    """Write documents in batches; return the names stored or kept."""
    seen: list[str] = []
    pending: list[_Pending] = []
    now = time.time_ns()
    for doc in documents:
        size: int | None = None
        mtime: int | None = None
        if stats is not None and doc.name in stats:
            size, mtime = stats[doc.name]
            if now - mtime < RACY_SECONDS * 1e9:
                mtime = -1  # read again next time: a change could keep size and mtime
        pending.append(_Pending(doc, origin, size, mtime, text_digest(doc.text)))
        if len(pending) >= batch:
            seen += _flush(store, pending, stored, report)
            pending = []
    if pending:
        seen += _flush(store, pending, stored, report)
    return seen


def remove_names(store: IndexStore, names: Sequence[str]) -> int:
    """Delete the named documents in one transaction; return how many were named."""
    if not names:
        return 0
    with store.transaction():
        store.delete(names)
    return len(names)


def add_documents(
    store: IndexStore,
    documents: Iterable[Document],
    *,
    origin: str,
    prune: bool,
    batch: int,
) -> AddReport:
    """Add or update documents given as texts; see ``FingerprintIndex.add_documents``."""
    stored = store.stored_state()
    before = dict(stored)
    report = AddReport()
    seen = _add(store, documents, origin, stored, report, max(1, batch))
    if prune:
        kept = set(seen)
        gone = [n for n, s in before.items() if s[0] == origin and n not in kept]
        report.removed += remove_names(store, gone)
    report.names = sorted(seen)
    return report


def _unchanged_files(
    sources: Sequence[Source], stored: State
) -> tuple[list[str], list[tuple[Source, int, int]]]:
    """Split found files into stored ones whose stat is unchanged and ones to read."""
    seen: list[str] = []
    to_read: list[tuple[Source, int, int]] = []
    for source in sources:
        try:
            info = os.stat(source.path)
        except OSError:
            to_read.append((source, -1, -1))  # read_documents reports why
            continue
        previous = stored.get(source.name)
        if (
            previous is not None
            and previous[0] == "file"
            and previous[1] == info.st_size
            and previous[2] == info.st_mtime_ns
        ):
            seen.append(source.name)
        else:
            to_read.append((source, info.st_size, info.st_mtime_ns))
    return seen, to_read


def add_files(
    store: IndexStore,
    paths: Sequence[str],
    options: ReadOptions | None,
    *,
    prune: bool,
    batch: int,
    progress: Progress = no_progress,
) -> AddReport:
    """Add or update the files under ``paths``; see ``FingerprintIndex.add_files``."""
    options = options or ReadOptions()
    batch = max(1, batch)
    sources, skipped = find_files(paths, options)
    stored = store.stored_state()
    before = dict(stored)
    report = AddReport(skipped=list(skipped))
    seen, to_read = _unchanged_files(sources, stored)
    report.unchanged += len(seen)
    chunk: list[tuple[Source, int, int]] = []
    for k, item in enumerate(progress(to_read, desc="read", total=len(to_read))):
        chunk.append(item)
        if len(chunk) < batch and k < len(to_read) - 1:
            continue
        documents, unread = read_documents([s for s, _, _ in chunk], options)
        report.skipped += unread
        stat_of = {s.name: (size, mtime) for s, size, mtime in chunk}
        seen += _add(store, documents, "file", stored, report, batch, stat_of)
        chunk = []
    if prune:
        found = {s.name for s in sources}
        roots = [p.rstrip("/") or "/" for p in paths]
        gone = [
            n
            for n, s in before.items()
            if s[0] == "file" and n not in found and any(under(n, r) for r in roots)
        ]
        report.removed += remove_names(store, gone)
    report.names = sorted(seen)
    return report


def remove(store: IndexStore, paths: Sequence[str]) -> list[str]:
    """Remove the documents named ``paths``, or stored under them; return their names."""
    roots = [p.rstrip("/") or "/" for p in paths]
    names = store.names()
    gone = sorted(n for n in names if n in paths or any(under(n, r) for r in roots))
    remove_names(store, gone)
    return gone
