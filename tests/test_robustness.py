"""The robustness catalogue (docs/robustness.md) through the command line.

Each test feeds simdup one kind of bad input, hostile name, bad option or interruption and
checks the promised answer: a skip with a reason, an escaped name, exit status 2 with a
message naming the value, an intact output file, exit 130 without a traceback.
"""

from __future__ import annotations

import codecs
import csv
import errno
import gzip
import io
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from importlib.metadata import Distribution, PackageNotFoundError, distribution
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simdup
from simdup.cli import cli, main
from simdup.cli.output import encode_output, rich_text
from simdup.engines.local import find_duplicates
from simdup.engines.local.fingerprinting import NO_FEATURES
from simdup.model import Document
from simdup.params import Params
from simdup.report.render import ReportOptions, pair_table, selected_pairs, to_csv, to_json
from simdup.text.normalize import MAX_TOKEN_LENGTH

TEXT = (
    "Near duplicate detection compares what documents say: the quick brown fox jumps "
    "over the lazy dog while seven wise owls watch the river flow past the old mill.\n"
)
FRENCH = "Été déjà passé: où est le garçon français qui mangeait des crêpes à Noël?\n" * 3


def invoke(runner: CliRunner, *args: str, stdin: str | bytes | None = None) -> Result:
    return runner.invoke(cli, list(args), input=stdin, catch_exceptions=False)


def scan_json(runner: CliRunner, *args: str) -> dict[str, Any]:
    result = invoke(runner, "scan", "-q", "--format", "json", *args)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def skip_reasons(data: dict[str, Any]) -> dict[str, str]:
    return {Path(s["path"]).name: s["reason"] for s in data["skipped"]}


def pair_names(data: dict[str, Any]) -> set[tuple[str, str]]:
    return {(Path(p["a"]).name, Path(p["b"]).name) for p in data["pairs"]}


# --- inputs ---------------------------------------------------------------------------------


def test_binary_files_are_skipped_not_tokenised(runner: CliRunner, tmp_path: Path) -> None:
    blob = b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8 + TEXT.encode()
    (tmp_path / "a.bin").write_bytes(blob)
    (tmp_path / "b.bin").write_bytes(blob)  # identical binaries: never a "pair"
    (tmp_path / "noise.dat").write_bytes(bytes((i * 97 + 13) % 255 + 1 for i in range(5000)))
    (tmp_path / "text.txt").write_text(TEXT)
    data = scan_json(runner, str(tmp_path))
    assert data["pairs"] == []
    assert skip_reasons(data) == {
        "a.bin": "binary file",
        "b.bin": "binary file",
        "noise.dat": "binary file",
    }
    assert data["stats"]["documents"] == 1


def test_encoding_options_and_byte_order_marks(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "latin1.txt").write_bytes(FRENCH.encode("latin-1"))
    (tmp_path / "utf8-bom.txt").write_bytes(codecs.BOM_UTF8 + FRENCH.encode())
    (tmp_path / "utf16.txt").write_bytes(FRENCH.encode("utf-16"))  # with its BOM
    all_three = {
        ("latin1.txt", "utf16.txt"),
        ("latin1.txt", "utf8-bom.txt"),
        ("utf16.txt", "utf8-bom.txt"),
    }
    short = "--min-features", "0"  # a short sentence: fewer features than the default
    default = scan_json(runner, *short, "--threshold", "0.999", str(tmp_path))
    assert pair_names(default) == {("utf16.txt", "utf8-bom.txt")}  # Latin-1 bytes -> U+FFFD
    latin = scan_json(
        runner, *short, "--threshold", "0.999", "--encoding", "latin-1", str(tmp_path)
    )
    assert pair_names(latin) == all_three  # the marks win over --encoding
    strict = invoke(runner, "scan", "--format", "json", "--encoding-errors", "strict",
                    "-v", "--strict", str(tmp_path))  # fmt: skip
    assert strict.exit_code == 3
    reason = skip_reasons(json.loads(strict.stdout))["latin1.txt"]
    assert reason.startswith("not valid utf-8 (byte 0xc9 at offset 0)")
    assert "--encoding latin-1" in reason
    assert "latin1.txt: not valid utf-8" in strict.stderr


def test_documents_without_features_are_excluded_and_reported(
    runner: CliRunner, tmp_path: Path
) -> None:
    contents = {
        "empty": "",
        "spaces": "  \n\t\r\n  ",
        "punctuation": "!!! ... --- ??? ;;; ((( )))",
        "stopwords": "The and of a to in is it that was for on are with as I his they be at",
    }
    for name, text in contents.items():
        (tmp_path / f"{name}-1.txt").write_text(text)
        (tmp_path / f"{name}-2.txt").write_text(text)
    (tmp_path / "real.txt").write_text(TEXT)
    result = invoke(runner, "scan", "--format", "json", "--strict", "--all", str(tmp_path))
    assert result.exit_code == 0  # a policy skip, not an unreadable input
    data = json.loads(result.stdout)
    assert data["pairs"] == []  # two empty files are not "near-duplicates at cosine 1"
    assert skip_reasons(data) == {f"{n}-{i}.txt": NO_FEATURES for n in contents for i in (1, 2)}


