"""Counted reach: the planner's recalls and found shares from counts kept between runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simdup import derived
from simdup.search.plan import reach
from simdup.search.plan.recall import RECALL_SAMPLES, binomial_pmf, flip_probability
from simdup.search.tables import clean_ranks, sampled_tables


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 80).flatmap(
        lambda bits: st.tuples(
            st.just(bits),
            st.lists(
                st.lists(st.integers(0, bits + 3), min_size=3, max_size=3),
                min_size=1,
                max_size=50,
            ),
            st.integers(0, bits),
            st.floats(0.0, 1.0),
        )
    )
)
def test_recalls_from_counts_are_the_mean_over_orders(
    case: tuple[int, list[list[int]], int, float],
) -> None:
    bits, rows, max_hamming, cosine = case
    ranks = np.array(rows, dtype=np.int64)
    cdf = np.cumsum(binomial_pmf(bits, flip_probability(cosine)))
    counts = reach.counted(ranks, bits)
    assert counts.shape == (3, bits + 1)
    assert (counts.sum(axis=1) == len(rows)).all()
    by_orders = cdf[np.minimum(np.clip(ranks, 0, bits), max_hamming)].mean(axis=0)
    assert np.allclose(reach.recalls(counts, cdf, max_hamming), by_orders, rtol=0, atol=1e-12)
    for column in range(3):
        at_least = np.clip(ranks[:, column], 0, bits)[None, :] >= np.arange(bits + 1)[:, None]
        assert np.array_equal(reach.found_shares(counts[column]), at_least.mean(axis=1))


@pytest.mark.parametrize(("bits", "key_bits"), [(64, 6), (64, 13), (128, 20), (512, 37)])
def test_sampled_reach_counts_what_the_tables_reach(bits: int, key_bits: int) -> None:
    tables = sampled_tables(bits, key_bits, 40)
    best = np.maximum.accumulate(clean_ranks(tables, samples=RECALL_SAMPLES), axis=1)
    assert np.array_equal(reach.sampled_reach(bits, key_bits, 40), reach.counted(best, bits))


@given(st.lists(st.lists(st.integers(0, 20), min_size=7, max_size=7), min_size=1, max_size=6))
def test_counts_written_for_keeping_read_back_the_same(rows: list[list[int]]) -> None:
    counts = np.array(rows, dtype=np.int64)
    data = json.loads(json.dumps(reach._data(counts)))
    assert np.array_equal(reach._counts(data), counts)


def test_kept_counts_are_read_back_equal_and_a_damaged_file_is_counted_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(derived.CACHE_ENV, str(tmp_path))
    reach.sampled_reach.cache_clear()
    built = reach.sampled_reach(64, 9, 30)
    kept = tmp_path / "reach" / "sampled-64-9-30.json"
    assert kept.exists()
    reach.sampled_reach.cache_clear()
    assert np.array_equal(reach.sampled_reach(64, 9, 30), built)
    kept.write_text("{not json")
    reach.sampled_reach.cache_clear()
    assert np.array_equal(reach.sampled_reach(64, 9, 30), built)
    assert json.loads(kept.read_text())["value"]["width"] == 65
    reach.sampled_reach.cache_clear()
    with pytest.raises(ValueError, match="read-only"):
        built[0, 0] = 1
