"""The sample corpus: paraphrases are similar, unrelated texts are not, the copy is found."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from simdup.engines.local import find_duplicates
from simdup.fingerprints.simhash import fingerprint, words_to_int
from simdup.fingerprints.weights import term_weights
from simdup.model import Document
from simdup.params import REFERENCE_BITS, SCHEMES, Params
from simdup.search.verify import cosine, hamming
from simdup.text.tokens import tokenize

SAMPLE = Path(__file__).resolve().parent.parent / "sample_corpus"
NAMES = [f"doc{i}.txt" for i in range(8)]
TEXTS = [(SAMPLE / name).read_text(encoding="utf-8") for name in NAMES]
DOCUMENTS = [Document(name, text) for name, text in zip(NAMES, TEXTS, strict=True)]
WEIGHTS = [term_weights(tokenize(text)) for text in TEXTS]

PARAPHRASES = {(0, 1), (2, 3)}
SIMILAR = PARAPHRASES | {(0, 6), (1, 6)}  # doc6 is a copy of doc0
ALL_BITS = [8, 16, 32, 64, 128, 256, 512]


def test_doc6_is_an_exact_copy_of_doc0() -> None:
    assert TEXTS[6] == TEXTS[0]
    assert len({TEXTS[i] for i in range(8) if i != 6}) == 7


def test_every_document_has_enough_features() -> None:
    for weights in WEIGHTS:
        assert len(weights) >= 20


@pytest.mark.parametrize(("i", "j"), sorted(PARAPHRASES | {(1, 6)}))
def test_paraphrases_have_high_true_cosine(i: int, j: int) -> None:
    assert cosine(WEIGHTS[i], WEIGHTS[j]) >= 0.9
    assert cosine(WEIGHTS[i], WEIGHTS[j]) < 1.0


def test_exact_copy_has_cosine_one() -> None:
    assert cosine(WEIGHTS[0], WEIGHTS[6]) == 1.0


def test_all_28_pairs() -> None:
    pairs = list(itertools.combinations(range(8), 2))
    assert len(pairs) == 28
    for i, j in pairs:
        value = cosine(WEIGHTS[i], WEIGHTS[j])
        if (i, j) in SIMILAR:
            assert value >= 0.9, (i, j, value)
        else:
            assert value < 0.5, (i, j, value)


@pytest.mark.parametrize("bits", [*ALL_BITS, 100])
def test_copy_has_distance_zero(bits: int) -> None:
    a = fingerprint(WEIGHTS[0], bits)
    b = fingerprint(WEIGHTS[6], bits)
    assert hamming(a, b) == 0
    assert a != fingerprint(WEIGHTS[4], bits)  # the fingerprints do tell texts apart


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
@pytest.mark.parametrize("bits", ALL_BITS)
def test_copy_is_a_candidate_under_every_scheme(scheme: str, bits: int) -> None:
    result = find_duplicates(DOCUMENTS, Params(bits=bits, scheme=scheme), report_all=True)
    assert result.names == NAMES
    candidates = {tuple(p) for p in result.pairs.pairs.tolist()}
    assert (0, 6) in candidates
    fps = [words_to_int(row) for row in result.fingerprints]
    assert fps[0] == fps[6]
    assert fps == [fingerprint(w, bits) for w in WEIGHTS]
    assert len(candidates) == len(result.pairs)  # no pair twice
    # every measured pair is measured right
    for (i, j), dist, cos in zip(
        result.pairs.pairs.tolist(),
        result.pairs.hamming.tolist(),
        result.pairs.cosine.tolist(),
        strict=True,
    ):
        assert dist == hamming(fps[i], fps[j])
        assert cos == pytest.approx(cosine(WEIGHTS[i], WEIGHTS[j]), abs=1e-12)


@pytest.mark.parametrize("scheme", sorted(SCHEMES))
def test_default_scan_reports_only_similar_pairs(scheme: str) -> None:
    result = find_duplicates(DOCUMENTS, Params(scheme=scheme))
    reported = {(p.a, p.b) for p in result.pair_list()}
    similar_names = {(NAMES[i], NAMES[j]) for i, j in SIMILAR}
    assert ("doc0.txt", "doc6.txt") in reported
    assert reported <= similar_names
    for pair in result.pair_list():
        assert pair.cosine is not None
        assert pair.cosine >= Params().threshold
        assert pair.above_threshold
    copy = next(p for p in result.pair_list() if (p.a, p.b) == ("doc0.txt", "doc6.txt"))
    assert copy.hamming == 0
    assert copy.cosine == 1.0
    assert copy.estimated_cosine == 1.0


def test_default_params_scan() -> None:
    result = find_duplicates(DOCUMENTS)
    assert result.params == Params(bits=REFERENCE_BITS)  # the width the scan used
    assert result.stats["documents"] == 8
    assert result.stats["skipped"] == 0
    reported = {(p.a, p.b) for p in result.pair_list()}
    assert ("doc0.txt", "doc6.txt") in reported
    assert np.all(result.pairs.cosine >= 0.8)
