"""Deduplication: keep one document of each near-duplicate group, say what was removed and why.

Finding pairs is half of deduplication; the other half is choosing what to drop. Joining
pairs into connected groups and keeping one document per group removes documents through
chains: if A~B and B~C, C goes although it may be far from A. Here nothing is removed
through a chain. Documents are walked in *keep order* (the keep policy, with preferred
names first); a document is removed only when it has a pair at or above the threshold with
a document already kept, and it names that kept document and their true cosine. So every
removal can be checked on its own: the named document stays, and the two really are that
similar.

Reference documents (an existing corpus new data is checked against) come before every
input in keep order: they always win, and they are never kept or removed themselves, only
named.

The pairs come from :func:`simdup.engines.local.find_duplicates`; only pairs whose true cosine
is known and at or above the threshold are used.
"""

from __future__ import annotations

import fnmatch
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from simdup.engines.local import find_duplicates, plan_duplicates
from simdup.errors import ParameterError
from simdup.model import Document, PairArrays, ScanResult
from simdup.params import KEEP_POLICIES, Params
from simdup.progress import Progress, no_progress
from simdup.search.groups import Removal, resolve

#: A pair scan of documents with unique names: :func:`simdup.engines.local.find_duplicates`, or
#: another engine's equivalent (the Dask engine's, through ``simdup dedupe --engine dask``).
PairScan = Callable[[Sequence[Document], Params], ScanResult]


class StoredReferences(Protocol):
    """A store of reference fingerprints that finds its near-duplicates of new documents.

    :meth:`simdup.index.FingerprintIndex.query` is one: only the new documents are
    fingerprinted, however large the store.
    """

    def query(self, documents: Sequence[Document], params: Params | None = None) -> ScanResult:
        """Return pairs (new document row, stored row) at or above the threshold.

        Rows are the new documents with features (sorted by name), then the stored
        documents matched.
        """
        ...


@dataclass(frozen=True)
class Entry:
    """One input document as deduplication sees it.

    Attributes:
        name: Display name: a path, or a JSON Lines id (ids may repeat).
        text: The text compared.
        time: Seconds since the epoch for ``newest``/``oldest`` (file modification time
            or a time field); None when unknown (such documents come last).
        size: Bytes saved when the document is removed (file size, or line length).
        tag: Disambiguates repeated names in messages (``line 12``).
    """

    name: str
    text: str
    time: float | None = None
    size: int = 0
    tag: str = ""


@dataclass
class DedupePlan:
    """What deduplication keeps and removes.

    Attributes:
        kept: Positions of the kept inputs, ascending.
        removed: One :class:`Removal` per removed input, ascending by position.
        scan: The pair scan the plan was made from (names are internal keys, see
            :func:`unique_keys`).
        keys: The key of each input in ``scan``, then of each reference.
        stored: Names of the stored reference documents matched, in the order removals
            count them: after the ``references`` given as texts.
    """

    kept: list[int]
    removed: list[Removal]
    scan: ScanResult
    keys: list[str]
    stored: list[str] = field(default_factory=list)


def check_policy(policy: str) -> None:
    """Refuse an unknown keep policy.

    >>> check_policy("longest")
    >>> check_policy("biggest")
    Traceback (most recent call last):
    ...
    simdup.errors.ParameterError: unknown keep policy 'biggest'; choose one of: first, last, longest, shortest, newest, oldest
    """  # noqa: E501 - a doctest line cannot be wrapped
    if policy not in KEEP_POLICIES:
        raise ParameterError(
            f"unknown keep policy {policy!r}; choose one of: {', '.join(KEEP_POLICIES)}"
        )


def preference(name: str, prefer: Sequence[str]) -> int:
    """Return the index of the first glob matching ``name`` or its base name (len: none).

    >>> preference("keep/a.txt", ["other/*", "keep/*"]), preference("a.txt", ["keep/*"])
    (1, 1)
    """
    base = os.path.basename(name)
    for rank, pattern in enumerate(prefer):
        if fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(base, pattern):
            return rank
    return len(prefer)


def keep_order(
    entries: Sequence[Entry], policy: str = "first", prefer: Sequence[str] = ()
) -> list[int]:
    """Return the positions of ``entries``, the one most worth keeping first.

    Documents matching a ``prefer`` glob come first (earlier globs first), then the policy
    decides: ``first``/``last`` by input position, ``longest``/``shortest`` by text length
    in characters, ``newest``/``oldest`` by ``time`` (unknown times last). Ties go to the
    earlier input, so the order is total and deterministic.

    >>> docs = [Entry("a", "x"), Entry("b", "x y z"), Entry("c", "x y")]
    >>> keep_order(docs, "longest"), keep_order(docs, "last"), keep_order(docs, "first", ["c"])
    ([1, 2, 0], [2, 1, 0], [2, 0, 1])
    """
    check_policy(policy)

    def key(position: int) -> tuple[int, float, int]:
        entry = entries[position]
        if policy in ("newest", "oldest"):
            if entry.time is None:
                value = float("inf")
            else:
                value = -entry.time if policy == "newest" else entry.time
        elif policy == "longest":
            value = -len(entry.text)
        elif policy == "shortest":
            value = len(entry.text)
        elif policy == "last":
            value = -position
        else:
            value = 0
        return preference(entry.name, prefer) if prefer else 0, value, position

    return sorted(range(len(entries)), key=key)


