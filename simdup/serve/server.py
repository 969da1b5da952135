"""Running ``simdup serve``: the address, the token rule, uvicorn and a clean stop.

The server binds to the loopback address unless told otherwise, and refuses to listen on
any other without a bearer token. It binds its socket itself, so that port 0 (any free
port) can be reported before the first request. SIGTERM or SIGINT stop it gracefully:
uvicorn stops accepting connections and lets running requests finish (each write is one
transaction, so nothing is left half-written), then the service closes the index.
"""

from __future__ import annotations

import contextlib
import ctypes
import ipaddress
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from simdup.errors import ParameterError, SimdupError
from simdup.serve.contract import Limits
from simdup.serve.service import Service

#: Address and port ``simdup serve`` listens on by default.
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8750

#: ``prctl`` option: the signal a process gets when its parent ends.
PR_SET_PDEATHSIG = 1

LOG = logging.getLogger("simdup.serve")

#: Environment variable holding the bearer token (safer than ``--token`` on a command line).
TOKEN_ENV = "SIMDUP_TOKEN"


def loopback(host: str) -> bool:
    """Tell whether ``host`` is a loopback address (reachable from this machine only).

    >>> loopback("127.0.0.1"), loopback("::1"), loopback("localhost"), loopback("0.0.0.0")
    (True, True, True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


#: The most worker processes ``simdup serve`` starts by default (one per usable core).
MAX_DEFAULT_WORKERS = 8


def default_workers() -> int:
    """Return one worker per core this process may use, at most :data:`MAX_DEFAULT_WORKERS`.

    A search holds the interpreter, so processes, not threads, use the cores: on two
    cores two workers answered 1.4 (real text) to 1.9 (generated) times the queries a
    second of one. Where processes cannot fork, one.
    """
    if not hasattr(os, "fork"):
        return 1
    affinity = getattr(os, "sched_getaffinity", None)
    cores = len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)
    return max(1, min(MAX_DEFAULT_WORKERS, cores))


def check_workers(workers: int) -> None:
    """Refuse more than one worker where processes cannot fork (Windows).

    Raises:
        ParameterError: for more than one worker without ``os.fork``.
    """
    if workers > 1 and not hasattr(os, "fork"):
        raise ParameterError("--workers above 1 needs processes that fork; this system has none")


def check_token(host: str, token: str | None) -> None:
    """Refuse to listen beyond loopback without a token.

    Raises:
        ParameterError: for another address and no token.
    """
    if not loopback(host) and not token:
        raise ParameterError(
            f"listening on {host} lets other machines in: give a bearer token with "
            f"--token or ${TOKEN_ENV}, or listen on {DEFAULT_HOST}"
        )


def bind(host: str, port: int, copies: int = 1) -> list[socket.socket]:
    """Return listening TCP sockets on ``host``:``port`` (port 0: any free one).

    ``copies`` > 1: as many sockets on the one port, one per worker process
    (``SO_REUSEPORT``): the kernel spreads new connections over them. Sharing one
    socket, the first worker to wake takes every connection waiting, and with a few
    long-lived client connections one worker served them all while the other idled.
    Where the option is missing, one socket, shared.

    The port is first bound without the option and let go: another server of the same
    user listening there with it would otherwise be joined, silently, and sent half of
    the connections.
    """
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    spread = copies > 1 and hasattr(socket, "SO_REUSEPORT")
    if spread:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)  # refused if anyone listens there
            address = probe.getsockname()
    socks: list[socket.socket] = []
    try:
        for _ in range(copies if spread else 1):
            sock = socket.socket(family, kind, proto)
            socks.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if spread:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind(address)
            address = sock.getsockname()  # the port chosen, for the next copy
            sock.listen(2048)
            sock.set_inheritable(True)
    except BaseException:
        for sock in socks:
            sock.close()
        raise
    return socks


#: The signals that stop a server gracefully.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class _Stop:
    """SIGTERM or SIGINT in a process that serves, whenever it comes.

    uvicorn handles them only while it runs; one that comes before (a worker still
    opening the index or starting uvicorn when the server is stopped) was lost, and that
    worker served on, its parent waiting for it (one stop in twenty, right after start).
    This handler stops the server if there is one, and tells a worker not to start one;
    uvicorn raises the signal again after its graceful stop, which then does nothing, and
    the command ends with status 0.
    """

    def __init__(self) -> None:
        self.asked = False
        self.server: Any = None

    def __call__(self, number: int, frame: Any) -> None:
        self.asked = True
        if self.server is not None:
            self.server.should_exit = True


@contextmanager
def stopping(handler: Callable[[int, Any], None]) -> Iterator[None]:
    """Have ``handler`` take SIGTERM and SIGINT in this block, and let them through.

    A server's process holds them back while its workers fork (each takes them only once
    it has its own handler); the handlers before are put back after the block.
    """
    previous = {s: signal.signal(s, handler) for s in STOP_SIGNALS}
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        for number, before in previous.items():
            signal.signal(number, before)


def serve(
    service_of: Callable[[int], Service],
    socks: list[socket.socket],
    *,
    workers: int = 1,
    token: str | None,
    limits: Limits,
    access_log: bool = False,
    started: Callable[[], None] = lambda: None,
) -> None:
    """Serve on a bound socket until SIGTERM or SIGINT; close the service at the end.

    Args:
        service_of: Opens the service of worker ``n`` (0 first), in the process serving.
        socks: The listening sockets (:func:`bind`).
        workers: Processes serving (1: this one; more: forked, each accepting on one
            of ``socks``, this one waiting for them).
        token: The bearer token requests must carry (None: none).
        limits: Largest body and most documents per request.
        access_log: Log every request.
        started: Called once serving, to say so.

    Raises:
        SimdupError: a worker could not open the index, or stopped on its own.
    """
    if workers <= 1:
        service = service_of(0)
        try:
            started()
            stop = _Stop()
            with stopping(stop):
                _run(service, socks[0], stop, token=token, limits=limits, access_log=access_log)
        finally:
            service.close()
        return
    run = {"token": token, "limits": limits, "access_log": access_log}
    _supervise(service_of, socks, workers, started, **run)


def _run(
    service: Service,
    sock: socket.socket,
    stop: _Stop,
    *,
    token: str | None,
    limits: Limits,
    access_log: bool,
) -> None:
    """Run uvicorn over ``service`` on ``sock`` in this process until SIGTERM or SIGINT.

    ``stop`` handles them outside uvicorn's own handling (see :class:`_Stop`).
    """
    import uvicorn

    from simdup.serve.app import create_app

    app = create_app(service, token=token, limits=limits)
    config = uvicorn.Config(
        app,
        log_level="info" if access_log else "warning",
        access_log=access_log,
        lifespan="on",
        server_header=False,
        timeout_graceful_shutdown=30,
    )
    server = uvicorn.Server(config)
    stop.server = server
    server.should_exit = stop.asked
    server.run(sockets=[sock])


def _supervise(
    service_of: Callable[[int], Service],
    socks: list[socket.socket],
    workers: int,
    started: Callable[[], None],
    **run: Any,
) -> None:
    """Fork ``workers`` processes serving ``socks``; stop them all when one stops or on a signal.

    Python runs one thread of a process at a time: a request's search holds the
    interpreter, so a second process, not a second thread, uses a second core. The
    workers take each its socket (the kernel hands each connection to one of them) and
    share the pages of what was held before they forked. Each dies with this process, even by
    SIGKILL (``PR_SET_PDEATHSIG``), so that none keeps the port.
    """
    parent = os.getpid()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    children: dict[int, int] = {}
    # Held back until each process has its handler: none is lost, here or in a worker.
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    for number in range(workers):
        pid = os.fork()
        if pid == 0:
            own = socks[number % len(socks)]
            for sock in socks:
                if sock is not own:
                    sock.close()
            os._exit(_worker(service_of, number, own, parent, run))
        children[pid] = number
    for sock in socks:  # the workers hold them
        sock.close()
    ending = False

    def stop(signum: int = signal.SIGTERM, frame: Any = None) -> None:
        nonlocal ending
        ending = True
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    failed: list[str] = []
    with stopping(stop):
        started()
        while children:
            pid, status = os.wait()
            if pid not in children:
                continue
            number = children.pop(pid)
            code = os.waitstatus_to_exitcode(status)
            if not ending or code != 0:  # (told to stop while opening the index: 0 too)
                failed.append(f"worker {number} stopped with status {code}")
            if not ending:
                stop()
    if failed:
        raise SimdupError(f"{failed[0]}; the log above says why")


def _worker(
    service_of: Callable[[int], Service],
    number: int,
    sock: socket.socket,
    parent: int,
    run: dict[str, Any],
) -> int:
    """Serve as forked worker ``number``; return its exit status.

    Stopped before it serves (while it opens the index), it ends at once with status 0.
    """
    stop = _Stop()
    with stopping(stop):
        _die_with(parent)
        try:
            service = service_of(number)
        except SimdupError as exc:
            LOG.error("worker %d: %s", number, str(exc).splitlines()[0])
            return 1
        if stop.asked:
            service.close()
            return 0
        try:
            _run(service, sock, stop, **run)
        except Exception:
            LOG.exception("worker %d stopped", number)
            return 1
        finally:
            service.close()
            logging.shutdown()
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
    return 0


def _die_with(parent: int) -> None:
    """Have the kernel kill this process when its parent ends (Linux only).

    Elsewhere a worker ends with its parent only if the parent ended before this check.
    """
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent ended before the line above
        os._exit(1)
