"""``simdup serve``: a real server in a subprocess, on an ephemeral port, through a real client.

Readiness is polled (``/health``) with a generous deadline; nothing here depends on how
fast anything runs.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from simdup.cli import cli
from simdup.index import open_index
from simdup.index.ingest import Incoming
from simdup.model import Document
from simdup.serve.contract import Limits, RequestError, parse_request
from simdup.serve.openapi import openapi
from simdup.serve.service import Service

#: Seconds to wait for a server to start or stop (far beyond what it needs).
DEADLINE = 120.0

WORDS = [f"{a}{b}" for a in ("ka", "lo", "mi", "nu", "po", "ra", "si", "tu") for b in range(60)]


def text(seed: int, words: int = 60) -> str:
    """Return a text of its own: distinct seeds give unrelated texts."""
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(words))


class Server:
    """``simdup serve`` in a subprocess; its log in a file, its address read from it."""

    def __init__(
        self, script: str, db: Path, log: Path, *extra: str, env: dict[str, str] | None = None
    ) -> None:
        self.log = log
        command = [script, "serve", "--index", str(db), "--port", "0", *extra]
        with open(log, "wb") as err:
            self.process = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=err, env={**os.environ, **(env or {})}
            )
        try:
            self.url = self._address()
            self.client = httpx.Client(base_url=self.url, timeout=DEADLINE)
            self._ready()
        except BaseException:  # no server (nor its workers) left running
            self.process.kill()
            self.process.wait()
            raise

    def _address(self) -> str:
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            for line in self.log.read_text(errors="replace").splitlines():
                if "listening on " in line:
                    return line.split("listening on ")[1].strip()
            if self.process.poll() is not None:
                break
            time.sleep(0.05)
        self.process.kill()
        self.process.wait()
        raise AssertionError(f"the server did not start:\n{self.log.read_text()}")

    def _ready(self) -> None:
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            try:
                if self.client.get("/health").status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.05)
        raise AssertionError(f"the server did not answer:\n{self.log.read_text()}")

    def post(self, path: str, body: Any, **kwargs: Any) -> httpx.Response:
        return self.client.post(path, json=body, **kwargs)

    def processes(self) -> list[int]:
        """Return the server's process and its workers' (processes it forked)."""
        return [self.process.pid, *children(self.process.pid)]

    def stop(self, sig: int = signal.SIGTERM) -> int:
        self.client.close()
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout=DEADLINE)


def children(pid: int) -> list[int]:
    """Return the live processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def gone(pids: list[int]) -> bool:
    """Wait until none of ``pids`` runs (ended, or a zombie left to be reaped)."""
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        running = []
        for pid in pids:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state not in ("Z", "X"):
                running.append(pid)
        if not running:
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def start(simdup_script: str, tmp_path: Path) -> Iterator[Any]:
    servers: list[Server] = []

    def starter(db: Path, *extra: str, env: dict[str, str] | None = None) -> Server:
        log = tmp_path / f"serve{len(servers)}.log"
        server = Server(simdup_script, db, log, *extra, env=env)
        servers.append(server)
        return server

    yield starter
    for server in servers:
        server.stop(signal.SIGKILL)


def docs(*pairs: tuple[str, str]) -> dict[str, Any]:
    return {"documents": [{"id": i, "text": t} for i, t in pairs]}


def one_line_error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert list(body) == ["error"]
    assert isinstance(body["error"], str)
    assert "\n" not in body["error"]
    assert "Traceback" not in response.text
    return str(body["error"])


