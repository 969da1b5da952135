"""Load-test ``simdup serve`` on loopback: queries and check-and-adds from concurrent clients.

Builds an index of ``--docs`` documents of the benchmark corpus (``benchmarks/generate.py``)
with ``simdup index add --jsonl`` and ``simdup index optimize`` (keys planned on the whole
index), measures ``FingerprintIndex.query`` in this process (the index loaded: what
``simdup index query`` costs without its start-up), then starts ``simdup serve`` in a
subprocess and runs two timed phases of ``--clients`` concurrent clients, each a thread
with one keep-alive HTTP connection:

* **query**: ``POST /query`` of one document, an edited copy of a stored one (so every
  query has matches to verify);
* **check-and-add**: ``POST /check-and-add`` of one document: half of them edited copies
  of stored documents (they match, and are not added), half new texts, each new text sent
  by two clients under two ids at about the same time (one of them may add it).

``--workers N`` starts the server with N worker processes; the server's processor time
per request counts all of them, and the clients' own (this process's) is reported beside
it, since they share the machine's cores.

Afterwards the index is opened directly: every document acknowledged as added must be
there, the count must be the documents built plus those acknowledged (none lost, none
stored twice), and no new text may have been added under both of its ids.

Usage::

    python benchmarks/serve_bench.py --docs 100000 --clients 8 --seconds 30
    python benchmarks/serve_bench.py --corpus corpus.jsonl --index big.db  # kept for reruns
    python benchmarks/serve_bench.py --corpus corpus.jsonl --index big.db --seed 2  # rerun on it
    python benchmarks/serve_bench.py --corpus corpus.jsonl --index big.db --workers 2 \
        --skip-in-process --server-source ../other-checkout  # another build's server
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from index_bench import _generator, edited  # benchmarks/ is on the path of its scripts

from simdup.index import open_index
from simdup.model import Document


def simdup(*args: str) -> tuple[float, str]:
    """Run ``python -m simdup ARGS``; return (seconds, stdout)."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "simdup", *args], check=True, capture_output=True, text=True
    )
    return time.perf_counter() - start, done.stdout


def percentiles(seconds: list[float]) -> dict[str, float]:
    """Return the median and 99th percentile in milliseconds."""
    ordered = sorted(seconds)
    if not ordered:
        return {"p50_ms": float("nan"), "p99_ms": float("nan")}
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p99_ms": round(ordered[int(0.99 * (len(ordered) - 1))] * 1000, 2),
    }


class Client(threading.Thread):
    """One client: a keep-alive connection sending its bodies in turn until the deadline."""

    def __init__(self, port: int, path: str, bodies: list[dict[str, Any]], deadline: float):
        super().__init__()
        self.port, self.path, self.bodies, self.deadline = port, path, bodies, deadline
        self.latencies: list[float] = []
        self.answers: list[tuple[dict[str, Any], dict[str, Any]]] = []
        self.errors = 0

    def run(self) -> None:
        """Send the bodies one after the other, timing each round trip."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        headers = {"Content-Type": "application/json"}
        k = 0
        while time.perf_counter() < self.deadline and k < len(self.bodies):
            body = self.bodies[k]
            k += 1
            start = time.perf_counter()
            connection.request("POST", self.path, json.dumps(body), headers)
            response = connection.getresponse()
            data = response.read()
            self.latencies.append(time.perf_counter() - start)
            if response.status != 200:
                self.errors += 1
                continue
            self.answers.append((body, json.loads(data)))
        connection.close()


def _stat(pid: int) -> list[str]:
    """Return the fields of ``/proc/PID/stat`` after the command's name."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def family(pid: int) -> list[int]:
    """Return ``pid`` and its live child processes (a server's workers)."""
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if int(_stat(int(entry.name))[1]) == pid:
                    children.append(int(entry.name))
    return [pid, *sorted(children)]


def cpu_seconds(pid: int) -> float:
    """Return the CPU time a process and its workers have used (user and system), from ``/proc``."""
    total = 0
    for member in family(pid):
        with contextlib.suppress(OSError):
            fields = _stat(member)
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def peak_rss_mib(pid: int) -> float:
    """Return the largest peak resident set size (``VmHWM``) of a process and its workers, MiB.

    Workers forked after the index was read share its pages: each one's figure counts them.
    """
    peak = float("nan")
    for member in family(pid):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    value = round(int(line.split()[1]) / 1024, 1)
                    peak = value if peak != peak else max(peak, value)
    return peak


