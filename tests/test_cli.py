"""The command line, through click's CliRunner and through the installed console script."""

from __future__ import annotations

import csv
import gzip
import io
import json
import subprocess
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from simdup import __version__
from simdup.cli import cli
from simdup.fingerprints.simhash import fingerprint
from simdup.fingerprints.weights import term_weights
from simdup.search.verify import cosine
from simdup.text.tokens import tokenize

SIMILAR = {("doc0.txt", "doc1.txt"), ("doc0.txt", "doc6.txt"), ("doc1.txt", "doc6.txt"),
           ("doc2.txt", "doc3.txt")}  # fmt: skip


def run(runner: CliRunner, *args: str, stdin: str | bytes | None = None) -> Result:
    return runner.invoke(cli, list(args), input=stdin, catch_exceptions=False)


def scan_json(runner: CliRunner, *args: str) -> dict[str, Any]:
    result = run(runner, "scan", "--format", "json", *args)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def short_pairs(pairs: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(Path(p["a"]).name, Path(p["b"]).name) for p in pairs}


def true_cosine(a: Path, b: Path) -> float:
    return cosine(term_weights(tokenize(a.read_text())), term_weights(tokenize(b.read_text())))


def test_scan_json_reports_the_similar_pairs_with_true_cosines(
    runner: CliRunner, sample_corpus: Path
) -> None:
    data = scan_json(runner, str(sample_corpus))
    assert data["simdup"] == __version__
    assert short_pairs(data["pairs"]) == SIMILAR
    for pair in data["pairs"]:
        expected = true_cosine(Path(pair["a"]), Path(pair["b"]))
        assert pair["cosine"] == pytest.approx(expected, abs=1e-6)
        assert pair["cosine"] >= data["params"]["threshold"]
        assert list(pair) == [
            "a", "b", "hamming", "estimated_cosine", "cosine", "above_threshold", "few_features",
            "identical",
        ]  # fmt: skip
    cosines = [p["cosine"] for p in data["pairs"]]
    assert cosines == sorted(cosines, reverse=True)
    assert set(data) == {"simdup", "params", "stats", "pairs", "clusters", "skipped", "plan"}
    assert data["params"]["scheme"] == "auto"
    assert data["plan"]["source"] == "exact"  # a small corpus: every pair
    assert data["plan"]["recall_at_threshold"] >= data["params"]["recall"]
    assert data["stats"]["documents"] == 9  # eight documents and the corpus README
    assert data["stats"]["pairs"] == 4


def test_scan_json_params_record_every_setting(runner: CliRunner, sample_corpus: Path) -> None:
    data = scan_json(
        runner, str(sample_corpus), "--bits", "128", "--seed", "7", "--weighting", "log",
        "--ngram", "2", "--no-stopwords", "--threshold", "0.5", "--scheme", "loose",
    )  # fmt: skip
    params = data["params"]
    assert params["bits"] == 128
    assert params["seed"] == 7
    assert params["weighting"] == "log"
    assert params["ngram"] == 2
    assert params["stopwords"] is False
    assert params["threshold"] == 0.5
    assert params["scheme"] == "loose"
    for key in ("blocks", "max_distance", "recall", "all", "limit", "sort", "max_size", "hidden"):
        assert key in params


def test_hamming_matches_library_fingerprints(runner: CliRunner, sample_corpus: Path) -> None:
    data = scan_json(runner, str(sample_corpus), "--bits", "32")
    for pair in data["pairs"]:
        fa, fb = (
            fingerprint(term_weights(tokenize(Path(p).read_text())), 32, 12345)
            for p in (pair["a"], pair["b"])
        )
        assert pair["hamming"] == (fa ^ fb).bit_count()


def test_table_output_lists_pairs_and_summary(runner: CliRunner, sample_corpus: Path) -> None:
    result = run(runner, "scan", str(sample_corpus))
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert "Document A" in lines[0]
    assert "Cosine" in lines[0]
    assert len(lines) == 1 + 4
    assert "doc0.txt" in lines[1]
    assert "doc6.txt" in lines[1]
    assert lines[1].rstrip().endswith("1.000 (copy)")  # an exact copy, marked
    assert "\x1b" not in result.stdout  # not a terminal: plain text
    assert "9 documents" in result.stderr
    assert "4 pairs shown" in result.stderr


