"""Eval, the results: what an evaluation measures (options) and what it returns (tables).

Frozen dataclasses only, with their JSON form, so every stage below can be read and
tested against plain data and the CLI and HTML page render one shape. The settings that
shape the results (widths swept, curve points, pairs listed) are named here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from simdup.errors import ParameterError
from simdup.model import Skip
from simdup.params import EVAL_BITS, EVAL_HASH_SEEDS, Params

#: Fingerprint widths swept by default: the seed's table.
DEFAULT_BITS = EVAL_BITS

#: Independent hash seeds per width (the seed's 300-seed sweep).
DEFAULT_HASH_SEEDS = EVAL_HASH_SEEDS

#: Named schemes always compared.
SCHEMES: tuple[str, ...] = ("strict", "balanced", "loose", "auto")

#: Refuse runs estimated to take longer than this (see :func:`estimated_seconds`).
MAX_SECONDS = 120.0

#: Cosine bins of the measured recall curve.
CURVE_BINS = 20

#: Cosines at which a plan's recall curve is drawn.
CURVE_POINTS = 101

#: At most this many truly similar pairs are listed by name.
LISTED_PAIRS = 100


@dataclass(frozen=True)
class EvalOptions:
    """What to measure (the fingerprint and blocking settings come from :class:`Params`).

    Attributes:
        hash_seeds: Independent seeds, ``params.seed`` to ``params.seed + hash_seeds - 1``.
        bits: Fingerprint widths of the accuracy sweep.
        max_distances: Extra ``--max-distance`` rows of the blocking comparison.
        sample: Measure a deterministic sample of this many documents (None: all).
        max_seconds: Refuse runs estimated to take longer.
    """

    hash_seeds: int = DEFAULT_HASH_SEEDS
    bits: tuple[int, ...] = DEFAULT_BITS
    max_distances: tuple[int, ...] = ()
    sample: int | None = None
    max_seconds: float = MAX_SECONDS

    def __post_init__(self) -> None:
        if isinstance(self.hash_seeds, bool) or self.hash_seeds < 1:
            raise ParameterError(f"hash seeds must be at least 1, got {self.hash_seeds!r}")
        if not self.bits or any(isinstance(b, bool) or b < 1 for b in self.bits):
            raise ParameterError(
                f"bits must be a non-empty list of positive widths, got {list(self.bits)}"
            )
        if any(k < 0 for k in self.max_distances):
            raise ParameterError(f"max distances must be >= 0, got {list(self.max_distances)}")
        if self.sample is not None and self.sample < 2:
            raise ParameterError(f"sample must be at least 2 documents, got {self.sample}")

    def as_dict(self) -> dict[str, Any]:
        """Return the options as a JSON-ready dict."""
        return {
            "hash_seeds": self.hash_seeds,
            "bits": list(self.widths),
            "max_distances": list(self.max_distances),
            "sample": self.sample,
        }

    @property
    def widths(self) -> tuple[int, ...]:
        """The swept widths, sorted and unique."""
        return tuple(sorted(set(self.bits)))


@dataclass(frozen=True)
class WidthAccuracy:
    """Estimator error at one fingerprint width, averaged over seeds.

    Attributes:
        bits: Fingerprint width.
        mae: Mean absolute error of the estimated cosine over all pairs, measured.
        mae_theory: Its expectation under the Binomial(bits, θ/π) model.
        mae_stderr: Standard error of ``mae`` across seeds.
        similar_mae: Measured error on the truly similar (not identical) pairs.
        similar_binary_mae: The same with ``binary`` (unweighted) fingerprints.
        similar_theory: Expected error of weighted fingerprints on those pairs.
    """

    bits: int
    mae: float
    mae_theory: float
    mae_stderr: float
    similar_mae: float | None
    similar_binary_mae: float | None
    similar_theory: float | None


@dataclass(frozen=True)
class SchemeResult:
    """How one blocking setting did at the scan width, over all seeds.

    Attributes:
        name: ``strict``, ``balanced``, ``loose``, ``auto``, ``N blocks`` or
            ``max distance K``.
        tables: Description of the tables.
        table_count: Number of tables.
        max_hamming: Candidates farther apart than this are dropped (auto's pre-filter).
        recall: Share of truly similar pairs that became candidates (None: no such pairs).
        false_positive_rate: Share of the other pairs that became candidates.
        candidates_per_document: Mean candidate pairs per document and seed.
        seconds: Mean seconds to generate the candidates of one seed.
        expected_recall: Probability that a pair at the threshold is found (the plan's).
        curve: ``(true cosine, probability of being a candidate)``, predicted.
        measured_curve: ``(cosine bin centre, measured recall, pairs in bin)``.
    """

    name: str
    tables: str
    table_count: int
    max_hamming: int | None
    recall: float | None
    false_positive_rate: float | None
    candidates_per_document: float
    seconds: float
    expected_recall: float
    curve: tuple[tuple[float, float], ...]
    measured_curve: tuple[tuple[float, float, int], ...]


@dataclass(frozen=True)
class SimilarPair:
    """A truly similar pair: names, true cosine, share of seeds the chosen plan found it."""

    a: str
    b: str
    cosine: float
    found: float


@dataclass(frozen=True)
class Evaluation:
    """The measured tables of one corpus.

    Attributes:
        params: Fingerprint and blocking settings (``bits``: the blocking width).
        options: What was swept.
        documents: Documents measured.
        sampled_from: Documents before sampling (None: not sampled).
        pairs: All pairs of documents, ``n (n - 1) / 2``.
        similar_pairs: Pairs with true cosine >= threshold.
        identical_pairs: Pairs with identical weight vectors (exact for every estimator).
        widths: Accuracy per width.
        schemes: Blocking comparison at ``params.bits``.
        chosen: Name of the scheme the settings select (its curve is drawn).
        similar: Up to :data:`LISTED_PAIRS` truly similar pairs, highest cosine first.
        skipped: Documents without features.
        timings: Seconds per stage.
    """

    params: Params
    options: EvalOptions
    documents: int
    sampled_from: int | None
    pairs: int
    similar_pairs: int
    identical_pairs: int
    widths: tuple[WidthAccuracy, ...]
    schemes: tuple[SchemeResult, ...]
    chosen: str
    similar: tuple[SimilarPair, ...]
    skipped: tuple[Skip, ...] = ()
    timings: dict[str, float] = field(default_factory=dict)

    def scheme(self, name: str) -> SchemeResult:
        """Return the result row of scheme ``name``."""
        for row in self.schemes:
            if row.name == name:
                return row
        raise KeyError(name)

    def settings(self) -> dict[str, Any]:
        """Return every setting, named as the ``eval`` options (``bits``: the swept widths)."""
        return {
            **self.params.as_dict(),
            "scheme_bits": self.params.fixed_bits,
            **self.options.as_dict(),
        }

    def as_dict(self, *, timings: bool = False) -> dict[str, Any]:
        """Return a JSON-ready dict; seconds appear only with ``timings`` (they vary)."""

        def r(value: float | None, digits: int = 6) -> float | None:
            return None if value is None else round(value, digits)

        schemes = []
        for s in self.schemes:
            record: dict[str, Any] = {
                "name": s.name,
                "tables": s.tables,
                "table_count": s.table_count,
                "max_hamming": s.max_hamming,
                "recall": r(s.recall),
                "false_positive_rate": r(s.false_positive_rate),
                "candidates_per_document": r(s.candidates_per_document),
                "expected_recall_at_threshold": r(s.expected_recall, 4),
                "recall_curve": [
                    {"cosine": c, "recall": r(p, 4)} for c, p in s.curve[:: (CURVE_POINTS // 20)]
                ],
            }
            if timings:
                record["seconds"] = r(s.seconds)
            schemes.append(record)
        out: dict[str, Any] = {
            "params": self.settings(),
            "documents": self.documents,
            "sampled_from": self.sampled_from,
            "pairs": self.pairs,
            "similar_pairs": self.similar_pairs,
            "identical_pairs": self.identical_pairs,
            "accuracy": [
                {
                    "bits": w.bits,
                    "mae": r(w.mae),
                    "mae_theory": r(w.mae_theory),
                    "mae_stderr": r(w.mae_stderr),
                    "similar_mae": r(w.similar_mae),
                    "similar_binary_mae": r(w.similar_binary_mae),
                    "similar_theory": r(w.similar_theory),
                }
                for w in self.widths
            ],
            "blocking": schemes,
            "chosen": self.chosen,
            "similar": [
                {"a": p.a, "b": p.b, "cosine": r(p.cosine), "found": r(p.found)}
                for p in self.similar
            ],
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
        }
        if timings:
            out["seconds"] = {k: round(v, 6) for k, v in self.timings.items()}
        return out
