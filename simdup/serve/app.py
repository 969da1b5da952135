"""The HTTP face of ``simdup serve``: a Starlette application over a :class:`Service`.

Every answer is JSON. Bodies are read up to a bound (413 beyond it), requests are checked
by the contract (400), a bearer token guards every endpoint but ``/health`` and the
OpenAPI description when one is set (401), and every error a request meets, expected or
not, becomes ``{"error": "one line"}``: no traceback ever reaches a client (the server's
log keeps unexpected ones). Searches run on the event loop (a query, a check-and-add's
first search); writes, which may wait for another writer's lock, on worker threads.
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
from simdup.serve.contract import Limits, Parsed, RequestError, encode, parse_request, results
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


class Endpoints:
    """The request handlers over one service, each returning the JSON-ready answer."""

    def __init__(self, service: Service, limits: Limits) -> None:
        self.service = service
        self.limits = limits

    async def _documents(self, request: Request, *, threshold: bool = True) -> Parsed:
        body = await read_body(request, self.limits.body)
        return parse_request(body, self.service.bits, self.limits, threshold=threshold)

    async def query(self, request: Request) -> Any:
        """``POST /query``: the stored near-duplicates of each document."""
        parsed = await self._documents(request)
        # On the event loop, not a worker thread: a search holds the interpreter, so
        # threads add no speed, and handing each to one cost a third more processor time
        # (9.3 against 5.8 ms a query at 1,000,000 documents, 8 clients). A query waits
        # for no lock; writes, which may wait for another writer, keep to threads.
        found = self.service.query(parsed.documents, parsed.threshold)
        return results(found, added=False)

    async def check_and_add(self, request: Request) -> Any:
        """``POST /check-and-add``: the matches; each document stored only if it has none."""
        parsed = await self._documents(request)
        # Searched on the event loop as a query is; only a call that may store a document
        # goes to a thread, where it waits for the writers' lock and searches again.
        first = self.service.check_first(parsed.documents, parsed.threshold)
        if first.settled:
            return results(first.found, added=True)
        found = await to_thread.run_sync(
            self.service.check_and_add, parsed.documents, parsed.threshold, first
        )
        return results(found, added=True)

    async def add(self, request: Request) -> Any:
        """``POST /add``: documents added or replaced, counted."""
        parsed = await self._documents(request, threshold=False)
        return await to_thread.run_sync(self.service.add, parsed.documents)

    async def stats(self, request: Request) -> Any:
        """``GET /stats``: documents stored and the keys in use."""
        return await to_thread.run_sync(self.service.stats)

    async def health(self, request: Request) -> Any:
        """``GET /health``: the server answers."""
        return {"status": "ok"}

    async def description(self, request: Request) -> Any:
        """``GET /openapi.json``: the OpenAPI description."""
        return openapi()


def guarded(
    handler: Callable[[Request], Awaitable[Any]], token: str | None, *, public: bool = False
) -> Endpoint:
    """Return an endpoint checking the token (unless ``public``) and answering errors in JSON."""

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


async def not_found(request: Request, exc: Exception) -> Response:
    """Answer an unknown path (404) or a known one asked with another method (405) alike."""
    return error(404, f"no endpoint {request.method} {request.url.path}; see /openapi.json")


async def failed(request: Request, exc: Exception) -> Response:
    """Answer an unexpected error without its details (the server log keeps them)."""
    return error(500, "internal error; the server log has the details")


def create_app(
    service: Service, *, token: str | None = None, limits: Limits | None = None
) -> Starlette:
    """Return the application serving ``service`` (closed when the application stops).

    Args:
        service: The open index.
        token: The bearer token every request but ``/health`` must carry (None: none).
        limits: Largest body and most documents per request (None: the defaults).
    """
    endpoints = Endpoints(service, limits or Limits())

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await to_thread.run_sync(service.close)

    routes = [
        Route("/query", guarded(endpoints.query, token), methods=["POST"]),
        Route("/add", guarded(endpoints.add, token), methods=["POST"]),
        Route("/check-and-add", guarded(endpoints.check_and_add, token), methods=["POST"]),
        Route("/stats", guarded(endpoints.stats, token), methods=["GET"]),
        Route("/health", guarded(endpoints.health, token, public=True), methods=["GET"]),
        Route("/openapi.json", guarded(endpoints.description, token, public=True), methods=["GET"]),
    ]
    return Starlette(
        routes=routes,
        exception_handlers={HTTPException: not_found, Exception: failed},
        lifespan=lifespan,
    )
