"""Index stage 1, storage codecs: how names, fingerprints, weights and tables become bytes.

SQLite stores signed 64-bit integers, BLOBs and text; everything the index keeps is
turned into one of those here, losslessly, and back. Kept apart from the database code
so each encoding is a small pure function with its own doctest, and so the schema,
writing and reading rooms above agree on one definition of every stored value:

* names and feature texts as UTF-8 with surrogates passed through (any Python string);
* fingerprint words as the int64 view of their uint64 bits (SQLite INTEGER is signed);
* a document's sparse weights as two blobs, ids and weights, each in the narrowest
  element type that holds every value exactly (term counts take one byte each);
* the blocking tables the keys use, as JSON in the ``meta`` table.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.fingerprints.weights import WeightMatrix
from simdup.search.tables import Tables


def encode_name(name: str) -> bytes:
    """Return a document name as bytes for storage (any Python string, losslessly).

    >>> decode_name(encode_name("a\\udcff.txt")) == "a\\udcff.txt"
    True
    """
    return name.encode("utf-8", "surrogatepass")


def decode_name(data: bytes) -> str:
    """Return the name stored by :func:`encode_name`."""
    return data.decode("utf-8", "surrogatepass")


def text_digest(text: str) -> bytes:
    """Return the 16-byte BLAKE2b digest of a document's text (what decides re-fingerprinting)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def print_digest(name: str, fingerprint: int) -> bytes:
    """Return the stored hash of a document given as a fingerprint (no text to hash)."""
    return text_digest(f"{name}\0{fingerprint:x}")


