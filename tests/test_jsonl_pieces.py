"""JSON Lines files indexed a piece at a time: the same records, skips and scans as read whole."""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simdup.cli.inputs as cli_inputs
import simdup.engines.local.counting as counting
import simdup.inputs.streams as streams
from simdup.cli import cli
from simdup.errors import InputError
from simdup.inputs.files import ReadOptions
from simdup.inputs.gather import read_chunk
from simdup.inputs.jsonl import JsonlLine, JsonlOptions, read_jsonl
from simdup.inputs.lines import IndexedPiece, index_jsonl, index_piece
from simdup.inputs.streams import handle_blocks, line_pieces, numbered_lines

TEXTS = [
    "the quick brown fox jumps over the lazy dog near the river bank today",
    "the quick brown fox jumps over the lazy dog near the river bank again",
    "a completely different sentence about databases and query planners",
    "a completely different sentence about databases and query optimizers",
    "sailing boats, harbours and a windy afternoon by the grey sea",
]

#: Lines of every kind a corpus holds: records with and without ids, repeated ids, blank
#: lines, malformed ones, and line ends of every kind ``bytes.splitlines`` knows.
LINES = st.one_of(
    st.builds(
        lambda i, t: json.dumps({"id": f"d{i}", "text": t}),
        st.integers(0, 6),
        st.sampled_from(TEXTS),
    ),
    st.builds(lambda t: json.dumps({"text": t}), st.sampled_from(TEXTS)),
    st.builds(lambda i: json.dumps({"id": i, "text": "x y z"}), st.integers(0, 3)),
    st.sampled_from(["", "   ", "[1, 2", "nope", '{"id": "q"}', '{"text": 3}', "[]"]),
).map(str.encode)
ENDS = st.sampled_from([b"\n", b"\r\n", b"\r"])


@st.composite
def corpora(draw: st.DrawFn) -> bytes:
    """Return the bytes of a JSON Lines corpus, its last line with or without a line end."""
    lines = draw(st.lists(st.tuples(LINES, ENDS), max_size=25))
    data = b"".join(line + end for line, end in lines)
    return data[:-1] if data and draw(st.booleans()) else data


def _documents(path: Path, records: Sequence[JsonlLine]) -> list[tuple[str, str]]:
    chunk = read_chunk(records, ReadOptions())
    return [(d.name, d.text) for d in chunk.documents]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=corpora(), piece=st.sampled_from([1, 2, 7, 64, None]))
def test_indexed_records_are_those_read_whole(
    tmp_path: Path, data: bytes, piece: int | None
) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(data)
    fields = JsonlOptions()
    documents, skipped = read_jsonl(str(path), data, fields)
    found = index_jsonl(str(path), fields, piece)
    assert found is not None
    records, indexed_skipped = found
    assert indexed_skipped == skipped
    assert [r.name for r in records] == [d.name for d in documents]
    assert _documents(path, records) == [(d.name, d.text) for d in documents]


@given(data=corpora(), piece=st.integers(1, 40))
def test_pieces_hold_whole_lines_of_bounded_size(data: bytes, piece: int) -> None:
    pieces = list(line_pieces(handle_blocks(io.BytesIO(data), piece)))
    assert b"".join(p for _, p in pieces) == data
    assert [at for at, _ in pieces] == [
        sum(len(p) for _, p in pieces[:k]) for k in range(len(pieces))
    ]
    longest = max((len(line) for line in data.splitlines()), default=0)
    assert all(len(p) <= piece + longest + 2 for _, p in pieces)
    numbered = list(numbered_lines(pieces))
    assert [line for _, _, line in numbered] == data.splitlines()
    assert [n for n, _, _ in numbered] == list(range(1, len(numbered) + 1))
    assert all(data[at : at + len(line)] == line for _, at, line in numbered)


def test_the_reader_never_holds_the_whole_file(tmp_path: Path) -> None:
    """A large file is read in pieces of about the piece size, and indexed without its texts."""
    path = tmp_path / "big.jsonl"
    lines = [json.dumps({"id": f"d{k}", "text": TEXTS[k % 5]}) for k in range(2_000)]
    path.write_text("\n".join(lines) + "\n")
    with path.open("rb") as handle:
        sizes = [len(piece) for _, piece in line_pieces(handle_blocks(handle, 4_096))]
    assert len(sizes) > 30
    assert max(sizes) <= 4_096 + max(map(len, lines)) + 1
    found = index_jsonl(str(path), JsonlOptions(), 4_096)
    assert found is not None
    records, _ = found
    assert len(records) == 2_000
    assert all(not hasattr(r, "text") and not hasattr(r, "__dict__") for r in records)


def test_gzip_pipes_and_urls_are_read_whole(tmp_path: Path) -> None:
    packed = tmp_path / "c.jsonl.gz"
    packed.write_bytes(b"\x1f\x8b" + bytes(20))
    assert index_jsonl(str(packed), JsonlOptions()) is None
    assert index_jsonl("memory://c.jsonl", JsonlOptions()) is None
    assert index_jsonl(str(tmp_path), JsonlOptions()) is None


