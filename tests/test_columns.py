"""Names and records in columns: the same first-of-each-name rule and order as objects."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simdup.inputs.columns as columns
from simdup.inputs.columns import first_names
from simdup.inputs.files import ReadOptions, Source
from simdup.inputs.gather import first_in_name_order, gather_inputs, unique_names
from simdup.inputs.jsonl import JsonlLine, JsonlOptions
from simdup.inputs.lines import LineColumns, index_jsonl
from simdup.inputs.names import first_named
from simdup.model import Document
from simdup.packed import PackedStrings

#: Names of every kind: short and long, shared prefixes, accents, astral characters, NULs
#: (which fixed-width byte strings cannot hold), lone surrogates (undecodable file names).
NAMES = st.text(
    alphabet=st.sampled_from(["a", "b", "é", "\u4e2d", "\U0001f600", "\0", "\udcff", "/", "9"]),
    max_size=6,
)


@given(names=st.lists(NAMES, max_size=40), fixed=st.booleans())
def test_first_names_is_the_rule_of_first_named(names: list[str], fixed: bool) -> None:
    """The first of each name, in Python's string order; later ones as repeats, in order."""
    packed = PackedStrings.of(names)
    assert list(packed) == names
    saved = columns.FIXED_WIDTH_BYTES
    columns.FIXED_WIDTH_BYTES = saved if fixed else 0
    try:
        first, repeats = first_names(packed)
    finally:
        columns.FIXED_WIDTH_BYTES = saved
    kept, repeated = first_named(list(enumerate(names)), lambda item: item[1])
    assert [names[k] for k in first.tolist()] == sorted(name for _, name in kept)
    assert sorted(first.tolist()) == [k for k, _ in kept]
    assert repeats.tolist() == [k for k, _ in repeated]


@given(names=st.lists(NAMES, max_size=30), data=st.data())
def test_taken_and_joined_names_are_those_asked_for(names: list[str], data: st.DataObject) -> None:
    packed = PackedStrings.of(names)
    picks = data.draw(st.lists(st.integers(0, max(0, len(names) - 1)), max_size=50))
    picks = picks if names else []
    assert list(packed.take(np.array(picks, dtype=np.int64))) == [names[k] for k in picks]
    cut = data.draw(st.integers(0, len(names)))
    halves = [PackedStrings.of(names[:cut]), PackedStrings.of(names[cut:])]
    assert list(PackedStrings.joined(halves)) == names
    assert packed[-1:] == names[-1:]
    assert packed[::2] == names[::2]


def _records(tmp_path: Path, label: str, ids: list[str]) -> LineColumns:
    path = tmp_path / f"{label}.jsonl"
    path.write_text("".join(json.dumps({"id": i, "text": f"text {i}"}) + "\n" for i in ids))
    found = index_jsonl(str(path), JsonlOptions())
    assert found is not None
    return found[0]


IDS = st.lists(st.sampled_from(["a", "b", "c", "dé", "e/f", "z"]), max_size=8)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kinds=st.lists(st.tuples(st.sampled_from(["records", "documents"]), IDS), max_size=4),
    sources=st.lists(st.sampled_from(["a", "c", "q"]), unique=True),
)
def test_columns_keep_the_order_and_repeats_of_objects(
    tmp_path: Path, kinds: list[tuple[str, list[str]]], sources: list[str]
) -> None:
    """Records in columns give the inputs and skips they gave as one object each."""
    firsts = [Source(s, s) for s in sources]
    given_items: list[Document | JsonlLine | LineColumns] = []
    later: list[Document | JsonlLine] = []
    for k, (kind, ids) in enumerate(kinds):
        if kind == "records":
            block = _records(tmp_path, f"c{k}", ids)
            given_items.append(block)
            later += list(block)
        else:
            documents = [Document(i, f"doc {k}") for i in ids]
            given_items += documents
            later += documents
    inputs, skipped, arrival = first_in_name_order(firsts, given_items)
    kept, expected = unique_names(later, set(sources))
    assert list(inputs) == sorted([*firsts, *kept], key=lambda i: i.name)
    assert skipped == expected
    assert [inputs[k] for k in np.argsort(arrival).tolist()] == [*firsts, *kept]
    assert [inputs[k] for k in range(-len(inputs), len(inputs))] == [*inputs, *inputs]
    with pytest.raises(IndexError):
        inputs[len(inputs)]


def test_a_large_file_of_records_is_held_in_a_few_bytes_each(tmp_path: Path) -> None:
    """Indexed records cost tens of bytes each, not an object each (hundreds of bytes)."""
    count = 50_000
    path = tmp_path / "big.jsonl"
    lines = (json.dumps({"id": f"doc-{k:07d}", "text": "a b c d"}) for k in range(count))
    path.write_text("\n".join(lines) + "\n")
    tracemalloc.start()
    try:
        found = gather_inputs([], ReadOptions(), [_indexed(path)])
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(found.inputs) == count
    assert found.inputs[7].name == "doc-0000007"
    assert held / count < 48


def _indexed(path: Path) -> LineColumns:
    found = index_jsonl(str(path), JsonlOptions())
    assert found is not None
    return found[0]
