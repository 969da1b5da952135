"""The stages of ``evaluate`` one by one: truth, the seed sweep, schemes, report."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simdup.engines.local.fingerprinting import fingerprint_documents
from simdup.evaluate import (
    EvalOptions,
    SchemeTally,
    SweepErrors,
    blocking_settings,
    evaluate,
    expected_error,
    new_tallies,
    pair_index,
    plan_schemes,
    scheme_result,
    similar_list,
    sweep,
    truth,
    width_accuracy,
)
from simdup.fingerprints.simhash import fingerprint_many
from simdup.fingerprints.weights import weights_to_matrix
from simdup.model import Document
from simdup.params import Params
from simdup.search.candidates import candidate_pairs
from simdup.search.plan.planner import plan
from simdup.search.verify import cosine_many, hamming_many

WORDS = st.sampled_from(["cat", "dog", "sun", "rain", "tree", "milk", "bread", "stone"])
WEIGHT_DICTS = st.dictionaries(WORDS, st.integers(1, 4).map(float), min_size=1, max_size=8)

DOCUMENTS = [
    Document("a", "the red fox jumps over the lazy brown dog near the river bank"),
    Document("b", "the red fox jumps over the lazy brown dog near the river"),
    Document("c", "a red fox jumped over a lazy dog by the river bank today"),
    Document("d", "blue whales sing long songs in the cold deep ocean water"),
    Document("e", "blue whales sing songs in the deep cold ocean"),
    Document("f", "the red fox jumps over the lazy brown dog near the river bank"),
    Document("g", "stock prices fell sharply after the quarterly earnings report"),
]


def _pairs_of(n: int) -> np.ndarray:
    a, b = pair_index(n)
    return np.stack([a, b], axis=1)


# -- truth ------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(WEIGHT_DICTS, min_size=2, max_size=8), st.floats(0.0, 1.0))
def test_truth_labels_every_pair(rows: list[dict[str, float]], threshold: float) -> None:
    matrix = weights_to_matrix(rows)
    known = truth(matrix, threshold)
    n = len(rows)
    assert known.documents == n
    assert len(known.a) == n * (n - 1) // 2
    assert np.all(known.a < known.b)
    expected = cosine_many(matrix, _pairs_of(n))
    assert np.allclose(known.cosines, expected, atol=1e-12)
    assert known.similar.tolist() == (known.cosines >= threshold).tolist()
    same = [
        sorted(rows[int(i)].items()) == sorted(rows[int(j)].items())
        for i, j in zip(known.a, known.b, strict=True)
    ]
    assert known.identical.tolist() == same
    assert np.all(known.cosines[known.identical] == 1.0)
    informative = np.flatnonzero(known.similar & ~known.identical)
    assert known.similar_rows.tolist() == informative.tolist()


# -- sweep ------------------------------------------------------------------------------


def test_sweep_errors_match_fingerprints_made_at_each_width() -> None:
    params = Params(bits=64, seed=77, threshold=0.7)
    options = EvalOptions(hash_seeds=3, bits=(8, 24, 64))
    corpus = fingerprint_documents(DOCUMENTS, params)
    known = truth(corpus.matrix, params.threshold)
    assert len(known.similar_rows) > 0  # the binary column is exercised
    errors = sweep(corpus.matrix, known, [], params, options)
    pairs = _pairs_of(len(corpus.names))
    similar_pairs = pairs[known.similar_rows]
    for s in range(options.hash_seeds):
        for w, bits in enumerate(options.widths):
            at = Params(bits=bits, seed=params.seed + s)
            prints = fingerprint_documents(DOCUMENTS, at).fingerprints
            estimate = np.cos(np.pi * hamming_many(prints, pairs) / bits)
            assert errors.all_pairs[s, w] == pytest.approx(
                np.abs(estimate - known.cosines).mean(), abs=1e-12
            )
            similar = known.cosines[known.similar_rows]
            assert errors.similar[s, w] == pytest.approx(
                np.abs(estimate[known.similar_rows] - similar).mean(), abs=1e-12
            )
            binary = fingerprint_documents(DOCUMENTS, at.replace(weighting="binary"))
            distance = hamming_many(binary.fingerprints, similar_pairs)
            assert errors.binary[s, w] == pytest.approx(
                np.abs(np.cos(np.pi * distance / bits) - similar).mean(), abs=1e-12
            )


def test_sweep_tallies_the_scan_candidates_of_every_seed() -> None:
    params = Params(bits=32, seed=5, threshold=0.6)
    options = EvalOptions(hash_seeds=4, bits=(16, 32), max_distances=(6,))
    corpus = fingerprint_documents(DOCUMENTS, params)
    known = truth(corpus.matrix, params.threshold)
    plans, _ = plan_schemes(corpus.matrix, params, options)
    tallies = new_tallies(plans, len(known.a))
    seen: list[int] = []

    def progress(items, *, desc, total=None):  # type: ignore[no-untyped-def]
        for item in items:
            seen.append(item)
            yield item

    sweep(corpus.matrix, known, tallies, params, options, progress=progress)
    assert seen == list(range(options.hash_seeds))
    n = len(corpus.names)
    for tally in tallies:
        expected = np.zeros(len(known.a), dtype=np.int64)
        for s in range(options.hash_seeds):
            prints = fingerprint_many(corpus.matrix, params.fixed_bits, params.seed + s)
            found = candidate_pairs(prints, tally.plan.tables)
            if tally.plan.max_hamming is not None and len(found):
                found = found[hamming_many(prints, found) <= tally.plan.max_hamming]
            a, b = found[:, 0], found[:, 1]
            expected[a * n - a * (a + 1) // 2 + b - a - 1] += 1
        assert tally.found.tolist() == expected.tolist(), tally.name
        assert tally.candidates == int(expected.sum())
        assert tally.seconds > 0


# -- schemes ----------------------------------------------------------------------------


def test_planned_schemes_are_the_ones_a_scan_plans() -> None:
    params = Params(bits=64, blocks=5)
    options = EvalOptions(max_distances=(3,))
    corpus = fingerprint_documents(DOCUMENTS, params)
    plans, chosen = plan_schemes(corpus.matrix, params, options)
    choices, expected_chosen = blocking_settings(params, options)
    assert chosen == expected_chosen == "5 blocks"
    assert [name for name, _ in plans] == [name for name, _ in choices]
    first_seed = fingerprint_many(corpus.matrix, params.fixed_bits, params.seed)
    for (_, planned), (_, choice) in zip(plans, choices, strict=True):
        again = plan(choice, first_seed)
        assert planned.tables.description == again.tables.description
        assert planned.max_hamming == again.max_hamming


def test_scheme_result_scores_a_tally() -> None:
    matrix = weights_to_matrix(
        [{"a": 1.0}, {"a": 1.0, "b": 0.1}, {"c": 1.0}, {"c": 1.0, "d": 2.0}, {"e": 1.0}]
    )
    known = truth(matrix, 0.9)
    params = Params(bits=16, scheme="loose")
    plans, _ = plan_schemes(matrix, params, EvalOptions(hash_seeds=4))
    tally: SchemeTally = new_tallies(plans, len(known.a))[2]
    seeds = 4
    tally.found = np.arange(len(known.a), dtype=np.int64) % (seeds + 1)
    tally.candidates = 30
    tally.seconds = 0.4
    result = scheme_result(tally, known, params.fixed_bits, seeds)
    share = tally.found / seeds
    assert result.name == tally.name == "loose"
    assert result.recall == pytest.approx(share[known.similar].mean())
    assert result.false_positive_rate == pytest.approx(share[~known.similar].mean())
    assert result.candidates_per_document == pytest.approx(30 / seeds / 5)
    assert result.seconds == pytest.approx(0.4 / seeds)
    assert sum(count for _, _, count in result.measured_curve) == len(known.a)
    centres = [c for c, _, _ in result.measured_curve]
    assert centres == sorted(centres)
    assert all(0.0 <= p <= 1.0 for _, p, _ in result.measured_curve)
    assert result.curve[0][0] == 0.0
    assert result.curve[-1][0] == 1.0
    assert result.curve[-1][1] == pytest.approx(1.0)  # equal fingerprints share every key
    assert [p for _, p in result.curve] == sorted(p for _, p in result.curve)


# -- report -----------------------------------------------------------------------------


def test_width_accuracy_averages_the_seeds() -> None:
    known = truth(weights_to_matrix([{"a": 1.0}, {"a": 1.0, "b": 0.2}, {"c": 1.0}]), 0.9)
    rng = np.random.default_rng(3)
    errors = SweepErrors(rng.random((5, 2)), rng.random((5, 2)), rng.random((5, 2)))
    rows = width_accuracy(errors, known, (16, 64))
    assert [r.bits for r in rows] == [16, 64]
    for w, row in enumerate(rows):
        assert row.mae == pytest.approx(errors.all_pairs[:, w].mean())
        stderr = errors.all_pairs[:, w].std(ddof=1) / math.sqrt(5)
        assert row.mae_stderr == pytest.approx(stderr)
        assert row.similar_mae == pytest.approx(errors.similar[:, w].mean())
        assert row.similar_binary_mae == pytest.approx(errors.binary[:, w].mean())
        assert row.mae_theory == expected_error(known.cosines, row.bits)
        assert row.similar_theory == expected_error(known.cosines[known.similar_rows], row.bits)
    one_seed = SweepErrors(errors.all_pairs[:1], errors.similar[:1], errors.binary[:1])
    assert width_accuracy(one_seed, known, (16, 64))[0].mae_stderr == 0.0


def test_width_accuracy_without_similar_pairs_has_no_similar_columns() -> None:
    known = truth(weights_to_matrix([{"a": 1.0}, {"b": 1.0}]), 0.9)
    errors = SweepErrors(np.full((2, 1), 0.5), np.zeros((2, 1)), np.zeros((2, 1)))
    (row,) = width_accuracy(errors, known, (32,))
    assert row.mae == 0.5
    assert (row.similar_mae, row.similar_binary_mae, row.similar_theory) == (None, None, None)


def test_similar_list_orders_names_and_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [{"a": 1.0}, {"a": 1.0, "b": 0.5}, {"a": 1.0}, {"a": 1.0, "b": 0.1}, {"z": 1.0}]
    known = truth(weights_to_matrix(rows), 0.8)
    names = ["n0", "n1", "n2", "n3", "n4"]
    found = np.arange(len(known.a), dtype=np.int64)
    listed = similar_list(known, names, found, 10)
    assert len(listed) == int(known.similar.sum())
    keys = [(-p.cosine, p.a, p.b) for p in listed]
    assert keys == sorted(keys)
    assert (listed[0].a, listed[0].b, listed[0].cosine) == ("n0", "n2", 1.0)
    pairs = zip(known.a.tolist(), known.b.tolist(), strict=True)
    position = {(names[a], names[b]): k for k, (a, b) in enumerate(pairs)}
    assert all(p.found == position[(p.a, p.b)] / 10 for p in listed)
    monkeypatch.setattr("simdup.evaluate.report.LISTED_PAIRS", 2)
    assert similar_list(known, names, found, 10) == listed[:2]


# -- the stages together ----------------------------------------------------------------


def test_evaluate_is_its_stages_in_order() -> None:
    params = Params(bits=32, threshold=0.6)
    options = EvalOptions(hash_seeds=3, bits=(16, 32))
    result = evaluate(DOCUMENTS, params, options)
    corpus = fingerprint_documents(DOCUMENTS, params)
    known = truth(corpus.matrix, params.threshold)
    plans, chosen = plan_schemes(corpus.matrix, params, options)
    tallies = new_tallies(plans, len(known.a))
    errors = sweep(corpus.matrix, known, tallies, params, options)
    assert result.widths == tuple(width_accuracy(errors, known, options.widths))
    schemes = [scheme_result(t, known, params.fixed_bits, 3) for t in tallies]
    strip = [(s.name, s.recall, s.false_positive_rate, s.candidates_per_document) for s in schemes]
    assert [(s.name, s.recall, s.false_positive_rate, s.candidates_per_document)
            for s in result.schemes] == strip  # fmt: skip
    chosen_found = next(t for t in tallies if t.name == chosen).found
    assert result.similar == similar_list(known, corpus.names, chosen_found, 3)
    assert set(result.timings) == {"truth", "seeds", "theory"}
