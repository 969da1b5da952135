"""Index stage 8, ingestion one request at a time: search, add, and check-and-add.

A service that answers "have I seen something like this?" for each new document needs
three calls that cost little when the index is large: a search that reads only the
candidates of the stored keys, an add that reads only the stored rows of the names it
writes (never the whole table, as a file add does to find what changed), and a
check-and-add that searches and adds in one write transaction, so that two callers
sending the same near-duplicate text concurrently add it once. Documents come as texts,
or as fingerprints (no true cosine then: there is no weight vector to compare).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simdup.engines.local.fingerprinting import Fingerprinted, fingerprint_documents
from simdup.errors import ParameterError
from simdup.fingerprints.simhash import int_to_words
from simdup.fingerprints.weights import WeightMatrix
from simdup.index.packing import decode_name, encode_name, print_digest, text_digest
from simdup.index.query import query_prints
from simdup.index.store import IndexStore
from simdup.model import Document, Pair
from simdup.params import Params


@dataclass(frozen=True)
class Incoming:
    """A document to search or add: its id and its text, or its fingerprint (an int)."""

    name: str
    text: str | None = None
    fingerprint: int | None = None

    def digest(self) -> bytes:
        """Return the hash stored with the document (of its text, or of its fingerprint)."""
        if self.text is not None:
            return text_digest(self.text)
        return print_digest(self.name, self.fingerprint or 0)


@dataclass
class Checked:
    """What a search found for one document, and whether a check-and-add stored it.

    Attributes:
        name: The document's id.
        matches: Stored near-duplicates, strongest first (``a`` is the document).
        added: Whether it was stored (check-and-add: only when nothing matched).
        skipped: Why it could not be fingerprinted (None: it was).
    """

    name: str
    matches: list[Pair] = field(default_factory=list)
    added: bool = False
    skipped: str | None = None


def request_params(store: IndexStore, threshold: float | None) -> Params:
    """Return the index's settings at a request's threshold (None: the index's own).

    The stored keys find pairs at the index's threshold; a higher one finds fewer and
    closer pairs, which the same keys find too. A lower one would need other keys.

    Raises:
        ParameterError: for a threshold outside (0, 1] or below the index's.
    """
    stored = store.params
    if threshold is None:
        return stored
    if threshold < stored.threshold:
        raise ParameterError(
            f"threshold {threshold:g} is below the index's {stored.threshold:g}, which its "
            "keys were built for; use simdup index query --threshold for lower ones"
        )
    return dataclasses.replace(stored, threshold=threshold)


#: Documents after the fingerprint stage: texts (weighted) and fingerprints, by corpus.
Corpora = list[tuple[Fingerprinted, bool]]


def _corpora(documents: Sequence[Incoming], params: Params) -> Corpora:
    """Return the texts fingerprinted and the fingerprints as corpora, with ``weighted``."""
    texts = sorted((d for d in documents if d.text is not None), key=lambda d: d.name)
    prints = sorted((d for d in documents if d.text is None), key=lambda d: d.name)
    out: Corpora = []
    if texts:
        docs = [Document(d.name, d.text or "") for d in texts]
        out.append((fingerprint_documents(docs, params), True))
    if prints:
        bits = params.fixed_bits
        empty = WeightMatrix(
            np.zeros(len(prints) + 1, dtype=np.int64),
            np.zeros(0, dtype=np.int64),
            np.zeros(0, dtype=np.float64),
            (),
        )
        words = np.stack([int_to_words(d.fingerprint or 0, bits) for d in prints])
        out.append((Fingerprinted([d.name for d in prints], empty, words, []), False))
    return out


def _strength(pair: Pair) -> tuple[float, int, str]:
    """Sort key of a match: highest cosine (the estimate when unknown), then closest."""
    cosine = pair.estimated_cosine if pair.cosine is None else pair.cosine
    return (-cosine, pair.hamming, pair.b)


def _search(
    store: IndexStore,
    documents: Sequence[Incoming],
    params: Params,
    corpora: Corpora,
    after: int | None = None,
) -> dict[str, Checked]:
    """Return what the stored keys find for each document, by name (``corpora``: theirs).

    With ``after``, only among the stored documents of higher ids.
    """
    found = {d.name: Checked(d.name) for d in documents}
    for corpus, weighted in corpora:
        for skip in corpus.skipped:
            found[skip.path].skipped = skip.reason
        if not corpus.names:
            continue
        result = query_prints(store, corpus, params, store.tables, weighted=weighted, after=after)
        for pair in result.pair_list():
            found[pair.a].matches.append(pair)
    for checked in found.values():
        checked.matches.sort(key=_strength)
    return found


def search(store: IndexStore, documents: Sequence[Incoming], params: Params) -> list[Checked]:
    """Return the stored near-duplicates of each document, in the order given (ids unique)."""
    corpora = _corpora(documents, params)
    with store.snapshot():
        found = _search(store, documents, params, corpora)
    return [found[d.name] for d in documents]


def _stored_digests(store: IndexStore, names: Sequence[str]) -> dict[str, bytes]:
    """Return the stored hash of each of ``names`` that is stored."""
    rows = store.select_in(
        "SELECT name, digest FROM documents WHERE name IN ({marks})",
        [encode_name(n) for n in names],
    )
    return {decode_name(name): digest for name, digest in rows}


def _write(
    store: IndexStore, documents: Sequence[Incoming], corpora: Corpora, origin: str
) -> list[str]:
    """Write fingerprinted documents (inside a transaction); return the names written."""
    digests = {d.name: d.digest() for d in documents}
    written: list[str] = []
    for corpus, weighted in corpora:
        counts = corpus.matrix.row_lengths().tolist()
        store.write(
            corpus.names,
            [(origin, None, None, digests[n]) for n in corpus.names],
            corpus.fingerprints,
            corpus.matrix if weighted else None,
            counts,
        )
        written += corpus.names
    return written


def add(
    store: IndexStore, documents: Sequence[Incoming], params: Params, origin: str
) -> dict[str, int]:
    """Add or replace documents in one transaction; return ``added``, ``updated``, ... counts.

    A stored document whose hash is unchanged is left alone; one without features is
    skipped.
    """
    with store.transaction():
        store.refresh_features()
        stored = _stored_digests(store, [d.name for d in documents])
        changed = [d for d in documents if stored.get(d.name) != d.digest()]
        written = _write(store, changed, _corpora(changed, params), origin)
    added = sum(1 for n in written if n not in stored)
    return {
        "added": added,
        "updated": len(written) - added,
        "unchanged": len(documents) - len(changed),
        "skipped": len(changed) - len(written),
    }


@dataclass
class FirstSearch:
    """A check-and-add's search outside the writers' lock, and what it saw of the index.

    Attributes:
        prepared: Each document with its fingerprinted corpora.
        found: What the search found for each, in order.
        seen: How much of a held index it saw (None: settled, or not held).
    """

    prepared: list[tuple[Incoming, Corpora]]
    found: list[Checked]
    seen: _Seen | None

    @property
    def settled(self) -> bool:
        """Tell whether this is the answer: every document matched something or was skipped."""
        return all(checked.skipped is not None or checked.matches for checked in self.found)


def search_first(store: IndexStore, documents: Sequence[Incoming], params: Params) -> FirstSearch:
    """Search each document as :func:`check_and_add` does first, outside any lock."""
    prepared = [(doc, _corpora([doc], params)) for doc in documents]
    with store.snapshot():
        found = [_search(store, [doc], params, corpora)[doc.name] for doc, corpora in prepared]
        searched = FirstSearch(prepared, found, None)
        if not searched.settled:
            searched.seen = _Seen.of(store)  # in the search's snapshot, for a call that may store
    return searched


def check_and_add(
    store: IndexStore,
    documents: Sequence[Incoming],
    params: Params,
    origin: str,
    exclusive: AbstractContextManager[Any] | None = None,
    first: FirstSearch | None = None,
) -> list[Checked]:
    """Search each document and store it only if nothing matched, in one write transaction.

    Documents are taken in the order given, each searched against the index and the
    documents stored before it; a document whose id is stored already is not stored
    again (its own row is not a match). Another writer waits for the transaction, so
    two concurrent calls with the same near-duplicate text store it once. The texts are
    fingerprinted before the transaction (and before ``exclusive``, a lock the caller's
    other writers hold too), so that writers wait only for the search and the write.

    A call whose documents all match something stored (or are skipped) stores nothing
    whatever the other writers do, so it answers from a search outside the transaction
    and the lock (:func:`search_first`; ``first``, when the caller made it): near-duplicates,
    most of a crawler's calls, no longer wait in line. Inside the lock, a held index is
    searched again only for the documents stored since the first search, when nothing
    else changed (:class:`_Seen`).
    """
    first = first or search_first(store, documents, params)
    if first.settled:
        return first.found
    seen = first.seen
    out: list[Checked] = []
    with exclusive or nullcontext(), store.transaction():
        store.refresh_features()
        store.refresh_keys()
        since = seen.last_id if seen is not None and seen.stands(_Seen.of(store)) else None
        for (doc, corpora), before in zip(first.prepared, first.found, strict=True):
            checked = _search(store, [doc], params, corpora, since)[doc.name]
            if since is not None:  # what the first search found stands: nothing changed it
                checked.matches = sorted(before.matches + checked.matches, key=_strength)
            fresh = checked.skipped is None and not checked.matches
            if fresh and not _stored_digests(store, [doc.name]):
                checked.added = bool(_write(store, [doc], corpora, origin))
            out.append(checked)
    return out


@dataclass(frozen=True)
class _Seen:
    """How much of a held index a search saw, to search again only what came after.

    Documents added since have higher ids; an update or a deletion moves the log of
    changes; keys planned again move the schema. When only documents were added, a
    search of those alone, with what the first search found, is the search of all.

    Attributes:
        last_id: The highest stored id.
        last_change: The last entry of the log of changes.
        schema: SQLite's schema counter.
    """

    last_id: int
    last_change: int
    schema: int

    @classmethod
    def of(cls, store: IndexStore) -> _Seen | None:
        """Return what ``store``'s snapshot holds (None: not held, no log of changes)."""
        if store.resident is None:
            return None
        (last_id,) = store.db.execute("SELECT coalesce(max(id), 0) FROM documents").fetchone()
        (change,) = store.db.execute("SELECT coalesce(max(seq), 0) FROM changes").fetchone()
        return cls(int(last_id), int(change), store.schema_version())

    def stands(self, now: _Seen | None) -> bool:
        """Tell whether documents were at most added between this and ``now``."""
        return now is not None and (now.last_change, now.schema) == (self.last_change, self.schema)


def check_ids(documents: Sequence[Incoming]) -> None:
    """Refuse a request that names one id twice (its answers could not be told apart).

    Raises:
        ParameterError: naming the first repeated id.
    """
    seen: set[str] = set()
    for d in documents:
        if d.name in seen:
            raise ParameterError(f"document id {d.name!r} is given twice")
        seen.add(d.name)
