"""Reports are written a batch of pairs at a time, byte for byte what one string would be.

A report of millions of pairs must not be held whole (as :class:`Pair` objects, records or
text): each format is made in pieces from the result's arrays. These tests keep a plain
reference of what the report is (every pair made at once, sorted by its names in Python,
the document encoded whole) and check the pieces against it, and that a long report's
memory stays that of a batch.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import subprocess
import sys
import tracemalloc
import weakref
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from simdup import __version__
from simdup.cli import cli
from simdup.cli.output import parquet_pieces
from simdup.model import _COLUMNS, FEW_FEATURES, Cluster, Pair, PairArrays, PairFields, ScanResult
from simdup.params import Params
from simdup.report import fields, render
from simdup.report import shown as showing
from simdup.report.fields import dumps, pair_record
from simdup.report.render import (
    CLUSTER_COLUMNS,
    PAIR_FIELDS,
    ReportOptions,
    cluster_record,
    csv_pieces,
    json_pieces,
    jsonl_pieces,
    report_clusters,
    selected_pairs,
    stats_record,
    summary,
    to_csv,
    to_json,
    to_jsonl,
)
from simdup.report.shown import field_batches
from simdup.search.result import _canonical

NAMES = st.lists(
    st.text(st.characters(codec="utf-8") | st.sampled_from(["\udcff", "é", "中"]), max_size=6),
    min_size=2,
    max_size=12,
    unique=True,
)


@st.composite
def results(draw: st.DrawFn) -> ScanResult:
    """A result with any names (sorted or not), pairs, distances and cosines."""
    names = draw(NAMES)
    if draw(st.booleans()):
        names = sorted(names)
    n = len(names)
    every = [(i, j) for i in range(n) for j in range(i + 1, n)]
    chosen = draw(st.lists(st.sampled_from(every), unique=True, max_size=40))
    m = len(chosen)
    cosines = draw(
        st.lists(st.sampled_from([math.nan, 1.0, 0.95, 0.9, 0.85, 0.5]), min_size=m, max_size=m)
    )
    hamming = draw(st.lists(st.integers(0, 64), min_size=m, max_size=m))
    counts = draw(st.lists(st.integers(-1, 2 * FEW_FEATURES), min_size=n, max_size=n))
    pairs = PairArrays(
        np.array(chosen, dtype=np.int64).reshape(-1, 2),
        np.array(hamming, dtype=np.int64),
        np.array([1.0 - h / 64 for h in hamming], dtype=np.float64),
        np.array(cosines, dtype=np.float64),
    )
    return ScanResult(
        names=names,
        params=Params(threshold=0.9),
        pairs=pairs,
        feature_counts=np.array(counts, dtype=np.int64),
        fingerprints=np.zeros((n, 1), dtype=np.uint64),
        stats={"documents": n, "skipped": 0, "candidates": m, "pairs": m},
    )


def reference_pairs(result: ScanResult, options: ReportOptions) -> list[Pair]:
    """The pairs shown, made one by one and sorted in Python (what the report must equal)."""
    pairs = result.pairs
    few = result.few_features()
    made = []
    for k, (i, j) in enumerate(pairs.pairs.tolist()):
        cosine, hamming = float(pairs.cosine[k]), int(pairs.hamming[k])
        known = not math.isnan(cosine)
        score = cosine if known else float(pairs.estimated[k])
        made.append(
            Pair(
                a=result.names[i],
                b=result.names[j],
                hamming=hamming,
                estimated_cosine=float(pairs.estimated[k]),
                cosine=cosine if known else None,
                above_threshold=score >= result.params.threshold,
                few_features=bool(few[i] or few[j]),
                identical=(cosine == 1.0) if known else (None if hamming == 0 else False),
            )
        )
    if options.sort == "hamming":
        made.sort(key=lambda p: (p.hamming, p.a, p.b))
    elif options.sort == "path":
        made.sort(key=lambda p: (p.a, p.b))
    return made if options.limit is None else made[: options.limit]


def reference_json(result: ScanResult, options: ReportOptions, pairs: list[Pair]) -> str:
    """The JSON report encoded as one document."""
    document = {
        "simdup": __version__,
        "params": {**result.params.as_dict(), **options.as_dict()},
        "stats": stats_record(result, options, len(pairs)),
        "pairs": [pair_record(p) for p in pairs],
        "clusters": [cluster_record(c) for c in report_clusters(result, options)],
        "skipped": [{"path": s.path, "reason": s.reason} for s in result.skipped],
        "plan": result.plan,
    }
    return dumps(document) + "\n"


OPTIONS = st.builds(
    ReportOptions,
    sort=st.sampled_from(["cosine", "hamming", "path"]),
    limit=st.none() | st.integers(0, 50),
    clusters=st.none() | st.sampled_from(["representative", "linked"]),
)


@settings(max_examples=150, deadline=None)
@given(results(), OPTIONS, st.integers(1, 5))
def test_pieces_are_the_report_made_whole(
    result: ScanResult, options: ReportOptions, batch: int
) -> None:
    reference = reference_pairs(result, options)
    shown = selected_pairs(result, options)
    saved = showing.BATCH_PAIRS
    showing.BATCH_PAIRS = batch
    try:
        assert list(shown) == reference
        assert len(shown) == len(reference)
        assert shown[:3] == reference[:3]
        assert shown[::-1] == reference[::-1]
        assert shown[1::2] == reference[1::2]
        assert shown[-2:] == reference[-2:]
        if reference:
            assert shown[-1] == reference[-1]
        groups = report_clusters(result, options)
        assert "".join(json_pieces(result, options, {}, shown)) == reference_json(
            result, options, reference
        )
        assert "".join(jsonl_pieces(shown, groups)) == to_jsonl(reference, groups)
        assert to_jsonl(reference, groups) == reference_jsonl(reference, groups)
        assert "".join(csv_pieces(shown, groups or None)) == to_csv(reference, groups or None)
        assert to_csv(reference, groups or None) == reference_csv(reference, groups or None)
        assert summary(result, shown) == summary(result, reference)
        columns = map(fields.pair_record_columns, field_batches(shown))
        records = [[pair_record(p) for p in reference]]
        assert b"".join(parquet_pieces(columns, render.PAIR_TYPES)) == b"".join(
            parquet_pieces(records, render.PAIR_TYPES)
        )
    finally:
        showing.BATCH_PAIRS = saved
    assert to_json(result, options, {}, shown) == reference_json(result, options, reference)


def reference_jsonl(pairs: list[Pair], groups: list[Cluster]) -> str:
    """The JSON Lines report, each pair's record encoded on its own line, then the groups."""
    lines = [dumps(pair_record(p)) for p in pairs]
    lines += [dumps({"cluster": k, **cluster_record(c)}) for k, c in enumerate(groups, 1)]
    return "".join(line + "\n" for line in lines)


