"""The scan engine: planned tables, streamed candidates, fast paths equal to the reference."""

from __future__ import annotations

import itertools
import tracemalloc
import unittest.mock

import numpy as np
import numpy.typing as npt
import pytest
from counting_reference import tokenized_counts
from hypothesis import example, given, settings
from hypothesis import strategies as st

from simdup.engines.local import find_duplicates
from simdup.engines.local import pairs as pipeline
from simdup.engines.local.counting import count_batches, count_matrix
from simdup.engines.local.fingerprinting import fingerprint_documents, fingerprint_matrix
from simdup.engines.pool import check_jobs
from simdup.errors import ParameterError
from simdup.fingerprints.simhash import fingerprint, fingerprint_many, words_to_int
from simdup.fingerprints.weights import weigh, weight_matrix, weights_to_matrix
from simdup.model import Document
from simdup.params import Params
from simdup.search import buckets
from simdup.search import candidates as blocking
from simdup.search.candidates import LargeBucket, candidate_chunks, candidate_pairs
from simdup.search.plan import budget
from simdup.search.plan.parts import GROUP_BYTES, MEMBER_BYTES, TABLE_BYTES_PER_ROW
from simdup.search.plan.planner import plan, tables_for
from simdup.search.plan.pricing import MAX_TABLES
from simdup.search.plan.recall import binomial_pmf, binomial_quantile, flip_probability, recall_of
from simdup.search.tables import (
    SharedKeys,
    Tables,
    block_tables,
    clean_ranks,
    distance_tables,
    exact_keys,
    found_probability,
    masked_keys,
    sampled_tables,
    table_keys,
    table_masks,
)
from simdup.search.verify import CosineIndex, cosine, cosine_many
from simdup.text.normalize import normalize
from simdup.text.tokens import shingles, stopword_set, text_words, tokenize, words

# --- helpers -------------------------------------------------------------------------------


def brute_force(fps: npt.NDArray[np.uint64], tables: Tables) -> set[tuple[int, int]]:
    """Every pair agreeing on all bits of some table, by direct comparison."""
    masks = table_masks(tables)
    out = set()
    for i, j in itertools.combinations(range(len(fps)), 2):
        differ = fps[i] ^ fps[j]
        if any(bool(np.all(differ & m == 0)) for m in masks):
            out.add((i, j))
    return out


def sharing_a_key(fps: npt.NDArray[np.uint64], tables: Tables) -> set[tuple[int, int]]:
    """Every pair with equal bucketing keys in some table (:func:`exact_keys`).

    A table of more than 64 bits is keyed by a 64-bit mix of its words, which may join two
    fingerprints that differ on its bits: an extra candidate, never a lost one.
    """
    columns = [fps[:, w] for w in range(fps.shape[1])]
    out = set()
    for mask in table_masks(tables):
        keys = exact_keys(columns, mask).tolist()
        for i, j in itertools.combinations(range(len(fps)), 2):
            if keys[i] == keys[j]:
                out.add((i, j))
    return out


def within(fps: npt.NDArray[np.uint64], k: int) -> set[tuple[int, int]]:
    out = set()
    for i, j in itertools.combinations(range(len(fps)), 2):
        if int(np.bitwise_count(fps[i] ^ fps[j]).sum()) <= k:
            out.add((i, j))
    return out


def as_set(pairs: npt.NDArray[np.int64]) -> set[tuple[int, int]]:
    return {(int(a), int(b)) for a, b in pairs}


