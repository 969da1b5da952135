"""``simdup serve``: near-duplicate checks over HTTP against an index (the ``serve`` extra)."""

from __future__ import annotations

import importlib.util
from typing import Any

import click

from simdup.cli.options import size_value
from simdup.cli.status import RunError, user_errors
from simdup.params import DEFAULT_TIMEOUT

EPILOG = """\b
Examples:
  simdup index add docs/ --db docs.db && simdup serve --index docs.db
  curl -s localhost:8750/query -d '{"documents": [{"id": "new", "text": "..."}]}'
  SIMDUP_TOKEN=secret simdup serve --index docs.db --host 0.0.0.0
"""


def _needs_extra() -> None:
    """Refuse to start without Starlette and uvicorn, saying how to install them."""
    missing = [m for m in ("starlette", "uvicorn") if importlib.util.find_spec(m) is None]
    if missing:
        raise RunError(f"simdup serve needs {' and '.join(missing)}: pip install 'simdup[serve]'")


@click.command("serve", epilog=EPILOG)
@click.option(
    "--index",
    "db",
    required=True,
    type=click.Path(dir_okay=False),
    help="Index file to serve (made with simdup index add; see --create).",
)
@click.option(
    "--create", is_flag=True, help="Create an empty index with default settings if absent."
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8750,
    show_default=True,
    help="Port to listen on (0: any free port, reported when listening).",
)
@click.option(
    "--token",
    envvar="SIMDUP_TOKEN",
    help="Bearer token every request must carry (default: $SIMDUP_TOKEN); required "
    "when listening beyond loopback.",
)
@click.option(
    "--max-body",
    type=click.IntRange(min=1),
    default=10 * 2**20,
    show_default=True,
    help="Largest request body in bytes (413 beyond).",
)
@click.option(
    "--max-documents",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    help="Most documents in one request (413 beyond).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.0),
    default=DEFAULT_TIMEOUT,
    show_default=True,
    help="Seconds a write waits for another writer before answering 503.",
)
@click.option(
    "--replan/--no-replan",
    default=True,
    show_default=True,
    help="Plan the index keys again in the background when the corpus outgrows them.",
)
@click.option(
    "--memory",
    metavar="SIZE",
    callback=size_value,
    help="Memory the index may take held by the server, e.g. 512M, 2G [default: the smaller "
    "of 4 GiB and half the machine]. Beyond it, queries read their candidates' rows instead.",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    help="Processes serving requests, sharing the held index (--memory bounds each one's) "
    "[default: one per core, at most 8].",
)
@click.option("--access-log", is_flag=True, help="Log every request to stderr.")
def serve_command(**opts: Any) -> None:
    """Answer near-duplicate queries over HTTP, JSON in and out, on one open index.

    Endpoints: POST /query, POST /add, POST /check-and-add (add only when nothing
    matches, atomically), GET /stats, GET /health, GET /openapi.json. SIGTERM or Ctrl-C
    stop it after the requests in flight.
    """
    _needs_extra()
    from simdup.serve.contract import Limits
    from simdup.serve.server import bind, check_token, check_workers, default_workers, serve
    from simdup.serve.service import Service, preload

    db, timeout, memory = opts["db"], opts["timeout"], opts["memory"]
    workers = opts["workers"] or default_workers()
    with user_errors():
        check_token(opts["host"], opts["token"])
        check_workers(workers)
        held, documents = preload(db, create=opts["create"], timeout=timeout, memory=memory)
    try:
        socks = bind(opts["host"], opts["port"], workers)
    except OSError as exc:
        raise RunError(f"cannot listen on {opts['host']}:{opts['port']}: {exc.strerror}") from None
    host, port = socks[0].getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host

    writes = None
    if workers > 1:  # one lock for every worker's writes, made before they fork
        import multiprocessing

        writes = multiprocessing.get_context("fork").Lock()

    def service_of(worker: int) -> Service:
        # One worker plans the keys again; the others see the new keys when it commits.
        replan = opts["replan"] and worker == 0
        return Service(
            db, timeout=timeout, replan=replan, memory=memory, held=held, hold=False, writes=writes
        )

    def started() -> None:
        processes = f", {workers} processes" if workers > 1 else ""
        address = f"http://{shown}:{port}"
        click.echo(
            f"simdup serve: {documents:,} documents{processes}; listening on {address}", err=True
        )

    limits = Limits(body=opts["max_body"], documents=opts["max_documents"])
    with user_errors():
        serve(
            service_of,
            socks,
            workers=workers,
            token=opts["token"],
            limits=limits,
            access_log=opts["access_log"],
            started=started,
        )
    click.echo("simdup serve: stopped", err=True)
