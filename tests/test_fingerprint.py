"""Weights to fingerprints: golden vectors from the JavaScript reference, formats, validation."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from simdup.errors import FingerprintFormatError, ParameterError
from simdup.fingerprints import simhash as fp
from simdup.fingerprints.hashing import feature_words
from simdup.fingerprints.weights import weights_to_matrix
from simdup.params import Params

GOLDEN = Path(__file__).parent / "data" / "golden_fingerprints.json"
CASES: list[dict[str, Any]] = json.loads(GOLDEN.read_text(encoding="utf-8"))["cases"]


def case_weights(case: dict[str, Any]) -> dict[str, float]:
    """The case's weights as doubles, in the listed (summation) order."""
    return {feature: float(weight) for feature, weight in case["weights"]}


def names_value(message: str, value: object) -> bool:
    """Tell whether ``message`` mentions ``value`` as a whole token."""
    return re.search(rf"(?<![\w.]){re.escape(str(value))}(?![\w.])", message) is not None


# --- golden vectors --------------------------------------------------------------------


def test_golden_file_covers_the_required_inputs() -> None:
    assert len(CASES) >= 200
    bits = {c["bits"] for c in CASES}
    seeds = {c["seed"] for c in CASES}
    assert {8, 16, 32, 64, 128, 256, 512} <= bits
    assert {0, 2**32 - 1} <= seeds
    features = "".join(f for c in CASES for f, _ in c["weights"])
    assert any(ord(ch) > 0xFFFF for ch in features), "no astral-plane feature"
    assert any("\u4e00" <= ch <= "\u9fff" for ch in features), "no CJK feature"
    assert any("\u00c0" <= ch <= "\u024f" for ch in features), "no accented feature"


@pytest.mark.parametrize("index", range(len(CASES)))
def test_golden_scalar(index: int) -> None:
    case = CASES[index]
    got = fp.fingerprint(case_weights(case), case["bits"], case["seed"])
    assert got == int(case["fingerprint"], 16)
    assert fp.to_hex(got, case["bits"]) == case["fingerprint"]


def test_golden_batch_one_matrix_per_setting() -> None:
    """All cases with one (bits, seed) share one matrix, so vocabulary ids interleave."""
    groups: dict[tuple[int, int], list[int]] = {}
    for index, case in enumerate(CASES):
        groups.setdefault((case["bits"], case["seed"]), []).append(index)
    checked = 0
    for (bits, seed), indices in groups.items():
        matrix = weights_to_matrix([case_weights(CASES[i]) for i in indices])
        out = fp.fingerprint_many(matrix, bits, seed)
        assert out.dtype == np.uint64
        assert out.shape == (len(indices), math.ceil(bits / 64))
        for row, index in enumerate(indices):
            expected = int(CASES[index]["fingerprint"], 16)
            assert fp.words_to_int(out[row]) == expected, (index, bits, seed)
            checked += 1
        assert fp.to_hex_many(out, bits) == [CASES[i]["fingerprint"] for i in indices]
    assert checked == len(CASES)


def test_golden_batch_one_case_at_a_time() -> None:
    for index, case in enumerate(CASES):
        out = fp.fingerprint_many(
            weights_to_matrix([case_weights(case)]), case["bits"], case["seed"]
        )
        assert fp.words_to_int(out[0]) == int(case["fingerprint"], 16), index


# --- definition details ------------------------------------------------------------------


@pytest.mark.parametrize("bits", [1, 8, 31, 32, 33, 64, 100, 512])
def test_single_feature_gives_its_sign_bits_least_significant_first(bits: int) -> None:
    words = feature_words("cat", 12345, math.ceil(bits / 32))
    sign_bits = sum(w << (32 * k) for k, w in enumerate(words)) & ((1 << bits) - 1)
    assert fp.fingerprint({"cat": 3.0}, bits) == sign_bits
    assert fp.fingerprint({"cat": -3.0}, bits) == ~sign_bits & ((1 << bits) - 1)


def test_slot_summing_to_zero_gives_bit_zero() -> None:
    assert fp.fingerprint({"cat": 0.0}, 64) == 0
    assert fp.fingerprint({}, 512) == 0


def test_opposite_weights_on_same_sign_words_cancel_to_zero() -> None:
    # "fcavajef" hashes to 0 at seed 12345, so its generator starts from state 1, exactly
    # like a feature hashing to 1: look for one in the golden file's zero-hash pairs.
    partner = None
    for case in CASES:
        names = [f for f, _ in case["weights"]]
        if case["seed"] == 12345 and "fcavajef" in names:
            for name, h in zip(names, case["fnv1a"], strict=True):
                if h == 1:
                    partner = name
    assert partner is not None
    assert feature_words("fcavajef", 12345, 4) == feature_words(partner, 12345, 4)
    assert fp.fingerprint({"fcavajef": 2.5, partner: -2.5}, 128) == 0
    assert fp.fingerprint({"fcavajef": 2.5}, 128) == fp.fingerprint({partner: 2.5}, 128)


