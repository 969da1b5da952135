"""One table's buckets to pairs: sort by key, find runs of equal keys, pair inside them.

Within one table, documents (one representative per distinct fingerprint) are sorted by
their key, so bucket mates become neighbours: a run of equal keys is a bucket, and every
pair inside a run is a candidate. Runs are paired by index arithmetic over triangle
numbers, a bounded piece at a time, so a huge bucket costs time, never memory. The
planner's Hamming pre-filter (:func:`near`) drops far pairs before anything else is done
with them. Combining the tables, and the groups of identical fingerprints, is
:mod:`simdup.search.candidates`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import numpy.typing as npt

from simdup.search.tables import KEY_MIX, exact_keys
from simdup.window import Stream, in_order

#: One piece of a table's pairs: representatives ``a < b`` and the pairs sharing the key
#: before the pre-filter.
TablePairs = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], int]
#: One table's ``(order, starts, sizes, pairs)``, from :func:`bucketed`.
Bucketed = tuple[
    npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64], Iterable[TablePairs]
]


#: Rows compared at a time when runs of equal fingerprints are found (bounded temporaries).
GROUP_BLOCK = 1 << 16


def row_groups(
    fingerprints: npt.NDArray[np.uint64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Return the rows sorted by fingerprint, and where each run of equal ones starts.

    The groups of ``np.unique(fingerprints, axis=0)``, in its order, with the rows of a
    group ascending (its first is ``return_index``'s), but without its copies of the
    whole array: a stable sort of the words as keys, then neighbours compared a block at
    a time. Several times faster, and at 10,000,000 fingerprints of 512 bits about
    200 MB instead of 2 GB.

    >>> order, starts = row_groups(np.array([[3], [1], [3], [2]], dtype=np.uint64))
    >>> order.tolist(), starts.tolist()
    ([1, 3, 0, 2], [0, 1, 2])
    """
    count = len(fingerprints)
    if count == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.lexsort(fingerprints.T[::-1]).astype(np.int64)
    differs = np.empty(count, dtype=bool)
    differs[0] = True
    for lo in range(1, count, GROUP_BLOCK):
        hi = min(count, lo + GROUP_BLOCK)
        later, earlier = fingerprints[order[lo:hi]], fingerprints[order[lo - 1 : hi - 1]]
        differs[lo:hi] = (later != earlier).any(axis=1)
    return order, np.flatnonzero(differs).astype(np.int64)