def to_signed(words: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
    """Return uint64 words as the int64 values SQLite stores (same bits, two's complement).

    >>> to_signed(np.array([2**64 - 1, 2**63], dtype=np.uint64)).tolist()
    [-1, -9223372036854775808]
    """
    return np.ascontiguousarray(words, dtype=np.uint64).view(np.int64)


def to_unsigned(values: npt.ArrayLike) -> npt.NDArray[np.uint64]:
    """Return int64 values read from SQLite as the uint64 words they stand for."""
    return np.ascontiguousarray(np.asarray(values, dtype=np.int64)).view(np.uint64)


#: Storage types of feature ids and weights, by the code byte that starts each blob.
_ID_TYPES = {b"H": "<u2", b"I": "<u4"}
_WEIGHT_TYPES = {b"B": "<u1", b"H": "<u2", b"f": "<f4", b"d": "<f8"}
_WEIGHT_SIZES = {code: np.dtype(dtype).itemsize for code, dtype in _WEIGHT_TYPES.items()}


def _range(dtype: str) -> tuple[float, float]:
    info = np.iinfo(dtype) if np.dtype(dtype).kind == "u" else np.finfo(dtype)
    return float(info.min), float(info.max)


#: Smallest and largest value of each storage type.
_RANGES = {dtype: _range(dtype) for dtype in {*_ID_TYPES.values(), *_WEIGHT_TYPES.values()}}


def _narrowest(values: npt.NDArray[Any], types: dict[bytes, str]) -> bytes:
    """Return the code of the first (narrowest) type that holds every value exactly."""
    if values.size == 0:
        return next(iter(types))
    low, high = float(values.min()), float(values.max())
    for code, dtype in types.items():
        smallest, largest = _RANGES[dtype]
        if low < smallest or high > largest:
            continue
        with np.errstate(over="ignore", invalid="ignore"):
            narrow = values.astype(dtype)
        if np.array_equal(narrow, values):
            return code
    return list(types)[-1]


def pack_weights(ids: Sequence[int], weights: npt.NDArray[np.float64]) -> tuple[bytes, bytes]:
    """Return (feature ids blob, weights blob) of one document, losslessly and compactly.

    Each blob starts with one byte naming its element type, the narrowest that holds
    every value exactly: ids as uint16 or uint32; weights as uint8 or uint16 when they
    are small whole numbers (term counts, binary), else float32 or float64.

    >>> ids, w = pack_weights([1, 7], np.array([2.0, 1.0]))
    >>> len(ids), len(w)
    (5, 3)
    >>> [x.tolist() for x in unpack_weights(ids, w)]
    [[1, 7], [2.0, 1.0]]
    """
    id_array = np.asarray(ids, dtype=np.int64)
    id_code = _narrowest(id_array, _ID_TYPES)
    weight_code = _narrowest(weights, _WEIGHT_TYPES)
    return (
        id_code + id_array.astype(_ID_TYPES[id_code]).tobytes(),
        weight_code + weights.astype(_WEIGHT_TYPES[weight_code]).tobytes(),
    )


def unpack_weights(
    id_blob: bytes, weight_blob: bytes
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Return (feature ids int64, weights float64) packed by :func:`pack_weights`."""
    ids, weights = stored_arrays(id_blob, weight_blob)
    return ids.astype(np.int64), weights.astype(np.float64)


def stored_arrays(id_blob: bytes, weight_blob: bytes) -> tuple[npt.NDArray[Any], ...]:
    """Return the ids and weights of packed blobs in their stored types (no copies)."""
    return (
        np.frombuffer(id_blob, dtype=_ID_TYPES[id_blob[:1]], offset=1),
        np.frombuffer(weight_blob, dtype=_WEIGHT_TYPES[weight_blob[:1]], offset=1),
    )


def unpack_rows(
    blobs: Sequence[tuple[bytes, bytes]],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """Return (lengths, feature ids, weights) of many packed rows, the rows end to end.

    One decode per storage type rather than one per row: rows share their types as a
    rule, and a query verifies hundreds of them.

    >>> rows = [pack_weights([1, 7], np.array([2.0, 1.0])), pack_weights([70000], np.ones(1))]
    >>> [x.tolist() for x in unpack_rows(rows)]
    [[2, 1], [1, 7, 70000], [2.0, 1.0, 1.0]]
    """
    lengths, ids, weights = packed_rows(blobs)
    return lengths, ids.astype(np.int64), weights.astype(np.float64)


def packed_rows(
    blobs: Sequence[tuple[bytes, bytes]],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[Any], npt.NDArray[Any]]:
    """Return :func:`unpack_rows` with ids and weights in the narrowest types holding them."""
    lengths = np.array([(len(w) - 1) // _WEIGHT_SIZES[w[:1]] for _, w in blobs], dtype=np.int64)
    return (
        lengths,
        _joined([i for i, _ in blobs], _ID_TYPES),
        _joined([w for _, w in blobs], _WEIGHT_TYPES),
    )


def _joined(blobs: Sequence[bytes], types: dict[bytes, str]) -> npt.NDArray[Any]:
    """Return the values of packed blobs end to end, in the widest of their types."""
    codes = {b[:1] for b in blobs}
    if len(codes) == 1:
        # Joined whole, then the code byte starting each blob dropped: one pass in C.
        joined = np.frombuffer(b"".join(blobs), dtype=np.uint8)
        starts = np.cumsum([0, *(len(b) for b in blobs[:-1])])
        return np.delete(joined, starts).view(types[codes.pop()])
    parts = [np.frombuffer(b, dtype=types[b[:1]], offset=1) for b in blobs]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=next(iter(types.values())))


def tables_record(tables: Tables) -> str:
    """Return the blocking tables as the JSON text kept in the ``meta`` table."""
    return json.dumps(
        {
            "description": tables.description,
            "guarantee": tables.guarantee,
            "keys": [k.tolist() for k in tables.keys],
        }
    )


def tables_from_record(bits: int, text: str) -> Tables:
    """Return the tables stored by :func:`tables_record` for ``bits``-bit fingerprints."""
    record = json.loads(text)
    keys = tuple(np.asarray(k, dtype=np.int64) for k in record["keys"])
    return Tables(bits, keys, int(record["guarantee"]), str(record["description"]))


def same_tables(a: Tables, b: Tables) -> bool:
    """Tell whether two table sets key on the same bit positions, table by table."""
    return (
        a.bits == b.bits
        and len(a.keys) == len(b.keys)
        and all(np.array_equal(x, y) for x, y in zip(a.keys, b.keys, strict=True))
    )


def weights_matrix(rows: Sequence[dict[str, float]]) -> WeightMatrix:
    """Return the matrix of weight dicts, features in each dict's order."""
    vocabulary: dict[str, int] = {}
    indices: list[int] = []
    data: list[float] = []
    indptr = [0]
    for weights in rows:
        for feature, weight in weights.items():
            indices.append(vocabulary.setdefault(feature, len(vocabulary)))
            data.append(weight)
        indptr.append(len(indices))
    return WeightMatrix(
        np.array(indptr, dtype=np.int64),
        np.array(indices, dtype=np.int64),
        np.array(data, dtype=np.float64),
        tuple(vocabulary),
    )
