"""Chunks whose features a worker numbers over a run: the same counts as chunks sent whole."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simdup.engines.local import counting
from simdup.engines.local.counting import count_inputs
from simdup.engines.local.stored import CorpusSink
from simdup.inputs.files import ReadOptions
from simdup.inputs.gather import gather_inputs
from simdup.model import Document
from simdup.text import counts as counts_module
from simdup.text.counting import count_chunk
from simdup.text.counts import CountBuilder, CountMatrix, Sender, number_in_process

WORDS = [f"w{k}" for k in range(30)]


def same(a: CountMatrix, b: CountMatrix) -> None:
    assert a.vocabulary == b.vocabulary
    assert np.array_equal(a.indptr, b.indptr)
    assert np.array_equal(a.indices, b.indices)
    assert np.array_equal(a.counts, b.counts)


@settings(max_examples=60, deadline=None)
@given(
    chunks=st.lists(
        st.lists(st.lists(st.sampled_from(WORDS), max_size=12), min_size=1, max_size=4),
        min_size=1,
        max_size=8,
    ),
    known=st.integers(1, 40),
    numbered_from=st.integers(0, 8),
)
def test_numbered_chunks_give_the_counts_of_whole_ones(
    chunks: list[list[list[str]]], known: int, numbered_from: int
) -> None:
    """Words held over a run, started again past a bound, some chunks sent whole: the same."""
    parts = [count_chunk([" ".join(doc) for doc in chunk], False, 1) for chunk in chunks]
    whole = CountBuilder()
    numbered = CountBuilder()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(counts_module, "KNOWN_WORDS", known)
        patch.setattr(counts_module, "NUMBERED_FROM", numbered_from)
        patch.setattr(counts_module, "_known", None)
        sent = [number_in_process(part, "run") for part in parts]
    for part, (numbered_part, sender) in zip(parts, sent, strict=True):
        whole.add(part)
        numbered.add(numbered_part, sender)
        if sender is None:
            assert numbered_part is part
        else:  # only words new to the sender travel
            assert len(numbered_part.vocabulary) <= len(part.vocabulary)
    same(numbered.matrix(), whole.matrix())


def test_a_sender_taken_out_of_order_is_refused() -> None:
    parts = [count_chunk([f"{a} {b}"], False, 1) for a, b in (("x", "y"), ("y", "z"))]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(counts_module, "NUMBERED_FROM", 0)
        patch.setattr(counts_module, "_known", None)
        sent = [number_in_process(part, "run") for part in parts]
    builder = CountBuilder()
    with pytest.raises(RuntimeError, match="order"):
        builder.add(*sent[1])


def test_workers_number_their_words_and_the_counts_are_those_of_one_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Forked workers numbering every chunk, starting again often: as counted here."""
    monkeypatch.setattr(counting, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(counting, "MIN_CHUNK_INPUTS", 3)
    monkeypatch.setattr(counting, "MAX_CHUNK_INPUTS", 3)
    monkeypatch.setattr(counts_module, "NUMBERED_FROM", 1)
    monkeypatch.setattr(counts_module, "KNOWN_WORDS", 9)
    rng = np.random.default_rng(5)
    docs = [
        Document(f"d{k:03d}", " ".join(rng.choice([*WORDS, "déjà", "café"], 15).tolist()))
        for k in range(60)
    ]
    inputs = gather_inputs([], ReadOptions(), docs).inputs
    senders: list[Sender | None] = []
    add = CorpusSink.add

    def spy(sink: CorpusSink, *args: Any) -> None:
        senders.append(args[3] if len(args) > 3 else None)
        add(sink, *args)

    monkeypatch.setattr(CorpusSink, "add", spy)
    one = count_inputs(inputs, ReadOptions(), stopwords="auto", jobs=1)
    assert senders
    assert all(s is None for s in senders)  # counted here: nothing to number
    senders.clear()
    two = count_inputs(inputs, ReadOptions(), stopwords="auto", jobs=2)
    assert isinstance(one.counts, CountMatrix)
    assert isinstance(two.counts, CountMatrix)
    same(two.counts, one.counts)
    assert two.names == one.names == [d.name for d in docs]
    numbered = [s for s in senders if s is not None]
    assert len({s.process for s in numbered}) == 2  # both workers numbered their chunks
    assert max(s.epoch for s in numbered) > 0  # and started again past KNOWN_WORDS
