"""The HTTP face of ``simdup serve``: a Starlette application over a :class:`Service`.

Every answer is JSON. Bodies are read up to a bound (413 beyond it), requests are checked
by the contract (400), a bearer token guards every endpoint but ``/health`` and the
OpenAPI description when one is set (401), and every error a request meets, expected or
not, becomes ``{"error": "one line"}``: no traceback ever reaches a client (the server's
log keeps unexpected ones). Index work runs on worker threads, never on the event loop.
"""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from anyio import to_thread
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from simdup.errors import SimdupError
from simdup.index import SimdupIndexError
from simdup.serve.contract import Limits, RequestError, encode, parse_request, results
from simdup.serve.openapi import openapi
from simdup.serve.service import Service

Endpoint = Callable[[Request], Awaitable[Response]]


def answer(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    """Return a JSON response."""
    return Response(encode(value), status, headers, media_type="application/json")


def error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    """Return ``{"error": message}`` with ``status``."""
    return answer({"error": message}, status, headers)


async def read_body(request: Request, limit: int) -> bytes:
    """Read the body, refusing (413) one longer than ``limit`` bytes before reading it all."""
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise RequestError(413, f"the body has {int(length)} bytes; at most {limit}")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise RequestError(413, f"the body is longer than {limit} bytes")
    return bytes(body)


def authorized(request: Request, token: str | None) -> bool:
    """Tell whether the request carries the bearer token (always, when none is set)."""
    if token is None:
        return True
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        given.strip().encode("utf-8", "surrogateescape"), token.encode("utf-8")
    )


def create_app(
    service: Service, *, token: str | None = None, limits: Limits | None = None
) -> Starlette:
    """Return the application serving ``service`` (closed when the application stops).

    Args:
        service: The open index.
        token: The bearer token every request but ``/health`` must carry (None: none).
        limits: Largest body and most documents per request (None: the defaults).
    """
    limits = limits or Limits()

    def guarded(handler: Callable[[Request], Awaitable[Any]], *, public: bool = False) -> Endpoint:
        async def endpoint(request: Request) -> Response:
            if not public and not authorized(request, token):
                return error(401, "missing or wrong bearer token", {"WWW-Authenticate": "Bearer"})
            try:
                return answer(await handler(request))
            except RequestError as exc:
                return error(exc.status, exc.message)
            except SimdupIndexError as exc:
                return error(503, str(exc).splitlines()[0])
            except SimdupError as exc:
                return error(400, str(exc).splitlines()[0])

        return endpoint

    async def documents_of(request: Request, *, threshold: bool = True) -> Any:
        body = await read_body(request, limits.body)
        return parse_request(body, service.bits, limits, threshold=threshold)

    async def query(request: Request) -> Any:
        parsed = await documents_of(request)
        found = await to_thread.run_sync(service.query, parsed.documents, parsed.threshold)
        return results(found, added=False)

    async def check_and_add(request: Request) -> Any:
        parsed = await documents_of(request)
        found = await to_thread.run_sync(service.check_and_add, parsed.documents, parsed.threshold)
        return results(found, added=True)

    async def add(request: Request) -> Any:
        parsed = await documents_of(request, threshold=False)
        return await to_thread.run_sync(service.add, parsed.documents)

    async def stats(request: Request) -> Any:
        return await to_thread.run_sync(service.stats)

    async def health(request: Request) -> Any:
        return {"status": "ok"}

    async def description(request: Request) -> Any:
        return openapi()

    async def not_found(request: Request, exc: Exception) -> Response:
        # Starlette answers 404 for an unknown path and 405 for a known one asked with
        # another method: both are endpoints this server does not have.
        return error(404, f"no endpoint {request.method} {request.url.path}; see /openapi.json")

    async def failed(request: Request, exc: Exception) -> Response:
        return error(500, "internal error; the server log has the details")

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await to_thread.run_sync(service.close)

    routes = [
        Route("/query", guarded(query), methods=["POST"]),
        Route("/add", guarded(add), methods=["POST"]),
        Route("/check-and-add", guarded(check_and_add), methods=["POST"]),
        Route("/stats", guarded(stats), methods=["GET"]),
        Route("/health", guarded(health, public=True), methods=["GET"]),
        Route("/openapi.json", guarded(description, public=True), methods=["GET"]),
    ]
    return Starlette(
        routes=routes,
        exception_handlers={HTTPException: not_found, Exception: failed},
        lifespan=lifespan,
    )
