"""Run one peer near-duplicate tool on the benchmark corpus (inside the peers' venv).

Usage: ``python peers.py TOOL CORPUS.jsonl``. Prints one JSON object: the pairs found (row
numbers of the corpus, ``i < j``), seconds per stage and peak RSS in MiB. Each tool gets
the settings its documentation suggests for near-duplicates: MinHash LSH at Jaccard 0.7
(128 permutations), SimHash with 64 bits and Hamming distance <= 3. Nothing here imports
simdup: the peers run with their own dependencies only.
"""

from __future__ import annotations

import json
import re
import resource
import sys
import time
from collections.abc import Callable

WORD = re.compile(r"\w+")
JACCARD = 0.7
NUM_PERM = 128


def read(path: str) -> list[str]:
    """Return the texts of a JSON Lines corpus, in file order."""
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh]


def words(text: str) -> list[str]:
    """Lower-case word tokens, the usual preprocessing in the peers' examples."""
    return WORD.findall(text.lower())


def gaoya_minhash(texts: list[str], stages: dict[str, float]) -> set[tuple[int, int]]:
    """Gaoya (Rust) MinHash LSH over word tokens, bulk insert and bulk query."""
    from gaoya.minhash import MinHashStringIndex

    clock = time.perf_counter()
    index = MinHashStringIndex(32, JACCARD, 25, 5, None, "word", True, (1, 1))
    index.par_bulk_insert_docs(list(range(len(texts))), texts)
    stages["index"] = time.perf_counter() - clock
    clock = time.perf_counter()
    found = index.par_bulk_query(texts)
    stages["query"] = time.perf_counter() - clock
    return {(min(i, j), max(i, j)) for i, hits in enumerate(found) for j in hits if i != j}


def gaoya_simhash(texts: list[str], stages: dict[str, float]) -> set[tuple[int, int]]:
    """Gaoya (Rust) SimHash, 64 bits, 6 blocks, Hamming distance <= 3."""
    from gaoya.simhash import SimHashStringIndex

    clock = time.perf_counter()
    index = SimHashStringIndex(64, 6, 3, "word", True, (1, 1))
    for i, text in enumerate(texts):
        index.insert_document(i, text)
    stages["index"] = time.perf_counter() - clock
    clock = time.perf_counter()
    found = index.par_bulk_query(texts)
    stages["query"] = time.perf_counter() - clock
    return {(min(i, j), max(i, j)) for i, hits in enumerate(found) for j in hits if i != j}


def rensa_minhash(texts: list[str], stages: dict[str, float]) -> set[tuple[int, int]]:
    """Rensa (Rust) R-MinHash and its LSH index, candidates checked by estimated Jaccard."""
    from rensa import RMinHash, RMinHashLSH

    clock = time.perf_counter()
    hashes = []
    for text in texts:
        m = RMinHash(num_perm=NUM_PERM, seed=42)
        m.update(words(text))
        hashes.append(m)
    stages["minhash"] = time.perf_counter() - clock
    clock = time.perf_counter()
    lsh = RMinHashLSH(threshold=JACCARD, num_perm=NUM_PERM, num_bands=16)
    for i, m in enumerate(hashes):
        lsh.insert(i, m)
    pairs = set()
    for i, m in enumerate(hashes):
        for j in lsh.query(m):
            if j != i and m.jaccard(hashes[j]) >= JACCARD:
                pairs.add((min(i, j), max(i, j)))
    stages["lsh"] = time.perf_counter() - clock
    return pairs


def datasketch_minhash(texts: list[str], stages: dict[str, float]) -> set[tuple[int, int]]:
    """Datasketch MinHash (batch update) and MinHashLSH at the Jaccard threshold."""
    from datasketch import MinHash, MinHashLSH

    clock = time.perf_counter()
    hashes = []
    for text in texts:
        m = MinHash(num_perm=NUM_PERM)
        m.update_batch([w.encode("utf-8") for w in set(words(text))])
        hashes.append(m)
    stages["minhash"] = time.perf_counter() - clock
    clock = time.perf_counter()
    lsh = MinHashLSH(threshold=JACCARD, num_perm=NUM_PERM)
    for i, m in enumerate(hashes):
        lsh.insert(i, m)
    pairs = set()
    for i, m in enumerate(hashes):
        for j in lsh.query(m):
            if j != i:
                pairs.add((min(i, j), max(i, j)))
    stages["lsh"] = time.perf_counter() - clock
    return pairs


def simhash_pybind(texts: list[str], stages: dict[str, float]) -> set[tuple[int, int]]:
    """simhash-pybind (C++, the simhash-py API): 64-bit SimHash, 6 blocks, distance <= 3."""
    import simhash

    clock = time.perf_counter()
    values = [
        simhash.compute([simhash.unsigned_hash(w.encode("utf-8")) for w in words(text)])
        for text in texts
    ]
    stages["fingerprint"] = time.perf_counter() - clock
    clock = time.perf_counter()
    rows: dict[int, list[int]] = {}
    for i, v in enumerate(values):
        rows.setdefault(v, []).append(i)
    pairs = set()
    for a, b in simhash.find_all(set(values), 6, 3):
        for i in rows[a]:
            for j in rows[b]:
                if i != j:
                    pairs.add((min(i, j), max(i, j)))
    for members in rows.values():
        for x, i in enumerate(members):
            for j in members[x + 1 :]:
                pairs.add((i, j))
    stages["find_all"] = time.perf_counter() - clock
    return pairs


def simhash_1e0ng(texts: list[str], stages: dict[str, float]) -> set[tuple[int, int]]:
    """Simhash (1e0ng, pure Python): Simhash of word tokens, SimhashIndex with k = 3."""
    from simhash import Simhash, SimhashIndex

    clock = time.perf_counter()
    values = [Simhash(words(text)) for text in texts]
    stages["fingerprint"] = time.perf_counter() - clock
    clock = time.perf_counter()
    index = SimhashIndex([(str(i), v) for i, v in enumerate(values)], k=3)
    pairs = set()
    for i, v in enumerate(values):
        for j in index.get_near_dups(v):
            j = int(j)
            if j != i:
                pairs.add((min(i, j), max(i, j)))
    stages["index"] = time.perf_counter() - clock
    return pairs


TOOLS: dict[str, Callable[[list[str], dict[str, float]], set[tuple[int, int]]]] = {
    "gaoya-minhash": gaoya_minhash,
    "gaoya-simhash": gaoya_simhash,
    "rensa": rensa_minhash,
    "datasketch": datasketch_minhash,
    "simhash-pybind": simhash_pybind,
    "simhash": simhash_1e0ng,
}


def main() -> None:
    """Run the named tool and print its result as JSON."""
    tool, corpus = sys.argv[1], sys.argv[2]
    stages: dict[str, float] = {}
    start = time.perf_counter()
    texts = read(corpus)
    stages["read"] = time.perf_counter() - start
    pairs = TOOLS[tool](texts, stages)
    total = time.perf_counter() - start
    rss = max(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    )
    json.dump(
        {"pairs": sorted(pairs), "seconds": {**stages, "total": total}, "rss_mb": rss / 1024},
        sys.stdout,
    )


if __name__ == "__main__":
    main()