def clustered(rng: np.random.Generator, n: int, words: int, flips: int) -> npt.NDArray[np.uint64]:
    """Adversarial fingerprints: a few centres, copies, and near copies of them."""
    centres = rng.integers(0, 2**63, (3, words), dtype=np.uint64)
    rows: npt.NDArray[np.uint64] = centres[rng.integers(0, 3, n)].copy()
    for r in range(n):
        for _ in range(int(rng.integers(0, flips + 1))):
            bit = int(rng.integers(0, 64 * words))
            rows[r, bit // 64] ^= np.uint64(1) << np.uint64(bit % 64)
    return rows


# --- streamed candidates --------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 40),
    words=st.sampled_from([1, 2, 8]),
    kind=st.sampled_from(["blocks", "distance", "sampled", "many"]),
    chunk=st.sampled_from([1, 3, 1 << 20]),
    batch=st.sampled_from([1, 5, 1 << 22]),
    limit=st.sampled_from([None, 4, 40]),
    workers=st.sampled_from([1, 3]),
    ahead=st.sampled_from([None, 1, 64]),
    some=st.booleans(),
    pipelined=st.booleans(),
)
# Two fingerprints 5 bits apart that a 105-bit table's 64-bit key joins (a collision).
@example(
    seed=105011,
    n=26,
    words=2,
    kind="distance",
    chunk=1,
    batch=1,
    limit=None,
    workers=1,
    ahead=None,
    some=False,
    pipelined=False,
)
def test_candidate_chunks_equal_brute_force_each_pair_once(
    seed: int,
    n: int,
    words: int,
    kind: str,
    chunk: int,
    batch: int,
    limit: int | None,
    workers: int,
    ahead: int | None,
    some: bool,
    pipelined: bool,
) -> None:
    # Identical fingerprints are grouped and the representatives read in place (every row,
    # or through their rows where some are left out or copied); the pairs are the same.
    rng = np.random.default_rng(seed)
    bits = 64 * words
    fps = clustered(rng, n, words, flips=6)
    eligible = rng.random(n) < 0.7 if some else None
    if kind == "blocks":
        tables = block_tables(bits, 4)
    elif kind == "distance":
        tables = distance_tables(bits, 2)
    elif kind == "sampled":
        tables = sampled_tables(bits, 12, 9)
    else:  # more tables than FIRST_TABLE_LIMIT: emitted pairs are remembered
        tables = sampled_tables(bits, 10, 40)
    with unittest.mock.patch.object(blocking, "DEDUPE_BATCH", batch):
        chunks = list(
            candidate_chunks(
                fps,
                tables,
                chunk_pairs=chunk,
                max_hamming=limit,
                workers=workers,
                ahead_bytes=ahead,
                eligible=eligible,
                pipelined=pipelined,
            )
        )
    got = np.concatenate(chunks) if chunks else np.zeros((0, 2), dtype=np.int64)
    assert all(len(c) <= chunk for c in chunks)
    assert len(got) == len(as_set(got)), "every pair exactly once"
    assert bool(np.all(got[:, 0] < got[:, 1])) if len(got) else True
    expected = sharing_a_key(fps, tables)
    assert brute_force(fps, tables) <= expected  # keys never lose a pair agreeing on a table
    if eligible is not None:
        expected = {p for p in expected if eligible[p[0]] and eligible[p[1]]}
    if limit is not None:
        expected = {
            p for p in expected if int(np.bitwise_count(fps[p[0]] ^ fps[p[1]]).sum()) <= limit
        }
    assert as_set(got) == expected
    if limit is None:
        assert as_set(candidate_pairs(fps, tables, eligible=eligible)) == as_set(got)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(10, 60),
    tables=st.sampled_from([5, 40]),
    chunk=st.sampled_from([1, 7, 1 << 20]),
    ahead=st.sampled_from([None, 1, 256]),
)
def test_pipelined_tables_yield_the_same_chunks_in_the_same_order(
    seed: int, n: int, tables: int, chunk: int, ahead: int | None
) -> None:
    # A pool thread buckets the tables and makes their pairs while this one takes them:
    # the chunks are those of one thread, in the same order, however far it runs ahead.
    rng = np.random.default_rng(seed)
    fps = clustered(rng, n, 2, flips=10)
    chosen = sampled_tables(128, 12, tables)

    def chunks(pipelined: bool) -> list[list[list[int]]]:
        with unittest.mock.patch.object(blocking, "DEDUPE_BATCH", 3):
            found = candidate_chunks(
                fps,
                chosen,
                chunk_pairs=chunk,
                max_hamming=30,
                ahead_bytes=ahead,
                pipelined=pipelined,
            )
            return [c.tolist() for c in found]

    alone = chunks(False)
    assert alone, "the clusters share keys"
    assert chunks(True) == alone


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    words=st.integers(1, 5),
    limit=st.integers(0, 320),
    m=st.integers(0, 300),
)
def test_hamming_prefilter_keeps_exactly_the_pairs_within_range(
    seed: int, words: int, limit: int, m: int
) -> None:
    # Pairs are measured a block at a time, their fingerprints read in place or through
    # the representatives' rows; the result is exactly the pairs within the limit.
    rng = np.random.default_rng(seed)
    fps = clustered(rng, 30, words, flips=40)
    a, b = rng.integers(0, 30, m), rng.integers(0, 30, m)
    full = np.bitwise_count(fps[a] ^ fps[b]).sum(axis=1)
    expected = np.flatnonzero(full <= limit).tolist()
    assert buckets.near(buckets.Prints(fps), a, b, limit).tolist() == expected
    rows = rng.permutation(30).astype(np.int32)  # representative r is row rows[r]
    spread = np.zeros_like(fps)
    spread[rows] = fps
    assert buckets.near(buckets.Prints(spread, rows), a, b, limit).tolist() == expected


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(0, 6), n=st.integers(2, 40))
def test_max_distance_never_misses_a_pair_within_k(seed: int, k: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    fps = clustered(rng, n, 1, flips=k + 2)
    pairs = candidate_pairs(fps, tables_for(Params(max_distance=k)))
    assert within(fps, k) <= as_set(pairs)


def test_max_distance_adversarial_exactly_k_bits_apart() -> None:
    # Every pair of rows differs in exactly k bits, spread over every block boundary.
    for k in (1, 3, 5, 9):
        base = np.uint64(0x0123456789ABCDEF)
        rows = [base]
        for start in range(0, 64, 7):
            flip = sum(1 << ((start + i * 5) % 64) for i in range(k))
            rows.append(base ^ np.uint64(flip))
        fps = np.array(rows, dtype=np.uint64)[:, None]
        pairs = as_set(candidate_pairs(fps, tables_for(Params(max_distance=k))))
        assert within(fps, k) <= pairs


def test_max_hamming_filter_drops_only_far_pairs() -> None:
    rng = np.random.default_rng(7)
    fps = clustered(rng, 60, 1, flips=10)
    tables = sampled_tables(64, 8, 12)
    everything = as_set(candidate_pairs(fps, tables))
    near = np.concatenate(list(candidate_chunks(fps, tables, max_hamming=4)))
    close = within(fps, 4)
    assert as_set(near) == everything & close


def test_identical_fingerprints_collapse_and_large_buckets_are_reported() -> None:
    fps = np.zeros((30, 1), dtype=np.uint64)
    fps[20:, 0] = np.arange(1, 11, dtype=np.uint64) << np.uint64(32)
    large: list[LargeBucket] = []
    chunks = list(
        candidate_chunks(fps, block_tables(64, 2), chunk_pairs=50, large=large, large_bucket=5)
    )
    got = np.concatenate(chunks)
    # Every row has zero low bits: all 435 pairs share the low-half key, each listed once.
    assert len(got) == len(as_set(got)) == 30 * 29 // 2
    assert all(len(c) <= 50 for c in chunks)
    # The identical group of 20 is one bucket; the low-half table holds all 30 rows.
    assert LargeBucket(-1, 20, 190, (0, 1, 2, 3, 4)) in large
    assert any(b.table == 0 and b.size == 30 for b in large)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 60),
    words=st.sampled_from([1, 3]),
    some=st.booleans(),
)
def test_large_buckets_name_the_first_rows_of_their_smallest_fingerprints(
    seed: int, n: int, words: int, some: bool
) -> None:
    # Groups are numbered by their first rows, but what a large bucket reports does not
    # follow that numbering: its sample is the first rows of the groups of its smallest
    # fingerprints, and the groups of identical fingerprints come in fingerprint order.
    rng = np.random.default_rng(seed)
    centres = rng.integers(0, 2**63, (4, words), dtype=np.uint64)
    fps = centres[rng.integers(0, 4, n)]
    fps[:, 0] ^= rng.integers(0, 4, n).astype(np.uint64) << np.uint64(40)  # a few distinct
    eligible = rng.random(n) < 0.8 if some else None
    tables = block_tables(64 * words, 2)
    large: list[LargeBucket] = []
    list(candidate_chunks(fps, tables, eligible=eligible, large=large, large_bucket=2))
    kept = [r for r in range(n) if eligible is None or eligible[r]]
    groups: dict[tuple[int, ...], list[int]] = {}
    for r in kept:
        groups.setdefault(tuple(int(w) for w in fps[r]), []).append(r)
    expected = [
        LargeBucket(-1, len(rows), len(rows) * (len(rows) - 1) // 2, tuple(rows[:5]))
        for _, rows in sorted(groups.items())
        if len(rows) > 2
    ]
    assert large[: len(expected)] == expected
    bucketed = []
    columns = [fps[:, w] for w in range(words)]
    for t, mask in enumerate(table_masks(tables)):
        keys = exact_keys(columns, mask)
        buckets: dict[int, list[tuple[int, ...]]] = {}
        for print_ in sorted(groups):
            buckets.setdefault(int(keys[groups[print_][0]]), []).append(print_)
        for members in buckets.values():
            if len(members) > 2:
                size = sum(len(groups[m]) for m in members)
                sample = tuple(groups[m][0] for m in members[:5])
                bucketed.append(LargeBucket(t, size, size * (size - 1) // 2, sample))
    assert sorted(large[len(expected) :], key=repr) == sorted(bucketed, key=repr)


@pytest.mark.parametrize("kind", ["distinct", "copies and rows left out"])
def test_the_tables_read_the_fingerprints_in_place_within_their_price(kind: str) -> None:
    # 1,000,000 fingerprints of 512 bits (64 MB): the groups and one table at a time take
    # what parts.table_bytes prices, less than a copy of the fingerprints (it was 160 bytes
    # a row: two copies of the words, and 8-byte groups).
    n, bits = 1_000_000, 512
    rng = np.random.default_rng(7)
    fps = rng.integers(0, 2**63, (n, bits // 64), dtype=np.uint64)
    eligible = None
    if kind != "distinct":
        fps[1::3] = fps[::3][: len(fps[1::3])]
        eligible = rng.random(n) < 0.9
    tables = block_tables(bits, 8)
    tracemalloc.start()
    try:
        pairs = sum(
            len(c) for c in candidate_chunks(fps, tables, eligible=eligible, max_hamming=200)
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert pairs >= (n // 3 if kind != "distinct" else 0) * 0.7  # the copies pair
    priced = MEMBER_BYTES * n + GROUP_BYTES * n + TABLE_BYTES_PER_ROW * n
    assert peak <= priced < fps.nbytes


def test_ineligible_rows_stay_out_of_streamed_candidates() -> None:
    fps = np.zeros((5, 1), dtype=np.uint64)
    eligible = np.array([True, False, True, True, False])
    got = np.concatenate(list(candidate_chunks(fps, block_tables(64, 1), eligible=eligible)))
    assert as_set(got) == {(0, 2), (0, 3), (2, 3)}


def test_masked_keys_group_like_the_bits_themselves() -> None:
    rng = np.random.default_rng(3)
    fps = rng.integers(0, 4, (200, 2), dtype=np.uint64) * np.uint64(0x4000_0000_0000_0001)
    tables = sampled_tables(128, 10, 6)
    for mask in table_masks(tables):
        keys = masked_keys(fps, mask)
        same_key = keys[:, None] == keys[None, :]
        same_bits = np.all(((fps[:, None, :] ^ fps[None, :, :]) & mask) == 0, axis=2)
        assert np.array_equal(same_key, same_bits)


@settings(max_examples=60, deadline=None)
@given(
    bits=st.sampled_from([64, 128, 256, 512]),
    width=st.integers(1, 40),
    count=st.integers(1, 30),
    seed=st.integers(0, 2**32 - 1),
)
def test_table_keys_are_each_tables_masked_keys(
    bits: int, width: int, count: int, seed: int
) -> None:
    """All tables at once, one word or several: the keys of each table alone."""
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64, (50, bits // 64), dtype=np.uint64, endpoint=False)
    masks = table_masks(sampled_tables(bits, min(width, bits), count))
    masks = np.concatenate([masks, np.zeros((1, bits // 64), dtype=np.uint64)])  # an empty one
    got = table_keys(fps, masks)
    assert got.shape == (50, len(masks))
    for t, mask in enumerate(masks):
        assert np.array_equal(got[:, t], masked_keys(fps, mask))


# --- tables and recall ----------------------------------------------------------------------


def test_sampled_tables_are_deterministic_prefixes() -> None:
    long = sampled_tables(64, 13, 40)
    short = sampled_tables(64, 13, 7)
    assert [k.tolist() for k in short.keys] == [k.tolist() for k in long.keys[:7]]
    assert all(len(set(k.tolist())) == 13 for k in long.keys)
    # Each permutation's tables are disjoint: pigeonhole holds for distance < 4.
    assert long.guarantee == 3
    assert found_probability(long, [0, 1, 2, 3]).tolist() == [1.0] * 4


def test_found_probability_matches_exhaustive_count_for_small_tables() -> None:
    tables = block_tables(8, 2)  # found iff all differing bits fall in one half
    for d in range(9):
        exact = sum(
            1
            for chosen in itertools.combinations(range(8), d)
            if all(c < 4 for c in chosen) or all(c >= 4 for c in chosen)
        ) / len(list(itertools.combinations(range(8), d)))
        assert found_probability(tables, [d], samples=20000)[0] == pytest.approx(exact, abs=0.02)


def test_clean_ranks_shape_and_range() -> None:
    ranks = clean_ranks(sampled_tables(64, 16, 5), samples=100)
    assert ranks.shape == (100, 5)
    assert int(ranks.min()) >= 0
    assert int(ranks.max()) <= 64 - 16


def test_binomial_helpers() -> None:
    pmf = binomial_pmf(64, 0.2)
    assert pmf.sum() == pytest.approx(1.0)
    assert binomial_quantile(64, 0.2, 0.5) == int(np.searchsorted(np.cumsum(pmf), 0.5))
    assert binomial_pmf(5, 0.0).tolist() == [1, 0, 0, 0, 0, 0]
    assert binomial_pmf(5, 1.0).tolist() == [0, 0, 0, 0, 0, 1]
    assert flip_probability(1.0) == 0.0


def test_recall_of_everything_found_is_one() -> None:
    best = np.full(100, 64, dtype=np.int64)
    assert recall_of(best, 64, 0.5) == pytest.approx(1.0)
    assert recall_of(best, 64, 0.8, max_hamming=64) == pytest.approx(1.0)


# --- the planner --------------------------------------------------------------------------


def corpus_fingerprints(n: int, seed: int = 1) -> npt.NDArray[np.uint64]:
    """Fingerprints that lean like real text: biased bits, near-duplicate families."""
    rng = np.random.default_rng(seed)
    bias = rng.uniform(0.35, 0.65, 64)
    bits = rng.random((n, 64)) < bias
    family = rng.integers(0, n // 4, n // 4)
    flips = rng.random((len(family), 64)) < 0.05
    bits[: len(family)] = bits[family] ^ flips
    packed = np.packbits(bits, axis=1, bitorder="little").view("<u8")
    return np.asarray(packed, dtype=np.uint64)


@pytest.mark.parametrize(("threshold", "recall"), [(0.9, 0.95), (0.8, 0.9), (0.95, 0.99)])
def test_auto_plan_reaches_the_recall_at_the_threshold(threshold: float, recall: float) -> None:
    fps = corpus_fingerprints(3000)
    chosen = plan(Params(scheme="auto", threshold=threshold, recall=recall), fps)
    assert chosen.source == "auto"
    assert chosen.recall >= recall
    assert not chosen.warnings or "cannot reach" not in chosen.warnings[0]
    # Independent check of the planned recall with a fresh Monte Carlo.
    d = np.arange(65)
    found = found_probability(chosen.tables, d, samples=3000)
    assert chosen.max_hamming is not None
    found[chosen.max_hamming + 1 :] = 0
    independent = float(binomial_pmf(64, flip_probability(threshold)) @ found)
    assert independent >= recall - 0.01
    curve = dict(chosen.curve)
    assert curve[1.0] == pytest.approx(1.0)
    assert all(a >= b - 0.02 for a, b in itertools.pairwise([r for _, r in chosen.curve]))
    described = chosen.describe()
    assert described["recall_at_threshold"] >= recall
    assert described["table_count"] == len(chosen.tables.keys)


def test_auto_plan_is_deterministic_and_cheaper_than_pigeonhole() -> None:
    fps = corpus_fingerprints(4000, seed=5)
    params = Params(scheme="auto", threshold=0.9)
    first, second = plan(params, fps), plan(params, fps)
    assert first.tables.description == second.tables.description
    assert first.expected_candidates == second.expected_candidates
    pigeonhole = [o for o in first.considered if o[0].split(",")[0].endswith("blocks")]
    assert pigeonhole
    assert first.recall >= params.recall
    # The plan is the cheapest option that reaches the recall, pigeonhole included.
    reaching = [o for o in first.considered if o[1] >= params.recall]
    chosen = [o for o in reaching if o[0].startswith(first.tables.description + ",")]
    assert chosen
    assert min(o[3] for o in chosen) == min(o[3] for o in reaching)
    assert min(o[3] for o in chosen) <= min(o[3] for o in pigeonhole if o[1] >= params.recall)


def test_a_family_of_tables_is_priced_for_every_table() -> None:
    from simdup.search.plan.pricing import MEASURED_TABLES, measuring_sample, table_options

    sample = measuring_sample(corpus_fingerprints(4000, seed=5))
    options = table_options(Params(bits=64, threshold=0.9), sample)
    family = [o for o in options if " blocks" in o.tables.description and len(o.tables.keys) > 1]
    assert family
    for o in family:
        # Each table is keyed and sorted and brings its own candidates: all of them count.
        assert o.candidates == pytest.approx(sample.pairs(o.tables, MEASURED_TABLES), rel=1e-9)
        assert o.candidates > 2 * (o.candidates - sample.duplicate_pairs) / len(o.tables.keys)


def test_unreachable_recall_is_said_not_silently_lowered() -> None:
    fps = corpus_fingerprints(500)
    chosen = plan(Params(bits=8, scheme="auto", threshold=0.3, recall=1.0), fps)
    assert chosen.recall < 1.0
    assert any("cannot reach recall 1.0" in w for w in chosen.warnings)
    assert len(chosen.tables.keys) <= MAX_TABLES


def test_explicit_scheme_is_kept_and_its_shortfall_warned() -> None:
    fps = corpus_fingerprints(2000)
    chosen = plan(Params(scheme="loose", threshold=0.8), fps)
    assert chosen.tables.description == tables_for(Params(scheme="loose")).description
    assert chosen.max_hamming is None
    assert any("below --recall" in w for w in chosen.warnings)
    # Expected candidates are measured: for these tables every bucket pair is counted.
    exact = len(candidate_pairs(fps, chosen.tables, max_candidates=10**9))
    assert exact <= chosen.expected_candidates <= 1.5 * exact + 10


def test_candidate_warning_names_the_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("simdup.search.plan.planner.MAX_CANDIDATES", 10)
    chosen = plan(Params(scheme="strict"), np.zeros((50, 1), dtype=np.uint64))
    assert any("1,225 candidate pairs" in w for w in chosen.warnings)


def test_plan_of_nothing() -> None:
    chosen = plan(Params(scheme="auto"), np.zeros((0, 1), dtype=np.uint64))
    assert chosen.expected_candidates == 0
    assert chosen.documents == 0


# --- the pipeline with a plan ----------------------------------------------------------------


def test_scan_with_auto_plan_reports_verified_pairs_and_its_plan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pipeline, "exact_work", lambda matrix: None)  # tables, not exact
    words = [f"w{i}" for i in range(400)]
    rng = np.random.default_rng(11)
    docs = []
    for d in range(60):
        text = " ".join(words[k] for k in rng.integers(0, 400, 80))
        docs.append(Document(f"d{d:02d}", text))
        docs.append(Document(f"c{d:02d}", text + " extra"))
    result = find_duplicates(docs, Params(scheme="auto", threshold=0.9))
    assert result.plan["source"] == "auto"
    assert result.plan["recall_at_threshold"] >= 0.95
    found = {(result.names[a], result.names[b]) for a, b in result.pairs.pairs.tolist()}
    assert {(f"c{d:02d}", f"d{d:02d}") for d in range(60)} <= found
    assert bool(np.all(result.pairs.cosine >= 0.9))


def test_streamed_scan_equals_materialised_candidates() -> None:
    rng = np.random.default_rng(2)
    words = [f"t{i}" for i in range(50)]
    docs = [
        Document(f"n{i:03d}", " ".join(words[k] for k in rng.integers(0, 50, 12)))
        for i in range(150)
    ]
    params = Params(scheme="balanced", threshold=0.0)
    result = find_duplicates(docs, params, report_all=True)
    assert result.stats["candidates"] == len(result.pairs)
    assert result.stats["candidates"] == len(
        candidate_pairs(result.fingerprints, tables_for(params))
    )


def test_cosine_index_reuse_equals_fresh() -> None:
    rng = np.random.default_rng(4)
    matrix = weight_matrix([[f"f{k}" for k in rng.integers(0, 30, 20)] for _ in range(40)])
    pairs = np.array(list(itertools.combinations(range(40), 2)), dtype=np.int64)
    index = CosineIndex(matrix)
    assert np.array_equal(
        cosine_many(matrix, pairs, index=index), cosine_many(matrix, pairs), equal_nan=True
    )


# --- fast paths equal the reference ----------------------------------------------------------

ascii_text = st.text(alphabet=st.characters(max_codepoint=127), max_size=300)
any_text = st.text(
    alphabet=st.one_of(
        st.characters(max_codepoint=127),
        st.sampled_from("éßẞﬁ\u2019—“”ＡＢ中文分词ひらがなカタカナ한국어ไทย😀İıǅ\u0301\u00aa²"),
        st.characters(),
    ),
    max_size=200,
)


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(ascii_text, any_text))
def test_text_words_equal_the_regex_tokenizer(text: str) -> None:
    assert text_words(text) == words(normalize(text))


@settings(max_examples=100, deadline=None)
@given(
    body=ascii_text,
    long_word=st.integers(60, 140),
    stopwords=st.sampled_from([True, False]),
    ngram=st.integers(1, 3),
)
def test_tokenize_output_is_unchanged(
    body: str, long_word: int, stopwords: bool, ngram: int
) -> None:
    text = body + " The " + "Ab1" * (long_word // 3) + " of x"
    stop = stopword_set(stopwords)
    reference = [t for t in words(normalize(text)) if t not in stop]
    assert tokenize(text, stopwords=stopwords, ngram=ngram) == shingles(reference, ngram)


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.one_of(ascii_text, any_text), max_size=25),
    stopwords=st.sampled_from([True, False]),
    ngram=st.integers(1, 3),
    chunk=st.integers(1, 7),
    weighting=st.sampled_from(["tf", "log", "binary", "tfidf"]),
)
def test_count_matrix_equals_weight_matrix_of_tokens(
    texts: list[str], stopwords: bool, ngram: int, chunk: int, weighting: str
) -> None:
    tokens = [tokenize(t, stopwords=stopwords, ngram=ngram) for t in texts]
    counts = count_matrix(texts, stopwords=stopwords, ngram=ngram, chunk_documents=chunk)
    reference = tokenized_counts(texts, stopwords, ngram)
    assert counts.vocabulary == reference.vocabulary
    assert np.array_equal(counts.indptr, reference.indptr)
    assert np.array_equal(counts.indices, reference.indices)
    assert np.array_equal(counts.counts, reference.counts)
    keep = counts.row_lengths() > 0
    got = weigh(counts.select(keep), weighting)
    want = weight_matrix([t for t in tokens if t], weighting)
    assert got.vocabulary == want.vocabulary
    assert np.array_equal(got.indptr, want.indptr)
    assert np.array_equal(got.indices, want.indices)
    assert np.array_equal(got.data, want.data)


def test_worker_processes_give_the_same_matrix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("simdup.engines.local.counting.PARALLEL_BYTES", 0)
    rng = np.random.default_rng(9)
    vocab = ["alpha", "Beta", "gamma\u2019s", "déjà", "中文分词", "the", "of", "x1"]
    texts = [" ".join(rng.choice(vocab, 12).tolist()) for _ in range(40)] + ["", "the of"]
    serial = count_matrix(texts, jobs=1, chunk_documents=5)
    for jobs in (2, 3):
        parallel = count_matrix(texts, jobs=jobs, chunk_documents=5)
        assert parallel.vocabulary == serial.vocabulary
        assert np.array_equal(parallel.indptr, serial.indptr)
        assert np.array_equal(parallel.indices, serial.indices)
        assert np.array_equal(parallel.counts, serial.counts)


def test_counts_of_batches_equal_counts_of_the_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("simdup.engines.local.counting.PARALLEL_BYTES", 0)
    rng = np.random.default_rng(11)
    vocab = ["alpha", "Beta", "gamma", "déjà", "中文分词", "the", "of", "x1", "longerwords"]
    texts = [" ".join(rng.choice(vocab, 9).tolist()) for _ in range(70)] + ["", "the of"]
    whole = count_matrix(texts, jobs=1, chunk_documents=8)
    for jobs in (1, 2):
        batches = (texts[lo : lo + 25] for lo in range(0, len(texts), 25))
        got = count_batches(batches, jobs=jobs, chunk_documents=8)
        assert got.vocabulary == whole.vocabulary
        assert np.array_equal(got.indptr, whole.indptr)
        assert np.array_equal(got.indices, whole.indices)
        assert np.array_equal(got.counts, whole.counts)


def test_jobs_are_checked() -> None:
    with pytest.raises(ParameterError, match="-1"):
        count_matrix(["a"], jobs=-1)
    assert check_jobs(0) >= 1


def test_fingerprints_in_worker_processes_equal_one_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("simdup.engines.local.fingerprinting.MIN_PARALLEL_ENTRIES", 4)
    rng = np.random.default_rng(3)
    rows = [
        {f"w{int(k)}": float(rng.integers(1, 6)) for k in rng.integers(0, 50, 12)}
        for _ in range(40)
    ]
    rows[7] = {}
    matrix = weights_to_matrix(rows)
    one = fingerprint_matrix(matrix, 256, 5, jobs=1)
    for jobs in (2, 3):
        assert np.array_equal(fingerprint_matrix(matrix, 256, 5, jobs=jobs), one)
    assert [words_to_int(r) for r in one] == [fingerprint(r, 256, 5) for r in rows]
    part = matrix.row_slice(5, 9)
    assert [part.row(i) for i in range(4)] == [matrix.row(i) for i in range(5, 9)]


def test_fingerprints_do_not_depend_on_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("simdup.engines.local.counting.PARALLEL_BYTES", 0)
    monkeypatch.setattr("simdup.engines.local.counting.CHUNK_DOCUMENTS", 4)
    docs = [Document(f"d{i}", f"word{i % 7} common text number {i} déjà vu") for i in range(30)]
    docs.append(Document("empty", "the of and"))
    one = fingerprint_documents(docs, Params(), jobs=1)
    two = fingerprint_documents(docs, Params(), jobs=2)
    assert one.names == two.names
    assert [s.path for s in one.skipped] == ["empty"]
    assert np.array_equal(one.fingerprints, two.fingerprints)


@pytest.mark.parametrize("report_all", [False, True])
def test_pairs_do_not_depend_on_verifying_threads(report_all: bool) -> None:
    # Many small candidate chunks, verified by one thread or by three at once.
    rng = np.random.default_rng(5)
    vocab = [f"w{i}" for i in range(40)]
    base = [list(rng.choice(vocab, 30)) for _ in range(12)]
    docs = [
        Document(f"d{k:03d}", " ".join(w if rng.random() > 0.15 else "edit" for w in base[k % 12]))
        for k in range(60)
    ]
    params = Params(scheme="loose", threshold=0.5)
    # The chunk size a scan uses is the memory budget's, at most CANDIDATE_CHUNK_PAIRS.
    with unittest.mock.patch.object(budget, "CANDIDATE_CHUNK_PAIRS", 7):
        one = find_duplicates(docs, params, jobs=1, report_all=report_all)
        three = find_duplicates(docs, params, jobs=3, report_all=report_all)
    assert one.stats == three.stats
    assert one.stats["candidates"] > 7 * 3, "several chunks were verified"
    assert np.array_equal(one.pairs.pairs, three.pairs.pairs)
    assert np.array_equal(one.pairs.cosine, three.pairs.cosine)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.dictionaries(
            st.sampled_from([f"f{i}" for i in range(30)] + ["7", "10", "x"]),
            st.one_of(
                st.integers(1, 5),
                st.integers(-3, 40_000),
                st.integers(2**15, 2**33),
                st.floats(-4, 4, allow_nan=False).map(lambda x: round(x, 2)),
            ),
            max_size=12,
        ),
        max_size=15,
    ),
    bits=st.sampled_from([8, 64, 65, 130]),
)
def test_vectorised_fingerprints_equal_the_scalar_reference(
    rows: list[dict[str, float]], bits: int
) -> None:
    matrix = weights_to_matrix(rows)
    got = [words_to_int(r) for r in fingerprint_many(matrix, bits, 99)]
    assert got == [fingerprint(r, bits, 99) for r in rows]


def test_integer_sum_widths_are_chosen_by_row_mass() -> None:
    # Masses just under and over the int16 and int32 limits all match the reference.
    for weight in (2**15 - 2, 2**15, 2**31 - 2, 2**31 + 5):
        rows = [{"a": float(weight), "b": 1.0}, {"a": 1.0, "b": float(weight), "c": 3.0}]
        out = fingerprint_many(weights_to_matrix(rows), 64, 5)
        assert [words_to_int(r) for r in out] == [fingerprint(r, 64, 5) for r in rows]


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 60),
    dense_limit=st.sampled_from([1, 64, 1 << 22]),
    kind=st.sampled_from(["counts", "reals", "large counts"]),
)
def test_cosine_paths_equal_each_other_and_the_scalar(
    seed: int, n: int, dense_limit: int, kind: str
) -> None:
    # Term counts take the float32 block and exact sums; real weights and counts whose
    # products pass 2**24 the float64 block summed in row order. All agree exactly.
    rng = np.random.default_rng(seed)

    def weight() -> float:
        if kind == "reals":
            return float(rng.random() * 3 + 0.01)
        return float(rng.integers(1, 4) * (5000 if kind == "large counts" else 1))

    rows = [
        {f"f{int(k)}": weight() for k in rng.integers(0, 25, rng.integers(0, 9))} for _ in range(n)
    ]
    matrix = weights_to_matrix(rows)
    pairs = np.array(list(itertools.combinations(range(n), 2)), dtype=np.int64)
    pairs = pairs[rng.permutation(len(pairs))]
    reference = cosine_many(matrix, pairs)
    index = CosineIndex(matrix)
    assert index.small_integers == (kind == "counts" or index.shared_data.size == 0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("simdup.search.verify.DENSE_ENTRIES", dense_limit)
        patch.setattr("simdup.search.verify.DENSE_ROWS", int(rng.integers(1, 6)))
        got = cosine_many(matrix, pairs)
    assert np.array_equal(got, reference)
    scalar = [cosine(rows[i], rows[j]) for i, j in pairs.tolist()]
    np.testing.assert_allclose(got, scalar, rtol=1e-12, atol=1e-15)
    copies = [i for i in range(n) if rows[i]]
    if copies:
        twin = weights_to_matrix([rows[copies[0]], dict(rows[copies[0]])])
        assert cosine_many(twin, np.array([[0, 1]], dtype=np.int64)).tolist() == [1.0]


@settings(max_examples=60, deadline=None)
@given(
    keys=st.sets(st.integers(-(2**40), 2**40), max_size=60),
    share=st.floats(0.0, 1.0),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_record_of_emitted_pairs_merges_new_keys_in_order(
    keys: set[int], share: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    every = np.array(sorted(keys), dtype=np.int64)
    new = rng.random(len(every)) < share
    emitted, fresh = every[~new], every[new]
    at = np.searchsorted(emitted, fresh)
    assert blocking.merged(emitted, fresh, at).tolist() == every.tolist()


def _bits_set(rng: np.random.Generator, rows: int, words: int, most: int) -> np.ndarray:
    """Return ``rows`` uint64 rows of ``words`` words, each with up to ``most`` random bits."""
    out = np.zeros((rows, words), dtype=np.uint64)
    for r in range(rows):
        for p in rng.choice(64 * words, size=int(rng.integers(0, most + 1)), replace=False):
            out[r, p // 64] |= np.uint64(1) << np.uint64(p % 64)
    return out


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    words=st.integers(1, 4),
    tables=st.integers(0, 200),
    rows=st.integers(0, 200),
)
def test_shared_keys_agree_with_every_mask_tested(
    seed: int, words: int, tables: int, rows: int
) -> None:
    """A pair shares a key exactly when its XOR clears some table's mask, found byte by byte."""
    rng = np.random.default_rng(seed)
    # Masks of a few bits (some of none, many bytes unused) and XORs of a few bits, so that
    # pairs sharing a key and pairs sharing none both occur.
    masks = _bits_set(rng, tables, words, 12)
    differ = _bits_set(rng, rows, words, 8)
    expected = [any(not (d & m).any() for m in masks) for d in differ]
    assert SharedKeys(masks)(differ).tolist() == expected