def test_pairs_of_documents_with_few_features_are_flagged(
    runner: CliRunner, tmp_path: Path
) -> None:
    (tmp_path / "short-1.txt").write_text("red fox jumps")
    (tmp_path / "short-2.txt").write_text("red fox jumps")
    (tmp_path / "long-1.txt").write_text(TEXT)
    (tmp_path / "long-2.txt").write_text(TEXT)
    data = scan_json(runner, "--min-features", "0", str(tmp_path))  # compared, and flagged
    flags = {(Path(p["a"]).name, p["few_features"]) for p in data["pairs"]}
    assert flags == {("long-1.txt", False), ("short-1.txt", True)}
    assert data["stats"]["few_features"] == 2
    table = invoke(runner, "scan", "--min-features", "0", str(tmp_path))
    short_row = next(line for line in table.stdout.splitlines() if "short-1" in line)
    assert short_row.rstrip().endswith("*")
    assert "fewer than 8 features, estimate unreliable" in table.stderr


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def runtime_closure() -> list[Distribution]:
    """Return the installed distributions simdup needs at run time, and theirs."""
    wanted, found, seen = ["simdup"], [], set()
    while wanted:
        name = wanted.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        seen.add(key)
        dist = distribution(name)
        if key != "simdup":
            found.append(dist)
        for requirement in dist.requires or []:
            if "extra ==" in requirement.replace(" ", "").replace("==", " == "):
                continue
            dependency = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
            if dependency is None:
                continue
            try:
                distribution(dependency.group())
            except PackageNotFoundError:
                if ";" in requirement:  # a marker that does not hold here
                    continue
                raise
            wanted.append(dependency.group())
    return found


def share(source: Path, target: Path) -> None:
    """Make ``target`` a copy of ``source`` that anyone can read (a hard link when it can be)."""
    if source.stat().st_mode & 0o444 == 0o444:
        try:
            os.link(source, target)
            return
        except OSError:  # another file system
            pass
    shutil.copy2(source, target)
    target.chmod(target.stat().st_mode | 0o444)


def stage_for_nobody(target: Path) -> list[str]:
    """Copy simdup and its runtime dependencies where ``nobody`` can read them.

    The checkout (and its virtual environment) may sit in a directory only root can enter,
    such as a clone in root's home or in a ``mktemp -d`` directory. Returns the command that
    runs simdup as ``nobody`` from the copy, with this test run's base interpreter.

    Raises:
        pytest.skip.Exception: when ``nobody`` cannot run that interpreter with the copy.
    """
    lib = target / "lib"
    shutil.copytree(
        Path(simdup.__file__).parent,
        lib / "simdup",
        copy_function=lambda src, dst: share(Path(src), Path(dst)),
    )
    for dist in runtime_closure():
        for file in dist.files or []:
            source = Path(str(dist.locate_file(file)))
            if file.parts[0] == ".." or not source.is_file():
                continue
            (lib / file).parent.mkdir(parents=True, exist_ok=True)
            share(source, lib / file)
    for directory, dirs, _ in os.walk(target):
        for name in dirs:
            Path(directory, name).chmod(0o755)
    target.chmod(0o755)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"  # same compiled ABI
    candidates = [os.path.realpath(getattr(sys, "_base_executable", sys.executable))]
    candidates += [
        f"{d}/{version}" for d in ("/usr/local/bin", "/usr/bin") if Path(d, version).exists()
    ]
    reasons = []
    for python in dict.fromkeys(candidates):
        command = [*NOBODY, "env", f"PYTHONPATH={lib}", python, "-B", "-s", "-m", "simdup"]
        trial = subprocess.run([*command, "--version"], capture_output=True, timeout=120)
        if trial.returncode == 0:
            return command
        lines = trial.stderr.decode(errors="replace").strip().splitlines()
        reasons.append(f"{python}: {lines[-1] if lines else f'exit status {trial.returncode}'}")
    pytest.skip(f"user nobody cannot run simdup copied to {lib} with " + "; ".join(reasons))


def test_files_are_read_as_an_unprivileged_user_would() -> None:
    """Real permission errors: root ignores modes, so the scan runs as ``nobody``."""
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: cannot drop privileges")
    root = Path(tempfile.mkdtemp(prefix="simdup-perm-"))  # tmp_path may be private to root
    corpus = root / "corpus"
    try:
        root.chmod(0o755)
        corpus.mkdir(mode=0o755)
        (corpus / "ok-1.txt").write_text(TEXT)
        (corpus / "ok-2.txt").write_text(TEXT)
        (corpus / "secret.txt").write_text(TEXT)
        (corpus / "secret.txt").chmod(0)
        (corpus / "closed").mkdir()
        (corpus / "closed" / "inner.txt").write_text(TEXT)
        (corpus / "closed").chmod(0)
        if os.geteuid() == 0:
            command = stage_for_nobody(root / "staged")
        else:
            command = [str(Path(sys.executable).parent / "simdup")]
        command += ["scan", "--format", "json"]
        done = subprocess.run([*command, str(corpus)], capture_output=True, timeout=120)
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        assert pair_names(data) == {("ok-1.txt", "ok-2.txt")}
        assert skip_reasons(data) == {
            "closed": "permission denied",
            "secret.txt": "permission denied",
        }
        assert b"2 input(s) could not be read; -v lists them" in done.stderr
        strict = subprocess.run(
            [*command, "--strict", str(corpus)], capture_output=True, timeout=120
        )
        assert strict.returncode == 3
        assert b"Traceback" not in strict.stderr
    finally:
        for path in (corpus / "closed", corpus / "secret.txt"):
            if path.exists():
                path.chmod(0o700)  # the staged copy shares files with the checkout: left as is
        shutil.rmtree(root)


