"""Many tables' record of emitted pairs: what it meets, counted and predicted, and its seconds."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simdup.search.candidates import FIRST_TABLE_LIMIT, candidate_chunks
from simdup.search.exact import ExactWork
from simdup.search.plan import pricing, seconds
from simdup.search.plan.pricing import measuring_sample
from simdup.search.tables import Tables, sampled_tables, table_masks


def _clustered(n: int, seed: int, words: int = 1) -> npt.NDArray[np.uint64]:
    """Fingerprints in a few clusters (a few random bits flipped from a centre), some equal."""
    rng = np.random.default_rng(seed)
    centres = rng.integers(0, 2**63, (4, words), dtype=np.uint64)
    prints: npt.NDArray[np.uint64] = centres[rng.integers(0, len(centres), n)].copy()
    for row in prints:
        for _ in range(int(rng.integers(0, 12))):
            bit = int(rng.integers(0, 64 * words))
            row[bit // 64] ^= np.uint64(1) << np.uint64(bit % 64)
    return prints


def _met(prints: np.ndarray, tables: Tables, limit: int, within: int | None) -> tuple[int, int]:
    """Count (pairs within ``within``, pairs) of distinct fingerprints sharing each table's key."""
    unique = np.unique(prints, axis=0)
    near = shared = 0
    for mask in table_masks(tables)[:limit]:
        for i in range(len(unique)):
            differ = unique[i + 1 :] ^ unique[i]
            same = ((differ & mask) == 0).all(axis=1)
            distance = np.bitwise_count(differ).sum(axis=1)
            shared += int(same.sum())
            near += int((same & (within is None or distance <= within)).sum())
    return near, shared


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), count=st.integers(FIRST_TABLE_LIMIT + 1, 40))
def test_recorded_are_the_pairs_each_table_meets_within_the_filter(seed: int, count: int) -> None:
    prints = _clustered(120, seed)
    tables = sampled_tables(64, 10, count)
    counts: dict[str, int] = {}
    for _ in candidate_chunks(prints, tables, max_hamming=9, counts=counts):
        pass
    expected = _met(prints, tables, count, 9)[0]
    assert expected > 0
    assert counts["recorded"] == expected


def test_few_tables_record_nothing() -> None:
    counts: dict[str, int] = {}
    tables = sampled_tables(64, 10, FIRST_TABLE_LIMIT)
    for _ in candidate_chunks(_clustered(120, 3), tables, max_hamming=9, counts=counts):
        pass
    assert counts["table_candidates"] > 0
    assert "recorded" not in counts


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), within=st.one_of(st.none(), st.integers(0, 128)))
def test_near_share_is_the_share_a_direct_count_finds(seed: int, within: int | None) -> None:
    prints = _clustered(150, seed, words=2)
    tables = sampled_tables(128, 12, 30)
    near, shared = _met(prints, tables, 8, within)
    share = measuring_sample(prints).near_share(tables, 8, within)
    assert share == pytest.approx(1.0 if shared == 0 or within is None else near / shared)


def _table_seconds(tables: int = 1, recorded: float = 0.0, reported: float = 0.0) -> float:
    """Return the seconds of a table plan of a million keys and ten million candidates."""
    return seconds.table_seconds(
        keys=1e6,
        candidates=1e7,
        words=4,
        verified=1e6,
        entries=40.0,
        documents=1000,
        tables=tables,
        recorded=recorded,
        reported=reported,
    )


def test_the_record_costs_seconds_with_many_tables_only() -> None:
    few = _table_seconds(FIRST_TABLE_LIMIT, 1e8)
    many = _table_seconds(FIRST_TABLE_LIMIT + 1, 1e8)
    assert few == _table_seconds()
    record = seconds.RECORD * 1e8 + seconds.MERGE * seconds.merged(1e8, 1e6)
    assert many - few == pytest.approx(record)


def test_merges_grow_with_the_batches_times_the_record() -> None:
    # Twice the pairs recorded: twice the batches; twice the pairs kept: twice the record.
    base = seconds.merged(1e8, 1e7)
    assert seconds.merged(2e8, 1e7) == pytest.approx(2 * base)
    assert seconds.merged(1e8, 2e7) == pytest.approx(2 * base)
    assert base > 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_near_share_drawn_from_large_buckets_is_close_to_the_count(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    prints = _clustered(400, seed, words=2)
    tables = sampled_tables(128, 12, 30)
    near, shared = _met(prints, tables, 8, 12)
    assert shared > 8 * 2000  # more pairs than are drawn from a table
    assert 0.5 < near / shared < 0.95
    monkeypatch.setattr(pricing, "NEAR_SHARE_PAIRS", 2000)
    share = measuring_sample(prints).near_share(tables, 8, 12)
    assert share == pytest.approx(near / shared, abs=0.05)


def test_every_reported_pair_costs_its_holding_and_ordering() -> None:
    work = ExactWork(documents=1000, heavy=10, light_walks=10_000, entries=40_000)
    reporting = seconds.exact_seconds(work, 5e6, 4e6) - seconds.exact_seconds(work, 5e6)
    assert reporting == pytest.approx(seconds.HELD * 4e6)
    assert _table_seconds(reported=4e6) - _table_seconds() == pytest.approx(reporting)
