"""Deduplication core: keep order, greedy resolution without chains, references."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simdup.dedupe.keep import Entry, dedupe, keep_order, unique_keys
from simdup.errors import ParameterError
from simdup.fingerprints.weights import term_weights
from simdup.model import PairArrays
from simdup.params import KEEP_POLICIES, Params
from simdup.search.groups import resolve
from simdup.search.verify import cosine
from simdup.text.tokens import tokenize

WORDS = ["apple", "river", "stone", "cloud", "maple", "torch", "violet", "harbor"]


def arrays(pairs: list[tuple[int, int, float]]) -> PairArrays:
    return PairArrays(
        np.array([[a, b] for a, b, _ in pairs], dtype=np.int64).reshape(-1, 2),
        np.zeros(len(pairs), dtype=np.int64),
        np.array([c for _, _, c in pairs], dtype=np.float64),
        np.array([c for _, _, c in pairs], dtype=np.float64),
    )


def true_cosine(a: str, b: str) -> float:
    return cosine(term_weights(tokenize(a)), term_weights(tokenize(b)))


def test_no_chain_removal() -> None:
    # 0~1 and 1~2, but 0 and 2 are not duplicates: 1 goes, 2 stays.
    removals = resolve([0, 1, 2], arrays([(0, 1, 0.9), (1, 2, 0.9)]), 0.8)
    assert [(r.index, r.kept, r.cosine) for r in removals] == [(1, 0, 0.9)]


def test_names_the_kept_match_with_the_highest_cosine() -> None:
    removals = resolve([0, 1, 2], arrays([(0, 2, 0.85), (1, 2, 0.95)]), 0.8)
    assert [(r.index, r.kept, r.cosine) for r in removals] == [(2, 1, 0.95)]


def test_equal_cosines_go_to_the_match_earlier_in_keep_order() -> None:
    removals = resolve([1, 0, 2], arrays([(0, 2, 0.9), (1, 2, 0.9)]), 0.8)
    assert [(r.index, r.kept) for r in removals] == [(2, 1)]


def test_below_threshold_and_unknown_cosine_are_ignored() -> None:
    pairs = arrays([(0, 1, 0.79), (0, 2, float("nan"))])
    assert resolve([0, 1, 2], pairs, 0.8) == []


def test_keep_order_follows_the_policy() -> None:
    docs = [Entry("a", "x y", time=5.0), Entry("b", "x", time=None), Entry("c", "x y z", time=9)]
    assert keep_order(docs, "first") == [0, 1, 2]
    assert keep_order(docs, "last") == [2, 1, 0]
    assert keep_order(docs, "longest") == [2, 0, 1]
    assert keep_order(docs, "shortest") == [1, 0, 2]
    assert keep_order(docs, "newest") == [2, 0, 1]  # unknown time last
    assert keep_order(docs, "oldest") == [0, 2, 1]


def test_prefer_wins_over_the_policy_in_glob_order() -> None:
    docs = [Entry("new/a", "x"), Entry("old/b", "x y"), Entry("mid/c", "x y z")]
    assert keep_order(docs, "longest", ["old/*"]) == [1, 2, 0]
    assert keep_order(docs, "longest", ["new/*", "old/*"]) == [0, 1, 2]
    assert keep_order(docs, "first", ["c"]) == [2, 0, 1]  # base names match too


def test_unknown_policy_is_refused() -> None:
    with pytest.raises(ParameterError, match="unknown keep policy 'big'"):
        keep_order([], "big")


def test_unique_keys_tag_repeated_names_only() -> None:
    assert unique_keys(["a", "a", "a (line 2)"], ["line 1", "line 2", "line 3"]) == [
        "a (line 1)",
        "a (line 2) #1",
        "a (line 2)",
    ]


def test_dedupe_keeps_first_and_names_the_kept_document() -> None:
    text = "the quick brown fox jumps over the lazy dog near the river bank"
    entries = [Entry("a", text), Entry("b", "something else entirely here"), Entry("c", text)]
    plan = dedupe(entries)
    assert plan.kept == [0, 1]
    assert [(r.index, r.kept, r.reference, r.cosine) for r in plan.removed] == [(2, 0, False, 1.0)]
    plan = dedupe(entries, policy="last")
    assert [(r.index, r.kept) for r in plan.removed] == [(0, 2)]


def test_repeated_names_are_separate_documents() -> None:
    text = "one two three four five six seven eight nine"
    plan = dedupe([Entry("x", text, tag="line 1"), Entry("x", text, tag="line 2")])
    assert plan.kept == [0]
    assert [(r.index, r.kept) for r in plan.removed] == [(1, 0)]


def test_references_always_win_and_are_never_output() -> None:
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    plan = dedupe(
        [Entry("new", text), Entry("other", "completely unrelated words appear")],
        references=[Entry("ref", text)],
        policy="longest",
        prefer=["new"],
    )
    assert plan.kept == [1]
    assert [(r.index, r.kept, r.reference) for r in plan.removed] == [(0, 0, True)]


def test_an_input_equal_to_two_references_is_removed_once() -> None:
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    plan = dedupe([Entry("new", text)], references=[Entry("r1", text), Entry("r2", text)])
    assert [(r.index, r.kept, r.reference) for r in plan.removed] == [(0, 0, True)]


# Small vocabularies and short texts make many near-duplicates and many chains.
TEXTS = st.lists(st.sampled_from(WORDS), min_size=1, max_size=7).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(TEXTS, min_size=0, max_size=14),
    references=st.lists(TEXTS, max_size=4),
    threshold=st.floats(0.3, 1.0),
    policy=st.sampled_from(KEEP_POLICIES),
    times=st.lists(st.one_of(st.none(), st.integers(0, 5).map(float)), min_size=14, max_size=14),
    prefer=st.lists(st.sampled_from(["d1", "d2*", "*3"]), max_size=2),
)
def test_dedupe_invariants(
    texts: list[str],
    references: list[str],
    threshold: float,
    policy: str,
    times: list[float | None],
    prefer: list[str],
) -> None:
    entries = [Entry(f"d{i}", t, time=times[i]) for i, t in enumerate(texts)]
    refs = [Entry(f"r{i}", t) for i, t in enumerate(references)]
    # Every pair within Hamming distance 63 of 64 bits: the pair list is complete.
    params = Params(threshold=threshold, max_distance=63)
    plan = dedupe(entries, params, policy=policy, prefer=prefer, references=refs)
    removed = {r.index for r in plan.removed}
    # KEPT and REMOVED partition the input.
    assert sorted([*plan.kept, *removed]) == list(range(len(entries)))
    assert not removed & set(plan.kept)
    for r in plan.removed:
        # The named match is kept (or a reference), and really that similar.
        if r.reference:
            match = references[r.kept]
        else:
            assert r.kept in plan.kept
            match = texts[r.kept]
        assert r.cosine >= threshold
        assert r.cosine == pytest.approx(true_cosine(texts[r.index], match))
    # Greedy and complete: no two kept inputs, nor a kept input and a reference, are
    # duplicates (with a complete pair list and a margin for rounding at the threshold).
    kept_texts = [texts[i] for i in plan.kept]
    for i, a in enumerate(kept_texts):
        for b in kept_texts[i + 1 :] + references:
            assert true_cosine(a, b) < threshold + 1e-9
    # Deterministic: the same input gives the same plan.
    again = dedupe(entries, params, policy=policy, prefer=prefer, references=refs)
    assert (again.kept, again.removed) == (plan.kept, plan.removed)
