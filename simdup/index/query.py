"""Index stage 6, queries: the stored near-duplicates of new documents.

New documents go through the scan pipeline's fingerprint stage; their candidates among
the stored documents are found by one indexed lookup per blocking table (each table's
key is an indexed column, so a query never reads the whole table), or, when the run
asks for other blocking tables than the stored ones, by comparing keys with every
stored fingerprint in memory (same pairs, slower). Each candidate is then verified by
its Hamming distance and its true cosine, as in a scan. With keys planned on the
index's first documents, candidates farther apart than the planned Hamming pre-filter are
dropped before their row is read, as a scan drops them before their true cosine.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.engines.local.fingerprinting import Fingerprinted, fingerprint_documents
from simdup.fingerprints.weights import WeightMatrix, order_of
from simdup.index import resident, screen
from simdup.index.packing import decode_name, encode_name, same_tables, to_unsigned, unpack_rows
from simdup.index.reading import count
from simdup.index.store import IndexStore
from simdup.model import Document, PairArrays, ScanResult, Skip
from simdup.params import Params
from simdup.search.plan.planner import tables_for
from simdup.search.result import Verified, measure, scan_result
from simdup.search.tables import Tables, masked_keys, table_masks


def candidates_sql(
    store: IndexStore, columns: Sequence[str] = ("id",), union: str = "UNION"
) -> str:
    """Return the SQL that finds stored documents sharing a key with one fingerprint.

    One ``SELECT`` of ``columns`` per table, each an equality on that table's indexed key
    column, joined by ``union`` (``UNION ALL`` keeps a document found by several tables
    once per table).
    """
    selected = ", ".join(columns)
    return f" {union} ".join(
        f"SELECT {selected} FROM documents WHERE {c} = ?" for c in store.key_columns
    )


def _lookup(
    store: IndexStore, fingerprints: npt.NDArray[np.uint64], limit: int | None
) -> list[set[int]]:
    """Return, per fingerprint, the stored ids sharing a key (indexed lookups).

    Stored documents farther from the fingerprint than ``limit`` (the planned Hamming
    pre-filter; None: no filter) are left out.
    """
    if not store.key_columns:
        return [set() for _ in range(len(fingerprints))]  # no documents stored yet
    keys = store.keys(fingerprints).tolist()
    if limit is None:
        sql = candidates_sql(store)
        return [{i for (i,) in store.db.execute(sql, row).fetchall()} for row in keys]
    # Planned keys: their indexes carry the fingerprint words, so this reads no table row.
    sql = candidates_sql(store, ["id", *store.fp_columns], union="UNION ALL")
    query = fingerprints.reshape(len(fingerprints), store.words)
    out: list[set[int]] = []
    for q, row in enumerate(keys):
        found = np.array(store.db.execute(sql, row).fetchall(), dtype=np.int64)
        if len(found) == 0:
            out.append(set())
            continue
        stored = to_unsigned(np.ascontiguousarray(found[:, 1:]))
        near = np.bitwise_count(stored ^ query[q][None, :]).sum(axis=1) <= limit
        out.append(set(np.unique(found[near, 0]).tolist()))
    return out


def query_tables(store: IndexStore, params: Params) -> Tables:
    """Return the tables a query with ``params`` blocks on.

    The stored tables when ``params`` ask for the blocking the index was made with (its
    planned keys, or the keys the user chose), or for planned keys at a threshold at least
    the planned one (a closer pair is found at least as often); else the tables ``params``
    name.
    """
    store.refresh_keys()
    if blocking(params) == blocking(store.params):
        return store.tables
    stored = store.params
    if (
        store.keys_info["source"] == "planned"
        and blocking(params)[:3] == blocking(stored)[:3]
        and params.threshold >= stored.threshold
        and params.recall <= stored.recall
    ):
        return store.tables
    return tables_for(params)


def blocking(params: Params) -> tuple[Any, ...]:
    """Return the settings that decide the blocking tables, comparable with ``==``."""
    return (params.scheme, params.blocks, params.max_distance, params.threshold, params.recall)


def _scan_keys(
    store: IndexStore, fingerprints: npt.NDArray[np.uint64], tables: Tables
) -> list[set[int]]:
    """Return, per fingerprint, the stored ids sharing a key of ``tables`` (in memory)."""
    columns = ", ".join(store.fp_columns)
    rows = store.db.execute(f"SELECT id, {columns} FROM documents").fetchall()
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    stored = to_unsigned(np.array([r[1:] for r in rows], dtype=np.int64).reshape(-1, store.words))
    out: list[set[int]] = [set() for _ in range(len(fingerprints))]
    for mask in table_masks(tables):
        stored_keys = masked_keys(stored, mask)
        query_keys = masked_keys(fingerprints, mask)
        for q, key in enumerate(query_keys.tolist()):
            out[q].update(ids[stored_keys == np.uint64(key)].tolist())
    return out


def _candidates(
    store: IndexStore, corpus: Fingerprinted, tables: Tables, after: int | None = None
) -> tuple[list[str], list[tuple[Any, ...]], npt.NDArray[np.int64]]:
    """Return the matched stored names and rows (sorted by name) and the candidate pairs.

    Pairs are (query row, stored row) with stored rows numbered after the query rows; a
    stored document with the same name as a query document is that document, and is
    not paired with it. With ``after``, only stored documents of higher ids are paired.
    """
    n = len(corpus.names)
    if tables is store.tables or same_tables(tables, store.tables):
        # The planned pre-filter goes with the planned keys, not with look-alike tables.
        limit = store.max_hamming if tables is store.tables else None
        hits = _lookup(store, corpus.fingerprints, limit)
    else:
        hits = _scan_keys(store, corpus.fingerprints, tables)
    if after is not None:
        hits = [{i for i in ids if i > after} for ids in hits]
    rows = store.rows(sorted({i for ids in hits for i in ids}))
    name_of = {r[0]: decode_name(r[1]) for r in rows}
    stored_names = sorted(name_of.values())
    position = {name: n + k for k, name in enumerate(stored_names)}
    id_row = {i: position[name] for i, name in name_of.items()}
    pair_list = [
        (q, id_row[i]) for q, ids in enumerate(hits) for i in ids if name_of[i] != corpus.names[q]
    ]
    pairs = np.array(sorted(pair_list), dtype=np.int64).reshape(-1, 2)
    stored_rows = sorted(rows, key=lambda r: id_row[r[0]])
    return stored_names, stored_rows, pairs


@dataclass(frozen=True)
class Vectors:
    """Stored weight vectors: row ``r``'s are ``ids[starts[r] : starts[r] + lengths[r]]``.

    ``squares`` are the rows' squared norms (:func:`resident.squared_norms`); ``filters``
    the rows' filters of their features (:mod:`screen`), when held. With ``rows``, the
    arrays are every held row's and the stored rows are ``rows`` of them: only the rows
    left after the screen are read.
    """

    starts: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.int64]
    ids: npt.NDArray[Any]
    weights: npt.NDArray[Any]
    squares: npt.NDArray[np.float64]
    filters: npt.NDArray[np.uint8] | None = None
    rows: npt.NDArray[np.int64] | None = None

    @classmethod
    def of_rows(cls, stored_rows: Sequence[tuple[Any, ...]]) -> Vectors:
        """Return the vectors of stored rows read by :meth:`IndexStore.rows`."""
        lengths, ids, weights = unpack_rows([(r[3], r[4]) for r in stored_rows])
        squares = resident.squared_norms(lengths, ids, weights)
        return cls(np.cumsum(lengths) - lengths, lengths, ids, weights, squares)

    @classmethod
    def held(cls, view: resident.HeldView, rows: npt.NDArray[np.int64]) -> Vectors:
        """Return the vectors of held ``rows`` of ``view``, with their filters."""
        v = view
        return cls(v.starts, v.lengths, v.feature_ids, v.weights, v.squares, v.filters, rows)


def _cosines(
    store: IndexStore,
    query: WeightMatrix,
    vectors: Vectors,
    pairs: npt.NDArray[np.int64],
    threshold: float | None = None,
) -> npt.NDArray[np.float64]:
    """Return the true cosine of every (query row, stored row) pair, float64 (m,).

    Stored rows are numbered after the query rows, in the order of ``vectors``. Query
    features are matched to stored ones through the ``features`` table. Each dot product
    is summed over the stored row's entries in its stored order, and each squared norm
    in row order, so an exact copy scores exactly 1.0.

    With a ``threshold`` and the rows' filters, the pairs the screen shows to be under
    the threshold are not measured: they get their bound instead (under the threshold,
    and at least their cosine), so the pairs reaching it are the same.
    """
    out = np.zeros(len(pairs), dtype=np.float64)
    if len(pairs) == 0:
        return out
    vocabulary_ids = store.known_feature_ids(query.vocabulary)
    # A query feature's weight by stored feature id; unknown features (id 0) and ids past
    # every query feature's (all sent to the last slot) weigh nothing.
    top = int(vocabulary_ids.max(initial=0)) + 1
    weight_of = np.zeros(top + 1)
    asked = np.zeros(top + 1, dtype=bool)  # the query's features, by stored id
    first_stored = query.rows
    for q in np.unique(pairs[:, 0]).tolist():
        at = np.flatnonzero(pairs[:, 0] == q)
        lo, hi = int(query.indptr[q]), int(query.indptr[q + 1])
        q_ids = vocabulary_ids[query.indices[lo:hi]]
        q_weights = query.data[lo:hi]
        q_square = float(np.bincount(np.zeros(hi - lo, np.int64), q_weights * q_weights)[0])
        known = q_ids > 0
        q_known, known_weights = q_ids[known], q_weights[known]
        chosen = pairs[at, 1] - first_stored
        if vectors.rows is not None:
            chosen = vectors.rows[chosen]
        sizes = vectors.lengths[chosen]
        filters = vectors.filters
        if threshold is not None and filters is not None and screen.pays(len(q_known), sizes):
            keep, bounds = screen.screened(
                filters.take(chosen, axis=0), q_known, known_weights**2, q_square, threshold
            )
            out[at[~keep]] = bounds[~keep]
            at, chosen, sizes = at[keep], chosen[keep], sizes[keep]
            if len(at) == 0:
                continue
        weight_of[q_known] = known_weights
        asked[q_known] = True
        ends = np.cumsum(sizes)
        entries = np.repeat(vectors.starts[chosen] - (ends - sizes), sizes)  # each row's run
        entries += np.arange(len(entries))
        features = vectors.ids.take(entries)
        # Only shared features add to a dot product: the others add exactly 0.0, so
        # leaving them out changes no sum, and the rest are summed in the same order.
        # They are found in a table of booleans (ids past the query's clip to its last,
        # false, slot): a third of the time of finding the nonzero weights.
        shared = np.flatnonzero(asked.take(features, mode="clip"))
        weight_of_shared = weight_of.take(features.take(shared))
        weight_of[q_known] = 0.0
        asked[q_known] = False
        row = np.searchsorted(ends, shared, side="right")
        products = vectors.weights.take(entries.take(shared)).astype(np.float64)
        products *= weight_of_shared
        dots = np.bincount(row, products, minlength=len(chosen))
        denominator = np.sqrt(q_square * vectors.squares[chosen])
        with np.errstate(invalid="ignore", divide="ignore"):
            values = np.where(denominator > 0, dots / denominator, 0.0)
        out[at] = np.clip(values, -1.0, 1.0)
    return out


def _verify(
    store: IndexStore,
    corpus: Fingerprinted,
    stored_rows: Sequence[tuple[Any, ...]],
    pairs: npt.NDArray[np.int64],
    params: Params,
    weighted: bool,
) -> tuple[npt.NDArray[np.uint64], PairArrays]:
    """Return the fingerprints of query and stored rows, and every candidate measured.

    The true cosine is measured when the query rows have weights (``weighted``) and so
    do the stored rows; else it is unknown (NaN).
    """
    fingerprints = np.concatenate(
        [
            corpus.fingerprints.reshape(len(corpus.names), store.words),
            to_unsigned(
                np.array([r[5:] for r in stored_rows], dtype=np.int64).reshape(-1, store.words)
            ),
        ]
    )
    measured = measure(None, fingerprints, pairs, params.fixed_bits)
    if weighted and all(r[3] is not None for r in stored_rows):
        measured.cosine = _cosines(store, corpus.matrix, Vectors.of_rows(stored_rows), pairs)
    return fingerprints, measured


def _held(
    store: IndexStore,
    view: resident.HeldView,
    corpus: Fingerprinted,
    params: Params,
    limit: int,
    *,
    weighted: bool,
    report_all: bool,
) -> tuple[list[str], npt.NDArray[np.int64], npt.NDArray[np.uint64], Verified]:
    """Return what :func:`query_prints` reports, from held fingerprints and weights.

    The same candidates as the key lookups, measured and judged the same way; then only
    the stored documents in a reported pair are read (their names and feature counts).

    Returns:
        The names of the rows (query documents, then the stored ones reported, sorted),
        their feature counts, their fingerprints, and the verified pairs over them.
    """
    n = len(corpus.names)
    hits = resident.near(store, view, corpus.fingerprints, limit)
    own = dict(
        store.select_in(
            "SELECT name, id FROM documents WHERE name IN ({marks})",
            [encode_name(name) for name in corpus.names],
        )
    )
    own_ids = np.array([own.get(encode_name(name), -1) for name in corpus.names], dtype=np.int64)
    found = np.concatenate([np.zeros(0, dtype=np.int64), *hits])  # held rows
    # One query's rows are ascending and distinct already, and so are its pairs.
    single = len(hits) == 1
    at = found if single else np.unique(found)
    candidates = view.ids[at]  # ascending, as the rows are
    query_rows = np.repeat(np.arange(n), [len(h) for h in hits])
    found_ids = candidates if single else view.ids[found]
    apart = found_ids != own_ids[query_rows]  # a stored document is not its own pair
    stored_rows = n + (np.arange(len(found)) if single else np.searchsorted(at, found))
    pairs = np.stack([query_rows[apart], stored_rows[apart]], axis=1)
    if not single:
        pairs = pairs[order_of(pairs[:, 0], pairs[:, 1], len(candidates) + n)]
    fingerprints = np.concatenate(
        [corpus.fingerprints.reshape(n, store.words), view.prints.take(at, axis=0)]
    )
    cosines = None
    if weighted and bool(view.vector[at].all()):
        vectors = Vectors.held(view, at)
        # Every candidate's cosine when all are reported; else the screen's bound will do
        # for those it shows to be under the threshold.
        threshold = None if report_all else params.threshold
        cosines = _cosines(store, corpus.matrix, vectors, pairs, threshold)
    measured = measure(None, fingerprints, pairs, params.fixed_bits, cosines=cosines)
    verified = Verified.of(measured, params.threshold, report_all)
    # Rows renumbered: the stored documents reported, in name order, after the query rows.
    kept = verified.kept
    reported = np.unique(kept.pairs[:, 1]) - n
    rows = store.select_in(
        "SELECT id, name, feature_count FROM documents WHERE id IN ({marks})",
        candidates[reported].tolist(),
    )
    named = sorted((decode_name(name), i, count) for i, name, count in rows)
    order = n + np.searchsorted(candidates, np.array([i for _, i, _ in named], dtype=np.int64))
    renumber = np.full(n + len(candidates), -1, dtype=np.int64)
    renumber[:n] = np.arange(n)
    renumber[order] = n + np.arange(len(named))
    moved = renumber[kept.pairs]
    # A held document newer than this snapshot has no row in it: its pairs are left out.
    present = np.asarray((moved >= 0).all(axis=1), dtype=bool)
    kept = kept.take(present)
    kept.pairs = moved[present]
    return (
        [*corpus.names, *(name for name, _, _ in named)],
        np.concatenate([corpus.matrix.row_lengths(), [c for _, _, c in named]]).astype(np.int64),
        np.concatenate([fingerprints[:n], fingerprints[order]]),
        Verified(verified.candidates, verified.above_threshold, kept),
    )


def query(
    store: IndexStore,
    documents: Sequence[Document],
    params: Params | None,
    *,
    report_all: bool,
    skipped: Sequence[Skip],
) -> ScanResult:
    """Return the stored near-duplicates of new documents; see ``FingerprintIndex.query``."""
    params = params or store.params
    store.check(params)
    clock = time.perf_counter()
    ordered = sorted(documents, key=lambda d: d.name)
    corpus = fingerprint_documents(ordered, params)
    timings = {"fingerprint": time.perf_counter() - clock}
    return query_prints(
        store,
        corpus,
        params,
        query_tables(store, params),
        report_all=report_all,
        skipped=skipped,
        timings=timings,
        stored=_stored_count(store),
    )


def _stored_count(store: IndexStore) -> int:
    """Return the documents stored, for the statistics.

    Held documents are counted already: ``count(*)`` reads a whole index of the table
    (9 ms at 1,000,000 documents).
    """
    held = store.resident
    if held is not None:
        with store.snapshot():
            return len(held.view(store).ids)
    return count(store)


def query_prints(
    store: IndexStore,
    corpus: Fingerprinted,
    params: Params,
    tables: Tables,
    *,
    report_all: bool = False,
    skipped: Sequence[Skip] = (),
    timings: dict[str, float] | None = None,
    weighted: bool = True,
    stored: int | None = None,
    after: int | None = None,
) -> ScanResult:
    """Return the stored near-duplicates of fingerprinted documents (names sorted, unique).

    Args:
        store: The open index.
        corpus: The query documents after the fingerprint stage.
        params: Settings (fingerprint settings must match the index; checked by the caller).
        tables: The tables to block on (:func:`query_tables`, or the stored ones).
        report_all: Report every candidate pair.
        skipped: Inputs the caller could not read, carried into the result.
        timings: Seconds of the stages before, extended with this one's.
        weighted: Whether ``corpus`` has weights (False: given as fingerprints, so the
            true cosine is unknown).
        stored: Documents in the index, for the statistics (counting them reads an index
            of the whole table, so a caller that needs no statistics leaves it out).
        after: Pair only stored documents with ids above it (those stored since a search
            that paired the others; None: every one).
    """
    timings = dict(timings or {})
    clock = time.perf_counter()
    limit, held = store.max_hamming, store.resident  # (another thread may let go of it)
    if held is not None and tables is store.tables and limit is not None:
        view = held.view(store)
        if after is not None:
            view = view.after(after)
        names, counts, fingerprints, verified = _held(
            store, view, corpus, params, limit, weighted=weighted, report_all=report_all
        )
        timings["verify"] = time.perf_counter() - clock
    else:
        stored_names, stored_rows, pairs = _candidates(store, corpus, tables, after)
        timings["candidates"] = time.perf_counter() - clock
        clock = time.perf_counter()
        fingerprints, measured = _verify(store, corpus, stored_rows, pairs, params, weighted)
        verified = Verified.of(measured, params.threshold, report_all)
        timings["verify"] = time.perf_counter() - clock
        names = [*corpus.names, *stored_names]
        stored_counts = np.array([r[2] for r in stored_rows], dtype=np.int64)
        counts = np.concatenate([corpus.matrix.row_lengths(), stored_counts]).astype(np.int64)
    return scan_result(
        names,
        params,
        [verified],
        feature_counts=counts,
        fingerprints=fingerprints,
        skipped=[*skipped, *corpus.skipped],
        timings=timings,
        tables=tables.description,
        documents=len(corpus.names),
        stored=stored,
    )
