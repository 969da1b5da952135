"""Why two documents are or are not similar: fingerprints, distances and terms.

The true cosine is a sum over shared terms of ``w_a · w_b / (|a| |b|)``, so listing the
largest of those products shows what makes a pair similar, and listing the terms whose
normalised weights differ most shows what sets it apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simdup.engines.local.fingerprinting import fingerprint_documents
from simdup.errors import InputError
from simdup.fingerprints.simhash import words_to_int
from simdup.model import Document
from simdup.params import Params
from simdup.search.verify import cosine, estimate_cosine, hamming


@dataclass(frozen=True)
class TermWeight:
    """A term's weight in each document and its share of the cosine (shared terms)."""

    term: str
    weight_a: float
    weight_b: float
    contribution: float


@dataclass(frozen=True)
class Comparison:
    """Two documents compared feature by feature and bit by bit."""

    a: str
    b: str
    params: Params
    fingerprint_a: int
    fingerprint_b: int
    hamming: int
    estimated_cosine: float
    cosine: float
    features_a: int
    features_b: int
    shared: tuple[TermWeight, ...]
    differing: tuple[TermWeight, ...]

    @property
    def agreeing_bits(self) -> list[bool]:
        """Return, per bit position, whether the two fingerprints agree."""
        diff = self.fingerprint_a ^ self.fingerprint_b
        return [not (diff >> i) & 1 for i in range(self.params.fixed_bits)]


def compare_documents(a: Document, b: Document, params: Params, *, top: int = 10) -> Comparison:
    """Return the comparison of two documents under ``params`` (tfidf: idf of the two).

    Raises:
        InputError: when a document has no features (nothing to compare).
    """
    corpus = fingerprint_documents([a, b], params)
    if corpus.skipped:
        empty = ", ".join(s.path for s in corpus.skipped)
        raise InputError(f"{empty}: no features to compare (empty, punctuation or stop words)")
    weights_a, weights_b = corpus.matrix.row(0), corpus.matrix.row(1)
    fp_a, fp_b = (words_to_int(corpus.fingerprints[i]) for i in (0, 1))
    norm_a = math.sqrt(math.fsum(w * w for w in weights_a.values()))
    norm_b = math.sqrt(math.fsum(w * w for w in weights_b.values()))
    shared = sorted(
        (
            TermWeight(t, w, weights_b[t], w * weights_b[t] / (norm_a * norm_b))
            for t, w in weights_a.items()
            if t in weights_b
        ),
        key=lambda tw: (-tw.contribution, tw.term),
    )
    terms = sorted(set(weights_a) | set(weights_b))
    differing = sorted(
        (TermWeight(t, weights_a.get(t, 0.0), weights_b.get(t, 0.0), 0.0) for t in terms),
        key=lambda tw: (-abs(tw.weight_a / norm_a - tw.weight_b / norm_b), tw.term),
    )
    return Comparison(
        a=a.name,
        b=b.name,
        params=params,
        fingerprint_a=fp_a,
        fingerprint_b=fp_b,
        hamming=hamming(fp_a, fp_b),
        estimated_cosine=estimate_cosine(fp_a, fp_b, params.fixed_bits),
        cosine=cosine(weights_a, weights_b),
        features_a=len(weights_a),
        features_b=len(weights_b),
        shared=tuple(shared[:top]),
        differing=tuple(tw for tw in differing[:top] if tw.weight_a != tw.weight_b),
    )
