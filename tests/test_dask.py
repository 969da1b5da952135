"""The Dask engine on real clusters: byte-identical output, faults, and a light core.

Every identity test compares against the local engine's own output for the same input,
never against stored results. One local cluster of two worker processes serves the
module; one test starts ``dask scheduler`` and two ``dask worker`` processes itself.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]
import pytest
from click.testing import CliRunner
from distributed import Client, LocalCluster
from test_held import columns, squeezed_copies

from simdup.allocator import MAP_APART
from simdup.cli import cli
from simdup.engines.dask import Inputs, SchedulerError, connect, document_inputs
from simdup.engines.dask import find_duplicates as dask_find_duplicates
from simdup.engines.local import find_duplicates
from simdup.inputs.files import ReadOptions
from simdup.inputs.gather import load_corpus
from simdup.inputs.jsonl import JsonlOptions, JsonlPart, read_jsonl_input
from simdup.model import Document, ScanResult
from simdup.params import Params
from simdup.report.render import ReportOptions, selected_pairs, to_json
from simdup.spill import is_mapped

FORMATS = ("table", "json", "jsonl", "csv")
ENGINE_PARAM = ', "engine": "dask"'

WORDS = [f"w{k}{chr(97 + k % 26)}" for k in range(400)]


def _text(rng: random.Random, length: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(length))


def _edited(rng: random.Random, text: str, rate: float) -> str:
    words = text.split()
    for k in range(len(words)):
        if rng.random() < rate:
            words[k] = rng.choice(WORDS)
    return " ".join(words)


def _texts(count: int, seed: int) -> list[str]:
    """Originals, near copies at several edit rates, and exact copies, shuffled."""
    rng = random.Random(seed)
    texts: list[str] = []
    while len(texts) < count:
        base = _text(rng, rng.randint(20, 80))
        texts.append(base)
        for rate in (0.0, 0.05, 0.15, 0.4)[: rng.randint(0, 4)]:
            texts.append(_edited(rng, base, rate))
    rng.shuffle(texts)
    return texts[:count]


@pytest.fixture(scope="module")
def directory_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Nested files with near duplicates, a gzip file, an empty file and a binary one."""
    root = tmp_path_factory.mktemp("dir-corpus")
    for k, text in enumerate(_texts(60, seed=7)):
        folder = root / f"group{k % 3}"
        folder.mkdir(exist_ok=True)
        (folder / f"doc{k:03d}.txt").write_text(text, encoding="utf-8")
    (root / "group0" / "packed.txt.gz").write_bytes(gzip.compress(b"w1b w2c w3d w4e w5f"))
    (root / "empty.txt").write_text("", encoding="utf-8")
    (root / "stop.txt").write_text("the of and", encoding="utf-8")
    (root / "binary.bin").write_bytes(bytes(range(256)) * 8)
    return root


