"""Plain data passed between the pipeline stages: documents, skips, pairs and results.

The settings of a run are :class:`simdup.params.Params`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.params import Params

#: Documents with fewer distinct features than this get pairs flagged ``few_features``:
#: with so few hyperplane votes the estimate is noisy (the seed's warning on short texts).
FEW_FEATURES = 8


@dataclass(frozen=True)
class Document:
    """One text to compare: a display name (path or id) and its text."""

    name: str
    text: str


@dataclass(frozen=True)
class Skip:
    """An input that was not scanned, and why (one line, for people and for JSON).

    Attributes:
        path: The input's name.
        reason: Why it was skipped.
        unreadable: True when the input could not be read (an error ``--strict`` fails
            on); False for skips by policy (size limit, links not followed, no features).
        kind: What kind of skip by policy it is, for the counts people see: ``binary``
            (a file that is not text), ``small`` (under ``--min-size`` or
            ``--min-features``), or empty for any other.
    """

    path: str
    reason: str
    unreadable: bool = True
    kind: str = ""


#: :attr:`Skip.kind` of a file that is not text.
BINARY = "binary"

#: :attr:`Skip.kind` of a document under ``--min-size`` or ``--min-features``.
SMALL = "small"


@dataclass(frozen=True)
class Pair:
    """One measured pair of documents (names, not row numbers)."""

    a: str
    b: str
    hamming: int
    estimated_cosine: float
    cosine: float | None
    above_threshold: bool
    few_features: bool


@dataclass(frozen=True)
class Cluster:
    """A group of documents connected by reported pairs."""

    size: int
    min_cosine: float | None
    members: tuple[str, ...]


@dataclass
class PairArrays:
    """Measured pairs as parallel arrays over row numbers (the pipeline's own form).

    Attributes:
        pairs: int64 (m, 2), ``i < j``.
        hamming: int64 (m,).
        estimated: float64 (m,).
        cosine: float64 (m,); NaN where the true cosine is unknown (no texts).
    """

    pairs: npt.NDArray[np.int64]
    hamming: npt.NDArray[np.int64]
    estimated: npt.NDArray[np.float64]
    cosine: npt.NDArray[np.float64]

    @classmethod
    def empty(cls) -> PairArrays:
        """Return measured pairs without a pair."""
        return cls(
            np.zeros((0, 2), dtype=np.int64),
            np.zeros(0, dtype=np.int64),
            np.zeros(0, dtype=np.float64),
            np.zeros(0, dtype=np.float64),
        )

    @classmethod
    def join(cls, parts: Sequence[PairArrays]) -> PairArrays:
        """Return the pairs of every part, part after part (no part: :meth:`empty`)."""
        if not parts:
            return cls.empty()
        return cls(
            np.concatenate([p.pairs for p in parts]),
            np.concatenate([p.hamming for p in parts]),
            np.concatenate([p.estimated for p in parts]),
            np.concatenate([p.cosine for p in parts]),
        )

    def take(self, index: npt.NDArray[np.int64] | npt.NDArray[np.bool_]) -> PairArrays:
        """Return the pairs selected by an index or mask."""
        return PairArrays(
            self.pairs[index], self.hamming[index], self.estimated[index], self.cosine[index]
        )

    def score(self) -> npt.NDArray[np.float64]:
        """Return what each pair is judged by: its true cosine, else (unknown) the estimate."""
        return np.where(np.isnan(self.cosine), self.estimated, self.cosine)

    def __len__(self) -> int:
        return len(self.pairs)


@dataclass
class ScanResult:
    """Everything a scan found, ready for rendering.

    Attributes:
        names: Document names, row ``i`` is ``names[i]`` (sorted, unique).
        params: The settings used.
        pairs: Reported pairs (above threshold, or all candidates with ``report_all``).
        feature_counts: int64 (n,), distinct features per document (negative: unknown,
            for fingerprints whose listing does not record them).
        fingerprints: uint64 (n, words).
        stats: Counts per stage (documents, candidates, pairs, ...).
        skipped: Inputs not scanned, with reasons.
        tables: Description of the blocking tables used.
        timings: Seconds per stage.
        plan: How candidates were found: tables, expected recall curve and candidates,
            warnings (:meth:`simdup.search.plan.planner.Plan.describe`).
    """

    names: list[str]
    params: Params
    pairs: PairArrays
    feature_counts: npt.NDArray[np.int64]
    fingerprints: npt.NDArray[np.uint64]
    stats: dict[str, int] = field(default_factory=dict)
    skipped: list[Skip] = field(default_factory=list)
    tables: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    plan: dict[str, Any] = field(default_factory=dict)

    def few_features(self) -> npt.NDArray[np.bool_]:
        """Return which rows have fewer than :data:`FEW_FEATURES` features (unknown: no)."""
        counts = self.feature_counts
        return (counts >= 0) & (counts < FEW_FEATURES)

    def pair_list(self) -> list[Pair]:
        """Return the reported pairs as :class:`Pair` objects, in stored order."""
        few = self.few_features()
        score = self.pairs.score()
        out = []
        for k in range(len(self.pairs)):
            i, j = (int(x) for x in self.pairs.pairs[k])
            cos = float(self.pairs.cosine[k])
            out.append(
                Pair(
                    a=self.names[i],
                    b=self.names[j],
                    hamming=int(self.pairs.hamming[k]),
                    estimated_cosine=float(self.pairs.estimated[k]),
                    cosine=None if np.isnan(cos) else cos,
                    above_threshold=float(score[k]) >= self.params.threshold,
                    few_features=bool(few[i] or few[j]),
                )
            )
        return out
