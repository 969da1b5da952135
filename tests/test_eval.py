"""Tests of simdup.evaluate and ``simdup eval``: truth, theory, the seed sweep, blocking."""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from simdup.cli import cli
from simdup.engines.local.fingerprinting import fingerprint_documents
from simdup.errors import ParameterError
from simdup.evaluate import (
    EvalOptions,
    Evaluation,
    all_pair_cosines,
    distance_pmf,
    evaluate,
    expected_error,
    low_bits,
    pair_index,
    pair_positions,
    sample_documents,
    width_distances,
)
from simdup.fingerprints.simhash import fingerprint_many
from simdup.fingerprints.weights import weights_to_matrix
from simdup.inputs.files import ReadOptions
from simdup.inputs.gather import load_corpus
from simdup.model import Document
from simdup.params import Params
from simdup.search.candidates import candidate_pairs
from simdup.search.plan.planner import plan
from simdup.search.verify import cosine_many, hamming_many

T = TypeVar("T")

#: The seed's 300-seed sweep on its own eight documents (mean absolute error per width).
SEED_TABLE = {8: 0.350, 16: 0.262, 32: 0.190, 64: 0.137, 128: 0.097, 256: 0.069, 512: 0.050}

WORDS = st.sampled_from(["cat", "dog", "sun", "rain", "tree", "milk", "bread", "stone", "7"])
WEIGHT_DICTS = st.dictionaries(WORDS, st.integers(1, 5).map(float), min_size=1, max_size=9)


@pytest.fixture(scope="module")
def sample_eval() -> Evaluation:
    """The full default sweep (300 seeds, 8 to 512 bits) on sample_corpus/, run once."""
    root = Path(__file__).resolve().parent.parent / "sample_corpus"
    documents, _ = load_corpus([str(root)], ReadOptions())
    return evaluate(documents, Params(), EvalOptions())


def test_measured_error_matches_binomial_theory_on_sample_corpus(
    sample_eval: Evaluation,
) -> None:
    assert [w.bits for w in sample_eval.widths] == sorted(SEED_TABLE)
    for w in sample_eval.widths:
        # 300 seeds: the measured mean sits within a few standard errors of its expectation.
        assert abs(w.mae - w.mae_theory) <= 5 * w.mae_stderr + 0.002, w
        assert w.mae_stderr < 0.01


def test_sample_corpus_lands_close_to_the_seed_table(sample_eval: Evaluation) -> None:
    for w in sample_eval.widths:
        assert w.mae == pytest.approx(SEED_TABLE[w.bits], abs=0.02), w.bits


def test_error_shrinks_as_one_over_root_bits(sample_eval: Evaluation) -> None:
    maes = [w.mae for w in sample_eval.widths]
    ratios = [b / a for a, b in itertools.pairwise(maes)]
    assert all(0.6 < r < 0.8 for r in ratios), ratios  # 1/sqrt(2) = 0.707


def test_sample_corpus_pairs_and_blocking(sample_eval: Evaluation) -> None:
    e = sample_eval
    assert e.documents == 9  # eight paragraphs and the README
    assert e.pairs == 36
    assert e.similar_pairs == 4  # 0-1, 2-3, 0-6, 1-6
    assert e.identical_pairs == 1  # 0-6
    names = {(p.a.rsplit("/", 1)[-1], p.b.rsplit("/", 1)[-1]) for p in e.similar}
    assert names == {
        ("doc0.txt", "doc1.txt"),
        ("doc2.txt", "doc3.txt"),
        ("doc0.txt", "doc6.txt"),
        ("doc1.txt", "doc6.txt"),
    }
    recall = {s.name: s.recall or 0.0 for s in e.schemes}
    assert [s.name for s in e.schemes] == ["strict", "balanced", "loose", "auto"]
    # More blocks find more: strict only ever finds exact copies (1 of 4 pairs).
    assert recall["strict"] == pytest.approx(0.25, abs=0.01)
    assert recall["strict"] <= recall["balanced"] <= recall["loose"]
    assert e.scheme("auto").expected_recall >= 0.95
    assert recall["auto"] >= 0.95
    for s in e.schemes:
        assert s.false_positive_rate is not None
        assert 0.0 <= s.false_positive_rate < 0.1
        assert s.curve[0][0] == 0.0
        assert s.curve[-1][0] == 1.0
        assert s.curve[-1][1] == pytest.approx(1.0)
        assert all(b[1] >= a[1] - 1e-9 for a, b in zip(s.curve, s.curve[1:], strict=False))