def test_array_index_keys_are_summed_first_like_object_entries() -> None:
    assert fp.js_entry_order({"b": 1, "10": 2, "a": 3, "2": 4, "01": 5}) == [
        ("2", 4),
        ("10", 2),
        ("b", 1),
        ("a", 3),
        ("01", 5),
    ]
    big = 2.0**53
    # Summation order decides rounding: 1 + 2**53 - 2**53 is 0 but 2**53 - 2**53 + 1 is 1.
    early = {"big": big, "neg": -big, "7": 1.0}
    late = {"7": 1.0, "big": big, "neg": -big}
    assert fp.fingerprint(early, 32) == fp.fingerprint(late, 32)
    # The batch path keeps dict order in its matrix yet must give the reference result.
    out = fp.fingerprint_many(weights_to_matrix([early, late]), 32)
    assert [fp.words_to_int(r) for r in out] == [fp.fingerprint(late, 32)] * 2


def test_fingerprint_fits_in_bits() -> None:
    weights = {f"w{i}": float(i + 1) for i in range(50)}
    for bits in (1, 3, 8, 63, 64, 65, 200):
        assert 0 <= fp.fingerprint(weights, bits) < 1 << bits


def test_seed_changes_fingerprint() -> None:
    weights = {f"w{i}": 1.0 for i in range(20)}
    assert fp.fingerprint(weights, 64, 0) != fp.fingerprint(weights, 64, 1)


def test_non_finite_weight_is_rejected() -> None:
    for bad in (math.inf, -math.inf, math.nan):
        with pytest.raises(ParameterError, match="cat"):
            fp.fingerprint({"cat": bad}, 8)
        with pytest.raises(ParameterError, match="finite"):
            fp.fingerprint_many(weights_to_matrix([{"cat": bad}]), 8)


def test_batch_of_empty_rows_and_empty_corpus() -> None:
    out = fp.fingerprint_many(weights_to_matrix([{}, {"a": 1.0}, {}]), 100)
    assert out.shape == (3, 2)
    assert fp.words_to_int(out[0]) == fp.words_to_int(out[2]) == 0
    assert fp.words_to_int(out[1]) == fp.fingerprint({"a": 1.0}, 100)
    assert fp.fingerprint_many(weights_to_matrix([]), 64).shape == (0, 1)


def test_batch_chunking_matches_scalar(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fp, "CHUNK_NNZ", 3)
    rows = [
        {f"f{(i * 7 + k) % 23}": float(k - 2) + 0.25 * i for k in range(i % 6)} for i in range(40)
    ]
    out = fp.fingerprint_many(weights_to_matrix(rows), 64, 7)
    assert [fp.words_to_int(r) for r in out] == [fp.fingerprint(r, 64, 7) for r in rows]


def _features(i: int) -> list[tuple[int, int]]:
    """Row ``i``'s features: ``(k, feature)`` for its ``i % 8`` entries."""
    return [(k, (i * 5 + k) % 31) for k in range(i % 8)]