def phase(
    server: int,
    port: int,
    path: str,
    per_client: list[list[dict[str, Any]]],
    seconds: float,
    db: str,
) -> tuple[list[Client], dict[str, Any]]:
    """Run one client per body list for ``seconds``; return the clients and the figures.

    Besides throughput and latency, the server's own CPU time per request: on a machine
    shared with other work, the wall-clock figures say how busy it was, this what a
    request costs; the clients' own (this process's) CPU time per request, since they share
    the machine's cores with the server. And the largest the index's write-ahead log grew,
    sampled every 0.2 s.
    """
    deadline = time.perf_counter() + seconds
    clients = [Client(port, path, bodies, deadline) for bodies in per_client]
    log = Path(f"{db}-wal")
    largest = [0]

    def sample() -> None:
        while time.perf_counter() < deadline:
            with contextlib.suppress(OSError):
                largest[0] = max(largest[0], log.stat().st_size)
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    start, cpu, own = time.perf_counter(), cpu_seconds(server), time.process_time()
    sampler.start()
    for client in clients:
        client.start()
    for client in clients:
        client.join()
    wall, cpu = time.perf_counter() - start, cpu_seconds(server) - cpu
    own = time.process_time() - own
    sampler.join()
    latencies = [x for c in clients for x in c.latencies]
    figures = {
        "requests": len(latencies),
        "per_second": round(len(latencies) / wall, 1),
        **percentiles(latencies),
        "server_cpu_ms_per_request": round(cpu / max(1, len(latencies)) * 1000, 2),
        "client_cpu_ms_per_request": round(own / max(1, len(latencies)) * 1000, 2),
        "errors": sum(c.errors for c in clients),
        "load_average": round(os.getloadavg()[0], 1),
        "largest_log_mib": round(largest[0] / 2**20, 1),
    }
    return clients, figures


def start_server(
    db: str, log: Path, source: Path | None = None, workers: int | None = None
) -> tuple[subprocess.Popen[bytes], int]:
    """Start ``simdup serve`` on any free port; return the process and its port when ready.

    ``source``: run the simdup of this source tree (another build), not this one. The
    server runs in the log's folder: ``python -m`` puts its working directory first on
    the module path, so run from a checkout it would import that checkout's simdup
    whatever ``PYTHONPATH`` says.
    """
    env = dict(os.environ, PYTHONPATH=str(source)) if source else None
    index = str(Path(db).resolve())
    with open(log, "wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-m", "simdup", "serve", "--index", index, "--port", "0"]
            + (["--workers", str(workers)] if workers else []),
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
            cwd=log.parent,
        )
    end = time.monotonic() + 600
    while time.monotonic() < end:
        text = log.read_text()
        if "listening on " in text:
            port = int(text.split("listening on ")[1].split()[0].rsplit(":", 1)[1])
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                connection.request("GET", "/health")
                if connection.getresponse().status == 200:
                    return process, port
            except OSError:
                pass
        if process.poll() is not None:
            raise SystemExit(f"the server stopped:\n{log.read_text()}")
        time.sleep(0.1)
    process.kill()
    raise SystemExit("the server did not start")


def build(root: Path, db: str, args: argparse.Namespace, results: dict[str, Any]) -> list[Any]:
    """Write (or take) the corpus, index it, plan its keys on all of it; return the documents."""
    clock = time.perf_counter()
    if args.corpus:
        corpus, documents = args.corpus, read_corpus(args.corpus)
    else:
        documents = list(_generator().generate(args.docs, args.seed)[0])
        corpus = root / "corpus.jsonl"
        with open(corpus, "w") as sink:
            for name, text in documents:
                sink.write(json.dumps({"id": name, "text": text}) + "\n")
    print(f"{len(documents):,} documents in {time.perf_counter() - clock:.0f}s", file=sys.stderr)
    seconds, _ = simdup("index", "add", "--jsonl", str(corpus), "--db", db, "-q")
    results["add_seconds"] = round(seconds, 1)
    results["add_docs_per_second"] = round(len(documents) / seconds)
    print(f"indexed in {seconds:.0f}s", file=sys.stderr)
    seconds, out = simdup("index", "optimize", "--db", db, "--force", "--format", "json")
    results["optimize_seconds"] = round(seconds, 1)
    done = json.loads(out)
    results["keys"] = done["keys"]
    results["tables"] = done["tables"]
    print(f"keys planned again in {seconds:.0f}s", file=sys.stderr)
    return documents


