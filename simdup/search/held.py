"""The pairs a scan reports, gathered as they are verified: in memory, and past a limit on disk.

Verified pairs arrive a chunk at a time and are reported in
:func:`~simdup.search.result.canonical_order`. Held in memory they take about 40 bytes a
pair, twice while they are sorted; a scan reporting tens of millions of pairs would need
gigabytes for them alone. Past a limit (:class:`Held`) they are written to disk by score
range instead, and put in order one range at a time into files mapped back: the result's
columns are then those files, read by the report a batch at a time.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import numpy as np

from simdup.model import PairArrays
from simdup.progress import Advance
from simdup.search.result import Verified, canonical_order, in_canonical_order, score_bins
from simdup.spill import Buckets, SpillDir

#: A reported pair held for the report, as written to disk.
REPORTED = np.dtype(
    [
        ("pair", np.int64, (2,)),
        ("hamming", np.int64),
        ("estimated", np.float64),
        ("cosine", np.float64),
    ]
)


class Held:
    """Pairs to report: in memory up to ``limit``, past it on disk by score range.

    Once they spill, they are written in runs of a quarter of ``limit``: sorting a run by
    range takes about three and a half times its records, so the writes stay within the
    memory the pairs held had (twice their 40 bytes, counted by the budget).

    Args:
        spill: Where pairs past ``limit`` go (None: nowhere, every pair is held).
        limit: Pairs held in memory (None: no limit).
        rows: Rows the pairs are drawn from (exact copies are split by their first row).
    """

    def __init__(
        self, spill: SpillDir | None = None, limit: int | None = None, rows: int = 0
    ) -> None:
        self.spill = spill
        self.limit = limit if spill is not None else None
        self.rows = rows
        self.parts: list[PairArrays] = []
        self.count = 0
        self.bins: Buckets | None = None

    @property
    def spilled(self) -> bool:
        """Tell whether pairs went to disk."""
        return self.bins is not None

    def add(self, kept: PairArrays) -> None:
        """Hold more pairs to report."""
        if self.bins is not None:
            self._spill(kept)
            return
        self.parts.append(kept)
        self.count += len(kept)
        if self.spill is not None and self.limit is not None and self.count > self.limit:
            self.bins = Buckets(self.spill, "held.pairs", REPORTED, max(1, self.limit // 4))
            self.parts.reverse()
            while self.parts:  # each part goes as its records are made
                self._spill(self.parts.pop())

    def _spill(self, pairs: PairArrays) -> None:
        assert self.bins is not None
        records = np.empty(len(pairs), dtype=REPORTED)
        records["pair"] = pairs.pairs
        records["hamming"] = pairs.hamming
        records["estimated"] = pairs.estimated
        records["cosine"] = pairs.cosine
        self.bins.add(score_bins(pairs, self.rows), records)

    def ordered(self) -> PairArrays:
        """Return every pair held, in :func:`~simdup.search.result.canonical_order`.

        Pairs held in memory are joined and sorted (:func:`in_canonical_order`); pairs
        spilled are sorted a score range at a time, into files mapped back.
        """
        if self.bins is None or self.spill is None:
            return in_canonical_order(self.parts)
        kinds = {
            "pairs": np.int64,
            "hamming": np.int64,
            "estimated": np.float64,
            "cosine": np.float64,
        }
        columns = [self.spill.column(f"reported.{name}", kind) for name, kind in kinds.items()]
        for _, parts in itertools.groupby(self.bins.drain(), key=lambda part: part[0]):
            records = np.concatenate([records for _, records in parts])  # one score range
            part = canonical_order(
                (),
                PairArrays(
                    np.ascontiguousarray(records["pair"]),
                    np.ascontiguousarray(records["hamming"]),
                    np.ascontiguousarray(records["estimated"]),
                    np.ascontiguousarray(records["cosine"]),
                ),
            )
            for column, values in zip(
                columns,
                (part.pairs.reshape(-1), part.hamming, part.estimated, part.cosine),
                strict=True,
            ):
                column.append(values)
        pairs, hamming, estimated, cosine = (column.mapped() for column in columns)
        return PairArrays(pairs.reshape(-1, 2), hamming, estimated, cosine)


def held_result(verified: Iterable[Verified], held: Held, advance: Advance | None) -> Verified:
    """Return the counts of every verified part, with their pairs held and put in order.

    ``advance``, when given, is told the pairs of each part verified.
    """
    candidates = above = 0
    for result in verified:
        candidates += result.candidates
        above += result.above_threshold
        held.add(result.kept)
        if advance is not None:
            advance(result.candidates)
    return Verified(candidates, above, held.ordered())