def test_fifos_sockets_and_devices_are_never_opened(simdup_script: str, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "a.txt").write_text(TEXT)
    done = subprocess.run(
        [simdup_script, "scan", "--format", "json", str(tmp_path), str(tmp_path / "pipe"),
         "/dev/zero"],
        capture_output=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 0
    assert skip_reasons(json.loads(done.stdout)) == {
        "pipe": "not a regular file (named pipe (FIFO))",
        "zero": "not a regular file (device)",
    }


def test_broken_links_and_link_loops(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "z.txt").write_text(TEXT)
    (tmp_path / "sub" / "b.txt").write_text(TEXT)
    (tmp_path / "sub" / "up").symlink_to("..")
    (tmp_path / "dangling").symlink_to("nowhere")
    data = scan_json(runner, "-L", str(tmp_path), str(tmp_path / "sub"))
    assert pair_names(data) == {("b.txt", "z.txt")}  # each file once, under its short name
    assert {p["b"] for p in data["pairs"]} == {str(tmp_path / "z.txt")}  # not sub/up/z.txt
    assert skip_reasons(data) == {
        "dangling": "broken symbolic link",
        "up": "symbolic link loop (directory already scanned)",  # sub/up, from the first root
        "sub": "symbolic link loop (directory already scanned)",  # sub/up/sub, from the second
    }
    assert not any(s["path"].endswith("dangling") and "/up/" in s["path"] for s in data["skipped"])


def test_a_directory_given_twice_or_nested_never_pairs_a_file_with_itself(
    runner: CliRunner, tmp_path: Path
) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_text(TEXT)
    (tmp_path / "sub" / "b.txt").write_text(TEXT + " and one more line about the mill")
    (tmp_path / "sub" / "c.txt").write_text("an unrelated text " * 9)
    data = scan_json(
        runner, "--all", "--max-distance", "63", "--min-features", "0",
        str(tmp_path), str(tmp_path), str(tmp_path / "sub"),
    )  # fmt: skip
    assert data["stats"]["documents"] == 3
    assert len(data["pairs"]) == 3
    assert all(p["a"] != p["b"] for p in data["pairs"])
    assert all(Path(p["a"]).resolve() != Path(p["b"]).resolve() for p in data["pairs"])


def test_max_size_and_bad_gzip(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text(TEXT * 50)
    (tmp_path / "small.txt").write_text(TEXT)
    (tmp_path / "fake.txt.gz").write_text(TEXT)
    (tmp_path / "cut.txt.gz").write_bytes(gzip.compress(TEXT.encode() * 20)[:50])
    (tmp_path / "good.txt.gz").write_bytes(gzip.compress(TEXT.encode()))
    (tmp_path / "bomb.txt.gz").write_bytes(gzip.compress(TEXT.encode() * 1000))
    result = invoke(runner, "scan", "--format", "json", "--max-size", "1000", str(tmp_path))
    data = json.loads(result.stdout)
    assert pair_names(data) == {("good.txt.gz", "small.txt")}
    reasons = skip_reasons(data)
    assert reasons["big.txt"].startswith("larger than --max-size (")
    assert reasons["bomb.txt.gz"] == "larger than --max-size once decompressed (> 1,000 bytes)"
    assert reasons["fake.txt.gz"] == "not a valid gzip file"
    assert reasons["cut.txt.gz"] == "corrupt gzip file (truncated)"
    strict = invoke(runner, "scan", "-q", "--strict", "--max-size", "1000", str(tmp_path))
    assert strict.exit_code == 3  # the bad gzip files, not the large ones
    sizes_only = invoke(runner, "scan", "-q", "--strict", "--max-size", "1000",
                        str(tmp_path / "big.txt"), str(tmp_path / "small.txt"))  # fmt: skip
    assert sizes_only.exit_code == 0


def test_a_million_character_token_is_capped(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "blob.txt"
    path.write_text("A" * 1_000_000)
    started = time.perf_counter()
    listing = invoke(runner, "fingerprint", "--min-features", "0", "--format", "jsonl", str(path))
    record = json.loads(listing.stdout)
    assert record["features"] == 1
    assert time.perf_counter() - started < 10
    other = tmp_path / "prefix.txt"
    other.write_text("a" * MAX_TOKEN_LENGTH)  # the same feature once capped
    data = scan_json(runner, "--min-features", "0", str(path), str(other))
    assert data["pairs"][0]["cosine"] == 1.0


# --- hostile names --------------------------------------------------------------------------

HOSTILE = [
    "[bold]x[/bold]",
    "[link=https://example.invalid]click[/link]",
    "\x1b[31mred\x1b[0m",
    "\x1b]0;new title\x07",
    "\x1b[2J\x1b[H",
    "line\nbreak",
    "tab\there",
    "-rf",
    "--help",
    'quote"and,comma',
    "crlf\r\nx",
    "\u202eevil",  # right-to-left override
]
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u202e]")


def hostile_tree(root: Path) -> list[str]:
    """Write the same text under every hostile name (as a path below ``root``)."""
    paths = []
    for name in HOSTILE:
        path = root / name.replace("/", "\uff0f")  # FULLWIDTH SOLIDUS
        path.write_text(TEXT)
        paths.append(str(path))
    nested = root / "[bold]x["
    nested.mkdir()
    (nested / "bold].txt").write_text(TEXT)  # the path reads [bold]x[/bold].txt
    paths.append(str(nested / "bold].txt"))
    return sorted(paths, key=os.fsencode)


def test_hostile_names_are_exact_in_json_jsonl_and_csv(runner: CliRunner, tmp_path: Path) -> None:
    paths = hostile_tree(tmp_path)
    data = scan_json(runner, str(tmp_path))
    named = {p["a"] for p in data["pairs"]} | {p["b"] for p in data["pairs"]}
    assert named == set(paths)
    jsonl = invoke(runner, "scan", "-q", "--format", "jsonl", str(tmp_path)).stdout
    records = [json.loads(line) for line in jsonl.splitlines()]
    assert len(records) == len(paths) * (len(paths) - 1) // 2  # no line broken by a name
    assert [(r["a"], r["b"]) for r in records] == [(p["a"], p["b"]) for p in data["pairs"]]
    text = invoke(runner, "scan", "-q", "--format", "csv", str(tmp_path)).stdout_bytes.decode()
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows[0][:2] == ["a", "b"]
    assert [(r[0], r[1]) for r in rows[1:]] == [(p["a"], p["b"]) for p in data["pairs"]]


def test_hostile_names_in_the_table_are_literal_and_keep_the_layout(
    runner: CliRunner, tmp_path: Path
) -> None:
    paths = hostile_tree(tmp_path)
    result = invoke(runner, "scan", "-v", str(tmp_path))
    lines = result.stdout.splitlines()
    assert len(lines) == 1 + len(paths) * (len(paths) - 1) // 2
    assert not CONTROL.search(result.stdout)
    assert not CONTROL.search(result.stderr)
    assert "[bold]x[/bold].txt" in result.stdout  # shown, not eaten as markup
    assert "[link=https:\uff0f\uff0fexample.invalid]click[\uff0flink]" in result.stdout
    assert "\\x1b[31mred\\x1b[0m" in result.stdout
    assert "line\\nbreak" in result.stdout
    assert "tab\\there" in result.stdout
    assert "\\u202eevil" in result.stdout
    cosine_column = {line.rstrip()[-12:] for line in lines[1:]}
    # every row ends in its cosine (copies, marked): no cell spilled over
    assert cosine_column == {"1.000 (copy)"}


def test_hostile_names_on_a_terminal_cannot_change_its_state() -> None:
    documents = [Document(name, TEXT) for name in HOSTILE]
    result = find_duplicates(documents, Params())
    text = rich_text([pair_table(selected_pairs(result, ReportOptions()))], terminal=True)
    for sequence in re.findall(r"\x1b[^a-zA-Z]*[a-zA-Z]?", text):
        assert re.fullmatch(r"\x1b\[[0-9;]*m", sequence), repr(sequence)  # only styling
    assert "\x1b]" not in text  # no title change, no hyperlink
    assert "\x07" not in text
    assert "\u202e" not in text
    assert "[bold]x[/bold]" in text


def test_undecodable_file_names(runner: CliRunner, tmp_path: Path) -> None:
    raw_names = [b"caf\xe9.txt", b"bad\xff\x80name.txt"]
    base = os.fsencode(tmp_path)
    for raw in raw_names:
        with open(base + b"/" + raw, "wb") as handle:
            handle.write(TEXT.encode())
    result = invoke(runner, "scan", "-q", "--format", "json", str(tmp_path))
    body = result.stdout_bytes.decode("utf-8")  # valid UTF-8, strictly
    assert "\\udce9" in body
    assert "\\udcff\\udc80" in body
    pair = json.loads(body)["pairs"][0]
    assert {os.fsencode(pair["a"]), os.fsencode(pair["b"])} == {base + b"/" + r for r in raw_names}
    table = invoke(runner, "scan", "-q", str(tmp_path)).stdout_bytes.decode("utf-8")
    assert "bad\\xff\\x80name.txt" in table
    assert "caf\\xe9.txt" in table
    csv_bytes = invoke(runner, "scan", "-q", "--format", "csv", str(tmp_path)).stdout_bytes
    assert base + b"/bad\xff\x80name.txt" in csv_bytes  # CSV carries the name's own bytes
    prints = invoke(runner, "fingerprint", str(tmp_path)).stdout_bytes.decode("utf-8")
    assert "caf\\xe9.txt" in prints


def test_lone_surrogates_in_jsonl_ids_do_not_break_any_format(
    runner: CliRunner, tmp_path: Path
) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(
        json.dumps({"id": "\ud800lone", "text": TEXT})
        + "\n"
        + json.dumps({"id": "b", "text": TEXT})
    )
    for fmt in ("json", "jsonl", "csv", "table"):
        result = invoke(runner, "scan", "-q", "--format", fmt, "--jsonl", str(path))
        assert result.exit_code == 0, fmt
        body = result.stdout_bytes.decode("utf-8")
        assert "\\ud800lone" in body, fmt
    data = scan_json(runner, "--jsonl", str(path))
    assert data["pairs"][0]["b"] == "\ud800lone"


def test_names_with_leading_dashes_as_arguments(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("-v").write_text(TEXT)
    Path("--all").write_text(TEXT)
    data = scan_json(runner, "--", "-v", "--all")
    assert pair_names(data) == {("--all", "-v")}


def test_malformed_jsonl_is_reported_by_line_and_strict_fails(
    runner: CliRunner, tmp_path: Path
) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps({"id": "a", "text": TEXT}),
                "{broken",
                json.dumps({"id": "c"}),
                json.dumps({"id": "d", "text": ["not", "a", "string"]}),
                "[" * 50_000,
                json.dumps({"id": "f", "text": TEXT}),
            ]
        )
    )
    result = invoke(runner, "scan", "-v", "--format", "json", "--jsonl", str(path))
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert {(p["a"], p["b"]) for p in data["pairs"]} == {("a", "f")}
    assert [s["path"] for s in data["skipped"]] == [f"{path}:{n}" for n in (2, 3, 4, 5)]
    for n in (2, 3, 4, 5):
        assert f"skipped {path}:{n}: " in result.stderr
    strict = invoke(runner, "scan", "-q", "--strict", "--jsonl", str(path))
    assert strict.exit_code == 3


