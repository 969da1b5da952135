"""The reference feature hash: FNV-1a 32 over UTF-16 code units, then xorshift32."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simdup.fingerprints import hashing

GOLDEN = Path(__file__).parent / "data" / "golden_fingerprints.json"

# Any string JavaScript can hold: lone surrogates and control characters included.
ANY_TEXT = st.text(alphabet=st.characters(exclude_categories=()), max_size=40)


def load_cases() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads(GOLDEN.read_text(encoding="utf-8"))["cases"]
    return cases


CASES = load_cases()


def golden_hashes() -> list[tuple[str, int]]:
    """Every (salted feature, expected FNV-1a) pair of the golden file."""
    out = []
    for case in CASES:
        for (feature, _), expected in zip(case["weights"], case["fnv1a"], strict=True):
            out.append((f"{feature}:{case['seed']}", expected))
    return out


def reference_fnv1a(units: list[int]) -> int:
    """FNV-1a 32 written independently of the module, over explicit code units."""
    h = 0x811C9DC5
    for unit in units:
        h = ((h ^ unit) * 0x01000193) % 2**32
    return h


def reference_xorshift(state: int, count: int) -> list[int]:
    """Xorshift32 (13/17/5) written independently of the module."""
    s = state % 2**32 or 1
    out = []
    for _ in range(count):
        s = (s ^ (s << 13)) % 2**32
        s = s ^ (s >> 17)
        s = (s ^ (s << 5)) % 2**32
        out.append(s)
    return out


def test_golden_has_enough_features() -> None:
    assert len(CASES) >= 200
    assert len(golden_hashes()) > 1000


def test_fnv1a_matches_every_golden_feature_hash() -> None:
    mismatches = [(t, e) for t, e in golden_hashes() if hashing.fnv1a32(t) != e]
    assert mismatches == []


def test_salted_is_feature_colon_decimal_seed() -> None:
    assert hashing.salted("cat", 12345) == "cat:12345"
    assert hashing.salted("", 0) == ":0"
    assert hashing.salted("x", 2**53 - 1) == "x:9007199254740991"


def test_fnv1a_many_matches_scalar_on_golden_features() -> None:
    texts = [t for t, _ in golden_hashes()]
    expected = np.array([e for _, e in golden_hashes()], dtype=np.uint32)
    got = hashing.fnv1a32_many(texts)
    assert got.dtype == np.uint32
    np.testing.assert_array_equal(got, expected)


def test_feature_words_many_matches_scalar_on_golden_features() -> None:
    by_seed: dict[int, list[str]] = {}
    for case in CASES:
        by_seed.setdefault(case["seed"], []).extend(f for f, _ in case["weights"])
    for seed, features in by_seed.items():
        for words in (1, 2, 5):
            got = hashing.feature_words_many(features, seed, words)
            assert got.shape == (len(features), words)
            expected = [hashing.feature_words(f, seed, words) for f in features]
            assert got.tolist() == expected, (seed, words)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0x811C9DC5),
        ("a", 0xE40C292C),  # published FNV-1a 32 vectors; ASCII units equal bytes
        ("foobar", 0xBF9CF968),
    ],
)
def test_fnv1a_published_vectors(text: str, expected: int) -> None:
    assert hashing.fnv1a32(text) == expected
    assert hashing.fnv1a32_many([text]).tolist() == [expected]


def test_astral_characters_hash_as_two_utf16_units() -> None:
    emoji = "\U0001f600"
    assert hashing.utf16_units(emoji).tolist() == [0xD83D, 0xDE00]
    assert hashing.fnv1a32(emoji) == reference_fnv1a([0xD83D, 0xDE00])
    # Neither UTF-8 bytes nor the code point give the reference value.
    assert hashing.fnv1a32(emoji) != reference_fnv1a(list(emoji.encode("utf-8")))
    assert hashing.fnv1a32(emoji) != reference_fnv1a([0x1F600])


def test_non_latin1_characters_hash_as_full_code_units() -> None:
    assert hashing.fnv1a32("中") == reference_fnv1a([0x4E2D])
    assert hashing.fnv1a32("é") == reference_fnv1a([0xE9])


def test_lone_surrogate_is_one_code_unit() -> None:
    assert hashing.utf16_units("\ud800x").tolist() == [0xD800, ord("x")]
    assert hashing.fnv1a32("\udfff") == reference_fnv1a([0xDFFF])


def test_hash_does_not_normalise_the_feature() -> None:
    precomposed, combining = "\u00e9", "e\u0301"
    assert hashing.fnv1a32(precomposed) != hashing.fnv1a32(combining)
    assert hashing.fnv1a32("Cat") != hashing.fnv1a32("cat")


def test_xorshift_known_outputs() -> None:
    assert hashing.xorshift32_words(1, 3) == reference_xorshift(1, 3)
    assert hashing.xorshift32_words(1, 2) == [270369, 67634689]


def test_zero_state_becomes_one() -> None:
    assert hashing.xorshift32_words(0, 4) == hashing.xorshift32_words(1, 4)
    states = np.array([0, 1, 7], dtype=np.uint32)
    got = hashing.xorshift32_many(states, 3)
    assert got[0].tolist() == got[1].tolist() == hashing.xorshift32_words(1, 3)


@pytest.mark.parametrize(("feature", "seed"), [("fcavajef", 12345), ("mvugagci", 0)])
def test_zero_hash_features_use_state_one(feature: str, seed: int) -> None:
    assert hashing.fnv1a32(hashing.salted(feature, seed)) == 0
    assert hashing.feature_words(feature, seed, 3) == hashing.xorshift32_words(1, 3)
    assert hashing.feature_words_many([feature], seed, 3).tolist() == [
        hashing.xorshift32_words(1, 3)
    ]


def test_many_forms_accept_empty_input() -> None:
    assert hashing.fnv1a32_many([]).shape == (0,)
    assert hashing.feature_words_many([], 1, 2).shape == (0, 2)


@given(st.lists(ANY_TEXT, max_size=30))
@settings(max_examples=150, deadline=None)
def test_fnv1a_many_equals_scalar(texts: list[str]) -> None:
    assert hashing.fnv1a32_many(texts).tolist() == [hashing.fnv1a32(t) for t in texts]


@given(st.lists(ANY_TEXT, max_size=30), ANY_TEXT)
@settings(max_examples=150, deadline=None)
def test_fnv1a_many_hashes_each_text_followed_by_the_suffix(texts: list[str], suffix: str) -> None:
    # One encoded piece for all, astral characters (two code units) in texts or suffix.
    assert hashing.fnv1a32_many(texts, suffix).tolist() == [
        hashing.fnv1a32(t + suffix) for t in texts
    ]


@given(ANY_TEXT)
def test_fnv1a_equals_independent_utf16_implementation(text: str) -> None:
    units = list(text.encode("utf-16-le", errors="surrogatepass"))
    code_units = [units[i] | units[i + 1] << 8 for i in range(0, len(units), 2)]
    assert hashing.fnv1a32(text) == reference_fnv1a(code_units)


@given(
    st.lists(st.integers(0, 2**32 - 1), max_size=20),
    st.integers(1, 6),
)
@settings(deadline=None)
def test_xorshift_many_equals_scalar(states: list[int], words: int) -> None:
    got = hashing.xorshift32_many(np.array(states, dtype=np.uint32), words)
    assert got.shape == (len(states), words)
    assert got.tolist() == [reference_xorshift(s, words) for s in states]
    assert got.tolist() == [hashing.xorshift32_words(s, words) for s in states]


@given(st.lists(ANY_TEXT, max_size=15), st.integers(0, 2**53 - 1), st.integers(1, 17))
@settings(max_examples=80, deadline=None)
def test_feature_words_many_equals_scalar(features: list[str], seed: int, words: int) -> None:
    got = hashing.feature_words_many(features, seed, words)
    assert got.tolist() == [hashing.feature_words(f, seed, words) for f in features]
