"""Plain data passed between the pipeline stages: documents, skips, pairs and results.

The settings of a run are :class:`simdup.params.Params`.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Iterator, Sequence
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
    identical: bool | None = None


@dataclass(frozen=True)
class Cluster:
    """A group of near-duplicate documents (:func:`simdup.search.groups.clusters`).

    Attributes:
        size: Members, the representative included.
        min_cosine: The lowest cosine of a member to the representative, or for a chain
            its weakest link; None when true cosines are unknown.
        members: Names: the representative first, then by cosine to it (highest first);
            a chain's in name order.
        representative: The member every other is at or above the threshold with; None
            for a chain (single-link component).
        cosines: Each member's true cosine to the representative (the representative's is
            1.0); empty for a chain or when unknown.
        weakest_link: A chain's least similar linked pair (names in order).
        measured_pairs: Pairs within the group that were measured (reported).
        least_similar: The least similar pair within the group and its cosine, when every
            pair within it was measured; else None.
    """

    size: int
    min_cosine: float | None
    members: tuple[str, ...]
    representative: str | None = None
    cosines: tuple[float, ...] = ()
    weakest_link: tuple[str, str] | None = None
    measured_pairs: int = 0
    least_similar: tuple[str, str, float] | None = None


#: The columns of :class:`PairArrays`.
_COLUMNS = ("pairs", "hamming", "estimated", "cosine")

#: A column joined from parts at least this large gives the parts' pages back to the system
#: as it goes (smaller ones free too little for the allocator's walk, up to a millisecond
#: on a large heap, which an index query would pay).
GIVE_BACK_BYTES = 32 << 20


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
        return cls(*(np.concatenate([getattr(p, c) for p in parts]) for c in _COLUMNS))

    @classmethod
    def gather(cls, parts: list[PairArrays]) -> PairArrays:
        """Return :meth:`join` of ``parts``, emptying them a column at a time as it goes.

        The pairs are then held about once, not twice (the parts and their join): the
        caller gives the parts up, and the list is left empty.
        """
        from simdup.allocator import give_back

        if not parts:
            return cls.empty()
        joined = cls.empty()
        for column in _COLUMNS:
            setattr(joined, column, np.concatenate([getattr(p, column) for p in parts]))
            for part in parts:  # a new empty array: an empty view would keep the old one
                emptied = getattr(part, column)
                setattr(part, column, np.empty((0, *emptied.shape[1:]), emptied.dtype))
            if getattr(joined, column).nbytes >= GIVE_BACK_BYTES:
                give_back()  # the parts' pages, before the next column is joined
        parts.clear()
        return joined

    def release(self, rows: slice) -> None:
        """Give back the pages of the pairs at ``rows`` where the columns are mapped files.

        Pairs written to disk past the budget are read by the report a batch at a time;
        read again, they come back from the page cache or the file.
        """
        from simdup.spill import release

        release(*(getattr(self, column)[rows] for column in _COLUMNS))

    def permute(self, order: npt.NDArray[np.int64]) -> None:
        """Put the pairs in ``order``, in place: one column's copy at a time, not all four."""
        for column in _COLUMNS:
            setattr(self, column, getattr(self, column)[order])

    def take(self, index: npt.NDArray[np.int64] | npt.NDArray[np.bool_] | slice) -> PairArrays:
        """Return the pairs selected by an index, a mask or a slice."""
        return PairArrays(*(getattr(self, c)[index] for c in _COLUMNS))

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

    names: Sequence[str]
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
        return _few(self.feature_counts)

    def name_order(self) -> npt.NDArray[np.int64]:
        """Return the rows in the order of their names (names are unique, usually sorted)."""
        names = self.names
        if all(map(operator.lt, names, itertools.islice(names, 1, None))):
            return np.arange(len(names), dtype=np.int64)
        return np.array(sorted(range(len(names)), key=names.__getitem__), dtype=np.int64)

    @property
    def bits(self) -> int:
        """Return the fingerprint width of the pairs' Hamming distances."""
        return int(self.stats.get("bits", self.params.fixed_bits))

    def identical(self, count: int | None = None) -> list[bool | None]:
        """Tell per pair whether the two documents read the same (None: unknown).

        The same terms in the same proportions give a true cosine of exactly 1.0 (see
        :mod:`simdup.search.verify`): an exact copy always does, and so does a copy that
        differs only in what is not compared (case, punctuation, noise words). Without
        true cosines (``match``) only differing fingerprints tell. ``count``: only the
        first ones, so a terminal showing a few of millions walks a few.
        """
        return _identical(self.pairs.take(slice(0, count)))

    def pair_list(self, limit: int | None = None) -> list[Pair]:
        """Return the reported pairs as :class:`Pair` objects, in stored order.

        ``limit``: only the first ones (a terminal shows a few of many).
        """
        count = len(self.pairs) if limit is None else min(limit, len(self.pairs))
        return self.pairs_at(slice(0, count))

    def pairs_at(self, rows: npt.NDArray[np.int64] | slice) -> list[Pair]:
        """Return the reported pairs at ``rows`` (positions, or a slice), made into objects."""
        return self.fields_at(rows).pairs()

    def fields_at(self, rows: npt.NDArray[np.int64] | slice) -> PairFields:
        """Return the fields of the reported pairs at ``rows`` (positions, or a slice).

        The columns are taken as Python lists: reading numpy arrays an element at a time
        costs more than making the pairs, and a report written from the lists makes none.
        """
        part = self.pairs.take(rows)
        few = _few(self.feature_counts[part.pairs])  # each pair's ends only, not every row
        names = self.names
        return PairFields(
            a=[names[i] for i in part.pairs[:, 0].tolist()],
            b=[names[j] for j in part.pairs[:, 1].tolist()],
            hamming=part.hamming.tolist(),
            estimated=part.estimated.tolist(),
            cosine=part.cosine.tolist(),
            above=(part.score() >= self.params.threshold).tolist(),
            few=(few[:, 0] | few[:, 1]).tolist(),
            identical=_identical(part),
        )