def reference_csv(pairs: list[Pair], groups: list[Cluster] | None) -> str:
    """The CSV report, each pair's record a row (nulls empty, flags as in JSON)."""

    def cell(value: object) -> object:
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        return value

    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(PAIR_FIELDS if groups is None else PAIR_FIELDS + CLUSTER_COLUMNS)
    group_of = {m: (k, c.representative) for k, c in enumerate(groups or (), 1) for m in c.members}
    for pair in pairs:
        record = pair_record(pair)
        row = [cell(record[f]) for f in PAIR_FIELDS]
        if groups is not None:
            group = group_of.get(pair.a)
            same = group is not None and group == group_of.get(pair.b)
            row += [cell(v) for v in (group if same and group else (None, None))]
        writer.writerow(row)
    return out.getvalue()


def many_pairs(n: int) -> ScanResult:
    """A result of ``n`` documents, each paired with the next."""
    names = [f"corpus/part-{k:07d}.txt" for k in range(n)]
    rows = np.arange(n - 1, dtype=np.int64)
    return ScanResult(
        names=names,
        params=Params(threshold=0.9),
        pairs=PairArrays(
            np.stack([rows, rows + 1], axis=1),
            rows % 7,
            np.full(n - 1, 0.97),
            np.linspace(1.0, 0.9, n - 1),
        ),
        feature_counts=np.full(n, 100, dtype=np.int64),
        fingerprints=np.zeros((n, 1), dtype=np.uint64),
        stats={"documents": n, "skipped": 0, "candidates": n - 1, "pairs": n - 1},
    )