def loaded_queries(db: str, queries: list[Document], *, held: bool) -> dict[str, Any]:
    """Return the latency of ``FingerprintIndex.query`` of one document, the index loaded.

    ``held``: with the stored fingerprints held in memory, as a server holds them.
    """
    latencies, candidates = [], []
    with open_index(db) as index:
        start = time.perf_counter()
        if held:
            index.hold_fingerprints()
        params = index.params
        index.query(queries[:1], params)
        loaded = time.perf_counter() - start
        for query in queries:
            start = time.perf_counter()
            found = index.query([query], params)
            latencies.append(time.perf_counter() - start)
            candidates.append(found.stats["candidates"])
    return {
        **percentiles(latencies),
        "first_query_seconds": round(loaded, 2),
        "candidates_verified_p50": statistics.median(candidates),
    }


def read_corpus(path: Path) -> list[tuple[str, str]]:
    """Return the (id, text) records of a JSON Lines corpus."""
    with open(path) as lines:
        return [(r["id"], r["text"]) for r in map(json.loads, lines)]


def check_and_add_bodies(
    documents: list[tuple[str, str]], clients: int, rng: np.random.Generator, seed: int
) -> tuple[list[list[dict[str, Any]]], int]:
    """Return each client's check-and-add bodies: near-duplicates, and new texts sent twice.

    The new texts and every id follow ``seed``: a run on an index kept from a run before
    needs another seed, or its new texts are stored already and nothing is added.
    """
    fresh, _ = _generator().generate(20_000, seed + 1)
    per_client: list[list[dict[str, Any]]] = [[] for _ in range(clients)]
    for k in range(len(fresh)):
        picked = documents[int(rng.integers(len(documents)))][1]
        text = fresh[k][1]
        for c in (k % clients, (k + 1) % clients):  # two clients, about the same moment
            per_client[c].append({"documents": [{"id": f"new-{seed}-{k}-c{c}", "text": text}]})
        per_client[k % clients].append(
            {"documents": [{"id": f"near-{seed}-{k}", "text": edited(picked, rng)}]}
        )
    return per_client, len(fresh)


def check_stored(db: str, built: int, clients: list[Client]) -> dict[str, Any]:
    """Check that every acknowledged add is stored once, and nothing else was added."""
    added = [
        body["documents"][0]["id"]
        for client in clients
        for body, answer in client.answers
        if answer["results"][0]["added"]
    ]
    twice: dict[str, int] = {}
    for name in added:
        if name.startswith("new-"):
            text_id = name.rsplit("-c", 1)[0]
            twice[text_id] = twice.get(text_id, 0) + 1
    with open_index(db) as index:
        names = set(index.store.names())
        count = index.count()
    return {
        "acknowledged_added": len(added),
        "all_acknowledged_stored": set(added) <= names,
        "stored_count_is_built_plus_acknowledged": count == built + len(added),
        "new_texts_added_under_both_ids": sum(1 for n in twice.values() if n > 1),
    }


def side_by_side(db: str, root: Path, other: Path, bodies: list[dict[str, Any]]) -> dict[str, Any]:
    """Send each query to this build's server and to ``other``'s, in turn; return both.

    On a shared machine two builds measured one after the other meet different loads;
    here every query meets both in the same moment (the first to be asked alternates),
    so their server CPU per request compares. The answers must be identical.
    """
    servers = [start_server(db, root / "this.log"), start_server(db, root / "other.log", other)]
    try:
        connections = [http.client.HTTPConnection("127.0.0.1", p, timeout=120) for _, p in servers]
        headers = {"Content-Type": "application/json"}
        cpu = [cpu_seconds(process.pid) for process, _ in servers]
        latencies: list[list[float]] = [[], []]
        same = 0
        for k, body in enumerate(bodies):
            answers: list[Any] = [None, None]
            for s in (0, 1) if k % 2 == 0 else (1, 0):
                start = time.perf_counter()
                connections[s].request("POST", "/query", json.dumps(body), headers)
                answers[s] = json.loads(connections[s].getresponse().read())
                latencies[s].append(time.perf_counter() - start)
            same += answers[0] == answers[1]
        figures = {
            name: {
                **percentiles(latencies[s]),
                "server_cpu_ms_per_request": round(
                    (cpu_seconds(servers[s][0].pid) - cpu[s]) / len(bodies) * 1000, 2
                ),
            }
            for s, name in enumerate(("this", "other"))
        }
    finally:
        for process, _ in servers:
            process.terminate()
            process.wait(timeout=600)
    return {**figures, "queries": len(bodies), "identical_answers": same}