def test_quiet_prints_only_results(runner: CliRunner, sample_corpus: Path) -> None:
    result = run(runner, "scan", "-q", str(sample_corpus))
    assert result.stderr == ""
    assert "doc2.txt" in result.stdout


def test_jsonl_one_object_per_pair(runner: CliRunner, sample_corpus: Path) -> None:
    result = run(runner, "scan", "--format", "jsonl", str(sample_corpus))
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert short_pairs(records) == SIMILAR
    assert all(r["a"].startswith(str(sample_corpus)) for r in records)


def test_csv_has_header_and_rows(runner: CliRunner, sample_corpus: Path) -> None:
    result = run(runner, "scan", "--format", "csv", str(sample_corpus))
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 4
    assert {float(r["cosine"]) >= 0.8 for r in rows} == {True}
    assert rows[0]["hamming"] == "0"


def test_output_file_has_the_same_bytes_as_stdout(
    runner: CliRunner, sample_corpus: Path, tmp_path: Path
) -> None:
    for fmt in ("table", "json", "jsonl", "csv"):
        out = tmp_path / f"out.{fmt}"
        printed = run(runner, "scan", "-q", "--format", fmt, str(sample_corpus))
        written = run(runner, "scan", "-q", "--format", fmt, "-o", str(out), str(sample_corpus))
        assert written.stdout == ""
        assert out.read_bytes() == printed.stdout_bytes, fmt


def test_fail_on_match_exit_codes(runner: CliRunner, sample_corpus: Path) -> None:
    assert run(runner, "scan", "-q", "--fail-on-match", str(sample_corpus)).exit_code == 1
    unrelated = [str(sample_corpus / f"doc{i}.txt") for i in (4, 5, 7)]
    assert run(runner, "scan", "-q", "--fail-on-match", *unrelated).exit_code == 0
    assert run(runner, "scan", "-q", str(sample_corpus)).exit_code == 0


def test_threshold_all_and_limit(runner: CliRunner, sample_corpus: Path) -> None:
    strict = scan_json(runner, str(sample_corpus), "--threshold", "0.99")
    assert short_pairs(strict["pairs"]) == {("doc0.txt", "doc6.txt")}
    everything = scan_json(runner, str(sample_corpus), "--all", "--max-distance", "63")
    assert len(everything["pairs"]) == 36  # all pairs of nine documents
    below = [p for p in everything["pairs"] if not p["above_threshold"]]
    assert len(below) == 32
    assert all(p["cosine"] < 0.8 for p in below)
    limited = scan_json(runner, str(sample_corpus), "--limit", "2")
    assert len(limited["pairs"]) == 2
    assert limited["stats"]["pairs"] == 4


def test_sort_orders(runner: CliRunner, sample_corpus: Path) -> None:
    by_hamming = scan_json(runner, str(sample_corpus), "--sort", "hamming")["pairs"]
    assert [p["hamming"] for p in by_hamming] == sorted(p["hamming"] for p in by_hamming)
    by_path = scan_json(runner, str(sample_corpus), "--sort", "path")["pairs"]
    assert [(p["a"], p["b"]) for p in by_path] == sorted((p["a"], p["b"]) for p in by_path)


def test_clusters(runner: CliRunner, sample_corpus: Path) -> None:
    data = scan_json(runner, str(sample_corpus), "--clusters")
    members = [sorted(Path(m).name for m in c["members"]) for c in data["clusters"]]
    assert members == [["doc0.txt", "doc1.txt", "doc6.txt"], ["doc2.txt", "doc3.txt"]]
    assert data["clusters"][0]["size"] == 3
    assert data["clusters"][0]["min_cosine"] == pytest.approx(
        true_cosine(sample_corpus / "doc0.txt", sample_corpus / "doc1.txt"), abs=1e-6
    )
    table = run(runner, "scan", "--clusters", str(sample_corpus)).stdout
    assert "Members" in table


