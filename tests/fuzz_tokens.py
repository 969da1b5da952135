"""Fuzz the input path: file bytes -> decoding -> tokens -> weights -> fingerprint.

Hypothesis generates inputs for as long as asked, in rounds of fresh random examples (no
example database, so every run explores anew), and checks the invariants every input must
keep, whatever its bytes:

* ``decode`` returns text or raises :class:`~simdup.errors.InputError` with a one-line
  reason; nothing else escapes, for any codec simdup accepts;
* tokenising is deterministic, features are non-empty, single words are capped at
  ``MAX_TOKEN_LENGTH`` and hold no white space, and normalising is a fixed point;
* the features always weight and fingerprint, deterministically;
* JSON Lines bytes give documents or skips, never an exception;
* damaged gzip streams raise ``InputError`` only, and never inflate past the limit;
* any name renders to valid UTF-8 JSON that round-trips, and to a printable table form.

Run with ``make fuzz`` (``FUZZ_SECONDS=600 make fuzz`` for longer) or directly::

    .venv/bin/python tests/fuzz_tokens.py --seconds 120

Exit status 0 when nothing was found; 1 with the shrunk failing example otherwise.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from collections import Counter

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from simdup import fingerprint, term_weights
from simdup.cli.output import encode_output
from simdup.errors import InputError
from simdup.inputs.files import ReadOptions, decode, gunzip
from simdup.inputs.jsonl import JsonlOptions, read_jsonl
from simdup.report.fields import dumps
from simdup.text.display import printable
from simdup.text.normalize import MAX_TOKEN_LENGTH, normalize
from simdup.text.tokens import tokenize

#: Codecs a user can pass to --encoding that behave differently from each other.
ENCODINGS = ("utf-8", "latin-1", "cp1252", "utf-16", "utf-16-be", "utf-32", "utf-7", "gb18030",
             "shift_jis", "koi8-r", "mac-roman")  # fmt: skip


def encoded(text: str, encoding: str) -> bytes:
    """Encode generated text as a file in ``encoding`` would hold it (lone surrogates too)."""
    if encoding.startswith("utf") and encoding != "utf-7":
        return text.encode(encoding, errors="surrogatepass")
    return text.encode(encoding, errors="replace")


ANY_CHAR = st.characters(codec=None, exclude_categories=())
PIECES = st.one_of(
    st.text(ANY_CHAR, max_size=40),
    st.sampled_from(
        [
            "the ", "Straße ", "ﬁne ", "中文分词 ", "\uff46\uff55\uff4c\uff4c ", "e\u0301 ",
            "\u200b", "\ufeff",
            "\x00", "\x1b[31m", "\r\n", "\t", "'", "\u2019", "-", "\ud800", "\udcff", "๑๒๓ ",
            "한국어 ", "İstanbul ", "ǅ ", "ﷺ ", "\U0001f600 ", "x" * 300, "9" * 80,
        ]
    ),
)  # fmt: skip
TEXTS = st.lists(PIECES, max_size=12).map("".join)
BYTES = st.one_of(
    st.binary(max_size=600),
    st.tuples(TEXTS, st.sampled_from(ENCODINGS)).map(lambda pair: encoded(*pair)),
    st.tuples(st.sampled_from([b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\xff\xfe\x00\x00"]),
              st.binary(max_size=200)).map(b"".join),
)  # fmt: skip

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | TEXTS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXTS, inner, max_size=3),
    max_leaves=6,
)
RECORDS = st.builds(
    lambda record, ascii_only: json.dumps(record, ensure_ascii=ascii_only).encode(
        "utf-8", errors="surrogatepass"
    ),
    st.fixed_dictionaries({"text": TEXTS | JSON_VALUES}, optional={"id": JSON_VALUES}),
    st.booleans(),
)
JSONL = st.lists(st.one_of(RECORDS, RECORDS, BYTES, st.just(b"[" * 5000)), max_size=8).map(
    b"\n".join
)

counts: Counter[str] = Counter()


def check_document(data: bytes, encoding: str, strict: bool, stopwords: bool, ngram: int) -> None:
    """Bytes of a file -> text -> features -> fingerprint, with every invariant checked."""
    options = ReadOptions(encoding=encoding, encoding_errors="strict" if strict else "replace")
    try:
        text = decode(data, options)
    except InputError as exc:
        reason = str(exc)
        if not reason or "\n" in reason:
            raise AssertionError(f"bad skip reason {reason!r}") from None
        counts["refused"] += 1
        return
    if decode(data, options) != text:
        raise AssertionError("decoding is not deterministic")
    features = tokenize(text, stopwords=stopwords, ngram=ngram)
    if features != tokenize(text, stopwords=stopwords, ngram=ngram):
        raise AssertionError("tokenising is not deterministic")
    for feature in features:
        if not feature:
            raise AssertionError("empty feature")
        if ngram == 1 and (len(feature) > MAX_TOKEN_LENGTH or any(c.isspace() for c in feature)):
            raise AssertionError(f"feature not a capped single word: {feature!r}")
    once = normalize(text)
    if normalize(once) != once:
        raise AssertionError("normalize is not a fixed point")
    weights = term_weights(features)
    value = fingerprint(weights, 64, 7)
    if value != fingerprint(term_weights(list(features)), 64, 7):
        raise AssertionError("fingerprint is not deterministic")
    counts["decoded"] += 1
    counts["with features" if features else "no features"] += 1


def check_jsonl(data: bytes) -> None:
    """Arbitrary bytes as a JSON Lines corpus: documents or skips, never an exception."""
    documents, skipped = read_jsonl("fuzz", data, JsonlOptions())
    if not all(s.path.startswith("fuzz:") and s.reason for s in skipped):
        raise AssertionError("skip without a line number or a reason")
    if len({d.name for d in documents}) != len(documents):
        raise AssertionError("duplicate document names")
    counts["jsonl documents"] += len(documents)


def check_gzip(body: bytes, cut: int, flip: int, junk: bytes) -> None:
    """A gzip stream truncated, with a flipped byte or trailing junk: InputError only."""
    stream = bytearray(gzip.compress(body) + junk)
    if flip < len(stream):
        stream[flip] ^= 0xA5
    try:
        out = gunzip([bytes(stream[:cut]), bytes(stream[cut:])], 500)
    except InputError:
        counts["gzip refused"] += 1
        return
    if len(out) > 500:
        raise AssertionError("inflated past the limit")
    counts["gzip read"] += 1


def check_name(name: str) -> None:
    """Any document name: valid UTF-8 JSON that round-trips, and a printable table form."""
    body = encode_output(dumps({"a": name}))
    body.decode("utf-8")
    if json.loads(body)["a"] != name:
        raise AssertionError("JSON does not round-trip the name")
    shown = printable(name)
    if any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 or 0xD800 <= ord(c) < 0xE000 for c in shown):
        raise AssertionError(f"control or surrogate left in {shown!r}")
    counts["names"] += 1


def fuzz_round(examples: int) -> None:
    """Run one round of ``examples`` inputs per target (Hypothesis raises on a failure)."""
    common = settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    common(
        given(BYTES, st.sampled_from(ENCODINGS), st.booleans(), st.booleans(), st.integers(1, 3))(
            check_document
        )
    )()
    common(given(JSONL)(check_jsonl))()
    common(
        given(st.binary(max_size=300), st.integers(0, 400), st.integers(0, 400),
              st.sampled_from([b"", b"\0\0", b"junk", gzip.compress(b"x")]))(check_gzip)
    )()  # fmt: skip
    common(given(st.text(ANY_CHAR, max_size=30))(check_name))()


def main(argv: list[str] | None = None) -> int:
    """Fuzz for ``--seconds`` and print what was covered; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0, help="How long to fuzz.")
    parser.add_argument("--examples", type=int, default=500, help="Examples per target per round.")
    args = parser.parse_args(argv)
    started = time.monotonic()
    rounds = 0
    while time.monotonic() - started < args.seconds:
        try:
            fuzz_round(args.examples)
        except AssertionError as exc:  # Hypothesis has printed the shrunk example
            print(f"fuzz: FAILED after {rounds} rounds: {exc}", file=sys.stderr)  # noqa: T201
            return 1
        rounds += 1
    elapsed = time.monotonic() - started
    summary = ", ".join(f"{k} {v:,}" for k, v in sorted(counts.items()))
    print(f"fuzz: {rounds} rounds in {elapsed:.0f}s, nothing found ({summary})")  # noqa: T201
    return 0


if __name__ == "__main__":
    sys.exit(main())