def main() -> None:
    """Build (or reuse), load, check; print the figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument(
        "--workers",
        type=int,
        help="The server's worker processes (--workers; default: the server's own).",
    )
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--workdir", type=Path, help="Put the temp dir here.")
    parser.add_argument(
        "--corpus", type=Path, help="Index this JSON Lines corpus instead of generating one."
    )
    parser.add_argument(
        "--index",
        type=Path,
        help="Use (and keep) this index; built from the corpus only if it does not exist.",
    )
    parser.add_argument(
        "--no-server", action="store_true", help="Time FingerprintIndex.query only, no server."
    )
    parser.add_argument(
        "--side-by-side",
        type=Path,
        metavar="SOURCE",
        help="Send each query to this build's server and to one run from SOURCE (another "
        "checkout's root), in turn; no timed phases.",
    )
    parser.add_argument("--queries", type=int, default=3000, help="With --side-by-side.")
    parser.add_argument(
        "--server-source",
        type=Path,
        metavar="SOURCE",
        help="Run the server of another checkout's root (to compare builds in turn).",
    )
    parser.add_argument(
        "--skip-in-process",
        action="store_true",
        help="Leave out the timings of FingerprintIndex.query in this process.",
    )
    args = parser.parse_args()
    results: dict[str, Any] = {"clients": args.clients, "workers": args.workers}
    rng = np.random.default_rng(args.seed)
    with tempfile.TemporaryDirectory(dir=args.workdir) as temp:
        root = Path(temp)
        db = str(args.index or root / "index.db")
        if args.index and args.index.exists():
            documents = read_corpus(args.corpus) if args.corpus else []
            if not documents:
                documents = list(_generator().generate(args.docs, args.seed)[0])
        else:
            documents = build(root, db, args, results)
        with open_index(db) as index:
            built = index.count()
        results["documents"] = built
        picks = rng.choice(len(documents), size=min(20_000, len(documents)), replace=False)
        queries = [Document(f"q-{i}", edited(documents[i][1], rng)) for i in picks.tolist()]
        if not args.skip_in_process:
            results["index_query_loaded"] = loaded_queries(db, queries[:300], held=False)
            results["index_query_held"] = loaded_queries(db, queries[:300], held=True)
        if args.side_by_side:
            bodies = [{"documents": [{"id": q.name, "text": q.text}]} for q in queries]
            results["side_by_side"] = side_by_side(
                db, root, args.side_by_side.resolve(), bodies[: args.queries]
            )
        if args.no_server or args.side_by_side:
            print(json.dumps(results, indent=2))
            return
        source = args.server_source.resolve() if args.server_source else None
        process, port = start_server(db, root / "serve.log", source, workers=args.workers)
        try:
            bodies = [{"documents": [{"id": q.name, "text": q.text}]} for q in queries]
            per_client = [bodies[c :: args.clients] for c in range(args.clients)]
            clients, figures = phase(process.pid, port, "/query", per_client, args.seconds, db)
            figures["with_a_match"] = sum(
                1 for c in clients for _, a in c.answers if a["results"][0]["matches"]
            )
            results["query"] = figures
            print(f"query: {results['query']}", file=sys.stderr)
            per_client, _ = check_and_add_bodies(documents, args.clients, rng, args.seed)
            clients, figures = phase(
                process.pid, port, "/check-and-add", per_client, args.seconds, db
            )
            results["check_and_add"] = figures
            print(f"check-and-add: {results['check_and_add']}", file=sys.stderr)
            results["server_peak_rss_mib"] = peak_rss_mib(process.pid)
        finally:
            process.terminate()
            results["server_exit_status"] = process.wait(timeout=600)
        results["stored"] = check_stored(db, built, clients)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
