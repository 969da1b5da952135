"""The batch counter over bytes gives exactly the per-document tokenizer's counts."""

from __future__ import annotations

import numpy as np
import pytest
from counting_reference import tokenized_counts
from hypothesis import given, settings
from hypothesis import strategies as st

from simdup.engines.local.counting import count_matrix
from simdup.text import bytecount, counting
from simdup.text.counting import count_chunk
from simdup.text.counts import ChunkCounts
from simdup.text.normalize import MAX_TOKEN_LENGTH
from simdup.text.tokens import stopword_set, tokenize

#: Words around every boundary the batch counter has: 8-byte blocks, the length cut.
EDGE_WORDS = [
    "a",
    "Zebra",
    "12345678",
    "abcdefgh",
    "abcdefghi",
    "ABCDEFGHIJKLMNOP",
    "abcdefghijklmnopq",
    "x" * (MAX_TOKEN_LENGTH - 1),
    "y" * MAX_TOKEN_LENGTH,
    "y" * MAX_TOKEN_LENGTH + "tail",
    "q" * 200,
    "the",
    "THE",
    "themselves",
    "don't",
    "e-mail",
    "3.14",
]

ASCII_TEXT = st.lists(
    st.one_of(
        st.sampled_from(EDGE_WORDS),
        st.text(alphabet=st.characters(max_codepoint=127), max_size=30),
    ),
    max_size=25,
).map(" ".join)


def same_counts(got: ChunkCounts, want: ChunkCounts) -> None:
    assert got.vocabulary == want.vocabulary
    assert np.array_equal(got.lengths, want.lengths)
    assert np.array_equal(got.ids, want.ids)
    assert np.array_equal(got.counts, want.counts)


def reference(texts: list[str], stopwords: bool | str) -> ChunkCounts:
    """The per-document path, which follows :func:`simdup.text.tokens.tokenize`."""
    return counting._count_each(texts, stopword_set(stopwords), 1)


@settings(max_examples=150, deadline=None)
@given(st.lists(ASCII_TEXT, max_size=12), st.sampled_from([True, False]))
def test_batch_counts_equal_the_tokenizer(texts: list[str], stopwords: bool) -> None:
    got = bytecount.count_ascii(texts, stopword_set(stopwords))
    assert got is not None
    same_counts(got, reference(texts, stopwords))


@settings(max_examples=100, deadline=None)
@given(st.lists(ASCII_TEXT, max_size=12), st.sampled_from([True, False]))
def test_tallies_count_the_removed_tokens_of_each_text(texts: list[str], stopwords: bool) -> None:
    stop = stopword_set(True)
    tally = frozenset({"the", "themselves", "of"})
    found = bytecount.count_ascii_tallied(texts, stop, tally if stopwords else frozenset())
    assert found is not None
    counts, tallies = found
    same_counts(counts, reference(texts, True))
    want = [
        sum(w in tally for w in tokenize(t, stopwords=False)) if stopwords else 0 for t in texts
    ]
    assert tallies.tolist() == want


def test_batch_counts_example() -> None:
    got = bytecount.count_ascii(["The cat, the CAT!", "", "dog cat 42"], stopword_set(True))
    assert got is not None
    assert got.vocabulary == ["cat", "dog", "42"]
    assert got.lengths.tolist() == [1, 0, 3]
    assert got.ids.tolist() == [0, 1, 0, 2]
    assert got.counts.tolist() == [2, 1, 1, 1]


def test_batch_counts_of_texts_without_words() -> None:
    got = bytecount.count_ascii(["", "...", "the of"], stopword_set(True))
    assert got is not None
    assert got.vocabulary == []
    assert got.lengths.tolist() == [0, 0, 0]


def test_a_hash_collision_falls_back_to_the_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = ["alphabetical soup", "alphanumeric soup alphabetical"] * 20

    def colliding(words8, starts, lengths):  # type: ignore[no-untyped-def]
        hashes, spans = real(words8, starts, lengths)
        return np.full_like(hashes, hashes[0]), spans

    real = bytecount._long_keys
    monkeypatch.setattr(bytecount, "_long_keys", colliding)
    assert bytecount.count_ascii(texts, stopword_set(True)) is None
    # The chunk is then counted document by document, with the same result.
    same_counts(count_chunk(texts, True, 1), reference(texts, True))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(ASCII_TEXT, st.sampled_from(["déjà vu Déjà", "中文分词 and ﬁne", "Straße"])),
        max_size=80,
    ),
    st.sampled_from([1, 3]),
)
def test_chunks_mixing_ascii_runs_and_other_scripts(texts: list[str], min_run: int) -> None:
    # Runs of ASCII documents go to the batch counter, the rest document by document;
    # the joined counts equal the tokenizer's, vocabulary order included.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(counting, "MIN_ASCII_RUN", min_run)
        got = count_matrix(texts, jobs=1, chunk_documents=7)
    want = tokenized_counts(texts, True, 1)
    assert got.vocabulary == want.vocabulary
    assert np.array_equal(got.indptr, want.indptr)
    assert np.array_equal(got.indices, want.indices)
    assert np.array_equal(got.counts, want.counts)
