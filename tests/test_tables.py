"""Parquet files and saved Arrow datasets: records in, kept rows and records out, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

from simdup.cli import cli
from simdup.errors import DatasetError
from simdup.inputs.jsonl import JsonlOptions
from simdup.inputs.tables import TablePart, field_path, read_table_part, table_parts

BASE = [
    "the quick brown fox jumps over the lazy dog near the river bank today",
    "a completely different sentence about databases and query planners",
    "nothing alike here: sailing boats, harbours and a windy afternoon",
    "seven green parrots argue loudly about the price of mangoes at dawn",
]


def _texts(count: int) -> list[str]:
    """Pairs of near duplicates (rows 2k and 2k+1: one word apart), far from the others."""
    texts = []
    for k in range(count):
        own = " ".join(f"u{k // 2}x{j}" for j in range(14))
        texts.append(f"{BASE[k // 2 % len(BASE)]} {own}{' extra' if k % 2 else ''}")
    return texts


def _records(count: int) -> list[dict[str, Any]]:
    return [{"id": f"r{k:03d}", "text": text} for k, text in enumerate(_texts(count))]


def _jsonl(path: Path, records: Sequence[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _parquet(path: Path, table: pa.Table, group_rows: int = 7) -> Path:
    pq.write_table(table, path, row_group_size=group_rows)
    return path


def _invoke(runner: CliRunner, *args: str) -> Result:
    return runner.invoke(cli, list(args), catch_exceptions=False)


def _pairs(runner: CliRunner, *args: str) -> list[dict[str, Any]]:
    result = _invoke(runner, "scan", "--format", "jsonl", *args)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def _save_to_disk(directory: Path, shards: Sequence[pa.Table]) -> Path:
    """Write a dataset as ``datasets.save_to_disk`` does: Arrow streams and two JSON files."""
    directory.mkdir(parents=True)
    names = [f"data-{k:05d}-of-{len(shards):05d}.arrow" for k in range(len(shards))]
    for name, shard in zip(names, shards, strict=True):
        with (
            pa.OSFile(str(directory / name), "wb") as sink,
            pa.ipc.new_stream(sink, shard.schema) as writer,
        ):
            for batch in shard.to_batches(max_chunksize=5):
                writer.write_batch(batch)
    info = {
        "features": {name: {"dtype": "string", "_type": "Value"} for name in shards[0].schema.names}
    }
    (directory / "dataset_info.json").write_text(json.dumps(info), encoding="utf-8")
    state = {
        "_data_files": [{"filename": name} for name in names],
        "_fingerprint": "0123456789abcdef",
        "_format_type": None,
        "_split": "train",
    }
    (directory / "state.json").write_text(json.dumps(state), encoding="utf-8")
    return directory


# -- reading: types, nulls, nested fields --------------------------------------------------


def _typed(count: int) -> pa.Table:
    """The same texts as string, large string, dictionary and nested struct columns."""
    texts = _texts(count)
    texts[3] = None  # type: ignore[call-overload]
    ids = [f"r{k:03d}" for k in range(count)]
    return pa.table(
        {
            "id": pa.array(ids, pa.string()),
            "number": pa.array(range(count), pa.int64()),
            "text": pa.array(texts, pa.string()),
            "large": pa.array(texts, pa.large_string()),
            "coded": pa.array(texts, pa.string()).dictionary_encode(),
            "meta": pa.array(
                [{"body": t, "source": {"url": f"u{k}"}} for k, t in enumerate(texts)],
                pa.struct([("body", pa.string()), ("source", pa.struct([("url", pa.string())]))]),
            ),
        }
    )


@pytest.mark.parametrize("text_field", ["text", "large", "coded", "meta.body"])
def test_every_string_type_reads_as_the_same_records_as_json_lines(
    runner: CliRunner, tmp_path: Path, text_field: str
) -> None:
    table = _typed(40)
    path = _parquet(tmp_path / "typed.parquet", table)
    records = [r for r in _records(40) if r["id"] != "r003"]
    expected = _pairs(runner, "--jsonl", str(_jsonl(tmp_path / "same.jsonl", records)))
    found = _pairs(runner, "--parquet", str(path), "--text-field", text_field)
    assert found == expected
    assert len(found) > 10


def test_a_null_text_is_reported_as_skipped_and_ids_follow_json_lines_rules(
    runner: CliRunner, tmp_path: Path
) -> None:
    path = _parquet(tmp_path / "typed.parquet", _typed(12))
    result = _invoke(runner, "scan", "--parquet", str(path), "--format", "json", "-v")
    report = json.loads(result.stdout)
    assert {"path": f"{path}:4", "reason": "text field 'text' is null"} in report["skipped"]
    assert report["stats"]["documents"] == 11
    # A numeric id is named as JSON Lines names it; a nested one by dotted path.
    numbered = _pairs(runner, "--parquet", str(path), "--id-field", "number", "--all")
    assert {p["a"] for p in numbered} <= {str(k) for k in range(12)}
    by_url = _pairs(runner, "--parquet", str(path), "--id-field", "meta.source.url", "--all")
    assert {p["a"] for p in by_url} <= {f"u{k}" for k in range(12)}
    # --strict does not fail on null texts: they are skipped like empty files.
    assert _invoke(runner, "scan", "--parquet", str(path), "--strict", "-q").exit_code == 0


def test_field_paths_prefer_a_column_named_with_a_dot(tmp_path: Path) -> None:
    schema = pa.schema([("a.b", pa.string()), ("a", pa.struct([("b", pa.string())]))])
    assert field_path(schema, "a.b") == ["a.b"]
    assert field_path(pa.schema([schema.field(1)]), "a.b") == ["a", "b"]
    assert field_path(schema, "a.c") is None
    assert field_path(pa.schema([("x", pa.string())]), "x.y") is None


def test_row_groups_read_alone_give_what_the_whole_file_gives(tmp_path: Path) -> None:
    path = _parquet(tmp_path / "typed.parquet", _typed(30), group_rows=4)
    fields = JsonlOptions()
    parts, _, _ = table_parts([str(path)], "parquet", fields, split=True)
    assert len(parts) == 8
    assert [p.first_row for p in parts[:3]] == [1, 5, 9]
    whole = read_table_part(TablePart(str(path)), fields)
    pieces = [read_table_part(p, fields) for p in parts]
    assert [d for p in pieces for d in p[0]] == whole[0]
    assert [s for p in pieces for s in p[1]] == whole[1]


# -- several files: globs and saved datasets -----------------------------------------------


@pytest.fixture
def shards(tmp_path: Path) -> Path:
    records = _records(60)
    for k in range(3):
        part = records[k * 20 : (k + 1) * 20]
        _parquet(tmp_path / f"part-{k}.parquet", pa.Table.from_pylist(part))
    _jsonl(tmp_path / "all.jsonl", records)
    return tmp_path


def test_a_glob_reads_every_shard_once_as_json_lines_would(
    runner: CliRunner, shards: Path, simdup_script: str
) -> None:
    expected = _pairs(runner, "--jsonl", str(shards / "all.jsonl"))
    pattern = str(shards / "part-*.parquet")
    assert _pairs(runner, "--parquet", pattern, "--parquet", str(shards / "part-1.parquet")) == (
        expected
    )
    script = subprocess.run(
        [simdup_script, "scan", "--format", "jsonl", "--parquet", pattern],
        capture_output=True,
        check=True,
    )
    assert [json.loads(line) for line in script.stdout.splitlines()] == expected
    missing = _invoke(runner, "scan", "--parquet", str(shards / "none-*.parquet"))
    assert missing.exit_code == 2
    assert "no file matches" in missing.output


def test_a_saved_dataset_of_several_shards_reads_as_its_records(
    runner: CliRunner, tmp_path: Path
) -> None:
    records = _records(50)
    shards = [pa.Table.from_pylist(records[k : k + 17]) for k in range(0, 50, 17)]
    saved = _save_to_disk(tmp_path / "saved", shards)
    expected = _pairs(runner, "--jsonl", str(_jsonl(tmp_path / "all.jsonl", records)))
    assert _pairs(runner, "--arrow", str(saved)) == expected
    # A dictionary of splits reads each split in the order it lists them.
    splits = tmp_path / "splits"
    _save_to_disk(splits / "train", shards[:2])
    _save_to_disk(splits / "test", shards[2:])
    (splits / "dataset_dict.json").write_text('{"splits": ["train", "test"]}', encoding="utf-8")
    assert _pairs(runner, "--arrow", str(splits)) == expected


# -- outputs --------------------------------------------------------------------------------


def test_dedupe_keeps_every_column_and_the_schema_in_input_order(
    runner: CliRunner, tmp_path: Path
) -> None:
    table = _typed(40)
    path = _parquet(tmp_path / "typed.parquet", table, group_rows=16)
    kept, removed = tmp_path / "kept.parquet", tmp_path / "removed.parquet"
    args = ["dedupe", "--parquet", str(path), "-o", str(kept), "--removed", str(removed)]
    result = _invoke(runner, *args, "-v")
    assert result.exit_code == 0, result.output
    assert f"kept as is {path}:4: text field 'text' is null" in result.stderr
    out = pq.read_table(kept)
    assert out.schema.equals(table.schema, check_metadata=False)
    gone = pq.read_table(removed).to_pylist()
    lines = {r["line"] for r in gone}
    assert 0 < len(gone) < 40
    assert out.to_pylist() == [r for k, r in enumerate(table.to_pylist(), 1) if k not in lines]
    assert pq.ParquetFile(kept).num_row_groups == 3  # one per input row group
    # --removed holds the records --removed writes as JSON Lines.
    as_jsonl = tmp_path / "removed.jsonl"
    _invoke(runner, "dedupe", "--parquet", str(path), "--removed", str(as_jsonl), "-q")
    assert [json.loads(line) for line in as_jsonl.read_text().splitlines()] == gone


def test_the_kept_rows_are_the_kept_lines_of_the_same_json_lines(
    runner: CliRunner, tmp_path: Path
) -> None:
    records = _records(60)
    source = _jsonl(tmp_path / "in.jsonl", records)
    path = _parquet(tmp_path / "in.parquet", pa.Table.from_pylist(records))
    _invoke(runner, "dedupe", "--jsonl", str(source), "-o", str(tmp_path / "k.jsonl"), "-q")
    _invoke(runner, "dedupe", "--parquet", str(path), "-o", str(tmp_path / "k.parquet"), "-q")
    lines = (tmp_path / "k.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == pq.read_table(tmp_path / "k.parquet").to_pylist()
    assert len(lines) < 60


@pytest.mark.parametrize(
    "compression",
    ["zstd", "gzip", "none", {"id": "zstd", "text": "gzip"}],
    ids=["zstd", "gzip", "none", "per-column"],
)
def test_kept_rows_are_compressed_as_their_input(
    runner: CliRunner, tmp_path: Path, compression: str | dict[str, str]
) -> None:
    path = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(_records(30)), path, compression=compression)
    kept = tmp_path / "kept.parquet"
    result = _invoke(runner, "dedupe", "--parquet", str(path), "-o", str(kept), "-q")
    assert result.exit_code == 0, result.output

    def used(name: Path) -> list[str]:
        group = pq.ParquetFile(name).metadata.row_group(0)
        return [group.column(i).compression for i in range(group.num_columns)]

    assert used(kept) == used(path)
    assert pq.read_table(kept).num_rows < 30


def test_a_saved_dataset_is_deduplicated_into_parquet_keeping_its_schema(
    runner: CliRunner, tmp_path: Path
) -> None:
    table = _typed(30)
    saved = _save_to_disk(tmp_path / "saved", [table.slice(0, 13), table.slice(13)])
    kept = tmp_path / "kept.parquet"
    result = _invoke(runner, "dedupe", "--arrow", str(saved), "-o", str(kept), "-q")
    assert result.exit_code == 0, result.output
    out = pq.read_table(kept)
    assert out.schema.equals(table.schema, check_metadata=False)
    assert 0 < out.num_rows < 30


def test_scan_writes_parquet_pairs_by_name_or_format(runner: CliRunner, shards: Path) -> None:
    expected = _pairs(runner, "--jsonl", str(shards / "all.jsonl"))
    named = shards / "pairs.parquet"
    _invoke(runner, "scan", "--jsonl", str(shards / "all.jsonl"), "-o", str(named), "-q")
    assert pq.read_table(named).to_pylist() == expected
    chosen = _invoke(runner, "scan", "--jsonl", str(shards / "all.jsonl"), "--format", "parquet")
    assert pq.read_table(pa.BufferReader(chosen.stdout_bytes)).to_pylist() == expected
    # An explicit format wins over the name.
    other = shards / "pairs-json.parquet"
    _invoke(
        runner, "scan", "--jsonl", str(shards / "all.jsonl"), "--format", "json", "-o", str(other)
    )
    assert other.read_bytes().startswith(b'{"simdup"')


def test_clusters_are_not_dropped_silently_from_parquet_pairs(
    runner: CliRunner, shards: Path, simdup_script: str
) -> None:
    corpus = str(shards / "all.jsonl")
    named = shards / "pairs.parquet"
    for how in (["-o", str(named)], ["--format", "parquet"]):
        result = runner.invoke(cli, ["scan", "--jsonl", corpus, "--clusters", *how])
        assert result.exit_code == 2, result.output
        assert "--clusters" in result.stderr
        assert "--format jsonl" in result.stderr
        assert not named.exists()
    run = subprocess.run(
        [simdup_script, "scan", "--jsonl", corpus, "--clusters", "-o", str(named)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 2
    assert not named.exists()
    assert "Traceback" not in run.stderr
    # A format that holds clusters writes them.
    kept = _invoke(runner, "scan", "--jsonl", corpus, "--clusters", "--format", "jsonl")
    assert kept.exit_code == 0
    assert b'"representative"' in kept.stdout_bytes


# -- bad input: one line, exit status 2, nothing written -----------------------------------


def _refused(runner: CliRunner, tmp_path: Path, *args: str) -> str:
    """Run a dedupe that must be refused; return its message."""
    kept = tmp_path / "kept.parquet"
    result = runner.invoke(cli, ["dedupe", *args, "-o", str(kept)])
    assert result.exit_code == 2, result.output
    assert not kept.exists()
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("Error: ")
    return lines[0]


def test_bad_files_are_refused_in_one_line(runner: CliRunner, tmp_path: Path) -> None:
    good = _parquet(tmp_path / "good.parquet", pa.Table.from_pylist(_records(20)))
    data = good.read_bytes()
    (tmp_path / "text.parquet").write_text("not parquet at all")
    (tmp_path / "cut.parquet").write_bytes(data[: len(data) // 2])
    damaged = bytearray(data)
    damaged[8:60] = b"\xff" * 52
    (tmp_path / "damaged.parquet").write_bytes(bytes(damaged))
    for name in ("text", "cut", "damaged"):
        message = _refused(runner, tmp_path, "--parquet", str(tmp_path / f"{name}.parquet"))
        assert "not a readable Parquet file, or damaged" in message
    message = _refused(runner, tmp_path, "--parquet", str(good), "--text-field", "body")
    assert "text field 'body' is missing" in message
    numbers = _parquet(tmp_path / "numbers.parquet", pa.table({"text": [1, 2]}))
    assert "is a int64 column, not strings" in _refused(runner, tmp_path, "--parquet", str(numbers))
    other = _parquet(tmp_path / "other.parquet", pa.table({"id": [1], "text": ["x"]}))
    mixed = _refused(runner, tmp_path, "--parquet", str(good), "--parquet", str(other))
    assert "schema differs" in mixed
    assert "column 'id' is int64, not string" in mixed
    assert "not a saved dataset" in _refused(runner, tmp_path, "--arrow", str(tmp_path))
    # scan refuses alike, before writing.
    pairs = tmp_path / "pairs.json"
    args = ["scan", "--parquet", str(other), "--parquet", str(good), "-o", str(pairs)]
    result = runner.invoke(cli, args)
    assert result.exit_code == 2
    assert not pairs.exists()


def test_bad_files_are_refused_by_the_console_script(tmp_path: Path, simdup_script: str) -> None:
    (tmp_path / "text.parquet").write_text("not parquet at all")
    result = subprocess.run(
        [simdup_script, "scan", "--parquet", str(tmp_path / "text.parquet")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


def test_without_pyarrow_the_error_names_the_extra(tmp_path: Path) -> None:
    path = _parquet(tmp_path / "in.parquet", pa.Table.from_pylist(_records(4)))
    code = (
        "import sys; sys.modules['pyarrow'] = None; from simdup.cli import main; "
        "sys.argv = ['simdup', 'scan', '--parquet', sys.argv[1]]; main()"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "Error: Parquet and Arrow need pyarrow; install it with: pip install 'simdup[parquet]'"
    )


def test_an_output_is_never_one_of_the_tables_read(runner: CliRunner, tmp_path: Path) -> None:
    path = _parquet(tmp_path / "in.parquet", pa.Table.from_pylist(_records(10)))
    before = path.read_bytes()
    scan = runner.invoke(cli, ["scan", "--parquet", str(path), "-o", str(path)])
    assert scan.exit_code == 2
    assert "it is the input --parquet" in scan.output
    dedupe = runner.invoke(cli, ["dedupe", "--parquet", str(path), "--removed", str(path)])
    assert dedupe.exit_code == 2
    assert "is the input --parquet" in dedupe.output
    saved = _save_to_disk(tmp_path / "saved", [pa.Table.from_pylist(_records(10))])
    arrow_file = saved / "data-00000-of-00001.arrow"
    guarded = runner.invoke(cli, ["scan", "--arrow", str(saved), "-o", str(arrow_file)])
    assert guarded.exit_code == 2
    assert "it is the input --arrow" in guarded.output
    assert path.read_bytes() == before


def test_kept_json_lines_are_not_written_as_parquet(runner: CliRunner, tmp_path: Path) -> None:
    source = _jsonl(tmp_path / "in.jsonl", _records(10))
    kept = tmp_path / "kept.parquet"
    refused = runner.invoke(cli, ["dedupe", "--jsonl", str(source), "-o", str(kept)])
    assert refused.exit_code == 2
    assert not kept.exists()
    assert "kept JSON Lines are written as they were read" in refused.output
    mixed = runner.invoke(cli, ["dedupe", "--jsonl", str(source), "--arrow", str(tmp_path)])
    assert mixed.exit_code == 2
    assert "give one dataset" in mixed.output


def test_library_errors_are_dataset_errors(tmp_path: Path) -> None:
    (tmp_path / "x.parquet").write_text("nope")
    with pytest.raises(DatasetError, match="not a readable Parquet file"):
        table_parts([str(tmp_path / "x.parquet")], "parquet", JsonlOptions())


def test_a_rescan_replaces_its_own_parquet_pairs_inside_the_corpus(
    runner: CliRunner, tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for k, text in enumerate(_texts(6)):
        (corpus / f"doc{k}.txt").write_text(text, encoding="utf-8")
    pairs = corpus / "pairs.parquet"
    for _ in range(2):
        result = runner.invoke(cli, ["scan", str(corpus), "-o", str(pairs), "-q"])
        assert result.exit_code == 0, result.output
    assert pq.read_table(pairs).num_rows == 3
    other = corpus / "other.parquet"
    pq.write_table(pa.table({"a": ["x"]}), other)
    refused = runner.invoke(cli, ["scan", str(corpus), "-o", str(other)])
    assert refused.exit_code == 2
    assert "refusing to write -o" in refused.output


def test_an_index_names_each_table_file_as_the_origin_of_its_rows(
    runner: CliRunner, shards: Path
) -> None:
    db = str(shards / "index.db")
    pattern = str(shards / "part-*.parquet")
    added = _invoke(runner, "index", "add", "--db", db, "--parquet", pattern, "-q")
    assert added.exit_code == 0, added.output
    stats = _invoke(runner, "index", "stats", "--db", db, "--format", "json")
    origins = json.loads(stats.stdout)["origins"]
    assert origins == {f"parquet:{shards / f'part-{k}.parquet'}": 20 for k in range(3)}


def test_parquet_urls_are_read_through_fsspec(runner: CliRunner, shards: Path) -> None:
    import fsspec  # type: ignore[import-untyped,unused-ignore]

    memory = fsspec.filesystem("memory")
    for k in range(3):
        memory.pipe(f"/tables/part-{k}.parquet", (shards / f"part-{k}.parquet").read_bytes())
    expected = _pairs(runner, "--jsonl", str(shards / "all.jsonl"))
    assert _pairs(runner, "--parquet", "memory://tables/part-*.parquet") == expected
    missing = runner.invoke(cli, ["scan", "--parquet", "memory://tables/none.parquet"])
    assert missing.exit_code == 4
    assert missing.stderr.count("\n") == 1