def test_every_endpoint(start: Any, tmp_path: Path) -> None:
    server = start(tmp_path / "a.db", "--create")
    assert server.client.get("/health").json() == {"status": "ok"}
    assert server.client.get("/stats").json()["documents"] == 0
    base = text(1)
    first = server.post("/check-and-add", docs(("a", base)))
    assert first.json() == {"results": [{"id": "a", "matches": [], "added": True}]}
    second = server.post("/check-and-add", docs(("b", base + " ka1"), ("c", text(2))))
    results = second.json()["results"]
    assert [r["id"] for r in results] == ["b", "c"]
    assert [r["added"] for r in results] == [False, True]
    (match,) = results[0]["matches"]
    assert list(match) == ["id", "hamming", "estimated_cosine", "cosine"]
    assert match["id"] == "a"
    assert 0.9 < match["cosine"] <= 1.0
    queried = server.post("/query", {**docs(("q", base), ("r", text(3))), "threshold": 0.95})
    assert queried.json()["results"] == [
        {"id": "q", "matches": [{"id": "a", "hamming": 0, "estimated_cosine": 1.0, "cosine": 1.0}]},
        {"id": "r", "matches": []},
    ]
    added = server.post("/add", docs(("d", text(4)), ("a", base)))
    assert added.json() == {"added": 1, "updated": 0, "unchanged": 1, "skipped": 0}
    with open_index(str(tmp_path / "a.db")) as index:
        (hexa,) = [r["fingerprint"] for r in index.export_records() if r["id"] == "d"]
    by_print = server.post("/query", {"documents": [{"id": "p", "fingerprint": hexa}]})
    (found,) = by_print.json()["results"][0]["matches"]
    assert found == {"id": "d", "hamming": 0, "estimated_cosine": 1.0, "cosine": None}
    printed = server.post("/add", {"documents": [{"id": "e", "fingerprint": "00ff"}]})
    assert printed.json()["added"] == 1
    empty = server.post("/check-and-add", docs(("f", "... !!!")))
    assert empty.json()["results"][0]["added"] is False
    assert "no features" in empty.json()["results"][0]["skipped"]
    stats = server.client.get("/stats").json()
    assert stats["documents"] == 4  # a, c, d, e
    assert stats["keys"]["source"] == "fallback"
    described = server.client.get("/openapi.json").json()
    assert described == openapi()
    assert set(described["paths"]) == {"/query", "/add", "/check-and-add", "/stats", "/health"}
    assert server.stop() == 0
    assert "stopped" in server.log.read_text()


def test_bad_requests_get_one_line_errors(start: Any, tmp_path: Path) -> None:
    server = start(tmp_path / "a.db", "--create", "--max-body", "2000", "--max-documents", "3")
    for body in (
        b"{bad",
        b"\xff\xfe",
        b"[]",
        b'{"documents": []}',
        b'{"documents": [{"id": "a"}]}',
        b'{"documents": [{"id": "a", "text": "x", "fingerprint": "00"}]}',
        b'{"documents": [{"id": 3, "text": "x"}]}',
        b'{"documents": [{"id": "a", "text": 3}]}',
        b'{"documents": [{"id": "a", "fingerprint": "xyz"}]}',
        b'{"documents": [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]}',
        b'{"documents": [{"id": "a", "text": "x"}], "threshold": 2}',
        b'{"documents": [{"id": "a", "text": "x"}], "threshold": 0.1}',
        b'{"documents": [{"id": "a", "text": "x", "url": "u"}]}',
        b'{"documents": [{"id": "a", "text": "x"}], "limit": 3}',
        b"[" * 5000,
    ):
        one_line_error(server.client.post("/query", content=body[:1999]), 400)
    assert "threshold" in one_line_error(
        server.post("/add", {**docs(("a", "x")), "threshold": 0.9}), 400
    )
    four = docs(*((f"d{k}", "x") for k in range(4)))
    assert "at most 3" in one_line_error(server.post("/check-and-add", four), 413)
    large = docs(("a", "word " * 1000))
    assert "at most 2000" in one_line_error(server.post("/query", large), 413)

    def chunks() -> Iterator[bytes]:  # no Content-Length: the bound holds while reading
        yield b'{"documents": [{"id": "a", "text": "'
        for _ in range(100):
            yield b"word " * 10
        yield b'"}]}'

    streamed = server.client.post("/query", content=chunks())
    assert "longer than 2000" in one_line_error(streamed, 413)
    one_line_error(server.client.get("/nowhere"), 404)
    one_line_error(server.client.get("/query"), 404)
    one_line_error(server.client.post("/health"), 404)
    assert server.client.get("/health").json() == {"status": "ok"}
    assert server.client.get("/stats").json()["documents"] == 0


def test_the_token_guards_every_endpoint_but_health(start: Any, tmp_path: Path) -> None:
    server = start(tmp_path / "a.db", "--create", env={"SIMDUP_TOKEN": "s3cret"})
    body = docs(("a", text(1)))
    for path in ("/query", "/add", "/check-and-add"):
        refused = server.post(path, body)
        assert "token" in one_line_error(refused, 401)
        assert refused.headers["www-authenticate"] == "Bearer"
        one_line_error(server.post(path, body, headers={"Authorization": "Bearer wrong"}), 401)
        one_line_error(server.post(path, body, headers={"Authorization": "Basic s3cret"}), 401)
    one_line_error(server.client.get("/stats"), 401)
    assert server.client.get("/health").status_code == 200
    good = {"Authorization": "Bearer s3cret"}
    assert server.post("/check-and-add", body, headers=good).json()["results"][0]["added"]
    assert server.client.get("/stats", headers=good).json()["documents"] == 1