def test_a_file_changed_after_indexing_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"id": "a", "text": "hello there"}) + "\n")
    found = index_jsonl(str(path), JsonlOptions())
    assert found is not None
    path.write_text("garbage\n")
    with pytest.raises(InputError, match="changed while it was read"):
        read_chunk(found[0], ReadOptions())


def _corpus(path: Path) -> Path:
    rows = []
    for k in range(300):
        rows.append(json.dumps({"id": f"d{(k * 37) % 290}", "text": f"{TEXTS[k % 5]} {k % 11}"}))
        if k % 29 == 0:
            rows.append("")
        if k % 31 == 0:
            rows.append('{"id": "broken", "text": ')
        if k % 41 == 0:
            rows.append(json.dumps({"text": TEXTS[k % 3]}))
    path.write_text("\r\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("args", [["--format", "jsonl", "-v"], ["--format", "json", "--clusters"]])
def test_a_scan_is_the_same_whatever_the_piece_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    path = str(_corpus(tmp_path / "c.jsonl"))
    runner = CliRunner()

    def scan() -> str:
        command = ["scan", "--jsonl", path, "--threshold", "0.8", "--jobs", "1", *args]
        result = runner.invoke(cli, command, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        # The pairs, then the skips (-v) and the summary, less how long it took.
        return result.stdout + re.sub(r"[0-9.]+s\b", "", result.stderr)

    default = scan()
    assert "duplicate id" in default
    assert "not valid JSON" in default
    monkeypatch.setattr(streams, "PIECE_BYTES", 5)
    assert scan() == default
    monkeypatch.setattr("simdup.cli.inputs.index_jsonl", lambda *_, **__: None)
    assert scan() == default  # read whole, as before


@pytest.mark.parametrize("kind", ["gzip", "stdin", "url"])
def test_inputs_copied_to_the_temporary_directory_scan_as_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """gzip, standard input and URLs are copied (decompressed) to be read by byte ranges."""
    plain = _corpus(tmp_path / "c.jsonl")
    spill = tmp_path / "spill"
    spill.mkdir()
    stdin = None
    if kind == "gzip":
        name = str(tmp_path / "c.jsonl.gz")
        Path(name).write_bytes(gzip.compress(plain.read_bytes()))
    elif kind == "stdin":
        name, stdin = "-", plain.read_bytes()
    else:
        name = f"file://{plain}"
    runner = CliRunner()

    def scan() -> str:
        command = ["scan", "--jsonl", name, "--format", "jsonl", "-v", "--tmp-dir", str(spill)]
        result = runner.invoke(cli, command, input=stdin, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.stdout + re.sub(r"[0-9.]+s\b", "", result.stderr)

    copied = scan()
    assert list(spill.iterdir()) == []  # the copy is removed
    assert "duplicate id" in copied
    whole = cli_inputs.name_record_inputs
    monkeypatch.setattr(cli_inputs, "name_record_inputs", lambda found, *_: whole(found, None))
    assert scan() == copied


def test_a_damaged_gzip_input_is_one_line(tmp_path: Path) -> None:
    packed = tmp_path / "c.jsonl.gz"
    packed.write_bytes(gzip.compress(b'{"id": "a", "text": "some words here"}\n' * 50)[:-20])
    result = CliRunner().invoke(cli, ["scan", "--jsonl", str(packed), "--tmp-dir", str(tmp_path)])
    assert result.exit_code == 4, result.output  # as when the file is read whole
    assert f"{packed}: corrupt gzip file (truncated)" in result.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["c.jsonl.gz"]


def test_pieces_indexed_over_workers_are_those_indexed_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file worth workers is indexed by them, piece by piece, into the same columns."""
    rng = random.Random(5)
    lines = []
    for k in range(60_000):  # about 6 MB: past the size where workers start
        kind = rng.random()
        if kind < 0.01:
            lines.append("not json")
        elif kind < 0.05:
            lines.append(json.dumps({"text": TEXTS[k % 5]}))  # named by its line number
        else:
            lines.append(json.dumps({"id": f"d{rng.randrange(30_000)}", "text": TEXTS[k % 5]}))
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join(lines) + "\n\n")
    pids = tmp_path / "pids"
    pids.mkdir()

    def noted(*args: Any) -> IndexedPiece:
        (pids / str(os.getpid())).touch()
        return index_piece(*args)

    monkeypatch.setattr(counting, "index_piece", noted)
    here = index_jsonl(str(path), JsonlOptions(), 65_536)
    spread = index_jsonl(str(path), JsonlOptions(), 65_536, over=counting.pieces_over(2))
    assert here is not None
    assert spread is not None
    assert {int(p.name) for p in pids.iterdir()} - {os.getpid()}
    assert list(spread[0]) == list(here[0])
    assert spread[0].by_name.tolist() == here[0].by_name.tolist()
    assert spread[1] == here[1]
    documents, skipped = read_jsonl(str(path), path.read_bytes(), JsonlOptions())
    assert [r.name for r in spread[0]] == [d.name for d in documents]
    assert spread[1] == skipped