@pytest.fixture(scope="module")
def jsonl_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Records with ids, without ids, repeated ids, bad lines and no features."""
    path = tmp_path_factory.mktemp("jsonl-corpus") / "corpus.jsonl"
    lines = [json.dumps({"id": f"r{k:03d}", "text": t}) for k, t in enumerate(_texts(120, 11))]
    lines[5] = json.dumps({"text": lines[4][20:200]})  # named by its line number
    lines[9] = "{not json"
    lines[13] = json.dumps({"id": "r001", "text": "a repeated id"})
    lines[17] = json.dumps({"id": "nofeatures", "text": "the and of"})
    lines[21] = json.dumps({"id": 7, "title": "no text field"})
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    """A local cluster of two worker processes for the whole module."""
    with connect(jobs=2) as connected:
        yield connected


def _invoke(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.stdout


def _assert_same_output(
    client: Client, inputs: list[str], extra: Iterable[str] = (), formats: Iterable[str] = FORMATS
) -> None:
    """``--engine dask`` prints what ``--engine local`` prints, in every format."""
    address = str(client.scheduler_info()["address"])
    for fmt in formats:
        args = ["scan", *inputs, *extra, "--format", fmt, "--clusters", "-v"]
        local_status, local = _invoke(args)
        dask_status, remote = _invoke([*args, "--engine", "dask", "--scheduler", address])
        assert (dask_status, remote.replace(ENGINE_PARAM, "")) == (local_status, local)
        assert ("pairs" in local) or fmt != "json"
        if fmt == "json":
            assert json.loads(remote)["params"]["engine"] == "dask"
            assert json.loads(local)["stats"]["pairs"] > 0


def _json(result: ScanResult, report_all: bool = False) -> str:
    options = ReportOptions(report_all=report_all, clusters="representative")
    return to_json(result, options, {}, selected_pairs(result, options))


def test_directory_corpus_prints_the_same_bytes_in_every_format(
    client: Client, directory_corpus: Path
) -> None:
    _assert_same_output(client, [str(directory_corpus)])


def test_jsonl_corpus_prints_the_same_bytes_in_every_format(
    client: Client, jsonl_corpus: Path
) -> None:
    _assert_same_output(client, ["--jsonl", str(jsonl_corpus)])


def _mode(inputs: list[str], extra: Iterable[str] = ()) -> str:
    """Return the local engine's plan mode for a scan (``exact`` or tables)."""
    status, out = _invoke(["scan", *inputs, *extra, "--format", "json", "-v"])
    assert status in (0, 1)
    return str(json.loads(out)["plan"]["mode"])


def test_default_settings_take_the_exact_path_on_these_corpora(
    directory_corpus: Path, jsonl_corpus: Path
) -> None:
    # The identity tests above then cover the exact path; those below the tables.
    assert _mode([str(directory_corpus)]) == "exact"
    assert _mode(["--jsonl", str(jsonl_corpus)]) == "exact"