# --- options --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--bits", "0"], "'--bits': '0'"),
        (["--bits", "-64"], "-64"),
        (["--bits", "1.5"], "'1.5' is not a positive integer"),
        (["--bits", "many"], "'many'"),
        (["--blocks", "65"], "got 65; use fewer blocks or more bits"),
        (["--bits", "32", "--blocks", "33"], "bits (32), got 33"),
        (["--blocks", "0"], "'--blocks': 0"),
        (["--threshold", "1.01"], "1.01"),
        (["--threshold", "-0.5"], "-0.5"),
        (["--threshold", "nan"], "threshold must be within [0, 1], got nan"),
        (["--seed", "-1"], "'--seed': -1"),
        (["--seed", str(2**53)], str(2**53)),
        (["--seed", "0x10"], "'0x10'"),
        (["--scheme", "fuzzy"], "'fuzzy'"),
        (["--weighting", "bm25"], "'bm25'"),
        (["--format", "xml"], "'xml'"),
        (["--ngram", "0"], "'--ngram': 0"),
        (["--max-size", "-1"], "'--max-size': -1"),
        (["--max-distance", "64"], "got 64"),
        (["--limit", "-3"], "-3"),
        (["--recall", "0"], "'--recall': 0"),
        (["--encoding", "rot13"], "'rot13' is not a text file encoding"),
        (["--encoding", "klingon"], "unknown encoding 'klingon'"),
        (["--encoding-errors", "ignore"], "'ignore'"),
        (["--files-from", "no-such-list.txt"], "'no-such-list.txt' does not exist"),
        (["--jsonl", "no-such.jsonl"], "'no-such.jsonl' does not exist"),
        (["-o", "no/such/dir/out.json"], "no/such/dir' does not exist; create it first"),
        (["no-such-dir/"], "'no-such-dir/' does not exist"),
        (["-o", "/"], "'/' is a directory"),
    ],
)
def test_bad_options_exit_2_naming_the_value(
    runner: CliRunner, sample_corpus: Path, args: list[str], named: str
) -> None:
    paths = [] if args[-1].endswith("/") else [str(sample_corpus)]
    result = runner.invoke(cli, ["scan", *args, *paths])
    assert result.exit_code == 2, (result.output, result.exception)
    assert named in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_compare_refuses_bad_encodings_and_special_files(
    runner: CliRunner, sample_corpus: Path, tmp_path: Path
) -> None:
    doc = str(sample_corpus / "doc0.txt")
    bad = runner.invoke(cli, ["compare", "--encoding", "base64", doc, doc])
    assert bad.exit_code == 2
    assert "'base64' is not a text file encoding" in bad.stderr
    os.mkfifo(tmp_path / "pipe")
    fifo = subprocess.run(
        [sys.executable, "-m", "simdup", "compare", doc, str(tmp_path / "pipe")],
        capture_output=True, timeout=30,
    )  # fmt: skip
    assert fifo.returncode == 4
    assert b"not a regular file (named pipe (FIFO))" in fifo.stderr


