"""The OpenAPI description of ``simdup serve`` (served at ``/openapi.json``).

Written out as data, next to the contract it describes, so that clients can generate code
from it and a test can check every route the server has is described.
"""

from __future__ import annotations

from typing import Any

from simdup import __version__

_DOCUMENT = {
    "type": "object",
    "required": ["id"],
    "properties": {
        "id": {"type": "string", "minLength": 1, "example": "page-42"},
        "text": {"type": "string", "example": "The quick brown fox jumps over the lazy dog."},
        "fingerprint": {
            "type": "string",
            "description": "A fingerprint in the hexadecimal form simdup prints, instead of "
            "text (no true cosine then).",
            "example": "9f1c2a0b3d4e5f60",
        },
    },
    "additionalProperties": False,
}

_DOCUMENTS = {
    "type": "array",
    "minItems": 1,
    "items": {"$ref": "#/components/schemas/Document"},
}

_REQUEST = {
    "type": "object",
    "required": ["documents"],
    "properties": {
        "documents": _DOCUMENTS,
        "threshold": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": 1,
            "description": "Cosine threshold; default and minimum: the index's.",
            "example": 0.9,
        },
    },
    "additionalProperties": False,
}

_MATCH = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "hamming": {"type": "integer", "example": 3},
        "estimated_cosine": {"type": "number", "example": 0.99},
        "cosine": {
            "type": ["number", "null"],
            "description": "True cosine; null where a weight vector is missing.",
            "example": 0.98,
        },
    },
}

_RESULT = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "matches": {
            "type": "array",
            "description": "Strongest first.",
            "items": {"$ref": "#/components/schemas/Match"},
        },
        "added": {"type": "boolean", "description": "/check-and-add only."},
        "skipped": {"type": "string", "description": "Why the text has no fingerprint."},
    },
}

_ERROR = {
    "type": "object",
    "properties": {"error": {"type": "string", "example": "documents must be a non-empty list"}},
}


def _json(ref: str, description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{ref}"}}},
    }


def _errors(*codes: int) -> dict[str, Any]:
    text = {
        400: "Malformed request (one line says what).",
        401: "Missing or wrong bearer token.",
        413: "Body or batch too large.",
        503: "The index is busy or cannot be read.",
    }
    return {str(c): _json("Error", text[c]) for c in codes}


def _post(summary: str, answer: str, request: str = "Request") -> dict[str, Any]:
    return {
        "post": {
            "summary": summary,
            "security": [{"bearer": []}],
            "requestBody": {"required": True, **_json(request, "Documents")},
            "responses": {"200": _json(answer, "Done"), **_errors(400, 401, 413, 503)},
        }
    }


def openapi() -> dict[str, Any]:
    """Return the OpenAPI 3.1 description of the server, JSON-ready."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "simdup serve",
            "version": __version__,
            "description": "Near-duplicate checks against a simdup index.",
        },
        "paths": {
            "/query": _post("Stored near-duplicates of each document", "Results"),
            "/check-and-add": _post(
                "Matches of each document; store it only if there are none (atomic)",
                "Results",
            ),
            "/add": _post("Add or replace documents", "Added", "AddRequest"),
            "/stats": {
                "get": {
                    "summary": "Documents stored and the keys in use",
                    "security": [{"bearer": []}],
                    "responses": {"200": _json("Stats", "Statistics"), **_errors(401, 503)},
                }
            },
            "/health": {
                "get": {
                    "summary": "Liveness (no token needed)",
                    "responses": {"200": _json("Health", "Serving")},
                }
            },
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Document": _DOCUMENT,
                "Request": _REQUEST,
                "AddRequest": {**_REQUEST, "properties": {"documents": _DOCUMENTS}},
                "Match": _MATCH,
                "Results": {
                    "type": "object",
                    "properties": {
                        "results": {
                            "type": "array",
                            "items": {"$ref": "#/components/schemas/Result"},
                        }
                    },
                },
                "Result": _RESULT,
                "Added": {
                    "type": "object",
                    "properties": {
                        k: {"type": "integer"} for k in ("added", "updated", "unchanged", "skipped")
                    },
                },
                "Stats": {
                    "type": "object",
                    "properties": {"documents": {"type": "integer"}},
                    "additionalProperties": True,
                },
                "Health": {"type": "object", "properties": {"status": {"const": "ok"}}},
                "Error": _ERROR,
            },
        },
    }