def test_listening_beyond_loopback_needs_a_token(tmp_path: Path, simdup_script: str) -> None:
    db = str(tmp_path / "a.db")
    result = CliRunner().invoke(cli, ["serve", "--index", db, "--create", "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "--token" in result.output
    assert not (tmp_path / "a.db").exists()
    run = subprocess.run(
        [simdup_script, "serve", "--index", db, "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        check=False,
        env={k: v for k, v in os.environ.items() if k != "SIMDUP_TOKEN"},
    )
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    missing = CliRunner().invoke(cli, ["serve", "--index", db])
    assert missing.exit_code == 4
    assert "no index at" in missing.output


def test_serve_without_the_extra_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "uvicorn" else real(name, *a),
    )
    result = CliRunner().invoke(cli, ["serve", "--index", "x.db"])
    assert result.exit_code == 4
    assert "pip install 'simdup[serve]'" in result.output


@pytest.mark.parametrize("workers", ["1", "2"])
def test_concurrent_check_and_add_of_one_text_adds_it_once(
    start: Any, tmp_path: Path, simdup_script: str, workers: str
) -> None:
    db = tmp_path / "a.db"
    server = start(db, "--create", "--workers", workers)
    same = text(7)
    clients = 8
    barrier = threading.Barrier(clients)
    answers: list[dict[str, Any]] = []

    def send(k: int) -> None:
        with httpx.Client(base_url=server.url, timeout=DEADLINE) as client:
            barrier.wait()
            response = client.post("/check-and-add", json=docs((f"t{k}", same)))
            answers.append(response.json()["results"][0])

    threads = [threading.Thread(target=send, args=(k,)) for k in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    added = [a["id"] for a in answers if a["added"]]
    assert len(answers) == clients
    assert len(added) == 1
    for answer in answers:
        if not answer["added"]:
            assert [m["id"] for m in answer["matches"]] == added
    assert server.client.get("/stats").json()["documents"] == 1
    # The shell's index query works beside the running server (WAL).
    beside = subprocess.run(
        [simdup_script, "index", "query", "-", "--db", str(db), "--format", "jsonl"],
        input=same,
        capture_output=True,
        text=True,
        check=False,
    )
    assert beside.returncode == 0, beside.stderr
    pairs = [json.loads(line) for line in beside.stdout.splitlines()]
    assert [p["b"] for p in pairs] == added


def seed_of(name: str) -> int:
    """Return the text seed of a load document ``w<worker>-<k>`` (unrelated texts)."""
    worker, k = name[1:].split("-")
    return 100_000 * (int(worker) + 1) + int(k)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_sigterm_and_sigkill_then_restart_lose_nothing(
    start: Any, tmp_path: Path, workers: str
) -> None:
    db = tmp_path / "a.db"
    server = start(db, "--create", "--workers", workers)
    acknowledged: list[str] = []
    lock = threading.Lock()
    enough = threading.Event()

    def load(worker: int) -> None:
        with httpx.Client(base_url=server.url, timeout=DEADLINE) as client:
            for k in range(10_000):
                name = f"w{worker}-{k}"
                try:
                    response = client.post("/check-and-add", json=docs((name, text(seed_of(name)))))
                except httpx.TransportError:
                    return  # the server was killed
                if response.status_code == 200 and response.json()["results"][0]["added"]:
                    with lock:
                        acknowledged.append(name)
                        if len(acknowledged) >= 40:
                            enough.set()

    loads = [threading.Thread(target=load, args=(w,)) for w in range(4)]
    for load_thread in loads:
        load_thread.start()
    assert enough.wait(DEADLINE)
    serving = server.processes()
    assert server.stop(signal.SIGKILL) == -signal.SIGKILL
    for load_thread in loads:
        load_thread.join()
    assert gone(serving)  # a forked worker dies with the server, keeping no port
    with open_index(str(db)) as index:
        stored = index.store.names()
    assert set(acknowledged) <= set(stored)
    assert len(stored) == len(set(stored))
    again = start(db, "--workers", workers)
    assert again.client.get("/stats").json()["documents"] == len(stored)
    resent = again.post("/check-and-add", docs(*((n, text(seed_of(n))) for n in acknowledged[:50])))
    assert not any(r["added"] for r in resent.json()["results"])
    assert again.post("/add", docs(("late", text(99_999)))).json()["added"] == 1
    assert again.stop(signal.SIGTERM) == 0
    assert "stopped" in again.log.read_text()
    with open_index(str(db)) as index:
        assert index.count() == len(stored) + 1
    assert open_index(str(db)).store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_worker_processes_share_the_index_and_stop_together(start: Any, tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    with open_index(str(db), create=True) as index:
        index.add_documents([Document(f"d{k}", text(k)) for k in range(300)])
    server = start(db, "--workers", "2")
    serving = server.processes()
    assert len(serving) == 3  # this one and two workers
    assert "300 documents, 2 processes; listening on http" in server.log.read_text()
    assert server.post("/add", docs(("new", text(5000)))).json()["added"] == 1
    answers: list[Any] = []

    def ask(k: int) -> None:
        with httpx.Client(base_url=server.url, timeout=DEADLINE) as client:
            body = docs(("q", text(5000) + " ka1"), ("r", text(k) + " lo2"))
            answers.append(client.post("/query", json=body).json()["results"])

    asking = [threading.Thread(target=ask, args=(k,)) for k in range(16)]
    for thread in asking:
        thread.start()
    for thread in asking:
        thread.join()
    assert len(answers) == 16  # whichever worker answered, the new document is there
    for results in answers:
        assert results[0]["matches"][0]["id"] == "new"
        assert results[1]["matches"][0]["id"].startswith("d")
    assert server.client.get("/stats").json()["documents"] == 301
    assert server.stop(signal.SIGTERM) == 0
    assert gone(serving)
    assert "stopped" in server.log.read_text()


def test_workers_do_not_join_a_server_already_on_the_port(
    start: Any, tmp_path: Path, simdup_script: str
) -> None:
    server = start(tmp_path / "a.db", "--create", "--workers", "2")
    port = server.url.rsplit(":", 1)[1]
    command = [simdup_script, "serve", "--index", str(tmp_path / "b.db"), "--create"]
    second = subprocess.run(
        [*command, "--port", port, "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=DEADLINE,
        check=False,
    )
    assert second.returncode == 4
    assert f"cannot listen on 127.0.0.1:{port}" in second.stderr
    assert "Traceback" not in second.stderr
    assert server.client.get("/health").status_code == 200


def test_one_worker_per_usable_core_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from simdup.serve import server

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3, 5}, raising=False)
    assert server.default_workers() == 3
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    assert server.default_workers() == server.MAX_DEFAULT_WORKERS
    monkeypatch.delattr(os, "fork")
    assert server.default_workers() == 1


def test_workers_need_processes_that_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "fork")
    result = CliRunner().invoke(cli, ["serve", "--index", "a.db", "--workers", "2"])
    assert result.exit_code == 2
    assert "needs processes that fork" in result.output
    assert "Traceback" not in result.output


def test_a_worker_that_dies_stops_the_server_with_one_line(start: Any, tmp_path: Path) -> None:
    server = start(tmp_path / "a.db", "--create", "--workers", "2")
    _, *workers = server.processes()
    os.kill(workers[1], signal.SIGKILL)
    assert server.process.wait(timeout=DEADLINE) == 4
    assert gone(workers)
    log = server.log.read_text()
    assert "stopped with status -9" in log
    assert "Traceback" not in log


@pytest.mark.parametrize("workers", ["1", "2"])
def test_the_server_plans_keys_again_as_the_index_grows(
    start: Any, tmp_path: Path, workers: str
) -> None:
    server = start(tmp_path / "a.db", "--create", "--workers", workers)
    total = 1100
    for lo in range(0, total, 275):
        body = docs(*((f"d{k}", text(k)) for k in range(lo, lo + 275)))
        assert server.post("/add", body).json()["added"] == 275
    end = time.monotonic() + DEADLINE

    def stats_now() -> Any:
        # A query on a new connection, which may reach the worker that plans the keys
        # (with two, the adds above may all have gone to the other); then the keys.
        with httpx.Client(base_url=server.url, timeout=DEADLINE) as client:
            client.post("/query", json=docs(("q", text(1))))
            return client.get("/stats").json()

    stats = stats_now()
    while (stats["keys"]["source"] != "planned" or stats["replanning"]) and time.monotonic() < end:
        time.sleep(0.1)
        stats = stats_now()
    assert stats["keys"]["source"] == "planned"
    assert stats["keys"]["planned_on"] == total
    assert stats["documents"] == total
    assert stats["replan_at"] == 4 * total
    sample = [17, 300, 1099]
    found = server.post("/query", docs(*((f"q{k}", text(k)) for k in sample))).json()
    assert [r["matches"][0]["id"] for r in found["results"]] == [f"d{k}" for k in sample]


def test_an_index_beyond_memory_is_served_without_holding_it(start: Any, tmp_path: Path) -> None:
    db = tmp_path / "a.db"
    with open_index(str(db), create=True) as index:
        index.add_documents([Document(f"d{k}", text(k)) for k in range(1100)])
    held = start(db)
    queries = docs(*((f"q{k}", text(k) + " and a few more words") for k in (3, 500, 1099)))
    expected = held.post("/query", queries).json()
    assert held.client.get("/stats").json()["held_in_memory"] is True
    held.stop()
    unheld = start(db, "--memory", "1K")
    assert unheld.client.get("/stats").json()["held_in_memory"] is False
    assert unheld.post("/query", queries).json() == expected
    assert [r["matches"][0]["id"] for r in expected["results"]] == ["d3", "d500", "d1099"]
    unheld.stop()
    assert "not held in memory" in unheld.log.read_text()


def test_the_service_lets_go_of_an_index_that_outgrows_its_memory(tmp_path: Path) -> None:
    service = Service(str(tmp_path / "a.db"), create=True, memory=200_000, replan=False)
    try:
        assert service.held is not None  # empty: it fits
        service.add([Incoming(f"d{k}", text(k)) for k in range(1100)])  # keys planned
        service.query([Incoming("q", text(5))], None)  # the held arrays grow as they are read
        assert service.held is None
        assert service.stats()["held_in_memory"] is False
        found = service.query([Incoming("q", text(700) + " more")], None)
        assert [m.b for m in found[0].matches][:1] == ["d700"]
    finally:
        service.close()


def test_requests_leave_the_log_to_the_services_own_copier(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No write waits to copy the write-ahead log into the file; the service's thread does.

    SQLite would copy it in the commit that takes it past 1,000 pages. With the copier held
    back, the file stays as it was however long the log grows; let go, it copies the log.
    """
    path = tmp_path / "a.db"
    wal = tmp_path / "a.db-wal"
    monkeypatch.setattr("simdup.serve.service.CHECKPOINT_DELAY", DEADLINE)
    service = Service(str(path), create=True, replan=False)
    try:
        before = path.stat().st_size
        for start in range(0, 3000, 500):  # six commits
            service.add([Incoming(f"d{k}", text(k, words=300)) for k in range(start, start + 500)])
        assert wal.stat().st_size > 1000 * 4096  # past SQLite's own trigger
        assert path.stat().st_size == before
        with open_index(str(path)) as index:  # the writes are all there, in the log
            assert index.count() == 3000
            assert index.checkpoint() > 1000 * 4096  # what the service's copier would have copied
        assert path.stat().st_size > before
    finally:
        service.close()


class Recording:
    """A lock that counts how often it was taken."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.taken = 0

    def __enter__(self) -> None:
        self.lock.acquire()
        self.taken += 1

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


def test_past_its_limit_the_log_is_copied_to_its_end_with_writes_held_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes always committing while the copy runs kept the log from starting again.

    Past the limit the copier ends its copy holding the writes' lock; the next write then
    starts the log from its beginning, and its file is cut back to the limit.
    """
    path, wal = tmp_path / "a.db", tmp_path / "a.db-wal"
    monkeypatch.setattr("simdup.serve.service.CHECKPOINT_DELAY", DEADLINE)  # copies by hand
    monkeypatch.setattr("simdup.serve.service.LOG_LIMIT", 1 << 20)
    service = Service(str(path), create=True, replan=False)
    try:
        copier = service._checkpoints
        lock = Recording()
        monkeypatch.setattr(copier, "_write", lock)
        service.add([Incoming(f"d{k}", text(k)) for k in range(20)])
        copier.copy()
        assert lock.taken == 0  # a short log: copied with writes going on
        service.add([Incoming(f"e{k}", text(1000 + k, words=300)) for k in range(1500)])
        assert wal.stat().st_size > 1 << 20  # past the limit
        copier.copy()
        assert lock.taken == 1
        service.add([Incoming("f", text(5000))])
        assert wal.stat().st_size <= 1 << 20  # started again, and cut back
        with open_index(str(path)) as index:
            assert index.count() == 1521
    finally:
        service.close()


def test_the_services_copier_copies_the_log_after_writes(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    service = Service(str(path), create=True, replan=False)
    try:
        before = path.stat().st_size
        service.add([Incoming(f"d{k}", text(k)) for k in range(200)])
        deadline = time.monotonic() + DEADLINE
        while path.stat().st_size == before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert path.stat().st_size > before
    finally:
        service.close()


def test_a_restarting_checkpoint_waits_for_a_long_reader_only_briefly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past its limit the copier holds every writer while it waits: briefly, whoever reads."""
    path = str(tmp_path / "a.db")
    with open_index(path, create=True) as index:
        index.add_documents([Document(f"d{k}", text(k)) for k in range(50)])
    monkeypatch.setattr("simdup.index.handle.RESTART_WAIT", 0.01)
    with open_index(path, timeout=600.0) as copier, open_index(path) as reader:
        copier.leave_checkpoints(1 << 20)
        with reader.store.snapshot():
            reader.count()  # a reader in the log, for as long as the block runs
            with open_index(path) as writer:
                for k in range(10):  # ten transactions in the log
                    writer.add_documents([Document(f"late{k}", text(900 + k))])
            start = time.monotonic()
            copier.checkpoint(restart=True)  # cannot restart the log: the reader is in it
            assert time.monotonic() - start < 300  # not the connection's 600 s
        (waits,) = copier.store.db.execute("PRAGMA busy_timeout").fetchone()
        assert waits == 600_000  # the connection's own timeout again
        logged = copier.checkpoint()  # every write so far: the log did not start again
        copier.checkpoint(restart=True)  # no reader now
        with open_index(path) as writer:
            writer.add_documents([Document("later", text(998))])
        assert 0 < copier.checkpoint() < logged  # the last write alone: it started again


def test_the_contract_without_a_server() -> None:
    limits = Limits(body=100, documents=2)
    request = parse_request(
        b'{"documents": [{"id": "a", "text": "x"}], "threshold": 1}', 64, limits
    )
    assert request.threshold == 1.0
    assert request.documents[0].text == "x"
    printed = parse_request(b'{"documents": [{"id": "a", "fingerprint": "ff"}]}', 64, limits)
    assert printed.documents[0].fingerprint == 255
    with pytest.raises(RequestError) as caught:
        parse_request(
            b'{"documents": [{"id": "a", "fingerprint": "1' + b"0" * 16 + b'"}]}', 64, limits
        )
    assert caught.value.status == 400
    with pytest.raises(RequestError) as caught:
        parse_request(b'{"documents": [1, 2, 3]}', 64, limits)
    assert caught.value.status == 413


class _Opened:
    """A service whose opening took a SIGTERM on the way."""

    closed = False

    def close(self) -> None:
        _Opened.closed = True


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_worker_stopped_while_it_opens_the_index_ends_without_serving(signum: int) -> None:
    # A stop that came before uvicorn took the signals over was lost: the worker served on
    # and its parent waited for it (one stop in twenty, right after the server started).
    from simdup.serve import server

    pid = os.fork()
    if pid == 0:  # the worker, in a process of its own
        status = 9
        try:

            def opening(number: int) -> Any:
                os.kill(os.getpid(), signum)
                return _Opened()

            def serving(*args: Any, **kwargs: Any) -> None:
                os._exit(8)  # it must not serve

            server._run = serving
            code = server._worker(opening, 1, None, os.getppid(), {})  # type: ignore[arg-type]
            status = code if _Opened.closed else 7
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_stop_right_after_start_ends_every_worker(tmp_path: Path, simdup_script: str) -> None:
    db = tmp_path / "a.db"
    with open_index(str(db), create=True) as index:
        index.add_documents([Document(f"d{k}", text(k)) for k in range(50)])
    for _ in range(5):
        log = tmp_path / "serve.log"
        with open(log, "w") as out:
            process = subprocess.Popen(
                [simdup_script, "serve", "--index", str(db), "--port", "0", "--workers", "2"],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            end = time.monotonic() + DEADLINE
            while "listening on" not in log.read_text() and time.monotonic() < end:
                time.sleep(0.005)
            pids = [process.pid, *children(process.pid)]
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=DEADLINE) == 0, log.read_text()
            assert gone(pids)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