@pytest.mark.parametrize("sort", ["cosine", "hamming"])
@pytest.mark.parametrize("fmt", ["json", "jsonl", "csv"])
def test_a_long_report_holds_a_batch_not_the_report(
    fmt: str, sort: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A report holds a batch of pairs and their order, not every pair.

    Made whole, a pair took about 250 bytes as objects and 190 more as text; streamed, a
    report holds a batch and its order (8 bytes a pair; 48 while sorting).
    """
    monkeypatch.setattr(showing, "BATCH_PAIRS", 512)
    pairs = 60_000
    result = many_pairs(pairs + 1)
    options = ReportOptions(sort=sort)  # type: ignore[arg-type]
    written = 0
    tracemalloc.start()
    try:
        shown = selected_pairs(result, options)
        if fmt == "json":
            pieces = json_pieces(result, options, {}, shown)
        else:
            pieces = jsonl_pieces(shown) if fmt == "jsonl" else csv_pieces(shown)
        for piece in pieces:
            written += len(piece)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert written > 80 * pairs
    assert peak < 80 * pairs, f"{peak:,} bytes held to write {written:,}"


def test_a_report_of_more_pairs_than_a_batch_is_whole(tmp_path: Path) -> None:
    """131 copies: 8,515 pairs, more than one batch, through the installed command."""
    corpus = tmp_path / "copies.jsonl"
    text = "the same words in every copy of this document, one hundred and thirty-one times"
    corpus.write_text(
        "".join(json.dumps({"id": f"d{k:03d}", "text": text}) + "\n" for k in range(131))
    )
    pairs = 131 * 130 // 2
    assert pairs > showing.BATCH_PAIRS
    simdup = str(Path(sys.executable).parent / "simdup")
    done = subprocess.run(
        [simdup, "scan", "--jsonl", str(corpus), "--format", "json"],
        capture_output=True,
        check=True,
    )
    report = json.loads(done.stdout)
    assert len(report["pairs"]) == report["stats"]["pairs"] == pairs
    assert {(p["a"], p["b"]) for p in report["pairs"]} == {
        (f"d{i:03d}", f"d{j:03d}") for i in range(131) for j in range(i + 1, 131)
    }
    lines = CliRunner().invoke(cli, ["scan", "--jsonl", str(corpus), "--format", "jsonl"])
    assert lines.exit_code == 0, lines.output
    assert [json.loads(line) for line in io.StringIO(lines.stdout)] == report["pairs"]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "a": st.text(max_size=5) | st.just("\udcff"),
                "b": st.text(max_size=5),
                "hamming": st.integers(0, 512),
                "estimated_cosine": st.floats(-1, 1),
                "cosine": st.none() | st.floats(-1, 1),
                "above_threshold": st.booleans(),
                "few_features": st.booleans(),
                "identical": st.none() | st.booleans(),
            }
        ),
        max_size=60,
    ),
    st.integers(1, 7),
    st.integers(1, 20),
)
def test_parquet_written_in_batches_is_the_table_written_whole(
    records: list[dict[str, object]], batch: int, group: int
) -> None:
    """Row groups of ``group`` rows, whatever the batches: the bytes of one table written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from simdup.inputs.tables import _safe_text, record_batch_writes

    schema = pa.schema([(name, getattr(pa, kind)()) for name, kind in render.PAIR_TYPES])
    columns = {
        name: [_safe_text(r[name]) if kind == "string" else r[name] for r in records]
        for name, kind in render.PAIR_TYPES
    }
    whole = io.BytesIO()
    pq.write_table(pa.table(columns, schema=schema), whole, row_group_size=group)
    batches = [records[k : k + batch] for k in range(0, len(records), batch)]
    pieces = io.BytesIO()
    list(record_batch_writes(batches, render.PAIR_TYPES, pieces, group_rows=group))
    assert pieces.getvalue() == whole.getvalue()
    assert pq.read_table(io.BytesIO(pieces.getvalue())).num_rows == len(records)
    # Passed on as each row group is written, never the file whole.
    streamed = list(parquet_pieces(iter(batches), render.PAIR_TYPES, group_rows=group))
    assert b"".join(streamed) == whole.getvalue()
    assert len(streamed) == len(records) // group + 1
    assert max(len(p) for p in streamed) < len(whole.getvalue()) or len(streamed) == 1


@settings(max_examples=100, deadline=None)
@given(st.lists(results(), max_size=4))
def test_pairs_are_gathered_once_and_sorted_in_place(parts: list[ScanResult]) -> None:
    """Parts are emptied as they are joined; the order is cosine, Hamming, then names."""
    pieces = [part.pairs for part in parts]
    rows = [
        (float(p.score()[k]), int(p.hamming[k]), i, j, float(p.estimated[k]), float(p.cosine[k]))
        for p in pieces
        for k, (i, j) in enumerate(p.pairs.tolist())
    ]
    expected = sorted(rows, key=lambda r: (-r[0], r[1], r[2], r[3]))
    kept = list(pieces)
    gathered = PairArrays.gather(kept)
    assert kept == []
    assert all(len(p) == 0 for p in pieces)
    if len(gathered):
        gathered.permute(_canonical(gathered))
    got = [
        (i, j, h, e, c)
        for (i, j), h, e, c in zip(
            gathered.pairs.tolist(),
            gathered.hamming.tolist(),
            gathered.estimated.tolist(),
            gathered.cosine.tolist(),
            strict=True,
        )
    ]
    assert [g[:3] for g in got] == [(r[2], r[3], r[1]) for r in expected]
    assert [g[3] for g in got] == [r[4] for r in expected]
    assert np.array_equal([g[4] for g in got], [r[5] for r in expected], equal_nan=True)


def test_gathered_parts_let_their_arrays_go() -> None:
    """The parts' own arrays are freed as they are joined: the pairs are held once."""
    rng = np.random.default_rng(7)
    parts = [
        PairArrays(
            rng.integers(0, 100, (50_000, 2)),
            rng.integers(0, 64, 50_000),
            rng.random(50_000),
            rng.random(50_000),
        )
        for _ in range(4)
    ]
    watched = [weakref.ref(getattr(p, column)) for p in parts for column in _COLUMNS]
    gathered = PairArrays.gather(list(parts))
    assert all(ref() is None for ref in watched)  # no empty view keeps one alive
    assert len(gathered) == 200_000
    assert all(len(p) == 0 for p in parts)


@settings(max_examples=300, deadline=None)
@given(
    a=st.text(),
    b=st.text(),
    hamming=st.integers(0, 512),
    estimated=st.floats(-1.0, 1.0) | st.just(float("nan")),
    cosine=st.none() | st.floats(-1.0, 1.0) | st.just(float("nan")),
    flags=st.tuples(st.booleans(), st.booleans(), st.none() | st.booleans()),
)
def test_a_pair_from_its_template_is_the_encoded_record(
    a: str,
    b: str,
    hamming: int,
    estimated: float,
    cosine: float | None,
    flags: tuple[bool, bool, bool | None],
) -> None:
    pair = Pair(a, b, hamming, estimated, cosine, *flags)
    texts = fields.pair_texts(PairFields.of([pair]))
    assert texts == [fields.dumps(fields.pair_record(pair))]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.builds(
            Pair,
            st.sampled_from(["x", "y", "\udcff", 'q"\n']) | st.text(),
            st.sampled_from(["x", "y", "z"]) | st.text(),
            st.integers(0, 512),
            st.sampled_from([1.0, 0.96875, 0.9375]) | st.floats(-1.0, 1.0),
            st.none() | st.floats(-1.0, 1.0) | st.just(float("nan")),
            st.booleans(),
            st.booleans(),
            st.none() | st.booleans(),
        ),
        max_size=30,
    )
)
def test_a_batch_of_pairs_from_their_fields_is_each_encoded_record(pairs: list[Pair]) -> None:
    # Names and estimates repeat within a batch: each is encoded once and used again.
    texts = fields.pair_texts(PairFields.of(pairs))
    assert texts == [fields.dumps(fields.pair_record(p)) for p in pairs]
    assert PairFields.of(pairs).pairs() == [
        p if p.cosine is None or not math.isnan(p.cosine) else dataclasses.replace(p, cosine=None)
        for p in pairs
    ]


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.floats(allow_infinity=False)
        | st.floats(-1.0, 1.0)
        | st.floats(-1e-3, 1e-3)
        | st.integers(-(2**20), 2**20).map(lambda k: k / 2**20)  # ties at the 7th decimal
        | st.integers(-(10**7), 10**7).map(lambda k: k / 10**7),
        max_size=20,
    )
)
def test_cosines_are_written_as_the_encoder_writes_them_rounded(values: list[float]) -> None:
    expected = ["null" if v != v else json.dumps(round(v, fields.DIGITS)) for v in values]
    assert fields.cosine_texts(values) == expected
