"""Running ``simdup serve``: the address, the token rule, uvicorn and a clean stop.

The server binds to the loopback address unless told otherwise, and refuses to listen on
any other without a bearer token. It binds its socket itself, so that port 0 (any free
port) can be reported before the first request. SIGTERM or SIGINT stop it gracefully:
uvicorn stops accepting connections and lets running requests finish (each write is one
transaction, so nothing is left half-written), then the service closes the index.
"""

from __future__ import annotations

import ipaddress
import signal
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from simdup.errors import ParameterError
from simdup.serve.contract import Limits
from simdup.serve.service import Service

#: Address and port ``simdup serve`` listens on by default.
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8750

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


def bind(host: str, port: int) -> socket.socket:
    """Return a listening TCP socket on ``host``:``port`` (port 0: any free one)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


@contextmanager
def quiet_stop() -> Iterator[None]:
    """Make SIGTERM and SIGINT, once uvicorn has stopped on them, end the run normally.

    uvicorn raises the signal again after its graceful stop; with these handlers that
    does nothing, and the command ends with status 0.
    """
    signals = (signal.SIGTERM, signal.SIGINT)
    previous = {s: signal.signal(s, lambda number, frame: None) for s in signals}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def serve(
    service: Service,
    sock: socket.socket,
    *,
    token: str | None,
    limits: Limits,
    access_log: bool = False,
    started: Callable[[], None] = lambda: None,
) -> None:
    """Serve ``service`` on a bound socket until SIGTERM or SIGINT; close it at the end."""
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
    started()
    with quiet_stop():
        server.run(sockets=[sock])