@pytest.mark.parametrize(
    ("args", "candidates_at_most"),
    [(("--scheme", "strict"), 1), (("--blocks", "2"), 4), (("--max-distance", "10"), 36)],
)
def test_blocking_options_change_candidates(
    runner: CliRunner, sample_corpus: Path, args: tuple[str, ...], candidates_at_most: int
) -> None:
    data = scan_json(runner, str(sample_corpus), *args)
    assert data["stats"]["candidates"] <= candidates_at_most
    assert ("doc0.txt", "doc6.txt") in short_pairs(data["pairs"])


def test_files_from_null_separated(runner: CliRunner, sample_corpus: Path) -> None:
    names = b"\0".join(str(sample_corpus / f"doc{i}.txt").encode() for i in (0, 1, 4))
    result = run(runner, "scan", "--files-from", "-", "-0", "--format", "jsonl", stdin=names)
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert short_pairs(records) == {("doc0.txt", "doc1.txt")}


def test_jsonl_corpus_named_by_id(runner: CliRunner, sample_corpus: Path, tmp_path: Path) -> None:
    lines = [
        json.dumps({"url": f"u{i}", "body": (sample_corpus / f"doc{i}.txt").read_text()})
        for i in range(8)
    ]
    path = tmp_path / "corpus.jsonl.gz"
    path.write_bytes(gzip.compress("\n".join(lines).encode()))
    data = scan_json(runner, "--jsonl", str(path), "--text-field", "body", "--id-field", "url")
    assert {(p["a"], p["b"]) for p in data["pairs"]} == {
        ("u0", "u1"), ("u0", "u6"), ("u1", "u6"), ("u2", "u3")
    }  # fmt: skip


def test_include_exclude_hidden_and_gzip(runner: CliRunner, sample_copy: Path) -> None:
    (sample_copy / ".hidden.txt").write_text((sample_copy / "doc2.txt").read_text())
    (sample_copy / "copy.txt.gz").write_bytes(
        gzip.compress((sample_copy / "doc4.txt").read_bytes())
    )
    default = short_pairs(scan_json(runner, str(sample_copy))["pairs"])
    assert ("copy.txt.gz", "doc4.txt") in default
    assert not any(".hidden.txt" in pair for pair in default)
    hidden = short_pairs(scan_json(runner, "--hidden", str(sample_copy))["pairs"])
    assert (".hidden.txt", "doc2.txt") in hidden
    only_txt = scan_json(runner, "--include", "*.txt", str(sample_copy))
    assert only_txt["stats"]["documents"] == 8
    no_doc0 = short_pairs(scan_json(runner, "--exclude", "doc0.*", str(sample_copy))["pairs"])
    assert not any("doc0.txt" in pair for pair in no_doc0)


