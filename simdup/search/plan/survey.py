"""What a plan is measured on: samples of a corpus, taken once and shared by every plan.

A plan needs the corpus's fingerprints at each width it prices (bucket sizes and
distances, :class:`~simdup.search.plan.pricing.Sample`), the true cosines of a sample of
its documents (:class:`~simdup.search.plan.cosines.CosineSample`) and what an exact scan
would cost (:class:`~simdup.search.exact.ExactWork`). A :class:`Survey` takes each of
them once, when first asked, so the plan of a scan, the plans it falls back on when the
first does not fit the memory budget, and the alternatives a refusal names are all
priced on the same samples: never by reading or fingerprinting the corpus again.

Another weighting (:meth:`Survey.reweighted`) is priced by weighing and fingerprinting
only the sampled documents again.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from simdup.fingerprints.hashing import feature_words_many
from simdup.fingerprints.simhash import Wider, fingerprint_rows, words64
from simdup.fingerprints.weights import WeightMatrix, scale_counts
from simdup.params import Params, Weighting
from simdup.search.buckets import row_groups
from simdup.search.exact import ExactWork
from simdup.search.plan.cosines import (
    BAND,
    COSINE_ROWS,
    CosineSample,
    Groups,
    RowSource,
    canonical,
    census_sample,
    grown_sample,
)
from simdup.search.plan.memory import DEFAULT_CAP, held_entries
from simdup.search.plan.pricing import PLAN_SAMPLE, ROW_ENTRIES, Sample, measuring_sample

#: A corpus of more term-count entries than this is priced as verified from a store: the
#: default budget (:data:`~simdup.search.plan.memory.DEFAULT_CAP`) stores it. It is priced
#: so whatever the run's own budget: the plan, and so the pairs, of a corpus depend on the
#: corpus and the settings only.
STORED_ENTRIES = held_entries(DEFAULT_CAP)

#: Distinct documents in the cosine sample when an exact scan is cheap enough to be chosen
#: without planning tables, at least (the sample then costs a fraction of that scan).
QUICK_ROWS = 1500

#: Sampled rows weighed and fingerprinted at a time under another weighting
#: (:meth:`Survey.reweighted`): each block's weights are copied, so the copy stays small.
REWEIGHED_ROWS = 2_048


def _weighed(counted: WeightMatrix, weighting: Weighting) -> WeightMatrix:
    """Return rows of term counts with their counts weighted by ``weighting``."""
    return WeightMatrix(
        counted.indptr, counted.indices, scale_counts(counted.data, weighting), counted.vocabulary
    )


def quick_rows(documents: int) -> int:
    """Return the most documents the cosine sample of a cheap exact scan may grow to.

    Half the corpus, within :data:`QUICK_ROWS` and :data:`COSINE_ROWS`: the sample's
    products are then at most a quarter of the scan's, and a large corpus with few pairs
    above the threshold is sampled as widely as any (1,500 of 20,000 documents found 16
    pairs above 0.8 where the corpus had 7,342, and estimated 3,245).

    >>> quick_rows(1000), quick_rows(5000), quick_rows(100_000)
    (1500, 2500, 6000)
    """
    return min(COSINE_ROWS, max(QUICK_ROWS, documents // 2))


@dataclass
class Survey:
    """The samples a corpus's plans are priced on, each taken when first needed.

    Attributes:
        fingerprints: uint64 (n, words), the corpus's at the widest width at hand (None
            when only samples are at hand, as for another weighting).
        rows: The corpus's weight rows of the rows asked for (None: no weights, so no
            true cosines: estimates fall back on Hamming distances).
        work: What an exact scan would cost (None: exact mode is not weighed).
        floor: Cosines are sampled from this one on.
        threshold: The scan's: the sample grows while it holds few pairs reaching it.
        quick: An exact scan is cheap enough to be chosen without pricing tables.
        cosine_rows: Distinct documents in the cosine sample, at most.
        seed: The fingerprints' seed (to fingerprint the sample again).
        entries: Mean features per document (0: unknown).
        shared: Features in two documents or more (0: unknown).
        stored: The corpus's true cosines are priced as verified from a store
            (:data:`STORED_ENTRIES`).
        wider: Where the fingerprints at hand are narrower than the plan may price, how to
            make the wider ones (None: the fingerprints at hand are the widest).
    """

    fingerprints: npt.NDArray[np.uint64] | None
    rows: RowSource | None = None
    work: ExactWork | None = None
    floor: float = 0.0
    threshold: float = 0.0
    quick: bool = False
    cosine_rows: int = COSINE_ROWS
    seed: int = 0
    entries: float = 0.0
    shared: int = 0
    stored: bool = False
    wider: Wider | None = None
    _samples: dict[int, Sample] = field(default_factory=dict)
    _cosines: list[CosineSample | None] = field(default_factory=list)
    _groups: list[Groups] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def of(
        cls,
        params: Params,
        fingerprints: npt.NDArray[np.uint64],
        *,
        work: ExactWork | None = None,
        rows: RowSource | None = None,
        quick: bool = False,
        entries: float = 0.0,
        shared: int = 0,
        wider: Wider | None = None,
    ) -> Survey:
        """Survey a corpus for ``params`` (``quick``: an exact scan is cheap, sample less).

        ``entries`` (mean features per document) and ``shared`` (features in two documents
        or more) size the verification (0: unknown); a corpus of more than
        :data:`STORED_ENTRIES` entries is priced as verified from a store. ``wider``: how
        to make fingerprints wider than ``fingerprints``.
        """
        return cls(
            fingerprints=fingerprints,
            rows=rows,
            work=work,
            floor=max(0.0, params.threshold - BAND),
            threshold=params.threshold,
            quick=quick,
            cosine_rows=quick_rows(len(fingerprints)) if quick else COSINE_ROWS,
            seed=params.seed,
            entries=entries,
            shared=shared,
            stored=entries * len(fingerprints) > STORED_ENTRIES,
            wider=wider,
        )

    @property
    def row_entries(self) -> float:
        """Mean features per document (from the exact scan's work, or assumed)."""
        if self.entries:
            return self.entries
        if self.work is not None and self.work.documents:
            return self.work.entries / self.work.documents
        return ROW_ENTRIES

    @property
    def widest(self) -> int:
        """The widest width the fingerprints give (made when first needed: :attr:`wider`)."""
        if self.wider is not None:
            return self.wider.bits
        if self.fingerprints is not None:
            return int(self.fingerprints.shape[1]) * 64
        return max(self._samples) if self._samples else 0

    def prints(self, bits: int) -> npt.NDArray[np.uint64]:
        """Return every row's first ``bits`` bits, making the wider fingerprints if needed."""
        assert self.fingerprints is not None
        if bits > self.fingerprints.shape[1] * 64:
            self._widen()
        return self.fingerprints[:, : words64(bits)]

    def _widen(self) -> None:
        """Make every row's wider fingerprints: the survey is then that of the wide ones.

        The groups are the same; the cosine sample is taken again, with the distances
        of its pairs at every width.
        """
        with self._lock:
            if self.wider is None or self.fingerprints is None:
                return
            self.fingerprints = self.wider.of(np.arange(len(self.fingerprints), dtype=np.int64))
            self.wider = None
            self._cosines.clear()

    def groups(self) -> Groups:
        """Return the rows grouped by identical fingerprint at the widest width.

        With :attr:`wider`, only the rows whose fingerprint at hand is another row's are
        fingerprinted wide: the groups, and their order, are those of the wide ones.
        """
        with self._lock:
            if not self._groups:
                assert self.fingerprints is not None
                self._groups.append(Groups.of(self._group_keys()))
            return self._groups[0]

    def priced(self) -> None:
        """Let go of what only pricing the plans needs: the groups of identical fingerprints.

        Called once the first plan is made, before the memory resident is read to fit it
        (:func:`simdup.search.plan.choice.fitted`): they take 16 bytes a distinct
        fingerprint (150 MB at ten million documents), which the plan's memory would count
        as resident through the pair work that never reads them. They are made again if
        asked for (a refusal's alternatives, the plans after the first).
        """
        with self._lock:
            self._groups.clear()

    def _group_keys(self) -> npt.NDArray[np.uint64]:
        """Return fingerprints that group and sort as the widest do.

        Rows whose fingerprint at hand is unique sort and group by it alone, whatever
        their wider bits: only the others need them.
        """
        assert self.fingerprints is not None
        if self.wider is None:
            return self.fingerprints
        order, starts = row_groups(self.fingerprints)
        sizes = np.diff(np.append(starts, len(order)))
        tied = np.sort(order[np.repeat(sizes > 1, sizes)])
        keys = np.zeros((len(order), words64(self.wider.bits)), dtype=np.uint64)
        keys[:, : self.fingerprints.shape[1]] = self.fingerprints
        if len(tied):
            keys[tied] = self.wider.of(tied)
        return keys

    def sample(self, bits: int) -> Sample:
        """Return the measuring sample of the fingerprints' first ``bits`` bits."""
        with self._lock:
            known = self._samples.get(bits)
        if known is not None:
            return known
        measured = measuring_sample(self.prints(bits))
        with self._lock:
            return self._samples.setdefault(bits, measured)

    def cosines(self) -> CosineSample | None:
        """Return the true cosines of the sampled documents (None without weights).

        A survey under another weighting (:meth:`reweighted`) holds them already.
        """
        with self._lock:
            if self._cosines:
                return self._cosines[0]
        if self.rows is None or self.fingerprints is None:
            return None
        rows = len(self.fingerprints)
        census = self.quick and rows <= QUICK_ROWS and not self.stored
        groups = None if census else self.groups()
        with self._lock:
            if not self._cosines:
                # Its pairs' distances, only at the width at hand until it is widened (an
                # exact plan reads none of them; tables widen it first).
                self._cosines.append(
                    census_sample(
                        self.rows(np.arange(rows, dtype=np.int64)), self.fingerprints, self.floor
                    )
                    if groups is None
                    else grown_sample(
                        groups,
                        self.fingerprints,
                        self.rows,
                        self.floor,
                        self.cosine_rows,
                        self.threshold,
                    )
                )
            return self._cosines[0]

    def census(self, threshold: float) -> npt.NDArray[np.int64] | None:
        """Return every pair at or above ``threshold``, int64 (m, 2), if the survey knows them.

        A cheap corpus of few documents is surveyed by a census (:func:`census_sample`),
        whose pairs an exact scan takes as they are; otherwise None.
        """
        with self._lock:
            known = self._cosines[0] if self._cosines else None
        if known is None or known.pairs is None or threshold < known.floor:
            return None
        return known.pairs[known.cosines >= threshold]

    def _weighed_prints(
        self, asked: npt.NDArray[np.int64], weighting: Weighting
    ) -> npt.NDArray[np.uint64]:
        """Return the widest fingerprints of rows ``asked`` under ``weighting``.

        The rows as the corpus holds them, their features in its order, so each is the
        fingerprint a scan with that weighting makes; a block of :data:`REWEIGHED_ROWS`
        at a time (weighing the sample at once held a copy of most of a small corpus's
        weights, 90 MB of /usr/share/man's, beside the corpus itself), the vocabulary
        hashed once.
        """
        assert self.rows is not None
        bits = self.widest
        prints = np.zeros((len(asked), words64(bits)), dtype=np.uint64)
        vocabulary: tuple[str, ...] | None = None
        signs = np.zeros((0, 0), dtype=np.uint32)
        for lo in range(0, len(asked), REWEIGHED_ROWS):
            block = self.rows(asked[lo : lo + REWEIGHED_ROWS])
            if block.vocabulary is not vocabulary:
                vocabulary = block.vocabulary
                signs = feature_words_many(vocabulary, self.seed, -(-bits // 32))
            weighed = _weighed(block, weighting)
            prints[lo : lo + block.rows] = fingerprint_rows(weighed, signs, bits)
        return prints

    def reweighted(self, weighting: Weighting, widths: tuple[int, ...]) -> Survey:
        """Return the survey of the same corpus under another per-document weighting.

        Only the sampled documents are weighed and fingerprinted again: the buckets and
        distances are measured on them, the counts of the corpus (documents, distinct
        fingerprints, identical pairs) are kept, and the cosine sample is taken again.
        The weights at hand must be term counts (``tf``).
        """
        self._widen()
        assert self.fingerprints is not None
        assert self.rows is not None
        source = self.rows
        groups = self.groups()
        first = groups.first[groups.pick(PLAN_SAMPLE)]

        def rows(asked: npt.NDArray[np.int64]) -> WeightMatrix:
            return _weighed(canonical(source(asked)), weighting)

        prints = self._weighed_prints(first, weighting)
        everything = np.zeros_like(self.fingerprints)
        everything[first] = prints
        survey = Survey(
            fingerprints=None,
            rows=None,
            work=self.work,
            floor=self.floor,
            threshold=self.threshold,
            quick=self.quick,
            cosine_rows=self.cosine_rows,
            seed=self.seed,
            entries=self.entries,
            shared=self.shared,
            stored=self.stored,
        )
        for bits in widths:
            if bits <= self.widest:
                mine = self.sample(bits)
                sampled = measuring_sample(prints[:, : words64(bits)])
                survey._samples[bits] = Sample(
                    mine.documents, mine.distinct, mine.duplicate_pairs, sampled.fingerprints
                )
        if self.cosines() is not None:
            survey._cosines.append(
                grown_sample(groups, everything, rows, self.floor, self.cosine_rows, self.threshold)
            )
        return survey