# --- theory ---------------------------------------------------------------------------------


@given(st.integers(1, 80), st.floats(-1.0, 1.0))
def test_distance_pmf_is_a_distribution(bits: int, cosine: float) -> None:
    pmf = distance_pmf(bits, [cosine])[0]
    assert pmf.sum() == pytest.approx(1.0)
    p = math.acos(cosine) / math.pi
    assert (pmf * np.arange(bits + 1)).sum() == pytest.approx(bits * p, abs=1e-9)


def test_expected_error_equals_the_exact_binomial_sum() -> None:
    cosines = [0.0, 0.3, 0.94, 1.0]
    for bits in (1, 8, 32):
        exact = 0.0
        for c in cosines:
            p = math.acos(c) / math.pi
            exact += sum(
                math.comb(bits, d)
                * p**d
                * (1 - p) ** (bits - d)
                * abs(math.cos(math.pi * d / bits) - c)
                for d in range(bits + 1)
            )
        assert expected_error(cosines, bits) == pytest.approx(exact / len(cosines), abs=1e-9)


def test_expected_error_matches_a_simulation_of_random_hyperplanes() -> None:
    rng = np.random.default_rng(7)
    u, v = rng.random(50), rng.random(50)
    c = float(u @ v / np.linalg.norm(u) / np.linalg.norm(v))
    planes = rng.standard_normal((20_000, 32, 50))
    distances = ((planes @ u > 0) != (planes @ v > 0)).sum(axis=1)
    simulated = np.abs(np.cos(np.pi * distances / 32) - c).mean()
    assert simulated == pytest.approx(expected_error([c], 32), abs=0.004)


# --- truth and fingerprints -----------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(st.lists(WEIGHT_DICTS, min_size=2, max_size=12))
def test_all_pair_cosines_equal_pairwise_cosines(rows: list[dict[str, float]]) -> None:
    matrix = weights_to_matrix(rows)
    a, b = pair_index(matrix.rows)
    expected = cosine_many(matrix, np.stack([a, b], axis=1))
    assert np.allclose(all_pair_cosines(matrix), expected, atol=1e-12)


def test_identical_rows_score_exactly_one() -> None:
    matrix = weights_to_matrix([{"a": 0.1, "b": 0.7}, {"b": 0.7, "a": 0.1}, {"c": 1.0}])
    assert all_pair_cosines(matrix).tolist() == [1.0, 0.0, 0.0]