def test_output_is_independent_of_creation_order(
    runner: CliRunner, sample_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = sorted(sample_corpus.iterdir())
    for name, order in (("f", files), ("b", list(reversed(files)))):
        (tmp_path / name).mkdir()
        for f in order:
            (tmp_path / name / f.name).write_bytes(f.read_bytes())
    monkeypatch.chdir(tmp_path)
    outputs = [
        run(runner, "scan", "-q", "--format", "json", "--clusters", "--all", root).stdout
        for root in ("f", "b")
    ]
    assert outputs[0].replace('"f/', '"X/') == outputs[1].replace('"b/', '"X/')
    assert (
        outputs[0]
        == run(runner, "scan", "-q", "--format", "json", "--clusters", "--all", "f").stdout
    )


def test_compare_table_and_json(runner: CliRunner, sample_corpus: Path) -> None:
    a, b = str(sample_corpus / "doc0.txt"), str(sample_corpus / "doc1.txt")
    table = run(runner, "compare", a, b)
    assert table.exit_code == 0
    assert "Hamming distance" in table.stdout
    assert "Top shared terms" in table.stdout
    data = json.loads(run(runner, "compare", "--format", "json", a, b).stdout)
    assert data["cosine"] == pytest.approx(true_cosine(Path(a), Path(b)), abs=1e-6)
    fa, fb = int(data["fingerprint_a"], 16), int(data["fingerprint_b"], 16)
    assert data["hamming"] == (fa ^ fb).bit_count()
    assert data["agreement"].count("0") == data["hamming"]
    assert len(data["agreement"]) == 64
    assert data["shared_terms"][0]["contribution"] > 0
    assert sum(t["contribution"] for t in data["shared_terms"]) <= data["cosine"] + 1e-6


def test_compare_reads_stdin(runner: CliRunner, sample_corpus: Path) -> None:
    text = (sample_corpus / "doc0.txt").read_text()
    data = json.loads(
        run(runner, "compare", "--format", "json", "-", str(sample_corpus / "doc6.txt"),
            stdin=text).stdout
    )  # fmt: skip
    assert data["hamming"] == 0
    assert data["cosine"] == 1.0
    assert data["a"] == "-"


def test_fingerprint_lines_and_jsonl(runner: CliRunner, sample_corpus: Path) -> None:
    doc0 = sample_corpus / "doc0.txt"
    expected = fingerprint(term_weights(tokenize(doc0.read_text())), 128, 12345)
    line = run(runner, "fingerprint", "--bits", "128", str(doc0)).stdout
    assert line == f"{expected:032x}  {doc0}\n"
    record = json.loads(run(runner, "fingerprint", "--format", "jsonl", str(doc0)).stdout)
    assert record["path"] == str(doc0)
    assert record["bits"] == 64
    assert record["seed"] == 12345
    assert len(record["fingerprint"]) == 16
    assert record["features"] > 8
    stdin = run(runner, "fingerprint", "-", stdin=doc0.read_text()).stdout
    assert stdin.split()[0] == format(fingerprint(term_weights(tokenize(doc0.read_text()))), "016x")


def test_match_without_texts(runner: CliRunner, sample_corpus: Path, tmp_path: Path) -> None:
    prints = tmp_path / "prints.txt"
    prints.write_text(run(runner, "fingerprint", str(sample_corpus)).stdout)
    data = json.loads(run(runner, "match", "--format", "json", str(prints)).stdout)
    assert ("doc0.txt", "doc6.txt") in short_pairs(data["pairs"])
    assert all(p["cosine"] is None for p in data["pairs"])
    jsonl = run(runner, "fingerprint", "--format", "jsonl", str(sample_corpus)).stdout
    again = json.loads(run(runner, "match", "--format", "json", "-", stdin=jsonl).stdout)
    assert again["pairs"] == data["pairs"]


def test_match_rejects_malformed_lines(runner: CliRunner, tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("zzzz  a.txt\n")
    result = runner.invoke(cli, ["match", str(bad)])
    assert result.exit_code == 4
    assert "bad.txt:1" in result.stderr
    assert "Traceback" not in result.output


def test_version_and_help_for_every_command(runner: CliRunner) -> None:
    assert __version__ in run(runner, "--version").stdout
    context = click.Context(cli)
    names = cli.list_commands(context)
    assert names == ["compare", "dedupe", "eval", "fingerprint", "index", "match", "scan", "serve"]
    for name in names:
        command = cli.get_command(context, name)
        assert command is not None, name
        text = run(runner, name, "--help").stdout
        assert command.help, name
        assert "Usage:" in text, name
        assert "Examples:" in text, name


@pytest.mark.parametrize(
    "args",
    [
        ["scan", "--bits", "0", "."],
        ["scan", "--bits", "x", "."],
        ["scan", "--seed", "-1", "."],
        ["scan", "--seed", str(2**53), "."],
        ["scan", "--threshold", "1.5", "."],
        ["scan", "--blocks", "65", "."],
        ["scan", "--blocks", "0", "."],
        ["scan", "--ngram", "0", "."],
        ["scan", "--scheme", "fuzzy", "."],
        ["scan", "--weighting", "bm25", "."],
        ["scan", "--format", "xml", "."],
        ["scan", "does-not-exist/"],
        ["scan", "-o", "no/such/dir/out.json", "."],
        ["scan"],
    ],
)
def test_usage_errors_exit_2_with_a_message(runner: CliRunner, args: list[str]) -> None:
    result = runner.invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert "Error" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_console_script_pipeline(simdup_script: str, sample_corpus: Path) -> None:
    found = subprocess.run(
        f"find {sample_corpus} -name 'doc*.txt' -print0 | "
        f"{simdup_script} scan --files-from - -0 --format jsonl",
        shell=True, capture_output=True, check=True, timeout=60,
    )  # fmt: skip
    records = [json.loads(line) for line in found.stdout.decode().splitlines()]
    assert short_pairs(records) == SIMILAR


def test_console_script_exit_status_and_streams(simdup_script: str, sample_corpus: Path) -> None:
    done = subprocess.run(
        [simdup_script, "scan", "--fail-on-match", "--format", "json", str(sample_corpus)],
        capture_output=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert json.loads(done.stdout)["stats"]["pairs"] == 4
    bad = subprocess.run(
        [simdup_script, "scan", "--bits", "0", "."], capture_output=True, timeout=60
    )
    assert bad.returncode == 2
    assert b"--bits" in bad.stderr
    assert b"Traceback" not in bad.stderr


def test_python_dash_m(sample_corpus: Path) -> None:
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "simdup", "scan", "-q", "--format", "jsonl", str(sample_corpus)],
        capture_output=True, timeout=60, check=True,
    )  # fmt: skip
    assert len(done.stdout.splitlines()) == 4


@pytest.mark.parametrize(
    ("redirect", "status", "message"),
    [
        (">&-", 4, "cannot write to standard output"),
        ("<&- --files-from -", 4, "cannot read standard input"),
        ("2>&- >/dev/null", 0, None),
    ],
)
def test_closed_standard_streams_give_a_message_not_a_traceback(
    simdup_script: str, sample_corpus: Path, redirect: str, status: int, message: str | None
) -> None:
    done = subprocess.run(
        f"{simdup_script} scan {sample_corpus} {redirect}",
        shell=True, capture_output=False, stderr=subprocess.PIPE, timeout=60,
    )  # fmt: skip
    assert done.returncode == status
    assert b"Traceback" not in done.stderr
    if message:
        assert message.encode() in done.stderr


def test_plan_prints_tables_and_stops(runner: CliRunner, sample_corpus: Path) -> None:
    text = run(runner, "scan", "--plan", str(sample_corpus)).stdout
    assert text.startswith("mode: exact")  # nine documents: every pair costs least
    assert "recall at cosine 0.8: 1.000" in text
    assert "memory: about" in text
    tables = run(runner, "scan", "--plan", "--scheme", "balanced", str(sample_corpus)).stdout
    assert tables.startswith("mode: tables at 64 bits\nbits: 64\ntables: 4 blocks")
    assert "Document A" not in text
    described = json.loads(
        run(runner, "scan", "--plan", "--format", "json", str(sample_corpus)).stdout
    )
    assert described["threshold"] == 0.8
    assert described["recall_at_threshold"] >= 0.95
    assert described["documents"] == 9
    curve = [point["recall"] for point in described["recall_curve"]]
    assert curve == sorted(curve, reverse=True)  # higher cosine, higher recall
    loose = json.loads(
        run(
            runner, "scan", "--plan", "--format", "json", "--scheme", "loose", str(sample_corpus)
        ).stdout
    )
    assert loose["source"] == "scheme"
    assert loose["guarantee"] == 7


def test_output_does_not_depend_on_jobs(simdup_script: str, sample_corpus: Path) -> None:
    outputs = {
        jobs: subprocess.run(
            [simdup_script, "scan", "-q", "--format", "json", "--all", "--jobs", jobs,
             str(sample_corpus)],
            capture_output=True, timeout=120, check=True,
        ).stdout
        for jobs in ("1", "2", "0")
    }  # fmt: skip
    assert outputs["1"] == outputs["2"] == outputs["0"]