def locate(
    counts: npt.NDArray[np.int64], t: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Map global indices ``t`` over items of ``counts`` sizes to (item, local index).

    >>> [x.tolist() for x in locate(np.array([2, 0, 3]), np.array([0, 1, 2, 4]))]
    [[0, 0, 2, 2], [0, 1, 0, 2]]
    """
    ends = np.cumsum(counts)
    item = np.searchsorted(ends, t, side="right").astype(np.int64)
    return item, t - (ends[item] - counts[item])


def triangle(t: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Return the ``t``-th pair ``(lo, hi)``, ``lo < hi``, in the order (0,1), (0,2), (1,2)...

    >>> [x.tolist() for x in triangle(np.arange(6))]
    [[0, 0, 1, 0, 1, 2], [1, 2, 2, 3, 3, 3]]
    """
    hi = ((1 + np.sqrt(1 + 8 * t.astype(np.float64))) / 2).astype(np.int64)
    hi -= (hi * (hi - 1) // 2) > t  # correct float rounding down
    hi += ((hi + 1) * hi // 2) <= t  # and up
    return t - hi * (hi - 1) // 2, hi


def sorted_buckets(
    keys: npt.NDArray[np.uint64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Return ``(order, starts, sizes)`` of the runs of equal keys with two or more members.

    One plain sort of ``(mixed key, row)`` packed into a uint64 replaces a stable argsort
    (several times slower): the mixed key keeps its top ``64 - row bits`` bits, so two
    different keys can rarely land in one run. That only adds a candidate, which is
    filtered and verified like any other; it never loses one.
    """
    n = len(keys)
    row_bits = max(1, (n - 1).bit_length())
    shift = np.uint64(row_bits)
    packed = ((keys * KEY_MIX) >> shift) << shift
    packed |= np.arange(n, dtype=np.uint64)
    packed.sort()
    order = (packed & np.uint64((1 << row_bits) - 1)).astype(np.int64)
    bucket = packed >> shift
    edges = np.flatnonzero(bucket[1:] != bucket[:-1]) + 1
    starts = np.concatenate(([0], edges)).astype(np.int64)
    sizes = np.diff(np.concatenate((starts, [n]))).astype(np.int64)
    shared = sizes > 1
    return order, starts[shared], sizes[shared]


def table_pairs(
    columns: list[npt.NDArray[np.uint64]],
    keys: npt.NDArray[np.uint64],
    order: npt.NDArray[np.int64],
    starts: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    chunk_pairs: int,
    max_hamming: int | None,
) -> Iterator[TablePairs]:
    """Yield one table's pairs of distinct fingerprints, ``a < b``, within ``max_hamming``.

    Each piece comes with the number of pairs sharing the key before the distance filter
    (what the planner predicts as candidates).

    Pairs are made as positions in the table's sorted order (bucket mates are neighbours),
    then measured on the rows they stand for. ``keys`` are exact, so comparing them drops
    the pairs a run of the sorted, truncated keys can (rarely) join by mistake.
    """
    two = sizes == 2
    pair_starts = starts[two]
    big_starts, big_sizes = starts[~two], sizes[~two]
    sorted_keys = keys[order]

    def pieces() -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]]:
        # Runs of two (most of them) give their one pair directly; larger runs all pairs.
        for lo in range(0, len(pair_starts), chunk_pairs):
            at = pair_starts[lo : lo + chunk_pairs]
            yield at, at + 1
        yield from run_positions(big_starts, big_sizes, chunk_pairs)

    for i, j in pieces():
        same = sorted_keys[i] == sorted_keys[j]
        a, b = order[i[same]], order[j[same]]
        raw = len(a)
        if max_hamming is not None:
            kept = near(columns, a, b, max_hamming)
            a, b = a[kept], b[kept]
        yield np.minimum(a, b), np.maximum(a, b), raw


def run_positions(
    starts: npt.NDArray[np.int64], sizes: npt.NDArray[np.int64], chunk_pairs: int
) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]]:
    """Yield every pair of positions inside the runs, in pieces of at most ``chunk_pairs``.

    Whole runs are grouped up to the chunk size (one ``repeat`` numbers their pairs); a
    run with more pairs than that is cut into slices of its own.
    """
    counts = sizes * (sizes - 1) // 2
    ends = np.cumsum(counts)
    r = 0
    while r < len(sizes):
        base = int(ends[r] - counts[r])
        stop = int(np.searchsorted(ends, base + chunk_pairs, side="right"))
        if stop == r:  # one run larger than a chunk
            for lo in range(0, int(counts[r]), chunk_pairs):
                first, second = triangle(np.arange(lo, min(int(counts[r]), lo + chunk_pairs)))
                yield starts[r] + first, starts[r] + second
            r += 1
            continue
        these = counts[r:stop]
        run = np.repeat(np.arange(r, stop), these)
        first, second = triangle(
            np.arange(int(ends[stop - 1]) - base) - np.repeat(ends[r:stop] - these - base, these)
        )
        yield starts[run] + first, starts[run] + second
        r = stop


def near(
    columns: Sequence[npt.NDArray[np.uint64]],
    a: npt.NDArray[np.int64],
    b: npt.NDArray[np.int64],
    max_hamming: int,
) -> npt.NDArray[np.int64]:
    """Return the positions of the pairs within ``max_hamming``, words added one by one.

    Most candidate pairs are far apart, so after the first words most are already out of
    range and the remaining words are read for the few left.
    """
    first = min(2, len(columns))
    distance = np.zeros(len(a), dtype=np.int32)
    for column in columns[:first]:
        distance += np.bitwise_count(column[a] ^ column[b])
    kept = np.flatnonzero(distance <= max_hamming)
    distance = distance[kept]
    for column in columns[first:]:
        distance += np.bitwise_count(column[a[kept]] ^ column[b[kept]])
        inside = distance <= max_hamming
        kept, distance = kept[inside], distance[inside]
    return kept


def bucketed(
    columns: list[npt.NDArray[np.uint64]],
    masks: npt.NDArray[np.uint64],
    chunk_pairs: int,
    max_hamming: int | None,
    threads: int,
    ahead_bytes: int | None = None,
) -> Iterator[Bucketed]:
    """Yield each table's ``(order, starts, sizes, pairs)`` in table order.

    With one thread the pairs are a lazy stream; with more, tables are bucketed in pool
    threads, at most ``2 * threads`` tables ahead, and each streams its pairs to the
    reader holding at most ``ahead_bytes`` of them waiting (None: a whole table): a table
    with many pairs waits for its turn rather than growing.
    """

    def sorted_table(mask: npt.NDArray[np.uint64]) -> Bucketed:
        keys = exact_keys(columns, mask)
        order, starts, sizes = sorted_buckets(keys)
        found = table_pairs(columns, keys, order, starts, sizes, chunk_pairs, max_hamming)
        return order, starts, sizes, found

    if threads == 1:
        yield from map(sorted_table, masks)
        return
    limit = ahead_bytes if ahead_bytes is not None else 1 << 62
    streams: list[Stream[TablePairs]] = []
    lock = threading.Lock()  # a table starting and the reader leaving do not cross
    stopped = threading.Event()

    def fill(mask: npt.NDArray[np.uint64], ready: Future[Bucketed]) -> None:
        stream: Stream[TablePairs] = Stream(limit, _piece_bytes)
        with lock:
            if stopped.is_set():
                return
            streams.append(stream)
        try:
            order, starts, sizes, found = sorted_table(mask)
        except BaseException as error:  # the reader raises it where it waits
            ready.set_exception(error)
            return
        ready.set_result((order, starts, sizes, stream))
        try:
            for piece in found:
                if not stream.put(piece):
                    return
        except BaseException as error:
            stream.close(error)
            return
        stream.close()

    def start(mask: npt.NDArray[np.uint64]) -> Future[Bucketed]:
        ready: Future[Bucketed] = Future()
        pool.submit(fill, mask, ready)
        return ready

    with ThreadPoolExecutor(max_workers=threads) as pool:
        try:
            yield from in_order(start, masks, ahead=2 * threads)
        finally:
            # A reader that stops early releases the tables still making pairs.
            with lock:
                for stream in streams:
                    stream.abandon()
                streams.clear()
                stopped.set()


def _piece_bytes(piece: TablePairs) -> int:
    """Return the bytes of one piece of a table's pairs."""
    return int(piece[0].nbytes + piece[1].nbytes)