def unique_keys(names: Sequence[str], tags: Sequence[str]) -> list[str]:
    """Return one distinct key per document: its name, with its tag where names repeat.

    The pair scan needs distinct names; readable ones keep its messages readable.

    >>> unique_keys(["a", "b", "a"], ["line 1", "line 2", "line 3"])
    ['a (line 1)', 'b', 'a (line 3)']
    """
    counts = Counter(names)
    keys: list[str] = []
    taken: set[str] = set()
    for position, (name, tag) in enumerate(zip(names, tags, strict=True)):
        key = name if counts[name] == 1 else f"{name} ({tag or position})"
        while key in taken or (key != name and key in counts):
            key += f" #{position}"
        taken.add(key)
        keys.append(key)
    return keys


def scan_documents(
    entries: Sequence[Entry], references: Sequence[Entry] = ()
) -> tuple[list[str], list[Document]]:
    """Return the documents deduplication scans: inputs then references, under unique keys.

    >>> scan_documents([Entry("a", "x", tag="line 1"), Entry("a", "y", tag="line 2")])[0]
    ['a (line 1)', 'a (line 2)']
    """
    everything = [*entries, *references]
    tags = [e.tag for e in entries]
    tags += [e.tag or f"reference {k + 1}" for k, e in enumerate(references)]
    keys = unique_keys([e.name for e in everything], tags)
    return keys, [Document(key, e.text) for key, e in zip(keys, everything, strict=True)]


def plan_dedupe(
    entries: Sequence[Entry],
    params: Params | None = None,
    *,
    references: Sequence[Entry] = (),
    progress: Progress = no_progress,
    jobs: int = 1,
    memory: int | None = None,
) -> dict[str, Any]:
    """Return the plan of the pair scan :func:`dedupe` would run, before any pair work.

    The same documents as :func:`dedupe` scans, planned by
    :func:`~simdup.engines.local.plan_duplicates`; stored references are not included.
    """
    _, documents = scan_documents(entries, references)
    return plan_duplicates(
        documents, params or Params(), progress=progress, jobs=jobs, memory=memory
    )


def dedupe(
    entries: Sequence[Entry],
    params: Params | None = None,
    *,
    policy: str = "first",
    prefer: Sequence[str] = (),
    references: Sequence[Entry] = (),
    stores: Sequence[StoredReferences] = (),
    progress: Progress = no_progress,
    jobs: int = 1,
    scan: PairScan | None = None,
    report_all: bool = False,
    memory: int | None = None,
) -> DedupePlan:
    """Return which of ``entries`` to keep and which to remove, naming each one's match.

    Args:
        entries: The input documents, in input order (names may repeat).
        params: Settings of the pair scan; ``threshold`` decides what is a duplicate.
        policy: Keep policy, one of :data:`KEEP_POLICIES`.
        prefer: Globs; inputs whose name matches one are kept first.
        references: Documents that always win and are never kept or removed.
        stores: Stored reference fingerprints (indexes), which win like ``references``;
            the stored documents matched are counted after ``references``.
        progress: Progress hook for long stages.
        jobs: Worker processes and threads (0: every core); the plan never depends on it.
        scan: The pair scan of the inputs and ``references`` (default: the local
            :func:`~simdup.engines.local.find_duplicates` with ``progress`` and ``jobs``); any
            scan returning the same pairs gives the same plan.
        report_all: Keep every candidate pair in ``scan``, not only those at the
            threshold (they remove nothing).
        memory: Bytes the local pair scan may use (default: its budget).

    >>> plan = dedupe([Entry("a", "red fox jumps"), Entry("b", "blue whale"),
    ...                Entry("c", "red fox jumps")])
    >>> plan.kept, [(r.index, r.kept, r.cosine) for r in plan.removed]
    ([0, 1], [(2, 0, 1.0)])
    """
    params = params or Params()
    order = keep_order(entries, policy, prefer)
    keys, documents = scan_documents(entries, references)
    if scan is None:
        found_scan = find_duplicates(
            documents, params, report_all=report_all, progress=progress, jobs=jobs, memory=memory
        )
    else:
        found_scan = scan(documents, params)
    position = {key: row for row, key in enumerate(keys)}
    to_row = np.array([position[name] for name in found_scan.names], dtype=np.int64)
    found = found_scan.pairs
    parts = [PairArrays(to_row[found.pairs], found.hamming, found.estimated, found.cosine)]
    stored: dict[str, int] = {}
    for store in stores:
        parts.append(_stored_pairs(store, documents[: len(entries)], params, position, stored))
    pairs = PairArrays.join(parts)
    removed = resolve(order, pairs, params.threshold, references=len(references) + len(stored))
    gone = {r.index for r in removed}
    kept = [i for i in range(len(entries)) if i not in gone]
    return DedupePlan(kept, removed, found_scan, keys, list(stored))


def _stored_pairs(
    store: StoredReferences,
    documents: Sequence[Document],
    params: Params,
    position: dict[str, int],
    stored: dict[str, int],
) -> PairArrays:
    """Return the pairs of input rows with a store's documents, numbered after ``position``.

    ``stored`` maps each stored name met so far (across stores) to its number among them;
    a name met in two stores is one reference document.
    """
    result = store.query(documents, params)
    base = len(position)
    queried = result.stats["documents"]  # the query rows come first
    rows = []
    for k, name in enumerate(result.names):
        if k < queried:
            rows.append(position[name])
        else:
            rows.append(base + stored.setdefault(name, len(stored)))
    to_row = np.array(rows, dtype=np.int64)
    found = result.pairs
    return PairArrays(to_row[found.pairs], found.hamming, found.estimated, found.cosine)
