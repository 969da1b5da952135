"""``simdup dedupe --jsonl``: kept lines byte for byte, removal records, atomic outputs."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import simdup.inputs.streams as streams
from simdup.cli import cli
from simdup.dedupe.jsonl import (
    line_bounds,
    parse_dataset,
    read_dataset,
    removed_lines,
    write_kept,
)
from simdup.dedupe.keep import dedupe
from simdup.errors import InputError
from simdup.inputs.jsonl import JsonlOptions, read_jsonl
from simdup.model import Skip
from simdup.params import Params

FOX = "the quick brown fox jumps over the lazy dog near the river bank"
WHALE = "a blue whale sings under the grey northern sea at dawn"

# Lines as a real dataset has them: key order, escapes, spacing and CRLF that re-encoding
# would change; a duplicate id; malformed lines; a blank line; no final newline.
LINES = [
    b'{"text": "' + FOX.encode() + b'", "id": "a", "n": 1.50}\n',
    b'{"id":"b","text":"' + WHALE.encode() + b'"}\r\n',
    b'{"id": "c",  "text": "the quick brown fox jumps over the lazy dog near the river bank"}\n',
    b"not json at all\n",
    b"\n",
    b'{"id": "a", "text": "\\u0061 blue whale sings under the grey northern sea at dawn"}\n',
    b'{"id": "d", "body": "no text field"}\n',
    b'{"id": "e", "text": "caf\xc3\xa9 au lait is served warm in the morning light"}',
]
INPUT = b"".join(LINES)


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "in.jsonl"
    path.write_bytes(INPUT)
    return path


def run(runner: CliRunner, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(cli, ["dedupe", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_kept_lines_are_byte_for_byte_in_input_order(
    runner: CliRunner, dataset: Path, tmp_path: Path
) -> None:
    kept, removed = tmp_path / "kept.jsonl", tmp_path / "removed.jsonl"
    code, out, err = run(
        runner, "--jsonl", str(dataset), "-o", str(kept), "--removed", str(removed)
    )
    assert code == 0, err
    assert out == ""
    gone = {3, 6}  # c duplicates a (line 1); the second "a" duplicates b (line 2)
    assert kept.read_bytes() == b"".join(line for n, line in enumerate(LINES, 1) if n not in gone)
    assert records(removed) == [
        {
            "id": "c",
            "line": 3,
            "kept": "a",
            "kept_line": 1,
            "kept_reference": False,
            "cosine": 1.0,
            "hamming": 0,
            "estimated_cosine": 1.0,
            "bytes": len(LINES[2]),
        },
        {
            "id": "a",
            "line": 6,
            "kept": "b",
            "kept_line": 2,
            "kept_reference": False,
            "cosine": 1.0,
            "hamming": 0,
            "estimated_cosine": 1.0,
            "bytes": len(LINES[5]),
        },
    ]
    assert "8 input, 6 kept, 2 removed" in err
    assert "2 kept as is" in err  # the malformed line and the one without text
    assert "'a' on lines 1, 6" in err  # the duplicate id is reported


def test_malformed_lines_are_reported_with_their_reason(runner: CliRunner, dataset: Path) -> None:
    code, _, err = run(runner, "--jsonl", str(dataset), "-v", "--removed", os.devnull)
    assert code == 0
    assert f"kept as is {dataset}:4: not valid JSON" in err
    assert f"kept as is {dataset}:7: text field 'text' is missing" in err


def test_gzip_in_and_out(runner: CliRunner, dataset: Path, tmp_path: Path) -> None:
    packed = tmp_path / "in.jsonl.gz"
    packed.write_bytes(gzip.compress(INPUT))
    kept = tmp_path / "kept.jsonl.gz"
    code, _, err = run(runner, "--jsonl", str(packed), "-o", str(kept))
    assert code == 0, err
    assert kept.read_bytes()[:2] == b"\x1f\x8b"
    plain = gzip.decompress(kept.read_bytes())
    assert plain == b"".join(line for n, line in enumerate(LINES, 1) if n not in {3, 6})
    first = kept.read_bytes()
    run(runner, "--jsonl", str(packed), "-o", str(kept))
    assert kept.read_bytes() == first  # no time stamp or name in the gzip header


def test_plan_printed_without_outputs(runner: CliRunner, dataset: Path) -> None:
    code, out, _ = run(runner, "--jsonl", str(dataset), "--format", "jsonl")
    assert code == 0
    assert [json.loads(line)["line"] for line in out.splitlines()] == [3, 6]


def test_keep_policies_and_prefer(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        f'{{"id": "old", "t": "2020-01-01T00:00:00Z", "text": "{FOX}"}}\n'
        f'{{"id": "new", "t": 1893456000, "text": "{FOX}"}}\n'
        f'{{"id": "undated", "text": "{FOX}"}}\n'
    )
    base = ["--jsonl", str(path), "--format", "jsonl"]

    def kept_by(*args: str) -> set[str]:
        code, out, err = run(runner, *base, *args)
        assert code == 0, err
        return {str(json.loads(line)["kept"]) for line in out.splitlines()}

    assert kept_by("--keep", "newest", "--time-field", "t") == {"new"}
    assert kept_by("--keep", "oldest", "--time-field", "t") == {"old"}
    assert kept_by("--keep", "last") == {"undated"}
    assert kept_by("--keep", "oldest", "--time-field", "t", "--prefer", "undat*") == {"undated"}
    _, _, err = run(runner, *base, "--keep", "newest", "--time-field", "t")
    assert "without a readable time in field 't'" in err


def test_newest_without_time_field_is_a_usage_error(runner: CliRunner, dataset: Path) -> None:
    code, _, err = run(runner, "--jsonl", str(dataset), "--keep", "newest")
    assert code == 2
    assert "--time-field" in err


def test_reference_always_wins_and_is_never_output(
    runner: CliRunner, dataset: Path, tmp_path: Path
) -> None:
    reference = tmp_path / "old.jsonl"
    reference.write_text(f'{{"id": "r1", "text": "{WHALE}"}}\n')
    kept, removed = tmp_path / "kept.jsonl", tmp_path / "removed.jsonl"
    code, _, err = run(
        runner,
        *("--jsonl", str(dataset), "--reference", str(reference)),
        *("--prefer", "b", "-o", str(kept), "--removed", str(removed)),
    )
    assert code == 0, err
    found = {
        (r["id"], r["line"]): (r["kept"], r["kept_line"], r["kept_reference"])
        for r in records(removed)
    }
    assert found == {
        ("b", 2): ("r1", 1, True),
        ("a", 6): ("r1", 1, True),
        ("c", 3): ("a", 1, False),
    }
    assert b"r1" not in kept.read_bytes()


def test_output_equal_to_input_is_refused_before_reading(
    runner: CliRunner, dataset: Path, tmp_path: Path
) -> None:
    link = tmp_path / "link.jsonl"
    link.symlink_to(dataset)
    for args in (
        ["-o", str(dataset)],
        ["--removed", str(link)],
        ["-o", str(tmp_path / "x.jsonl"), "--removed", str(tmp_path / "x.jsonl")],
        ["-o", "-", "--removed", "-"],
    ):
        code, _, err = run(runner, "--jsonl", str(dataset), *args)
        assert code == 2, err
        assert "Error:" in err
    assert dataset.read_bytes() == INPUT


def test_interrupted_run_leaves_no_partial_output(
    runner: CliRunner, dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept, removed = tmp_path / "kept.jsonl", tmp_path / "removed.jsonl"
    removed.write_bytes(b"previous run\n")

    def interrupted(*args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr("simdup.dedupe.jsonl.write_kept", interrupted)
    result = runner.invoke(
        cli, ["dedupe", "--jsonl", str(dataset), "-o", str(kept), "--removed", str(removed)]
    )
    assert result.exit_code != 0
    assert not kept.exists()
    assert removed.read_bytes() == b"previous run\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "removed.jsonl"]


def test_fail_on_match(runner: CliRunner, dataset: Path) -> None:
    code, _, _ = run(runner, "--jsonl", str(dataset), "--fail-on-match", "-q")
    assert code == 1
    code, _, _ = run(runner, "--jsonl", str(dataset), "--fail-on-match", "--threshold", "1.0", "-q")
    assert code == 1  # exact copies are still at 1.0


def test_console_script_reads_stdin_and_writes_stdout(simdup_script: str, dataset: Path) -> None:
    done = subprocess.run(
        [simdup_script, "dedupe", "--jsonl", "-", "-o", "-", "-q"],
        input=INPUT,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"".join(line for n, line in enumerate(LINES, 1) if n not in {3, 6})
    assert done.stderr == b""


WORD = st.sampled_from(["apple", "river", "stone", "cloud", "maple", "torch"])
RECORD = st.builds(
    lambda words, ident, spaces: (
        json.dumps({"id": ident, "text": " ".join(words)}).encode().replace(b", ", spaces)
    ),
    st.lists(WORD, min_size=1, max_size=6),
    st.sampled_from(["x", "y", "z", "w"]),
    st.sampled_from([b", ", b",", b" ,  "]),
)
LINE = st.one_of(RECORD, RECORD, RECORD, st.just(b""), st.just(b"[1, 2"), st.just(b'{"id": 3}'))


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(LINE, max_size=12),
    ends=st.lists(st.sampled_from([b"\n", b"\r\n"]), min_size=12, max_size=12),
    final_newline=st.booleans(),
    threshold=st.floats(0.3, 1.0),
)
def test_kept_and_removed_partition_the_input(
    lines: list[bytes], ends: list[bytes], final_newline: bool, threshold: float
) -> None:
    raw = [line + end for line, end in zip(lines, ends[: len(lines)], strict=True)]
    if raw and not final_newline:
        raw[-1] = lines[-1]
    data = b"".join(raw)
    dataset = parse_dataset("t.jsonl", data, JsonlOptions())
    plan = dedupe(dataset.entries, Params(threshold=threshold, max_distance=63))
    mask = removed_lines(dataset, plan.removed)
    chunks: list[bytes] = []

    class Sink:
        def write(self, chunk: bytes | memoryview, /) -> int:
            chunks.append(bytes(chunk))
            return len(chunk)

    write_kept(dataset, mask, Sink())
    kept = b"".join(chunks)
    starts, ends_at = line_bounds(data)
    every = [data[s:e] for s, e in zip(starts.tolist(), ends_at.tolist(), strict=True)]
    pairs = zip(every, mask.tolist(), strict=True)
    assert kept == b"".join(line for line, gone in pairs if not gone)
    gone_lines = {dataset.lines[r.index] for r in plan.removed}
    assert {n + 1 for n in range(len(every)) if mask[n]} == gone_lines
    # Only documents are ever removed, and each names a kept document's line.
    documents = set(dataset.lines)
    kept_lines = documents - gone_lines
    for r in plan.removed:
        assert dataset.lines[r.kept] in kept_lines
        assert r.cosine >= threshold


def test_outputs_never_depend_on_the_number_of_workers(
    runner: CliRunner, dataset: Path, tmp_path: Path
) -> None:
    outputs = []
    for jobs in ("1", "2"):
        kept, removed = tmp_path / f"kept{jobs}.jsonl.gz", tmp_path / f"removed{jobs}.jsonl"
        code, _, err = run(
            runner, "--jsonl", str(dataset), "-j", jobs, "-o", str(kept), "--removed", str(removed)
        )
        assert code == 0, err
        outputs.append((kept.read_bytes(), removed.read_bytes()))
    assert outputs[0] == outputs[1]


def test_no_input_is_a_usage_error(runner: CliRunner) -> None:
    code, _, err = run(runner)
    assert code == 2
    assert "give at least one PATH" in err


def test_lines_are_parsed_as_a_scan_parses_them() -> None:
    """One record parser: the same documents and reasons, but repeated ids stay here."""
    lines = [
        b'{"id": "a", "text": "one"}',
        b'{"id": "a", "text": "same id"}',
        b'{"text": "no id"}',
        b'{"id": 7, "text": 3}',
        b'["a list"]',
        b'{"id": "x", "text": "caf\xe9"}',
        b'{"id": "y" "text": "z"}',
        b"[" * 100_000,
        b'{"id": 10, "body": "no text"}',
    ]
    data = b"\n".join(lines) + b"\n"
    documents, skipped = read_jsonl("in.jsonl", data, JsonlOptions())
    dataset = parse_dataset("in.jsonl", data, JsonlOptions())
    assert [(e.name, e.text) for e in dataset.entries] == [
        ("a", "one"),
        ("a", "same id"),
        ("3", "no id"),
    ]
    assert dataset.duplicate_ids == {"a": [1, 2]}
    assert [(d.name, d.text) for d in documents] == [("a", "one"), ("3", "no id")]
    assert skipped[0] == Skip("in.jsonl:2", "duplicate id 'a'")
    assert skipped[1:] == dataset.skipped
    assert [s.reason for s in dataset.skipped] == [
        "text field 'text' is not a string",
        "not a JSON object",
        "not valid JSON (not valid UTF-8)",
        "not valid JSON (Expecting ',' delimiter at column 12)",
        "not valid JSON (nested too deeply)",
        "text field 'text' is missing",
    ]


class _Collect:
    """A sink that keeps what is written."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    def write(self, chunk: bytes | memoryview, /) -> int:
        self.chunks.append(bytes(chunk))
        return len(chunk)


