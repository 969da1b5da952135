"""A batch of pairs' fields as text: each pair's JSON, CSV cells, table rows, Parquet columns.

A report of millions of pairs is written from the result's columns a batch at a time
(:class:`~simdup.model.PairFields`), never an object or a dict a pair: each name is encoded
or escaped once a batch, each estimate (one of ``bits + 1`` values) once, and each cosine
rounded in one expression. What one pair would be (:func:`pair_record`, encoded by
:func:`dumps`) is the specification; the tests hold every batch to it.
"""

from __future__ import annotations

import json
import math
from typing import Any

import regex

from simdup.model import Pair, PairFields
from simdup.text.display import printable

_SURROGATE = regex.compile(r"[\ud800-\udfff]")


#: The encoder :func:`dumps` uses (one for all: ``json.dumps`` with options makes one a call).
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


def dumps(value: Any) -> str:
    """Return compact, valid-UTF-8 JSON; lone surrogates become ``\\udcXX`` escapes."""
    text = _ENCODER.encode(value)
    if text.isascii():
        return text  # no surrogate to escape
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


#: Decimals a cosine is written with.
DIGITS = 6


def round_cosine(value: float | None) -> float | None:
    """Round a cosine to :data:`DIGITS` decimals for output (None and NaN: None)."""
    if value is None or math.isnan(value):
        return None
    return round(value, DIGITS)


def pair_record(pair: Pair) -> dict[str, Any]:
    """Return one pair as an ordered JSON-ready dict (the JSON Lines schema)."""
    return {
        "a": pair.a,
        "b": pair.b,
        "hamming": pair.hamming,
        "estimated_cosine": round_cosine(pair.estimated_cosine),
        "cosine": round_cosine(pair.cosine),
        "above_threshold": pair.above_threshold,
        "few_features": pair.few_features,
        "identical": pair.identical,
    }


#: :func:`pair_record` as the encoder writes it, to be filled in (see :func:`pair_texts`).
_PAIR_JSON = (
    '{"a": %s, "b": %s, "hamming": %d, "estimated_cosine": %s, "cosine": %s, '
    '"above_threshold": %s, "few_features": %s, "identical": %s}'
)

#: JSON of the values a flag may take.
_FLAG_JSON = {True: "true", False: "false", None: "null"}


#: A cosine rounded to :data:`DIGITS` decimals, as ``%`` formats it.
_FIXED = f"%.{DIGITS}f"

#: Texts of :data:`_FIXED` that ``repr`` writes with an exponent (below 1e-4, not zero).
_TINY = ("0.0000", "-0.0000")


def cosine_texts(values: list[float], unknown: str = "null") -> list[str]:
    """Return cosines as :func:`dumps` writes them once rounded (NaN: ``unknown``).

    That is ``repr(round(v, DIGITS))``, at a third of its cost, called for every pair of a
    report: ``%.6f`` rounds to the decimal ``round`` rounds to (both take the correctly
    rounded digits), and the shortest text of the double nearest that decimal is its
    digits without trailing zeros. Where it is not (NaN, zero, an exponent below 1e-4, or
    more digits than a double tells apart), the value takes the long way.
    """
    texts = [(_FIXED % v).rstrip("0") for v in values]
    return [
        t
        if t[-1] in "123456789" and len(t) < 15 and not t.startswith(_TINY)
        else _number(v, unknown)
        for t, v in zip(texts, values, strict=True)
    ]


def _number(value: float, unknown: str = "null") -> str:
    """Return a cosine as :func:`dumps` writes it once rounded (NaN: ``unknown``)."""
    return unknown if value != value else float.__repr__(round(value, DIGITS))


def pair_texts(fields: PairFields) -> list[str]:
    """Return ``dumps(pair_record(pair))`` of each pair of ``fields``: the same text, faster.

    A report of millions of pairs spent most of its time building each pair's dict and
    encoding it (7.2 µs a pair), then making a :class:`Pair` and filling a template (5 µs).
    Here the fields fill the template, each name is encoded once a batch and each
    estimate (a few distinct values: one per distance) once.
    """
    names = {name: dumps(name) for name in {*fields.a, *fields.b}}
    distinct = list(set(fields.estimated))
    estimates = dict(zip(distinct, cosine_texts(distinct), strict=True))
    flag = _FLAG_JSON
    cosines = cosine_texts(fields.cosine)
    return [
        _PAIR_JSON
        % (
            names[a],
            names[b],
            hamming,
            estimates[estimated] if estimated else _number(estimated),  # -0.0 == 0.0
            cosine,
            flag[above],
            flag[few],
            flag[identical],
        )
        for (a, b, hamming, estimated, _, above, few, identical), cosine in zip(
            fields.rows(), cosines, strict=True
        )
    ]


def rounded_cosines(values: list[float], unknown: Any = None) -> list[Any]:
    """Return cosines rounded as in JSON (:func:`round_cosine`), ``unknown`` where NaN."""
    return [unknown if v != v else round(v, DIGITS) for v in values]


def pair_record_columns(fields: PairFields) -> dict[str, list[Any]]:
    """Return :func:`pair_record` of each pair of ``fields``, as columns (Parquet's batches)."""
    return {
        "a": fields.a,
        "b": fields.b,
        "hamming": fields.hamming,
        "estimated_cosine": rounded_cosines(fields.estimated),
        "cosine": rounded_cosines(fields.cosine),
        "above_threshold": fields.above,
        "few_features": fields.few,
        "identical": fields.identical,
    }


def table_number(value: float | None) -> str:
    """Return a cosine as a table shows it: three decimals, ``n/a`` when unknown (None, NaN)."""
    return "n/a" if value is None or value != value else f"{value:.3f}"


#: Marks after a cosine in a table: exact copies, and pairs of too few features.
IDENTICAL_MARK = " (copy)"
FEW_MARK = " *"


def pair_rows(
    fields: PairFields, bits: int | None = None, base: str = ""
) -> list[tuple[str, str, str, str, str]]:
    """Return the text of each pair's row in the table (names escaped by :func:`printable`).

    The Hamming distance is shown of the width ``bits`` (``21/512``); names lose ``base``.
    Each name is escaped once a batch: a table of millions of pairs is written from the
    result's columns (:class:`PairFields`), without an object a pair.
    """
    names = {name: printable(relative(name, base)) for name in {*fields.a, *fields.b}}
    distances = {h: str(h) if bits is None else f"{h}/{bits}" for h in set(fields.hamming)}
    cosines = [
        text
        if above and not identical and not few  # most pairs: the number alone
        else text
        + ("" if above else " (below)")
        + (IDENTICAL_MARK if identical else "")
        + (FEW_MARK if few else "")
        for text, above, few, identical in zip(
            map(table_number, fields.cosine),
            fields.above,
            fields.few,
            fields.identical,
            strict=True,
        )
    ]
    return list(
        zip(
            map(names.__getitem__, fields.a),
            map(names.__getitem__, fields.b),
            map(distances.__getitem__, fields.hamming),
            map(table_number, fields.estimated),
            cosines,
            strict=True,
        )
    )


def relative(name: str, base: str) -> str:
    """Return ``name`` without the folder ``base`` all names shown share.

    >>> relative("/usr/share/doc/a/copyright", "/usr/share/doc/"), relative("x", "")
    ('a/copyright', 'x')
    """
    return name[len(base) :] if base and name.startswith(base) else name