@given(st.integers(2, 40))
def test_pair_positions_invert_pair_index(n: int) -> None:
    a, b = pair_index(n)
    assert pair_positions(n, a, b).tolist() == list(range(n * (n - 1) // 2))


@settings(max_examples=25, deadline=None)
@given(
    st.lists(WEIGHT_DICTS, min_size=2, max_size=6),
    st.integers(1, 200),
    st.integers(0, 1000),
)
def test_narrow_fingerprints_are_low_bits_of_wide_ones(
    rows: list[dict[str, float]], bits: int, seed: int
) -> None:
    matrix = weights_to_matrix(rows)
    wide = fingerprint_many(matrix, 256, seed)
    assert np.array_equal(low_bits(wide, bits), fingerprint_many(matrix, bits, seed))


@settings(max_examples=25, deadline=None)
@given(st.lists(WEIGHT_DICTS, min_size=2, max_size=6), st.integers(0, 1000))
def test_width_distances_equal_hamming_of_narrow_fingerprints(
    rows: list[dict[str, float]], seed: int
) -> None:
    matrix = weights_to_matrix(rows)
    widths = [1, 8, 63, 64, 65, 100, 192]
    wide = fingerprint_many(matrix, 192, seed)
    a, b = pair_index(matrix.rows)
    distances = width_distances(wide[a] ^ wide[b], widths)
    for bits, d in zip(widths, distances, strict=True):
        narrow = fingerprint_many(matrix, bits, seed)
        assert d.tolist() == hamming_many(narrow, np.stack([a, b], axis=1)).tolist()


# --- the sweep on small corpora -------------------------------------------------------------


def _docs(texts: Iterable[str]) -> list[Document]:
    return [Document(f"d{i:02d}", t) for i, t in enumerate(texts)]


def test_weighted_fingerprints_beat_binary_ones_where_emphasis_differs() -> None:
    # The same 30 words, stressed differently: as sets the two documents are identical
    # (binary cosine 1), by weight they are not (cosine 0.407), which only weighted
    # fingerprints can see.
    words = [f"word{i}" for i in range(30)]
    first = " ".join(words[:10] * 5 + words[10:])
    second = " ".join(words[:20] + words[20:] * 5)
    docs = _docs([first, second, "sun moon star comet planet orbit"])
    e = evaluate(docs, Params(threshold=0.3), EvalOptions(hash_seeds=60, bits=(32, 128)))
    assert e.similar[0].cosine == pytest.approx(110 / 270)
    for w in e.widths:
        assert w.similar_mae is not None
        assert w.similar_binary_mae is not None
        assert w.similar_binary_mae > 3 * w.similar_mae, w
        assert w.similar_binary_mae == pytest.approx(1 - 110 / 270, abs=0.05)


def test_candidates_are_those_the_scan_code_finds() -> None:
    texts = [f"alpha beta gamma delta {w} {w} epsilon" for w in ("x", "y", "z", "x y", "q")]
    docs = _docs([*texts, "one two three four five", "one two three four six"])
    params = Params(bits=32, threshold=0.5)
    e = evaluate(docs, params, EvalOptions(hash_seeds=1, bits=(32,)))
    corpus = fingerprint_documents(docs, params)
    for row in e.schemes:
        p = params.replace(scheme=row.name)
        chosen = plan(p, corpus.fingerprints)
        found = candidate_pairs(corpus.fingerprints, chosen.tables)
        if chosen.max_hamming is not None:
            found = found[hamming_many(corpus.fingerprints, found) <= chosen.max_hamming]
        assert row.candidates_per_document * e.documents == pytest.approx(len(found))


def test_evaluation_is_deterministic() -> None:
    docs = _docs(["red fox jumps over", "red fox jumps", "blue whale sings", "blue whale"])
    options = EvalOptions(hash_seeds=20, bits=(8, 64), max_distances=(2,))
    first = evaluate(docs, Params(bits=16), options).as_dict()
    again = evaluate(list(reversed(docs)), Params(bits=16), options).as_dict()
    assert first == again
    assert "seconds" not in json.dumps(first)
    assert [s["name"] for s in first["blocking"]][-1] == "max distance 2"


def test_progress_hook_sees_every_seed() -> None:
    seen: list[tuple[str, int | None, int]] = []

    def progress(items: Iterable[T], *, desc: str, total: int | None = None) -> Iterable[T]:
        listed = list(items)
        seen.append((desc, total, len(listed)))
        return listed

    docs = _docs(["a b c d", "a b c e", "x y z w"])
    evaluate(docs, Params(bits=16), EvalOptions(hash_seeds=7, bits=(8,)), progress=progress)
    assert seen == [("hash seeds", 7, 7)]


def test_too_few_documents_and_seed_overflow_are_refused() -> None:
    with pytest.raises(ParameterError, match="at least two documents"):
        evaluate(_docs(["only one", "the of and"]), Params(), EvalOptions(hash_seeds=2))
    with pytest.raises(ParameterError, match="2\\*\\*53"):
        evaluate(_docs(["a b", "c d"]), Params(seed=2**53 - 2), EvalOptions(hash_seeds=5))


def test_large_corpus_is_refused_with_a_sample_that_fits() -> None:
    rng = np.random.default_rng(3)
    vocab = [f"w{i}" for i in range(400)]
    docs = _docs(" ".join(rng.choice(vocab, 40)) for _ in range(120))
    options = EvalOptions(hash_seeds=50, bits=(8, 64), max_seconds=0.5)
    with pytest.raises(ParameterError, match=r"--sample (\d+)") as info:
        evaluate(docs, Params(), options)
    message = str(info.value)
    assert "7,140 pairs of 120 documents" in message
    fits = int(message.split("--sample ")[1].split()[0])
    assert 2 <= fits < 120
    sampled = evaluate(
        docs, Params(), EvalOptions(hash_seeds=50, bits=(8, 64), max_seconds=0.5, sample=fits)
    )
    assert sampled.documents == fits
    assert sampled.sampled_from == 120


@given(st.lists(st.text(min_size=1, max_size=6), min_size=3, max_size=30, unique=True))
def test_sample_is_a_subset_chosen_by_name_alone(names: list[str]) -> None:
    docs = [Document(n, "x") for n in names]
    size = len(names) // 2
    chosen = [d.name for d in sample_documents(docs, size)]
    assert len(chosen) == size
    assert set(chosen) <= set(names)
    assert chosen == sorted(chosen)
    assert chosen == [d.name for d in sample_documents(list(reversed(docs)), size)]
    # Adding documents never swaps out a chosen one for another that ranked lower before.
    more = [d.name for d in sample_documents([*docs, Document("\x00extra", "x")], size + 1)]
    assert set(chosen) <= set(more)


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"hash_seeds": 0}, "hash seeds"),
        ({"bits": ()}, "bits"),
        ({"bits": (8, 0)}, "bits"),
        ({"max_distances": (-1,)}, "max distances"),
        ({"sample": 1}, "sample"),
    ],
)
def test_bad_options_are_refused(changes: dict[str, Any], match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        EvalOptions(**changes)


# --- command line ---------------------------------------------------------------------------


def test_cli_json(runner: CliRunner, sample_corpus: Path) -> None:
    result = runner.invoke(
        cli,
        ["eval", str(sample_corpus), "--hash-seeds", "30", "--bits", "8,64", "--format", "json"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [row["bits"] for row in data["accuracy"]] == [8, 64]
    assert data["params"]["hash_seeds"] == 30
    assert data["params"]["bits"] == [8, 64]
    assert data["params"]["scheme_bits"] == 64
    assert data["similar_pairs"] == 4
    assert {row["name"] for row in data["blocking"]} == {"strict", "balanced", "loose", "auto"}
    assert "9 documents, 36 pairs" in result.stderr


def test_cli_csv_and_table(runner: CliRunner, sample_corpus: Path) -> None:
    args = ["eval", str(sample_corpus), "--hash-seeds", "10", "--bits", "16,32", "-q"]
    result = runner.invoke(cli, [*args, "--format", "csv", "--max-distance", "3"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["table"] for r in rows] == ["accuracy"] * 2 + ["blocking"] * 5
    assert rows[0]["bits"] == "16"
    assert float(rows[0]["mae_theory"]) > 0
    assert rows[-1]["scheme"] == "max distance 3"
    assert rows[-1]["bits"] == "64"
    table = runner.invoke(cli, args, catch_exceptions=False)
    assert table.exit_code == 0
    assert "Theory" in table.stdout
    assert "auto *" in table.stdout
    assert table.stderr == ""


def test_cli_html(runner: CliRunner, sample_corpus: Path, tmp_path: Path) -> None:
    page = tmp_path / "eval.html"
    args = ["eval", str(sample_corpus), "--hash-seeds", "5", "-q", "--html", str(page)]
    result = runner.invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0
    html = page.read_text("utf-8")
    assert html.startswith("<!DOCTYPE html>")
    assert html.count("<svg") >= 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bits", "8,x"], "not a positive width"),
        (["--bits", "8,0"], "not a positive width"),
        (["--hash-seeds", "100000"], "--sample"),
    ],
)
def test_cli_usage_errors(
    runner: CliRunner, sample_corpus: Path, args: list[str], message: str
) -> None:
    result = runner.invoke(cli, ["eval", str(sample_corpus), "-q", *args])
    assert result.exit_code == 2
    assert message in result.stderr
