"""The JSON contract of ``simdup serve``: requests checked and read, answers shaped.

Kept apart from the web framework so that what a client may send and what it gets back is
plain data, testable without a server. A request is
``{"documents": [{"id": "...", "text": "..."}], "threshold": 0.9}``; a document may give
``"fingerprint": "HEX"`` (as simdup prints it) instead of ``"text"``. Anything else is
refused with a :class:`RequestError` that carries the HTTP status and one line.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from simdup.errors import FingerprintFormatError
from simdup.fingerprints.simhash import from_hex
from simdup.index.ingest import Checked, Incoming, check_ids
from simdup.report.fields import dumps, pair_record

#: Largest request body read, in bytes (``--max-body``): 10 MiB.
MAX_BODY = 10 * 2**20

#: Most documents in one request (``--max-documents``).
MAX_DOCUMENTS = 1000

#: Fields of a match, as ``simdup scan --format jsonl`` names them (``b`` becomes ``id``).
MATCH_FIELDS = ("hamming", "estimated_cosine", "cosine")


class RequestError(Exception):
    """A request the server refuses: the HTTP status and a one-line message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Limits:
    """How much one request may carry."""

    body: int = MAX_BODY
    documents: int = MAX_DOCUMENTS


@dataclass(frozen=True)
class Parsed:
    """A checked request: its documents and its threshold (None: the index's)."""

    documents: list[Incoming]
    threshold: float | None


def _fail(message: str) -> RequestError:
    return RequestError(400, message)


def _document(k: int, item: Any, bits: int) -> Incoming:
    """Return document ``k`` of a request, checked."""
    where = f"documents[{k}]"
    if not isinstance(item, dict):
        raise _fail(f"{where} must be an object with id and text (or fingerprint)")
    unknown = sorted(set(item) - {"id", "text", "fingerprint"})
    if unknown:
        raise _fail(f"{where} has unknown field {unknown[0]!r}; expected id, text or fingerprint")
    name = item.get("id")
    if not isinstance(name, str) or not name:
        raise _fail(f"{where}.id must be a non-empty string")
    text, hexa = item.get("text"), item.get("fingerprint")
    if (text is None) == (hexa is None):
        raise _fail(f"{where} must give exactly one of text and fingerprint")
    if text is not None:
        if not isinstance(text, str):
            raise _fail(f"{where}.text must be a string")
        return Incoming(name, text=text)
    if not isinstance(hexa, str):
        raise _fail(f"{where}.fingerprint must be a hexadecimal string")
    try:
        return Incoming(name, fingerprint=from_hex(hexa, bits))
    except FingerprintFormatError as exc:
        raise _fail(f"{where}.fingerprint: {exc}") from None


def _threshold(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise _fail("threshold must be a number in (0, 1]")
    if not 0.0 < float(value) <= 1.0:
        raise _fail(f"threshold must be in (0, 1], got {value}")
    return float(value)


def parse_request(body: bytes, bits: int, limits: Limits, *, threshold: bool = True) -> Parsed:
    """Return the documents and threshold of a request body; refuse malformed ones.

    Args:
        body: The raw body (at most ``limits.body`` bytes: the caller stops reading there).
        bits: The index's fingerprint width, to read ``fingerprint`` fields.
        limits: How many documents a request may carry.
        threshold: Whether the request may give a threshold (``/add`` may not).

    Raises:
        RequestError: 400 for anything malformed, 413 for too many documents.
    """
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise _fail(f"the body is not valid JSON ({reason})") from None
    if not isinstance(data, dict):
        raise _fail('the body must be a JSON object: {"documents": [...]}')
    allowed = {"documents", "threshold"} if threshold else {"documents"}
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise _fail(f"unknown field {unknown[0]!r}; expected {' and '.join(sorted(allowed))}")
    items = data.get("documents")
    if not isinstance(items, list) or not items:
        raise _fail("documents must be a non-empty list")
    if len(items) > limits.documents:
        raise RequestError(
            413, f"{len(items)} documents in one request; at most {limits.documents}"
        )
    documents = [_document(k, item, bits) for k, item in enumerate(items)]
    try:
        check_ids(documents)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    return Parsed(documents, _threshold(data.get("threshold")))


def match_record(checked: Checked) -> list[dict[str, Any]]:
    """Return a document's matches as JSON records, strongest first."""
    out = []
    for pair in checked.matches:
        record = pair_record(pair)
        out.append({"id": record["b"], **{k: record[k] for k in MATCH_FIELDS}})
    return out


def results(found: Sequence[Checked], *, added: bool) -> dict[str, Any]:
    """Return the answer of ``/query`` (``added``: of ``/check-and-add``)."""
    out = []
    for checked in found:
        record: dict[str, Any] = {"id": checked.name, "matches": match_record(checked)}
        if added:
            record["added"] = checked.added
        if checked.skipped is not None:
            record["skipped"] = checked.skipped
        out.append(record)
    return {"results": out}


def encode(value: Any) -> bytes:
    """Return a JSON answer as UTF-8 bytes (lone surrogates escaped, never an error)."""
    return dumps(value).encode("utf-8")