@settings(max_examples=40, deadline=None)
@given(piece=st.integers(1, 90), packed=st.booleans(), drop=st.lists(st.booleans(), min_size=8))
def test_a_dataset_read_in_pieces_is_the_one_read_whole(
    tmp_path_factory: pytest.TempPathFactory, piece: int, packed: bool, drop: list[bool]
) -> None:
    """Read a piece at a time, a file's dataset holds no bytes and writes the same kept lines."""
    path = tmp_path_factory.mktemp("pieces") / "in.jsonl"
    path.write_bytes(gzip.compress(INPUT) if packed else INPUT)
    whole = parse_dataset(str(path), INPUT, JsonlOptions())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(streams, "PIECE_BYTES", piece)
        pieces = read_dataset(str(path), JsonlOptions())
    assert pieces.data is None
    assert [(e.name, e.text, e.size, e.tag) for e in pieces.entries] == [
        (e.name, e.text, e.size, e.tag) for e in whole.entries
    ]
    assert pieces.skipped == whole.skipped
    assert pieces.duplicate_ids == whole.duplicate_ids
    assert pieces.starts.tolist() == whole.starts.tolist()
    assert pieces.ends.tolist() == whole.ends.tolist()
    removed = np.array(drop[: len(whole)], dtype=bool)
    written, again = _Collect(), _Collect()
    write_kept(whole, removed, written)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(streams, "PIECE_BYTES", piece)
        write_kept(pieces, removed, again)
    assert b"".join(again.chunks) == b"".join(written.chunks)


def test_an_input_cut_short_before_the_kept_lines_are_written_is_an_error(
    tmp_path: Path,
) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(INPUT)
    dataset = read_dataset(str(path), JsonlOptions())
    path.write_bytes(INPUT[:20])
    with pytest.raises(InputError, match="changed while it was read"):
        write_kept(dataset, np.zeros(len(dataset), dtype=bool), _Collect())