def test_default_settings_on_a_corpus_planned_with_tables(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every pair made dear enough that exact mode takes longer than tables: the default
    # width and tables are chosen, from fingerprints cut from the widest width.
    monkeypatch.setattr("simdup.search.plan.seconds.PAIR", 1e-5)
    path = tmp_path / "larger.jsonl"
    records = [json.dumps({"id": f"t{k:05d}", "text": t}) for k, t in enumerate(_texts(7000, 5))]
    path.write_text("\n".join(records) + "\n", encoding="utf-8")
    _, out = _invoke(["scan", "--jsonl", str(path), "--format", "json", "-v"])
    local = json.loads(out)
    assert local["plan"]["mode"] != "exact"
    assert local["stats"]["bits"] == local["params"]["bits"] != 64
    _assert_same_output(client, ["--jsonl", str(path)], (), ("json",))


@pytest.mark.parametrize(
    ("extra", "formats"),
    [
        (("--max-distance", "3"), FORMATS),
        (("--blocks", "4", "--bits", "128"), ("json", "csv")),
        (("--bits", "256", "--scheme", "balanced", "--all"), ("json",)),
    ],
)
def test_settings_that_force_tables_print_the_same_bytes(
    client: Client,
    directory_corpus: Path,
    jsonl_corpus: Path,
    extra: tuple[str, ...],
    formats: tuple[str, ...],
) -> None:
    for inputs in ([str(directory_corpus)], ["--jsonl", str(jsonl_corpus)]):
        assert _mode(inputs, extra) != "exact"
        _assert_same_output(client, inputs, extra, formats)


@pytest.mark.parametrize(
    "extra",
    [
        ("--weighting", "tfidf"),
        ("--weighting", "log", "--threshold", "0.6"),
        ("--weighting", "tfidf", "--all", "--scheme", "balanced"),
    ],
)
def test_weightings_print_the_same_bytes(
    client: Client, directory_corpus: Path, jsonl_corpus: Path, extra: tuple[str, ...]
) -> None:
    _assert_same_output(client, [str(directory_corpus)], extra, ("json",))
    _assert_same_output(client, ["--jsonl", str(jsonl_corpus)], extra, ("json",))


@pytest.mark.parametrize(
    "extra", [(), ("--segment", "bigrams", "--stopwords", "de,fr"), ("--max-distance", "6")]
)
def test_several_languages_print_the_same_bytes(
    client: Client, tmp_path: Path, extra: tuple[str, ...]
) -> None:
    texts = [
        "我们今天在北京的公园里散步\uff0c天气很好\uff0c大家都很高兴。",
        "我们今天在北京的公园里散步\uff0c天气不错\uff0c大家都很开心。",
        "Der schnelle braune Fuchs springt über den faulen Hund und läuft davon.",
        "Der schnelle braune Fuchs springt über den müden Hund und läuft weg.",
        "Le renard brun rapide saute par-dessus le chien paresseux et s'enfuit.",
        "Le renard brun rapide saute par-dessus le chien fatigué et s'en va.",
    ]
    path = tmp_path / "languages.jsonl"
    records = [
        json.dumps({"id": f"l{k}", "text": t}, ensure_ascii=False) for k, t in enumerate(texts)
    ]
    path.write_text("\n".join(records) + "\n", encoding="utf-8")
    _assert_same_output(client, ["--jsonl", str(path)], ("--threshold", "0.5", *extra), ("json",))


def test_files_jsonl_gzip_and_a_path_list_together(
    client: Client, directory_corpus: Path, jsonl_corpus: Path, tmp_path: Path
) -> None:
    packed = tmp_path / "corpus.jsonl.gz"
    packed.write_bytes(gzip.compress(jsonl_corpus.read_bytes()))
    listing = tmp_path / "list.txt"
    listing.write_text(f"{directory_corpus / 'group1'}\n{directory_corpus / 'empty.txt'}\n")
    inputs = [str(directory_corpus / "group0"), "--files-from", str(listing)]
    _assert_same_output(
        client, [*inputs, "--jsonl", str(packed)], ("--ngram", "2"), ("json", "csv")
    )


@pytest.fixture(scope="module")
def jsonl_shards(jsonl_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The JSON Lines corpus in two shards, the second gzip, with an id of the first in it."""
    root = tmp_path_factory.mktemp("jsonl-shards")
    lines = jsonl_corpus.read_bytes().splitlines(keepends=True)
    (root / "part-0.jsonl").write_bytes(b"".join(lines[:60]))
    repeated = json.dumps({"id": "r003", "text": _texts(1, 99)[0]}).encode() + b"\n"
    (root / "part-1.jsonl.gz").write_bytes(gzip.compress(b"".join(lines[60:]) + repeated))
    return root


def test_several_jsonl_files_and_a_glob_print_the_same_bytes(
    client: Client, jsonl_shards: Path
) -> None:
    shards = [str(jsonl_shards / "part-0.jsonl"), str(jsonl_shards / "part-1.jsonl.gz")]
    _assert_same_output(client, ["--jsonl", shards[1], "--jsonl", shards[0]])
    glob = ["--jsonl", str(jsonl_shards / "part-*")]
    _assert_same_output(client, glob, ("--max-distance", "3"), ("json", "csv"))
    _, out = _invoke(["scan", *glob, "--format", "json"])
    skipped = json.loads(out)["skipped"]
    assert {"path": "r003", "reason": "duplicate document name"} in skipped
    assert {"path": f"{shards[0]}:14", "reason": "duplicate id 'r001'"} in skipped


def test_jsonl_urls_on_the_command_line(client: Client, jsonl_shards: Path) -> None:
    _assert_same_output(client, ["--jsonl", f"{jsonl_shards.as_uri()}/part-*"], (), ("json",))
    # memory:// lives in one process: workers that are threads of this process see it.
    import fsspec  # type: ignore[import-untyped,unused-ignore]

    for shard in jsonl_shards.iterdir():
        with fsspec.open(f"memory://simdup-cli/{shard.name}", "wb") as handle:
            handle.write(shard.read_bytes())
    cluster = LocalCluster(  # type: ignore[no-untyped-call]
        processes=False, n_workers=1, dashboard_address=":0"
    )
    with cluster, Client(cluster) as threads:  # type: ignore[no-untyped-call]
        inputs = ["--jsonl", "memory://simdup-cli/part-*"]
        _assert_same_output(threads, inputs, (), ("json",))


def test_console_script_reads_a_glob_of_shards(jsonl_shards: Path, simdup_script: str) -> None:
    args = [simdup_script, "scan", "--jsonl", str(jsonl_shards / "part-*"), "--format", "json"]
    local = subprocess.run(args, capture_output=True, check=True)
    remote = subprocess.run([*args, "--engine", "dask", "-j", "2"], capture_output=True)
    assert remote.returncode == 0, remote.stderr
    assert remote.stdout.replace(ENGINE_PARAM.encode(), b"") == local.stdout
    assert json.loads(local.stdout)["stats"]["pairs"] > 0


def _assert_same_dedupe(
    client: Client, inputs: list[str], extra: Iterable[str] = (), formats: Iterable[str] = FORMATS
) -> None:
    """``dedupe --engine dask`` prints what ``dedupe --engine local`` prints."""
    address = str(client.scheduler_info()["address"])
    for fmt in formats:
        args = ["dedupe", *inputs, *extra, "--format", fmt, "-v"]
        local_status, local = _invoke(args)
        dask_status, remote = _invoke([*args, "--engine", "dask", "--scheduler", address])
        assert (dask_status, remote.replace(ENGINE_PARAM, "")) == (local_status, local)
        if fmt == "json":
            assert json.loads(remote)["params"]["engine"] == "dask"
            assert json.loads(local)["stats"]["removed"] > 0


@pytest.mark.parametrize(
    "extra", [(), ("--max-distance", "3", "--keep", "longest"), ("--weighting", "tfidf")]
)
def test_dedupe_of_a_dataset_prints_and_writes_the_same_bytes(
    client: Client, jsonl_corpus: Path, tmp_path: Path, extra: tuple[str, ...]
) -> None:
    formats = FORMATS if not extra else ("json",)
    _assert_same_dedupe(client, ["--jsonl", str(jsonl_corpus)], extra, formats)
    address = str(client.scheduler_info()["address"])
    written = {}
    for engine in ("local", "dask"):
        kept, removed = tmp_path / f"kept-{engine}.jsonl.gz", tmp_path / f"removed-{engine}.jsonl"
        args = ["dedupe", "--jsonl", str(jsonl_corpus), "-o", str(kept), "--removed", str(removed)]
        args += [*extra, "--engine", engine]
        status, _ = _invoke([*args, "--scheduler", address] if engine == "dask" else args)
        assert status == 0
        written[engine] = (kept.read_bytes(), removed.read_bytes())
    assert written["dask"] == written["local"]
    assert len(gzip.decompress(written["local"][0])) < jsonl_corpus.stat().st_size


def test_dedupe_of_files_and_references_prints_the_same_bytes(
    client: Client, directory_corpus: Path, jsonl_shards: Path
) -> None:
    reference = ["--reference", str(directory_corpus / "group2")]
    _assert_same_dedupe(
        client, [str(directory_corpus / "group0"), str(directory_corpus / "group1")]
    )
    _assert_same_dedupe(client, [str(directory_corpus), *reference], ("--keep", "last"), ("json",))
    shard = ["--jsonl", str(jsonl_shards / "part-1.jsonl.gz")]
    _assert_same_dedupe(client, shard, ("--reference", str(jsonl_shards / "part-0.jsonl")))


def test_dedupe_console_script_with_a_local_cluster(jsonl_corpus: Path, simdup_script: str) -> None:
    args = [simdup_script, "dedupe", "--jsonl", str(jsonl_corpus), "--format", "csv"]
    local = subprocess.run(args, capture_output=True, check=True)
    remote = subprocess.run([*args, "--engine", "dask", "-j", "2"], capture_output=True)
    assert remote.returncode == 0, remote.stderr
    assert remote.stdout == local.stdout
    assert local.stdout.count(b"\n") > 2


def test_documents_in_memory_travel_as_they_are() -> None:
    texts = ["a b", 'é\n"x"\r', "\udcff lone", "", "\u2028 separators \x85"]
    documents = [Document(f"d{k}", text) for k, text in enumerate(texts * 5)]
    inputs = document_inputs(documents, workers=1, per_partition=4)
    parts = [p for p in inputs.jsonl if isinstance(p, JsonlPart)]
    # 25 documents, at least 4 partitions per worker, at most 4 documents each.
    assert [len(p.data.splitlines()) for p in parts if p.data] == [4, 4, 4, 4, 4, 4, 1]
    read = [doc for p in parts for doc in read_jsonl_input(p.label, JsonlOptions(), p.data)[0]]
    assert read == documents
    assert len(document_inputs(documents, workers=3).jsonl) == 9  # 3 documents each


def test_an_exact_scan_on_the_client_writes_pairs_past_its_budget_to_disk(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs, params, budget, held = squeezed_copies(monkeypatch)
    inputs = document_inputs(docs, workers=2)
    spilled = dask_find_duplicates(client, inputs, params, memory=budget, tmp_dir=str(tmp_path))
    assert spilled.plan["mode"] == "exact"
    assert is_mapped(spilled.pairs.cosine)  # read back from the files it wrote
    assert columns(spilled.pairs) == columns(held.pairs)
    assert _json(spilled) == _json(held)
    del spilled
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "params",
    [
        Params(),
        Params(weighting="tfidf", threshold=0.7),
        Params(weighting="log", bits=128, scheme="balanced"),
        Params(max_distance=4, weighting="tfidf"),
    ],
)
def test_library_results_equal_the_local_engine(
    client: Client, directory_corpus: Path, params: Params
) -> None:
    documents, skipped = load_corpus([str(directory_corpus)], ReadOptions())
    local = find_duplicates(documents, params, skipped=skipped)
    remote = dask_find_duplicates(
        client, Inputs(paths=[str(directory_corpus)]), params, files_per_partition=7
    )
    assert _json(remote) == _json(local)
    assert remote.fingerprints.tobytes() == local.fingerprints.tobytes()
    assert remote.pairs.cosine.tobytes() == local.pairs.cosine.tobytes()


def test_fsspec_urls_read_like_paths(client: Client, jsonl_corpus: Path) -> None:
    path = jsonl_corpus.parent / "clean.jsonl"
    lines = [json.dumps({"id": f"c{k}", "text": t}) for k, t in enumerate(_texts(50, 3))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    documents, skipped = read_jsonl_input(str(path), JsonlOptions())
    local = _json(find_duplicates(documents, skipped=skipped))
    remote = dask_find_duplicates(client, Inputs(jsonl=[JsonlPart(path.as_uri())]))
    assert _json(remote) == local
    # memory:// lives in one process: workers that are threads of this process see it.
    import fsspec  # type: ignore[import-untyped,unused-ignore]

    with fsspec.open("memory://simdup/corpus.jsonl", "wb") as handle:
        handle.write(path.read_bytes())
    cluster = LocalCluster(  # type: ignore[no-untyped-call]
        processes=False, n_workers=1, dashboard_address=":0"
    )
    with cluster, Client(cluster) as threads:  # type: ignore[no-untyped-call]
        inputs = Inputs(jsonl=[JsonlPart("memory://simdup/corpus.jsonl")])
        assert _json(dask_find_duplicates(threads, inputs)) == local


@pytest.mark.parametrize(
    ("params", "stage"), [(Params(), "gather"), (Params(max_distance=3), "candidates")]
)
def test_a_worker_killed_mid_run_is_survived(
    client: Client, directory_corpus: Path, params: Params, stage: str
) -> None:
    documents, skipped = load_corpus([str(directory_corpus)], ReadOptions())
    local = _json(find_duplicates(documents, params, skipped=skipped))
    killed: list[int] = []

    def progress(items: Iterable[Any], *, desc: str, total: int | None = None) -> Iterable[Any]:
        if desc == stage and not killed:
            # The vectors live on the workers now; one of them dies with its share.
            pids = client.run(os.getpid)
            pid = sorted(pids.values())[0]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        return items

    remote = dask_find_duplicates(
        client,
        Inputs(paths=[str(directory_corpus)]),
        params,
        progress=progress,
        files_per_partition=5,
    )
    assert killed
    assert _json(remote) == local
    client.wait_for_workers(2, timeout=60)  # the nanny restarts it for the next tests


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:1", "no-port-here", "bogus://127.0.0.1:8786"])
def test_an_unusable_scheduler_is_one_line_and_status_4(
    runner: CliRunner, directory_corpus: Path, address: str
) -> None:
    started = time.monotonic()
    result = runner.invoke(
        cli, ["scan", str(directory_corpus), "--engine", "dask", "--scheduler", address]
    )
    assert result.exit_code == 4
    assert result.stdout == ""
    assert result.stderr.startswith("Error: cannot reach the Dask scheduler at")
    assert len(result.stderr.strip().splitlines()) == 1
    assert time.monotonic() - started < 30


def test_scheduler_error_from_the_library() -> None:
    with pytest.raises(SchedulerError, match="missing port"), connect("tcp://127.0.0.1"):
        pass


@pytest.mark.parametrize("command", ["scan", "dedupe"])
def test_scheduler_needs_the_dask_engine(
    runner: CliRunner, directory_corpus: Path, command: str
) -> None:
    result = runner.invoke(cli, [command, str(directory_corpus), "--scheduler", "tcp://x:1"])
    assert result.exit_code == 2
    assert "--scheduler needs --engine dask" in result.stderr


def test_dedupe_with_an_unusable_scheduler_is_one_line_and_status_4(
    runner: CliRunner, directory_corpus: Path
) -> None:
    args = ["dedupe", str(directory_corpus), "--engine", "dask", "--scheduler", "tcp://127.0.0.1:1"]
    result = runner.invoke(cli, args)
    assert result.exit_code == 4
    assert result.stdout == ""
    assert result.stderr.startswith("Error: cannot reach the Dask scheduler at")
    assert len(result.stderr.strip().splitlines()) == 1


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _dask_command() -> str:
    return str(Path(sys.executable).parent / "dask")


def test_dask_scheduler_and_workers_started_by_hand(
    directory_corpus: Path, jsonl_corpus: Path, simdup_script: str, tmp_path: Path
) -> None:
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    common = ["--no-dashboard"]
    processes = [
        subprocess.Popen(
            [_dask_command(), "scheduler", "--host", "127.0.0.1", "--port", str(port), *common],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    ]
    try:
        for _ in range(2):
            processes.append(
                subprocess.Popen(
                    [_dask_command(), "worker", address, "--nthreads", "1", *common],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    cwd=tmp_path,
                )
            )
        with Client(address, timeout=60) as waiting:  # type: ignore[no-untyped-call]
            waiting.wait_for_workers(2, timeout=60)
        # Through the console script, and in process.
        args = [simdup_script, "scan", str(directory_corpus), "--format", "json"]
        local = subprocess.run(args, capture_output=True, check=False)
        remote = subprocess.run(
            [*args, "--engine", "dask", "--scheduler", address], capture_output=True, check=False
        )
        assert remote.returncode == local.returncode == 0, remote.stderr
        assert remote.stdout.replace(ENGINE_PARAM.encode(), b"") == local.stdout
        args = ["scan", "--jsonl", str(jsonl_corpus), "--format", "table"]
        assert _invoke([*args, "--engine", "dask", "--scheduler", address]) == _invoke(args)
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            process.wait(timeout=30)


def test_a_local_cluster_shares_the_budget_and_spills_under_tmp_dir(
    directory_corpus: Path, tmp_path: Path
) -> None:
    """Each worker's limit is its share of ``--memory``; Dask spills under ``--tmp-dir``.

    And the workers map arrays apart from :data:`MAP_APART`, not from Dask's 128 KiB.
    """
    budget = 900 << 20
    with connect(jobs=2, memory=budget, tmp_dir=str(tmp_path)) as client:
        seen = client.run(_worker_memory, str(tmp_path.resolve()))
        result = dask_find_duplicates(client, Inputs(paths=[str(directory_corpus)]))
    assert sorted(seen.values()) == [(budget // 3, True, False, False, str(MAP_APART))] * 2
    local = find_duplicates(load_corpus([str(directory_corpus)], ReadOptions())[0])
    assert [(p.a, p.b, p.cosine) for p in result.pair_list()] == [
        (p.a, p.b, p.cosine) for p in local.pair_list()
    ]


def _worker_memory(folder: str, dask_worker: Any) -> tuple[int, bool, bool, bool, str | None]:
    """A worker's limit, whether it spills under ``folder``, pause, terminate, mapping size."""
    import os

    import dask

    spills_there = Path(dask_worker.local_directory).resolve().is_relative_to(folder)
    return (
        dask_worker.memory_manager.memory_limit,
        spills_there,
        dask.config.get("distributed.worker.memory.pause"),
        dask.config.get("distributed.worker.memory.terminate"),
        os.environ.get("MALLOC_MMAP_THRESHOLD_"),
    )


def test_a_budget_below_the_workers_baseline_still_finishes(
    directory_corpus: Path, simdup_script: str
) -> None:
    """Workers whose share is below what they hold at rest spill, but never wait for ever."""
    args = [simdup_script, "scan", str(directory_corpus), "--format", "csv"]
    local = subprocess.run(args, capture_output=True, check=True)
    squeezed = [*args, "--engine", "dask", "-j", "2", "--memory", "256M"]
    remote = subprocess.run(squeezed, capture_output=True, timeout=300)
    assert remote.returncode == 0, remote.stderr
    assert remote.stdout == local.stdout


def test_console_script_with_a_local_cluster_of_jobs_workers(
    directory_corpus: Path, simdup_script: str
) -> None:
    args = [simdup_script, "scan", str(directory_corpus), "--format", "csv"]
    local = subprocess.run(args, capture_output=True, check=True)
    remote = subprocess.run([*args, "--engine", "dask", "-j", "2"], capture_output=True)
    assert remote.returncode == 0, remote.stderr
    assert remote.stdout == local.stdout


def _interrupted_scan(corpus: Path, script: str, *, group: bool) -> tuple[int, bytes, list[Any]]:
    """Ctrl-C a scan on a local cluster once its workers exist.

    Returns:
        The exit status, stderr, and the cluster's processes still alive 30 s later.
    """
    process = subprocess.Popen(
        [script, "scan", str(corpus), "--engine", "dask", "-j", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, as a shell gives a command
    )
    parent = psutil.Process(process.pid)
    deadline = time.monotonic() + 60
    children: list[Any] = []
    while time.monotonic() < deadline and len(children) < 2:
        children = [c for c in parent.children(recursive=True) if "python" in c.name()]
        time.sleep(0.1)
    assert len(children) >= 2, "the local cluster's workers never started"
    if group:
        os.killpg(process.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the group
    else:
        process.send_signal(signal.SIGINT)
    status = process.wait(timeout=60)
    assert process.stderr is not None
    with process.stderr:
        errors = process.stderr.read()
    _, alive = psutil.wait_procs(children, timeout=30)
    return status, errors, alive


def test_ctrl_c_closes_the_local_cluster(directory_corpus: Path, simdup_script: str) -> None:
    status, errors, alive = _interrupted_scan(directory_corpus, simdup_script, group=False)
    assert (status, alive) == (130, [])
    assert errors.strip().splitlines()[-1] == b"simdup: interrupted"
    assert b"Traceback" not in errors


def test_ctrl_c_at_a_terminal_closes_the_local_cluster(
    directory_corpus: Path, simdup_script: str
) -> None:
    status, errors, alive = _interrupted_scan(directory_corpus, simdup_script, group=True)
    assert (status, alive) == (130, [])
    assert errors.strip().splitlines()[-1] == b"simdup: interrupted"


def test_help_and_compare_never_import_dask(sample_corpus: Path) -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from simdup.cli import cli\n"
        "CliRunner().invoke(cli, ['--help'])\n"
        "CliRunner().invoke(cli, ['scan', '--help'])\n"
        f"CliRunner().invoke(cli, ['compare', {str(sample_corpus / 'doc0.txt')!r}, "
        f"{str(sample_corpus / 'doc1.txt')!r}])\n"
        "print(sorted(m for m in ('dask', 'distributed') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True)
    assert out.stdout.strip() == b"[]"


def test_without_dask_installed_the_engine_says_how_to_install_it(
    runner: CliRunner, directory_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import fails as if not installed
    result = runner.invoke(cli, ["scan", str(directory_corpus), "--engine", "dask"])
    assert result.exit_code == 4
    assert "pip install 'simdup[dask]'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def table_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Parquet shards in small row groups, and a saved Arrow dataset of the same rows.

    An id is repeated in another row group, a text is null and a row has no id.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path_factory.mktemp("table-corpus")
    texts: list[str | None] = list(_texts(90, 23))
    ids: list[str | None] = [f"t{k:03d}" for k in range(90)]
    texts[4] = None
    ids[7] = None  # named by its row number
    ids[30] = ids[2]  # a repeated id, in another row group
    table = pa.table({"id": ids, "text": texts, "n": list(range(90))})
    for k in range(2):
        pq.write_table(table.slice(45 * k, 45), root / f"part-{k}.parquet", row_group_size=8)
    saved = root / "saved"
    saved.mkdir()
    names = [f"data-{k:05d}-of-00003.arrow" for k in range(3)]
    for k, name in enumerate(names):
        with (
            pa.OSFile(str(saved / name), "wb") as sink,
            pa.ipc.new_stream(sink, table.schema) as writer,
        ):
            writer.write_table(table.slice(30 * k, 30), max_chunksize=7)
    files = [{"filename": name} for name in names]
    (saved / "state.json").write_text(json.dumps({"_data_files": files}), encoding="utf-8")
    (saved / "dataset_info.json").write_text("{}", encoding="utf-8")
    return root


def test_parquet_row_groups_and_arrow_files_print_the_same_bytes(
    client: Client, table_corpus: Path
) -> None:
    shards = str(table_corpus / "part-*.parquet")
    _assert_same_output(client, ["--parquet", shards])
    _assert_same_output(client, ["--arrow", str(table_corpus / "saved")], formats=("json",))


def test_dedupe_of_parquet_writes_the_same_bytes(
    client: Client, table_corpus: Path, tmp_path: Path
) -> None:
    shards = ["--parquet", str(table_corpus / "part-*.parquet")]
    _assert_same_dedupe(client, shards, formats=("json",))
    address = str(client.scheduler_info()["address"])
    written = {}
    for engine in ("local", "dask"):
        kept, removed = tmp_path / f"kept-{engine}.parquet", tmp_path / f"removed-{engine}.parquet"
        args = ["dedupe", *shards, "-o", str(kept), "--removed", str(removed), "--engine", engine]
        status, _ = _invoke([*args, "--scheduler", address] if engine == "dask" else args)
        assert status == 0
        written[engine] = (kept.read_bytes(), removed.read_bytes())
    assert written["dask"] == written["local"]
