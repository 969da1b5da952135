"""Plain data passed between the pipeline stages, and the parameters that shape a run.

:class:`Params` holds every setting that changes which pairs a scan reports; it validates
itself on construction, so a bad value fails before any file is read and the command line
and the library share one source of defaults.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from simdup.errors import ParameterError
from simdup.fingerprints.simhash import AUTO_BITS, check_bits, check_seed, is_auto
from simdup.fingerprints.weights import check_weighting
from simdup.search.tables import SCHEMES
from simdup.text.languages import LANGUAGES, lists_digest, parse_setting
from simdup.text.segment import resolve, segmenter_version

#: Version of the fingerprint definition (tokenizer + weighting + hash). Stored with every
#: saved fingerprint; it changes whenever the same text could fingerprint differently.
FINGERPRINT_FORMAT = 1

#: Documents with fewer distinct features than this get pairs flagged ``few_features``:
#: with so few hyperplane votes the estimate is noisy (the seed's warning on short texts).
FEW_FEATURES = 8

SCHEME_CHOICES: tuple[str, ...] = (*SCHEMES, "auto")


@dataclass(frozen=True)
class Params:
    """Settings that determine fingerprints, candidates and reported pairs.

    Attributes:
        bits: Fingerprint width, or ``"auto"`` (the default, :data:`AUTO_BITS`): a scan's
            planner prices 64, 128, 256 and 512 bits and keeps the cheapest that reaches
            the recall; anything that needs a fixed width uses 64, the reference's.
        seed: Hash seed, 0 <= seed < 2**53.
        weighting: ``tf``, ``log``, ``binary`` or ``tfidf``.
        ngram: Word shingle size (1 = single words).
        stopwords: Noise words removed before weighting: ``"auto"`` (the list of each
            document's guessed language plus English), language codes joined by commas
            (``"de,fr"``: those lists always), ``False`` or ``"none"`` (keep every word).
            ``True`` is accepted for compatibility and means ``"en"``.
        segment: How runs of Han characters become features: ``"auto"`` (words when the
            ``zh`` extra is installed, else bigrams), ``"words"`` or ``"bigrams"``.
        scheme: ``strict``, ``balanced``, ``loose`` or ``auto`` (planned from threshold).
        blocks: Explicit block count; overrides ``scheme``.
        max_distance: Find every pair within this Hamming distance; overrides both.
        threshold: Report pairs whose true cosine is at least this.
        recall: With ``auto``: the probability of finding a pair at the threshold.
    """

    bits: int = AUTO_BITS
    seed: int = 12345
    weighting: str = "tf"
    ngram: int = 1
    stopwords: bool | str = "auto"
    segment: str = "auto"
    scheme: str = "auto"
    blocks: int | None = None
    max_distance: int | None = None
    threshold: float = 0.8
    recall: float = 0.95

    def __post_init__(self) -> None:
        if self.bits == "auto":  # type: ignore[comparison-overlap]
            object.__setattr__(self, "bits", AUTO_BITS)
        check_bits(self.bits)
        check_seed(self.seed)
        check_weighting(self.weighting)
        parse_setting(self.stopwords)
        resolve(self.segment)  # refuses "words" without the extra, before any reading
        if isinstance(self.ngram, bool) or not isinstance(self.ngram, int) or self.ngram < 1:
            raise ParameterError(f"ngram must be an integer >= 1, got {self.ngram!r}")
        if self.scheme not in SCHEME_CHOICES:
            raise ParameterError(
                f"unknown scheme {self.scheme!r}; choose one of: {', '.join(SCHEME_CHOICES)}"
            )
        if self.blocks is not None and not 1 <= self.blocks <= self.bits:
            raise ParameterError(
                f"blocks must be from 1 to bits ({self.bits}), got {self.blocks}; "
                "use fewer blocks or more bits"
            )
        if self.max_distance is not None and not 0 <= self.max_distance < self.bits:
            raise ParameterError(
                f"max distance must be from 0 to bits - 1 ({self.bits - 1}), "
                f"got {self.max_distance}"
            )
        if not 0.0 <= self.threshold <= 1.0:
            raise ParameterError(f"threshold must be within [0, 1], got {self.threshold}")
        if not 0.0 < self.recall <= 1.0:
            raise ParameterError(f"recall must be within (0, 1], got {self.recall}")

    @property
    def auto_bits(self) -> bool:
        """Tell whether the planner chooses the width (``bits="auto"``)."""
        return is_auto(self.bits)

    @property
    def planned(self) -> bool:
        """Tell whether the planner chooses the tables (and may scan exactly or price widths).

        That is ``scheme="auto"`` with neither ``blocks`` nor ``max_distance`` forcing them.
        """
        return self.scheme == "auto" and self.blocks is None and self.max_distance is None

    def replace(self, **changes: Any) -> Params:
        """Return a copy with some settings changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def fingerprint_settings(self) -> dict[str, Any]:
        """Return the settings that define a fingerprint (what an index must match).

        Lists read from the stop-word data package are identified by their digest, and
        word segmentation by the segmenter's version, so that fingerprints made with
        other lists or another dictionary are never mixed; the English list and bigrams
        add no key, so settings written before either existed still match.
        """
        setting = parse_setting(self.stopwords)
        settings: dict[str, Any] = {
            "bits": int(self.bits),
            "seed": self.seed,
            "weighting": self.weighting,
            "ngram": self.ngram,
            # The English list alone is True, as settings stored it before other lists.
            "stopwords": True if setting.languages == ("en",) else setting.name,
            "fingerprint_format": FINGERPRINT_FORMAT,
        }
        if setting.uses_data_package():
            codes = LANGUAGES if setting.auto else setting.languages
            settings["stopword_lists"] = lists_digest(codes)
        if resolve(self.segment) == "words":
            settings["segment"] = f"words ({segmenter_version()})"
        return settings

    @staticmethod
    def stored_settings(settings: dict[str, Any]) -> dict[str, Any]:
        """Return the :class:`Params` arguments that reproduce stored fingerprint settings.

        Settings without a ``segment`` key were made with bigrams (word segmentation
        always records itself), so they keep bigrams even where the extra is installed.

        Raises:
            KeyError: when a required setting is missing.
        """
        return {
            "bits": int(settings["bits"]),
            "seed": int(settings["seed"]),
            "weighting": str(settings["weighting"]),
            "ngram": int(settings["ngram"]),
            "stopwords": settings["stopwords"],
            "segment": "words"
            if str(settings.get("segment", "")).startswith("words")
            else "bigrams",
        }

    def as_dict(self) -> dict[str, Any]:
        """Return every setting as a JSON-ready dict, in declaration order.

        ``bits`` is ``"auto"`` when the planner chooses the width.
        """
        out = dataclasses.asdict(self)
        out["bits"] = "auto" if self.auto_bits else int(self.bits)
        return out


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
    """

    path: str
    reason: str
    unreadable: bool = True


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
        feature_counts: int64 (n,), distinct features per document.
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

    def pair_list(self) -> list[Pair]:
        """Return the reported pairs as :class:`Pair` objects, in stored order."""
        few = self.feature_counts < FEW_FEATURES
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