@pytest.mark.parametrize("bits", [1, 7, 64, 65, 512])
@pytest.mark.parametrize(
    "weight",
    [
        lambda i, k: 1.0 + math.log(1 + (i * k) % 7),  # log weighting: real
        lambda i, k: float((i + k) % 9 - 4),  # small integers of both signs: int16 sums
        lambda i, k: float(((i + 1) * (k + 3)) % 70_001 - 35_000),  # past int16: int32 sums
    ],
)
def test_summing_path_equals_scalar_at_every_width(
    monkeypatch: pytest.MonkeyPatch, bits: int, weight: Any
) -> None:
    # The weights that cannot be counted are summed from their features' sign words,
    # unpacked for each chunk of rows; chunks of 5 entries cut rows, and leave rows
    # without features between and at the ends of chunks. Few distinct weights cancel
    # often: those rows are summed again in the reference's order, array-index names
    # ("7") first.
    monkeypatch.setattr(fp, "CHUNK_NNZ", 5 * max(1, bits) // 64 or 1)
    rows: list[dict[str, float]] = [
        {},
        *(
            {(str(f) if f % 3 == 0 else f"f{f}"): weight(i, k) for k, f in _features(i)}
            for i in range(30)
        ),
        {},
    ]
    assert fp._occurrences(weights_to_matrix(rows)) is None
    out = fp.fingerprint_many(weights_to_matrix(rows), bits, 5)
    assert [fp.words_to_int(r) for r in out] == [fp.fingerprint(r, bits, 5) for r in rows]


@pytest.mark.parametrize("by_segment", [1, 10**9])
@pytest.mark.parametrize("bits", [1, 7, 64, 65, 256, 512])
def test_counting_path_equals_scalar_across_lanes_and_chunks(
    monkeypatch: pytest.MonkeyPatch, bits: int, by_segment: int
) -> None:
    # Rows of more than 255 occurrences need several byte-lane segments; with a chunk of
    # 16 occurrences, long rows are also cut into several steps; zero weights add nothing.
    # Segments are summed one at a time, or all at once, whatever the width.
    monkeypatch.setattr(fp, "COUNT_CHUNK_TOKENS", 16)
    monkeypatch.setattr(fp, "SUMMED_BY_SEGMENT", by_segment)
    rows: list[dict[str, float]] = [
        {},
        {"a": 300.0, "b": 299.0},
        {f"w{k}": float(k % 5) for k in range(90)},
        {"solo": 1.0},
        {f"x{k}": float(1 + k % 40) for k in range(30)},
        {"z": 0.0},
        {},
    ]
    assert fp._occurrences(weights_to_matrix(rows)) is not None
    out = fp.fingerprint_many(weights_to_matrix(rows), bits, 11)
    assert [fp.words_to_int(r) for r in out] == [fp.fingerprint(r, bits, 11) for r in rows]


def test_counting_path_is_not_taken_for_negative_real_or_huge_weights() -> None:
    assert fp._occurrences(weights_to_matrix([{"a": -1.0}])) is None
    assert fp._occurrences(weights_to_matrix([{"a": 1.5}])) is None
    # Expanding a weight of a million into occurrences would cost more than summing it.
    huge = [{"a": 1e6, "b": 1.0}]
    assert fp._occurrences(weights_to_matrix(huge)) is None
    out = fp.fingerprint_many(weights_to_matrix(huge), 64)
    assert fp.words_to_int(out[0]) == fp.fingerprint(huge[0], 64)


# --- formats --------------------------------------------------------------------------------


@pytest.mark.parametrize("bits", [1, 3, 4, 5, 8, 31, 63, 64, 65, 100, 128, 512])
def test_to_hex_width(bits: int) -> None:
    width = math.ceil(bits / 4)
    assert len(fp.to_hex(0, bits)) == width
    assert fp.to_hex(0, bits) == "0" * width
    top = (1 << bits) - 1
    assert len(fp.to_hex(top, bits)) == width
    assert int(fp.to_hex(top, bits), 16) == top
    assert fp.to_hex(top, bits) == fp.to_hex(top, bits).lower()
    assert fp.from_hex(fp.to_hex(top, bits), bits) == top


def test_to_hex_examples() -> None:
    assert fp.to_hex(10, 16) == "000a"
    assert fp.to_hex(0xABC, 12) == "abc"
    assert fp.to_hex(1, 65) == "0" * 16 + "1"


@pytest.mark.parametrize("text", ["xyz", "", "-1", "0x10", "1_0", "1ff"])
def test_from_hex_rejects_malformed(text: str) -> None:
    with pytest.raises(FingerprintFormatError):
        fp.from_hex(text, 8)


@pytest.mark.parametrize("bits", [1, 8, 64, 65, 128, 200, 512])
def test_words_round_trip(bits: int) -> None:
    rng = np.random.default_rng(bits)
    for _ in range(20):
        value = int.from_bytes(rng.bytes(64), "little") & ((1 << bits) - 1)
        words = fp.int_to_words(value, bits)
        assert words.dtype == np.uint64
        assert words.shape == (fp.words64(bits),)
        assert fp.words_to_int(words) == value


def test_pack_and_unpack_bits_round_trip() -> None:
    rng = np.random.default_rng(3)
    matrix = rng.random((9, 130)) < 0.5
    packed = fp.pack_bits(matrix)
    assert packed.shape == (9, 3)
    np.testing.assert_array_equal(fp.unpack_bits(packed, 130), matrix.astype(np.uint8))
    for row in range(9):
        expected = sum(1 << i for i in range(130) if matrix[row, i])
        assert fp.words_to_int(packed[row]) == expected


# --- validation -----------------------------------------------------------------------------


@pytest.mark.parametrize("bits", [0, -1, 1.5, True])
def test_bad_bits_are_rejected_naming_the_value(bits: Any) -> None:
    with pytest.raises(ParameterError) as info:
        fp.fingerprint({"a": 1.0}, bits)
    assert names_value(str(info.value), bits)
    with pytest.raises(ParameterError):
        fp.fingerprint_many(weights_to_matrix([{"a": 1.0}]), bits)
    with pytest.raises(ParameterError) as info:
        Params(bits=bits)
    assert names_value(str(info.value), bits)


@pytest.mark.parametrize("seed", [-1, 2**53, 2**64, 1.0, False])
def test_bad_seeds_are_rejected_naming_the_value(seed: Any) -> None:
    with pytest.raises(ParameterError) as info:
        fp.fingerprint({"a": 1.0}, 64, seed)
    assert names_value(str(info.value), seed)
    with pytest.raises(ParameterError):
        fp.fingerprint_many(weights_to_matrix([{"a": 1.0}]), 64, seed)
    with pytest.raises(ParameterError) as info:
        Params(seed=seed)
    assert names_value(str(info.value), seed)


def test_extreme_valid_seeds_are_accepted() -> None:
    for seed in (0, 2**32 - 1, 2**53 - 1):
        assert Params(seed=seed).seed == seed
        value = fp.fingerprint({"a": 1.0}, 64, seed)
        out = fp.fingerprint_many(weights_to_matrix([{"a": 1.0}]), 64, seed)
        assert fp.words_to_int(out[0]) == value