# --- output: nothing lost, nothing changed --------------------------------------------------


def temporaries(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.startswith(".simdup-")]


def test_output_failing_midway_leaves_the_old_file(
    runner: CliRunner, sample_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "report.json"
    out.write_text("previous report\n")

    def disk_full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)  # after the data went to the temporary file
    result = runner.invoke(cli, ["scan", "--format", "json", "-o", str(out), str(sample_corpus)])
    assert result.exit_code == 4
    assert "cannot write" in result.stderr
    assert "No space left on device" in result.stderr
    assert out.read_text() == "previous report\n"
    assert temporaries(tmp_path) == []


def test_output_interrupted_midway_leaves_the_old_file(
    sample_corpus: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "report.json"
    out.write_text("previous report\n")
    written: list[int] = []

    def interrupted(fd: int) -> None:
        written.append(os.fstat(fd).st_size)
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(SystemExit) as stop:
        main(["scan", "-q", "--format", "json", "-o", str(out), str(sample_corpus)])
    assert stop.value.code == 130
    assert written
    assert written[0] > 1000  # the new report was half-way to disk
    assert out.read_text() == "previous report\n"
    assert temporaries(tmp_path) == []
    assert capsys.readouterr().err.strip() == "simdup: interrupted"
    monkeypatch.undo()
    with pytest.raises(SystemExit) as done:
        main(["scan", "-q", "--format", "json", "-o", str(out), str(sample_corpus)])
    assert done.value.code == 0
    assert json.loads(out.read_text())["stats"]["documents"] == 9


def test_output_keeps_the_mode_writes_through_links_and_into_fifos(
    runner: CliRunner, sample_corpus: Path, tmp_path: Path
) -> None:
    out = tmp_path / "report.txt"
    out.write_text("old")
    out.chmod(0o640)
    assert invoke(runner, "scan", "-q", "-o", str(out), str(sample_corpus)).exit_code == 0
    assert out.stat().st_mode & 0o777 == 0o640
    assert "Document A" in out.read_text()
    link = tmp_path / "latest.txt"
    link.symlink_to(out.name)
    invoke(runner, "scan", "-q", "--format", "csv", "-o", str(link), str(sample_corpus))
    assert link.is_symlink()
    assert out.read_text().startswith("a,b,hamming")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    invoke(runner, "scan", "-q", "--format", "jsonl", "-o", str(fifo), str(sample_corpus))
    reader.join(timeout=10)
    if reader.is_alive():  # nothing was written into the FIFO: let the reader see its end
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(timeout=10)
    assert fifo.is_fifo()
    assert len(received[0].splitlines()) == 4


def wait_until_reading_stdin(pid: int, timeout: float = 30.0) -> None:
    """Wait until process ``pid`` blocks in read(0, ...): its imports and setup are done."""
    if platform.machine() != "x86_64" or not Path(f"/proc/{pid}/syscall").exists():
        time.sleep(5)  # no way to watch the system call: give the interpreter ample time
        return
    stop = time.monotonic() + timeout
    while time.monotonic() < stop:
        call = Path(f"/proc/{pid}/syscall").read_text().split()
        if call[:2] == ["0", "0x0"]:  # syscall 0 is read on x86-64; first argument fd 0
            return
        time.sleep(0.05)
    raise AssertionError("simdup never started reading stdin")


def test_ctrl_c_exits_130_with_one_line(simdup_script: str) -> None:
    process = subprocess.Popen(
        [simdup_script, "scan", "--files-from", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stdin is not None
        process.stdin.write(b"/etc/hostname\n")  # the pipe stays open: simdup keeps waiting
        process.stdin.flush()
        wait_until_reading_stdin(process.pid)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 130
    assert [line for line in err.decode().splitlines() if line.strip()] == ["simdup: interrupted"]


def interrupted_run(command: list[str], *, delay: float = 0.0, after: str = "") -> tuple[int, str]:
    """Start ``command``, send SIGINT ``delay`` seconds later or once module ``after`` loads.

    Modules are watched through Python's import-time report (``PYTHONPROFILEIMPORTTIME``),
    which names each module as its import ends. Returns the exit status and stderr without
    those report lines.
    """
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    watchdog = threading.Timer(60, process.kill)  # a module never loaded fails, never hangs
    watchdog.start()
    try:
        assert process.stderr is not None
        seen = b""
        if after:
            while True:
                line = process.stderr.readline()
                assert line, "the module was never imported"
                seen += line
                if line.rsplit(b"|", 1)[-1].strip().startswith(after.encode()):
                    break
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        watchdog.cancel()
        process.kill()
        process.wait()
    lines = (seen + err).decode().splitlines()
    report = [x for x in lines if x.startswith("import time:")]
    return process.returncode, "\n".join(x for x in lines if x not in report)


@pytest.mark.parametrize("delay", [0.0, 0.1, 0.2, 0.3])
def test_ctrl_c_at_start_up_exits_130_with_one_line(simdup_script: str, delay: float) -> None:
    """The entry point is in charge before click, rich and numpy load (about 0.3 s)."""
    status, err = interrupted_run([simdup_script, "scan", "--files-from", "-"], delay=delay)
    if status != 130 and "simdup:" not in err:
        # The interpreter was still starting (its site module, its streams), or importing
        # the entry point (a loaded machine can take longer than the delay to get there):
        # Python ends the run by the signal, stops with its own "Fatal Python error", or
        # notes the interrupt and goes on; all before simdup's main runs. Once it runs, no
        # interrupt escapes it. (Python's own site module has a "main" too.)
        root = re.escape(str(Path(simdup.__file__).parent))
        assert re.search(rf'File "{root}[^"]*", line \d+, in main\b', err) is None
    else:
        assert "Traceback" not in err
        assert status == 130
        assert [line for line in err.splitlines() if line.strip()] == ["simdup: interrupted"]


@pytest.mark.parametrize(
    "module", ["click", "rich", "numpy", "simdup.engines.local", "simdup.index"]
)
def test_ctrl_c_while_modules_load_exits_130_with_one_line(
    simdup_script: str, module: str, tmp_path: Path
) -> None:
    # A scan loads the index only to keep its fingerprints in one (--cache).
    cache = ["--cache", str(tmp_path / "cache.db")] if module == "simdup.index" else []
    command = [simdup_script, "scan", *cache, "--files-from", "-"]
    status, err = interrupted_run(command, after=module)
    assert status == 130
    assert "Traceback" not in err
    assert [line for line in err.splitlines() if line.strip()] == ["simdup: interrupted"]


#: An object whose finaliser receives Ctrl-C, where Python only reports the interrupt.
FINALISED = """
import os, signal, sys
import simdup.cli as entry

class Finalised:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the signal's handler runs here, inside the finaliser
            pass
"""

#: A run whose Ctrl-C lands inside a finaliser.
INTERRUPT_IN_A_FINALISER = (
    FINALISED
    + """
def run(args):
    Finalised()  # dropped at once: its finaliser receives the interrupt
    return 0

entry._run = run
entry.main([])
"""
)


def test_ctrl_c_inside_a_finaliser_still_exits_130_with_one_line() -> None:
    """An interrupt raised in a finaliser is lost to the code running; the run still ends.

    Loaded machines delivered Ctrl-C while the import machinery ran such callbacks, and
    the run went on to exit 0; this places the signal there on purpose.
    """
    done = subprocess.run(
        [sys.executable, "-c", INTERRUPT_IN_A_FINALISER], capture_output=True, timeout=60
    )
    assert done.returncode == 130
    assert [line for line in done.stderr.decode().splitlines() if line.strip()] == [
        "simdup: interrupted"
    ]


#: A scan whose Ctrl-C lands in a finaliser as it starts: the scan itself goes on.
INTERRUPT_LOST_BEFORE_A_SCAN = (
    FINALISED
    + """
scan = entry._run

def run(args):
    Finalised()  # dropped at once: its finaliser receives the interrupt
    return scan(args)

entry._run = run
entry.main(sys.argv[1:])
"""
)


@pytest.mark.parametrize("fmt", ["table", "jsonl"])
def test_a_scan_whose_ctrl_c_was_lost_writes_nothing_but_the_line(tmp_path: Path, fmt: str) -> None:
    """The interrupt is noticed before the results and the summary are written.

    Loaded machines delivered Ctrl-C at start-up inside a finaliser; the scan then read its
    input to the end and wrote its results and summary before the one line.
    """
    (tmp_path / "a.txt").write_text(TEXT)
    (tmp_path / "b.txt").write_text(TEXT)
    out = tmp_path / "out"
    command = [sys.executable, "-c", INTERRUPT_LOST_BEFORE_A_SCAN, "scan", str(tmp_path)]
    for target in (["-o", str(out)], []):
        done = subprocess.run([*command, "--format", fmt, *target], capture_output=True, timeout=60)
        assert done.returncode == 130
        assert done.stdout == b""
        assert [line for line in done.stderr.decode().splitlines() if line.strip()] == [
            "simdup: interrupted"
        ]
    assert not out.exists()


#: A run of the command line whose Ctrl-C lands after the entry point is imported, before
#: ``main`` runs (the program is named like the console script).
INTERRUPT_BEFORE_MAIN = """
import os, signal, sys
sys.modules["__main__"].__file__ = os.path.join("bin", "simdup")
import simdup.cli as entry

os.kill(os.getpid(), signal.SIGINT)
for _ in range(1000):  # the signal's handler runs here, before main
    pass
entry.main(["--version"])
"""


def test_ctrl_c_between_the_import_and_main_exits_130_with_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-c", INTERRUPT_BEFORE_MAIN], capture_output=True, timeout=60
    )
    assert done.returncode == 130
    assert done.stdout == b""
    assert [line for line in done.stderr.decode().splitlines() if line.strip()] == [
        "simdup: interrupted"
    ]


def test_a_closed_pipe_ends_quietly(simdup_script: str, tmp_path: Path) -> None:
    for i in range(60):  # 1,770 pairs: far more than a pipe buffer holds
        (tmp_path / f"copy{i:02d}.txt").write_text(TEXT)
    for fmt in ("jsonl", "table"):
        done = subprocess.run(
            f"'{simdup_script}' scan --format {fmt} '{tmp_path}' | head -1",
            shell=True, capture_output=True, timeout=60,
        )  # fmt: skip
        assert len(done.stdout.splitlines()) == 1
        assert b"Traceback" not in done.stderr
        assert b"Broken pipe" not in done.stderr
        assert b"Exception ignored" not in done.stderr
    process = subprocess.Popen(
        [simdup_script, "scan", "--format", "jsonl", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    json.loads(process.stdout.readline())
    process.stdout.close()
    err = process.stderr.read()
    process.stderr.close()
    process.wait(timeout=60)
    assert b"Traceback" not in err
    assert b"Exception ignored" not in err


def snapshot(root: Path) -> dict[str, tuple[int, int, int, bytes]]:
    """Sizes, modes, mtimes and contents of everything under ``root`` (links not followed)."""
    state = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(directory, name)
            info = path.lstat()
            body = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
            state[str(path)] = (info.st_size, info.st_mode, info.st_mtime_ns, body)
    return state


def test_a_scan_changes_nothing_in_the_tree(
    runner: CliRunner, sample_copy: Path, tmp_path: Path
) -> None:
    (sample_copy / "more.txt.gz").write_bytes(gzip.compress(TEXT.encode()))
    (sample_copy / "blob.bin").write_bytes(b"\0\1\2" * 100)
    (sample_copy / ".hidden.txt").write_text(TEXT)
    (sample_copy / "link.txt").symlink_to("doc0.txt")
    (sample_copy / "empty.txt").write_text("")
    os.utime(sample_copy / "doc0.txt", ns=(1_000_000_000, 1_000_000_000))
    before = snapshot(sample_copy)
    out = tmp_path / "out"
    out.mkdir()
    for args in (
        ["scan", "--hidden", "-L", "--clusters", "--format", "json"],
        ["scan", "--all", "-o", str(out / "r.txt")],
        ["fingerprint", "--format", "jsonl"],
    ):
        assert invoke(runner, *args, str(sample_copy)).exit_code == 0
    compared = invoke(
        runner, "compare", str(sample_copy / "doc0.txt"), str(sample_copy / "doc1.txt")
    )
    assert compared.exit_code == 0
    assert snapshot(sample_copy) == before


# --- generated inputs -----------------------------------------------------------------------

FILE_NAMES = st.binary(min_size=1, max_size=12).filter(
    lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b"..")
)
CONTENTS = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.sampled_from([TEXT.encode(), FRENCH.encode("latin-1"), FRENCH.encode("utf-16")]),
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(files=st.dictionaries(FILE_NAMES, CONTENTS, max_size=6))
def test_generated_trees_never_break_the_cli(
    runner: CliRunner, tmp_path_factory: pytest.TempPathFactory, files: dict[bytes, bytes]
) -> None:
    root = tmp_path_factory.mktemp("tree")
    base = os.fsencode(root)
    for name, body in files.items():
        with open(base + b"/" + name, "wb") as handle:
            handle.write(body)
    data = runner.invoke(cli, ["scan", "-q", "--all", "--hidden", "--format", "json", str(root)])
    assert data.exception is None or isinstance(data.exception, SystemExit), data.exception
    assert data.exit_code == 0
    parsed = json.loads(data.stdout_bytes.decode("utf-8"))
    seen = {s["path"] for s in parsed["skipped"]} | {
        name for p in parsed["pairs"] for name in (p["a"], p["b"])
    }
    assert seen <= {os.fsdecode(base + b"/" + n) for n in files}
    assert parsed["stats"]["documents"] + len(parsed["skipped"]) == len(files)
    table = runner.invoke(cli, ["scan", "-q", "--all", "--hidden", str(root)])
    assert table.exit_code == 0
    assert not CONTROL.search(table.stdout)
    assert len(table.stdout.splitlines()) == 1 + len(parsed["pairs"])


ANY_TEXT = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=60)


@settings(max_examples=100, deadline=None)
@given(names=st.lists(ANY_TEXT, min_size=2, max_size=4, unique=True), text=ANY_TEXT)
def test_any_names_and_texts_render_to_valid_output(names: list[str], text: str) -> None:
    """JSON Lines ids can be any string, lone surrogates included: every format survives."""
    documents = [Document(name, TEXT + text) for name in names]
    result = find_duplicates(documents, Params(), report_all=True)
    options = ReportOptions(report_all=True)
    shown = selected_pairs(result, options)
    body = encode_output(to_json(result, options, {}, shown)).decode("utf-8")
    parsed = json.loads(body)
    assert {n for p in parsed["pairs"] for n in (p["a"], p["b"])} == set(names)
    rows = list(
        csv.reader(
            io.StringIO(encode_output(to_csv(shown)).decode("utf-8", "surrogateescape"), newline="")
        )
    )
    assert len(rows) == 1 + len(parsed["pairs"])
    table = rich_text([pair_table(shown)], terminal=False)
    assert not CONTROL.search(table)
    assert len(table.splitlines()) == 1 + len(parsed["pairs"])


def test_a_full_disk_behind_stdout_is_a_message(simdup_script: str, sample_corpus: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [simdup_script, "scan", "--format", "json", str(sample_corpus)],
            stdout=full, stderr=subprocess.PIPE, timeout=60,
        )  # fmt: skip
    assert done.returncode == 4
    assert done.stderr.decode().strip() == (
        "Error: cannot write to standard output: No space left on device"
    )
