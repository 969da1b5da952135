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
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

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

#: Representatives read at a time when a table's keys are made (2 MiB at 512 bits), and
#: pairs measured at a time by the pre-filter.
KEY_BLOCK = 1 << 15


class Prints:
    """The fingerprints of one representative per group, read in place, never copied.

    At ten million fingerprints of 512 bits a copy is 640 MB. The representatives are
    read from the rows' own array through their row numbers (none given: each row stands
    for itself), a block of rows at a time when a table's keys are made; a pair's words
    are read from its two rows (one cache line each at 512 bits).
    """

    def __init__(
        self, fingerprints: npt.NDArray[np.uint64], rows: npt.NDArray[np.integer[Any]] | None = None
    ) -> None:
        self.fingerprints = fingerprints
        self.rows = rows
        self.words = int(fingerprints.shape[1])

    def __len__(self) -> int:
        return len(self.fingerprints) if self.rows is None else len(self.rows)

    def take(self, at: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.uint64]:
        """Return the fingerprints of representatives ``at``, uint64 (m, words)."""
        at = at if self.rows is None else self.rows.take(at)
        if self.words == 1:
            return self.fingerprints.reshape(-1).take(at).reshape(-1, 1)
        return self.fingerprints.take(at, axis=0)  # several times faster than indexing

    def keys(self, mask: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
        """Return :func:`~simdup.search.tables.exact_keys` of every representative."""
        count = len(self)
        out = np.empty(count, dtype=np.uint64)
        for lo in range(0, count, KEY_BLOCK):
            hi = min(count, lo + KEY_BLOCK)
            if self.rows is None:
                rows = self.fingerprints[lo:hi]
            else:
                rows = self.fingerprints.take(self.rows[lo:hi], axis=0)
            out[lo:hi] = exact_keys([rows[:, w] for w in range(self.words)], mask)
        return out

    def xor(
        self, a: npt.NDArray[np.integer[Any]], b: npt.NDArray[np.integer[Any]]
    ) -> npt.NDArray[np.uint64]:
        """Return the XOR of representatives ``a`` and ``b``'s fingerprints, uint64 (m, words)."""
        differ = self.take(a)
        differ ^= self.take(b)
        return differ


def row_groups(
    fingerprints: npt.NDArray[np.uint64], keep: npt.NDArray[np.bool_] | None = None
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Return the rows sorted by fingerprint, and where each run of equal ones starts.

    The groups of ``np.unique(fingerprints, axis=0)``, in its order, with the rows of a
    group ascending (its first is ``return_index``'s), but without its copies of the
    whole array: a stable sort of the words as keys, then neighbours compared a block at
    a time. Several times faster, and at 10,000,000 fingerprints of 512 bits about
    200 MB instead of 2 GB. With ``keep``, only the rows it marks are grouped (the rest
    are left out of the order), still without a copy of theirs.

    >>> order, starts = row_groups(np.array([[3], [1], [3], [2]], dtype=np.uint64))
    >>> order.tolist(), starts.tolist()
    ([1, 3, 0, 2], [0, 1, 2])
    """
    order = sorted_rows(fingerprints)
    if keep is not None:
        order = order[keep[order]]
    count = len(order)
    if count == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    differs = np.empty(count, dtype=bool)
    differs[0] = True
    for lo in range(1, count, GROUP_BLOCK):
        hi = min(count, lo + GROUP_BLOCK)
        later, earlier = fingerprints[order[lo:hi]], fingerprints[order[lo - 1 : hi - 1]]
        differs[lo:hi] = (later != earlier).any(axis=1)
    return order, np.flatnonzero(differs).astype(np.int64)


#: Words from which rows are sorted by the first and their ties by the next ones. Over
#: 1,000,000 fingerprints, a third of them copies: with two words a sort by both took
#: 0.21 s, the first and then the ties 0.28 s; with eight, 0.92 s against 0.79 s.
REFINED_FROM = 3


def sorted_rows(fingerprints: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
    """Return the rows in the order of ``np.lexsort(fingerprints.T[::-1])`` (ties by row).

    Sorted by the first word alone, then the rows whose first word another row shares
    (copies, near-duplicates) by the next word within their run, and so on while some
    are still tied: distinct fingerprints seldom share 64 bits, and a sort by every word
    costs one pass a word (1,000,000 fingerprints of 512 bits: 1.03 s, against 0.36 s).
    A pass reads one word of the rows still tied, not a copy of theirs.

    >>> sorted_rows(np.array([[2, 9], [1, 5], [2, 3], [1, 5]], dtype=np.uint64)).tolist()
    [1, 3, 2, 0]
    """
    if fingerprints.ndim == 1:
        return np.argsort(fingerprints, kind="stable").astype(np.int64, copy=False)
    words = int(fingerprints.shape[1])
    if words < REFINED_FROM:
        return np.lexsort(fingerprints.T[::-1]).astype(np.int64, copy=False)
    first = fingerprints[:, 0]
    order = np.argsort(first, kind="stable").astype(np.int64, copy=False)
    key = first[order]  # the word sorted last, at the positions still tied
    at = np.arange(len(order), dtype=np.int64)  # positions still tied, in order
    tied_before = np.ones(len(order), dtype=bool)  # equal to the one before on every word
    for word in range(1, words):
        same = np.zeros(len(at), dtype=bool)
        same[1:] = (key[1:] == key[:-1]) & (at[1:] == at[:-1] + 1) & tied_before[1:]
        kept = same | np.append(same[1:], False)
        at, tied_before = at[kept], same[kept]
        if not len(at):
            break
        rows = order[at]
        key = fingerprints[:, word].take(rows)
        within = np.lexsort((key, np.cumsum(~tied_before)))  # each run stays in place
        order[at] = rows[within]
        key = key[within]
    return order


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
    # Three arrays of a uint64 per row, worked in place (at ten million rows each is
    # 80 MB): the packed keys, which become the buckets, and the order.
    packed = keys * KEY_MIX
    packed >>= shift
    packed <<= shift
    packed |= np.arange(n, dtype=np.uint64)
    packed.sort()
    order = (packed & np.uint64((1 << row_bits) - 1)).view(np.int64)
    packed >>= shift
    # Runs of two or more: where a position shares its bucket with the next, and did not
    # with the one before (booleans only: most buckets of a wide key have one member).
    same = packed[1:] == packed[:-1]
    before = np.concatenate(([False], same[:-1]))
    starts = np.flatnonzero(same & ~before)
    after = np.concatenate((same[1:], [False]))
    sizes = np.flatnonzero(same & ~after) + 2 - starts
    return order, starts.astype(np.int64), sizes.astype(np.int64)


def table_pairs(
    prints: Prints,
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
    sorted_keys = keys[order]  # read in order below: a gather per row, not two per pair
    del keys  # the caller holds them no more: one array a row while the pairs stream

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
            kept = near(prints, a, b, max_hamming)
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
    prints: Prints,
    a: npt.NDArray[np.int64],
    b: npt.NDArray[np.int64],
    max_hamming: int,
) -> npt.NDArray[np.int64]:
    """Return the positions of the pairs of representatives within ``max_hamming``.

    A block of pairs at a time: both fingerprints of a pair are read whole (a row's words
    share a cache line or two, where reading them word by word fetched each again).
    """
    if prints.words == 1:
        return np.flatnonzero(np.bitwise_count(prints.xor(a, b)[:, 0]) <= max_hamming)
    kept = [np.zeros(0, dtype=np.int64)]
    for lo in range(0, len(a), KEY_BLOCK):
        hi = min(len(a), lo + KEY_BLOCK)
        kept.append(lo + within(prints.xor(a[lo:hi], b[lo:hi]), max_hamming))
    return np.concatenate(kept)


def within(differ: npt.NDArray[np.uint64], limit: int) -> npt.NDArray[np.int64]:
    """Return the rows of ``differ`` (XORs, uint64 (m, words)) with at most ``limit`` bits set.

    Summed a word at a time: a sum along rows is slower.

    >>> within(np.array([[1, 0], [3, 3], [0, 0]], dtype=np.uint64), 2).tolist()
    [0, 2]
    """
    counts = np.bitwise_count(differ)
    distance = counts[:, 0]
    if counts.shape[1] > 1:
        distance = distance.astype(np.int32)
        for w in range(1, counts.shape[1]):
            distance += counts[:, w]
    return np.flatnonzero(distance <= limit)


#: Pieces of pairs a pipelined table may make ahead of its reader when no bound is given.
PIPELINE_PIECES = 4


def bucketed(
    prints: Prints,
    masks: npt.NDArray[np.uint64],
    chunk_pairs: int,
    max_hamming: int | None,
    threads: int,
    ahead_bytes: int | None = None,
    *,
    pipelined: bool = False,
) -> Iterator[Bucketed]:
    """Yield each table's ``(order, starts, sizes, pairs)`` in table order.

    With one thread the pairs are a lazy stream; with more, tables are bucketed in pool
    threads, at most ``2 * threads`` tables ahead, and each streams its pairs to the
    reader holding at most ``ahead_bytes`` of them waiting (None: a whole table): a table
    with many pairs waits for its turn rather than growing.

    ``pipelined`` (one thread, and a second core free): the table is bucketed and its
    pairs made and pre-filtered in a pool thread while the reader takes the pairs made
    before, at most ``ahead_bytes`` of them waiting, and the next table is bucketed only
    once this one's pairs are all made: the memory of one thread, the time of two stages
    overlapped.
    """

    def sorted_table(mask: npt.NDArray[np.uint64]) -> Bucketed:
        keys = prints.keys(mask)
        order, starts, sizes = sorted_buckets(keys)
        found = table_pairs(prints, keys, order, starts, sizes, chunk_pairs, max_hamming)
        return order, starts, sizes, found

    if threads == 1 and not pipelined:
        yield from map(sorted_table, masks)
        return
    if ahead_bytes is not None:
        limit = ahead_bytes
    else:  # a whole table; pipelined, a few pieces (16 bytes a pair)
        limit = PIPELINE_PIECES * chunk_pairs * 16 if pipelined else 1 << 62
    # One thread, pipelined: the table read and the one being bucketed, as without it.
    tables_ahead = 2 * threads if threads > 1 else 1
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
            yield from in_order(start, masks, ahead=tables_ahead)
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