@dataclass
class PairFields:
    """The fields of some pairs, a list each, in the order of the pairs.

    What :class:`Pair` holds, a column at a time: a report of millions of pairs is written
    from these without making an object a pair. ``cosine`` is NaN where unknown.
    """

    a: list[str]
    b: list[str]
    hamming: list[int]
    estimated: list[float]
    cosine: list[float]
    above: list[bool]
    few: list[bool]
    identical: list[bool | None]

    @classmethod
    def of(cls, pairs: Sequence[Pair]) -> PairFields:
        """Return the fields of ``pairs``."""
        return cls(
            a=[p.a for p in pairs],
            b=[p.b for p in pairs],
            hamming=[p.hamming for p in pairs],
            estimated=[p.estimated_cosine for p in pairs],
            cosine=[math.nan if p.cosine is None else p.cosine for p in pairs],
            above=[p.above_threshold for p in pairs],
            few=[p.few_features for p in pairs],
            identical=[p.identical for p in pairs],
        )

    def rows(self) -> Iterator[tuple[str, str, int, float, float, bool, bool, bool | None]]:
        """Yield each pair's fields: a, b, hamming, estimated, cosine, above, few, identical."""
        return zip(
            self.a,
            self.b,
            self.hamming,
            self.estimated,
            self.cosine,
            self.above,
            self.few,
            self.identical,
            strict=True,
        )

    def pairs(self) -> list[Pair]:
        """Return the pairs as :class:`Pair` objects."""
        return [
            Pair(
                a=a,
                b=b,
                hamming=hamming,
                estimated_cosine=estimated,
                cosine=None if math.isnan(cosine) else cosine,
                above_threshold=above,
                few_features=flagged,
                identical=same,
            )
            for a, b, hamming, estimated, cosine, above, flagged, same in self.rows()
        ]

    def __len__(self) -> int:
        return len(self.a)


def _few(counts: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """Return which feature counts are below :data:`FEW_FEATURES` (negative: unknown, no)."""
    return (counts >= 0) & (counts < FEW_FEATURES)


def _identical(pairs: PairArrays) -> list[bool | None]:
    """Return :meth:`ScanResult.identical` of ``pairs``."""
    unknown = np.isnan(pairs.cosine)
    same = pairs.cosine == 1.0
    return [
        (None if h == 0 else False) if u else bool(s)
        for u, s, h in zip(unknown.tolist(), same.tolist(), pairs.hamming.tolist(), strict=True)
    ]
