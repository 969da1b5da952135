"""Groups of near-duplicates: which document stands for which, and clusters to report.

Joining pairs into connected components groups documents through chains: if A~B and B~C,
C joins A although the two may be far apart (418 of 786 copyright files became one
group). Here a group gathers around a *representative*: documents are walked in keep order,
and one joins the group of the first kept document it reaches at or above the threshold
(:func:`resolve`, the rule ``simdup dedupe`` removes by), so every member is at or above
the threshold with its representative. Components remain available as *chains*, labelled
by their weakest link.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from simdup.model import Cluster, PairArrays, ScanResult
from simdup.params import ClusterKind
from simdup.search.verify import components


@dataclass(frozen=True)
class Removal:
    """A removed input document, and the document it duplicates.

    Attributes:
        index: Position of the removed document among the inputs.
        kept: Position of the kept document it duplicates: among the inputs, or among the
            references when ``reference`` is true.
        reference: Whether the kept document is a reference document.
        cosine: Their true cosine (at or above the threshold).
        hamming: Hamming distance of their fingerprints.
        estimated_cosine: Cosine estimated from that distance.
    """

    index: int
    kept: int
    reference: bool
    cosine: float
    hamming: int
    estimated_cosine: float


def resolve(
    order: Sequence[int],
    pairs: PairArrays,
    threshold: float,
    *,
    references: int = 0,
) -> list[Removal]:
    """Decide greedily, in keep order, which inputs are removed and what each duplicates.

    Rows ``0 .. n-1`` of ``pairs`` are the inputs (``n = len(order)``), rows ``n ..
    n+references-1`` the references. References are kept before any input; then each
    input, in ``order``, is removed if it has a pair at or above ``threshold`` (true cosine;
    pairs without one are ignored) with a document already kept, and kept otherwise. A
    removed input names its kept match with the highest cosine; ties go to the match
    earlier in keep order (references first).

    Args:
        order: Input rows, the one to keep first first (:func:`keep_order`).
        pairs: Measured pairs over those rows.
        threshold: Smallest true cosine that makes two documents duplicates.
        references: How many reference rows follow the inputs.

    Returns:
        The removals, ascending by input row.

    >>> import numpy as np
    >>> chain = PairArrays(np.array([[0, 1], [1, 2]]), np.array([3, 3]),
    ...                    np.array([0.9, 0.9]), np.array([0.9, 0.9]))
    >>> [(r.index, r.kept) for r in resolve([0, 1, 2], chain, 0.8)]  # 2 stays: 1 is gone
    [(1, 0)]
    """
    inputs = len(order)
    rank = np.empty(inputs + references, dtype=np.int64)
    rank[inputs:] = np.arange(references)
    rank[np.asarray(order, dtype=np.int64)] = np.arange(references, references + inputs)
    usable = ~np.isnan(pairs.cosine) & (pairs.cosine >= threshold)
    edges = pairs.take(usable)
    first, second = edges.pairs[:, 0], edges.pairs[:, 1]
    later = np.where(rank[first] > rank[second], first, second)
    earlier = np.where(rank[first] > rank[second], second, first)
    among_inputs = later < inputs  # both references: nothing to decide
    later, earlier, edges = later[among_inputs], earlier[among_inputs], edges.take(among_inputs)
    # Walk edges by the later document's rank: every earlier document is decided by then.
    walk = np.lexsort((rank[earlier], -edges.cosine, rank[later]))
    kept = np.ones(inputs + references, dtype=bool)
    decided: set[int] = set()
    removals: list[Removal] = []
    for k in walk.tolist():
        row, match = int(later[k]), int(earlier[k])
        if row in decided or not kept[match]:
            continue
        decided.add(row)
        kept[row] = False
        is_reference = match >= inputs
        removals.append(
            Removal(
                index=row,
                kept=match - inputs if is_reference else match,
                reference=is_reference,
                cosine=float(edges.cosine[k]),
                hamming=int(edges.hamming[k]),
                estimated_cosine=float(edges.estimated[k]),
            )
        )
    removals.sort(key=lambda r: r.index)
    return removals


def clusters(result: ScanResult, kind: ClusterKind = "representative") -> list[Cluster]:
    """Return the groups of the pairs at or above the threshold, largest first.

    ``representative`` groups (the default) gather around their first document in name
    order (:func:`resolve`, keep order ``first``): each member's cosine to it is at or
    above the threshold. ``linked`` groups are connected components, labelled by their
    weakest link. Either names its least similar pair when every pair within it was
    measured (reported), and says how many were.
    """
    score = result.pairs.score()
    above = result.pairs.take(score >= result.params.threshold)
    if len(above) == 0:
        return []
    known = not bool(np.isnan(above.cosine).any())
    groups = _chains(result, above, known) if kind == "linked" else _stars(result, above, known)
    least = _least_similar(result, [g.members for g in groups])
    out = [
        replace(g, measured_pairs=m, least_similar=pair)
        for g, (m, pair) in zip(groups, least, strict=True)
    ]
    out.sort(key=lambda c: (-c.size, c.members))
    return out


def _stars(result: ScanResult, above: PairArrays, known: bool) -> list[Cluster]:
    """Return the groups around a representative (the first in name order keeps)."""
    scored = PairArrays(above.pairs, above.hamming, above.estimated, above.score())
    order = result.name_order().tolist()
    joined: dict[int, list[tuple[float, int]]] = {}
    for removal in resolve(order, scored, result.params.threshold):
        joined.setdefault(removal.kept, []).append((removal.cosine, removal.index))
    names = result.names
    out = []
    for head, members in joined.items():
        members.sort(key=lambda m: (-m[0], names[m[1]]))
        rows = [head, *(row for _, row in members)]
        out.append(
            Cluster(
                size=len(rows),
                min_cosine=members[-1][0] if known else None,
                members=tuple(names[r] for r in rows),
                representative=names[head],
                cosines=(1.0, *(c for c, _ in members)) if known else (),
            )
        )
    return out


def _chains(result: ScanResult, above: PairArrays, known: bool) -> list[Cluster]:
    """Return the connected components of the pairs, labelled by their weakest link."""
    labels = components(len(result.names), above.pairs)
    score = above.score()
    names = result.names
    edge_label = labels[above.pairs[:, 0]]
    weakest_first = np.lexsort((score, edge_label))  # per label, its weakest edge first
    first_edge = np.unique(edge_label[weakest_first], return_index=True)[1]
    linked = np.unique(above.pairs)
    by_label: dict[int, list[int]] = {}
    for row in linked.tolist():
        by_label.setdefault(int(labels[row]), []).append(row)
    out = []
    for k in weakest_first[first_edge].tolist():
        label = int(edge_label[k])
        a, b = sorted(names[int(r)] for r in above.pairs[k])
        rows = by_label[label]
        out.append(
            Cluster(
                size=len(rows),
                min_cosine=float(score[k]) if known else None,
                members=tuple(sorted(names[r] for r in rows)),
                weakest_link=(a, b),
            )
        )
    return out


def _least_similar(
    result: ScanResult, groups: Sequence[Sequence[str]]
) -> list[tuple[int, tuple[str, str, float] | None]]:
    """Return, per group, its pairs measured and its least similar pair if all were.

    A pair is measured when the scan reported it (``--all`` reports those below the
    threshold too); a group of ``n`` has ``n (n - 1) / 2`` pairs.
    """
    row_of = {name: row for row, name in enumerate(result.names)}
    group = np.full(len(result.names), -1, dtype=np.int64)
    for g, members in enumerate(groups):
        group[[row_of[m] for m in members]] = g
    pairs = result.pairs
    ga, gb = group[pairs.pairs[:, 0]], group[pairs.pairs[:, 1]]
    inside = np.flatnonzero((ga == gb) & (ga >= 0))
    measured = np.bincount(ga[inside], minlength=len(groups))
    cosine = pairs.cosine[inside]
    lowest = inside[np.lexsort((cosine, ga[inside]))]
    labels, starts = np.unique(ga[lowest], return_index=True)  # each group's lowest pair
    first = dict(zip(labels.tolist(), starts.tolist(), strict=True))
    out: list[tuple[int, tuple[str, str, float] | None]] = []
    for g, members in enumerate(groups):
        size = len(members)
        least = None
        k = first.get(g)
        if int(measured[g]) == size * (size - 1) // 2 and k is not None:
            edge = int(lowest[k])
            value = float(pairs.cosine[edge])
            if value == value:  # not NaN: the true cosine is known
                a, b = sorted(result.names[int(r)] for r in pairs.pairs[edge])
                least = (a, b, value)
        out.append((int(measured[g]), least))
    return out
