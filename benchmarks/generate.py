"""Build a deterministic benchmark corpus with planted near-duplicates.

The corpus imitates English prose closely enough that blocking meets the same problems it
meets on real text: word frequencies follow Zipf's law (rank ``r`` has frequency about
``1 / r``), the most frequent ranks are the function words of real English (``the``,
``of``, ``and`` ...), and every document also leans towards one of a few hundred topics, so
unrelated documents share their common content words the way real documents do.

Planted pairs: a fraction of the documents are copies of other documents, either exact or
with word edits at a known rate (1%, 5%, 10%, 20% of the words each substituted, deleted
or followed by an inserted word). Every copy has its own original, so the truth is a list
of (original, copy, kind) rows. Document names are shuffled so copies are not neighbours.

Output (under ``--out``, default ``benchmarks/data``):

* ``corpus-N.jsonl``: one ``{"id": name, "text": text}`` object per line, sorted by id.
* ``truth-N.tsv``: ``a<TAB>b<TAB>kind`` per planted pair, kind ``exact`` or ``edit-0.05`` ...

**The hard corpus** (``--hard``): the function words are replaced by pseudo-words that no
stop list removes, and the Zipf law is steeper, so every document shares a heavy head of
frequent words, as non-English text under an English stop list, source code, logs or
templated pages do. Two unrelated documents then have a TF cosine of about 0.7 after stop
words are removed, and the pairs to find sit only a little above that background. 10% of
the documents are copies (exact, or with 5%, 10% or 20% of their words edited). Files:
``corpus-hard-N.jsonl`` and ``truth-hard-N.tsv``.

**The heavy-background family** (``--family``, or ``--shape NAME`` for one member): corpora
whose words are drawn from a plain Zipf law over a vocabulary of pseudo-words that no
stop-word list of any language holds (the shape of source code, logs, or a language without
a stop list), with no topics: every document shares the vocabulary's heavy head. Each
member (:data:`FAMILY`) fixes the Zipf exponent (0.8 to 1.2), the vocabulary (10,000 to
200,000 words) and the document length (50 to 2,000 words); 10% of the documents are copies
(exact, or with 1%, 5%, 10% or 20% of their words edited). Files:
``corpus-NAME-N.jsonl`` and ``truth-NAME-N.tsv``; members of long documents are written
with fewer documents (:func:`family_docs`).

**Corpora larger than memory** (``--shards K``): ``K`` corpora of ``--docs`` documents each,
written one after the other into one file of ``K * docs`` documents (``corpus-M.jsonl``,
``M = K * docs``). The shards share the vocabulary; each draws its documents, copies and
names from its own generator, and its names start with the shard's number (``s03-doc-...``),
so the file stays sorted by id and only one shard is held in memory at a time. A shard's
copies are of its own documents.

Usage: ``python benchmarks/generate.py --docs 100000`` (``--hard``, ``--family``,
``--shape z1-v50k-w200``, ``--shards 10``). The same options always give byte-identical
files.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

#: Edit rates of the planted near-duplicates, and the share of the corpus each one takes.
EDIT_RATES: tuple[float, ...] = (0.01, 0.05, 0.10, 0.20)
SHARE_PER_RATE = 0.05
#: Share of the corpus that are exact copies of another document.
SHARE_EXACT = 0.05

#: The most frequent English words, in rough frequency order (ranks 1..n of the Zipf law).
FUNCTION_WORDS = [
    "the",
    "of",
    "and",
    "to",
    "a",
    "in",
    "is",
    "that",
    "for",
    "it",
    "as",
    "was",
    "with",
    "be",
    "by",
    "on",
    "not",
    "he",
    "i",
    "this",
    "are",
    "or",
    "his",
    "from",
    "at",
    "which",
    "but",
    "have",
    "an",
    "had",
    "they",
    "you",
    "were",
    "their",
    "one",
    "all",
    "we",
    "can",
    "her",
    "has",
    "there",
    "been",
    "if",
    "more",
    "when",
    "will",
    "would",
    "who",
    "so",
    "no",
    "she",
    "other",
    "its",
    "may",
    "these",
    "about",
    "than",
    "into",
    "only",
    "some",
    "could",
    "them",
    "what",
    "out",
    "any",
    "then",
    "time",
    "two",
    "do",
    "first",
    "also",
    "new",
    "very",
    "our",
    "most",
    "over",
    "such",
    "after",
    "even",
    "made",
    "many",
    "my",
    "well",
    "back",
    "where",
    "much",
    "your",
    "way",
    "should",
    "because",
    "each",
    "just",
    "those",
    "people",
    "how",
    "too",
    "little",
    "state",
    "good",
    "me",
    "make",
    "world",
    "still",
    "own",
    "see",
    "men",
    "work",
    "long",
    "get",
    "here",
    "between",
    "both",
    "life",
    "being",
    "under",
    "never",
    "day",
    "same",
    "another",
    "know",
    "while",
    "last",
    "might",
    "us",
    "great",
    "old",
    "year",
    "off",
    "come",
    "since",
    "against",
    "go",
    "came",
    "right",
    "used",
    "take",
    "three",
]

CONTENT_WORDS = 40_000

#: The hard corpus: edit rates and shares of its copies, and its steeper Zipf law
#: (calibrated: unrelated documents at a median TF cosine of about 0.7 without stop words).
HARD_EDIT_RATES: tuple[float, ...] = (0.05, 0.10, 0.20)
HARD_SHARE_PER_RATE = 0.025
HARD_SHARE_EXACT = 0.025
HARD_EXPONENT = 1.16
TOPICS = 300
TOPIC_WORDS = 400
TOPIC_SHARE = 0.3
ZIPF_EXPONENT = 1.0
MEAN_WORDS = 200

_ONSETS = [
    "b",
    "c",
    "d",
    "f",
    "g",
    "h",
    "j",
    "k",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "t",
    "v",
    "w",
    "z",
    "br",
    "ch",
    "cl",
    "cr",
    "dr",
    "fl",
    "gr",
    "pl",
    "pr",
    "sh",
    "st",
    "th",
    "tr",
]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "ee", "oa", "ou", "io"]
_CODAS = ["", "", "n", "r", "s", "t", "l", "nd", "st", "ng", "rk", "m"]


def content_vocabulary(
    count: int, rng: np.random.Generator, avoid: frozenset[str] = frozenset()
) -> list[str]:
    """Return ``count`` distinct pronounceable pseudo-words, shortest first."""
    words: list[str] = []
    seen = set(FUNCTION_WORDS) | set(avoid)
    while len(words) < count:
        syllables = int(rng.choice([1, 1, 2, 2, 2, 3]))
        parts = [
            _ONSETS[int(rng.integers(len(_ONSETS)))]
            + _VOWELS[int(rng.integers(len(_VOWELS)))]
            + _CODAS[int(rng.integers(len(_CODAS)))]
            for _ in range(syllables)
        ]
        word = "".join(parts)
        if word not in seen:
            seen.add(word)
            words.append(word)
    # Frequent words are short in every language (Zipf's law of abbreviation).
    return sorted(words, key=len)


def zipf_cdf(size: int, exponent: float) -> npt.NDArray[np.float64]:
    """Return the cumulative distribution of a Zipf law over ranks 1..size."""
    weights = 1.0 / np.arange(1, size + 1, dtype=np.float64) ** exponent
    cdf = np.cumsum(weights)
    return np.asarray(cdf / cdf[-1], dtype=np.float64)


@dataclass
class Vocabulary:
    """Word strings and the samplers over their ids."""

    words: list[str]
    cdf: npt.NDArray[np.float64]
    topics: npt.NDArray[np.int64]  # (TOPICS, TOPIC_WORDS) word ids
    topic_cdf: npt.NDArray[np.float64]

    def sample(self, rng: np.random.Generator, count: int) -> npt.NDArray[np.int64]:
        """Draw ``count`` word ids from the corpus-wide Zipf law."""
        return np.searchsorted(self.cdf, rng.random(count), side="right").astype(np.int64)


def build_vocabulary(rng: np.random.Generator, hard: bool = False) -> Vocabulary:
    """Return function words followed by content words, with topic word lists.

    ``hard``: pseudo-words (none of them a stop word) instead of the function words, and
    a steeper Zipf law: a heavy head of frequent words that stop-word removal keeps.
    """
    if hard:
        from simdup.text.tokens import stopword_set

        head = content_vocabulary(len(FUNCTION_WORDS), rng, frozenset(stopword_set(True)))
        words = head + content_vocabulary(CONTENT_WORDS, rng, frozenset(head))
    else:
        words = list(FUNCTION_WORDS) + content_vocabulary(CONTENT_WORDS, rng)
    first_content = len(FUNCTION_WORDS)
    # Topics draw from mid-frequency content words (ranks 200..20000), each its own set.
    topics = rng.integers(first_content + 200, first_content + 20_000, (TOPICS, TOPIC_WORDS))
    return Vocabulary(
        words,
        zipf_cdf(len(words), HARD_EXPONENT if hard else ZIPF_EXPONENT),
        topics.astype(np.int64),
        zipf_cdf(TOPIC_WORDS, ZIPF_EXPONENT),
    )


def document_ids(vocab: Vocabulary, rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """Return the word ids of one fresh document."""
    length = int(np.clip(rng.normal(MEAN_WORDS, MEAN_WORDS / 4), 20, 4 * MEAN_WORDS))
    ids = vocab.sample(rng, length)
    topic = int(rng.integers(TOPICS))
    from_topic = rng.random(length) < TOPIC_SHARE
    picks = np.searchsorted(vocab.topic_cdf, rng.random(int(from_topic.sum())), side="right")
    ids[from_topic] = vocab.topics[topic, picks]
    return ids


def edited(
    ids: npt.NDArray[np.int64], rate: float, vocab: Vocabulary, rng: np.random.Generator
) -> npt.NDArray[np.int64]:
    """Return a copy of ``ids`` with about ``rate`` of the words edited.

    Each edited word is substituted (half of the edits), deleted or followed by an inserted
    word (a quarter each); replacement words come from the corpus-wide Zipf law.
    """
    n = len(ids)
    roll = rng.random(n)
    kind = rng.random(n)
    out = ids.copy()
    substitute = (roll < rate) & (kind < 0.5)
    out[substitute] = vocab.sample(rng, int(substitute.sum()))
    delete = (roll < rate) & (kind >= 0.5) & (kind < 0.75)
    insert = (roll < rate) & (kind >= 0.75)
    repeats = np.where(delete, 0, np.where(insert, 2, 1))
    out = np.repeat(out, repeats)
    # The second of each inserted pair becomes a new word.
    inserted_at = np.cumsum(repeats)[insert] - 1
    out[inserted_at] = vocab.sample(rng, len(inserted_at))
    return out if len(out) else ids[:1].copy()


def render(ids: npt.NDArray[np.int64], vocab: Vocabulary, rng: np.random.Generator) -> str:
    """Return word ids as prose: sentences of 8 to 24 words, capitalised, with stops."""
    words = [vocab.words[i] for i in ids.tolist()]
    out: list[str] = []
    at = 0
    while at < len(words):
        length = int(rng.integers(8, 25))
        sentence = words[at : at + length]
        sentence[0] = sentence[0].capitalize()
        if len(sentence) > 10:
            sentence[len(sentence) // 2] += ","
        out.append(" ".join(sentence) + ".")
        at += length
    return " ".join(out)


def generate(
    docs: int, seed: int = 20260101, hard: bool = False, shard: int | None = None
) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    """Return ``(documents, truth)``: (name, text) rows sorted by name, planted pairs.

    ``shard``: draw the documents from that shard's own generator (the vocabulary is the
    seed's either way).
    """
    rng = np.random.default_rng(seed)
    vocab = build_vocabulary(rng, hard)
    if shard is not None:
        rng = np.random.default_rng([seed, shard])
    rates = HARD_EDIT_RATES if hard else EDIT_RATES
    per_rate = int(docs * (HARD_SHARE_PER_RATE if hard else SHARE_PER_RATE))
    exact = int(docs * (HARD_SHARE_EXACT if hard else SHARE_EXACT))
    copies = per_rate * len(rates) + exact
    originals = docs - copies
    if originals < copies:
        raise SystemExit(f"--docs {docs} is too small to plant {copies} copies")
    ids = [document_ids(vocab, rng) for _ in range(originals)]
    kinds: list[str] = []
    for rate in rates:
        kinds += [f"edit-{rate:.2f}"] * per_rate
    kinds += ["exact"] * exact
    return with_copies(ids, kinds, vocab, rng)


def with_copies(
    ids: list[npt.NDArray[np.int64]],
    kinds: list[str],
    vocab: Vocabulary,
    rng: np.random.Generator,
) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    """Render the original documents and a copy of one of them per kind; name them all.

    A kind is ``exact`` or ``edit-RATE``. Returns ``(documents, truth)`` as :func:`generate`.
    """
    originals = len(ids)
    texts = [render(x, vocab, rng) for x in ids]
    sources = rng.choice(originals, size=len(kinds), replace=False)
    pairs: list[tuple[int, int, str]] = []
    for k, (source, kind) in enumerate(zip(sources.tolist(), kinds, strict=True)):
        if kind == "exact":
            texts.append(texts[source])
        else:
            rate = float(kind.split("-")[1])
            texts.append(render(edited(ids[source], rate, vocab, rng), vocab, rng))
        pairs.append((source, originals + k, kind))
    docs = len(texts)
    width = len(str(docs))
    names = [f"doc-{i:0{width}d}" for i in rng.permutation(docs).tolist()]
    documents = sorted(zip(names, texts, strict=True))
    truth = sorted((min(names[a], names[b]), max(names[a], names[b]), kind) for a, b, kind in pairs)
    return documents, truth


@dataclass(frozen=True)
class Shape:
    """One member of the heavy-background family.

    Attributes:
        exponent: Of the Zipf law over the vocabulary's ranks.
        vocabulary: Words in the vocabulary.
        words: Mean words per document (each document draws its length from half to
            one and a half times it; ``wide``: from 50 to 2,000, evenly on a log scale).
        wide: Lengths spread over the whole range of the family.
    """

    exponent: float
    vocabulary: int
    words: int
    wide: bool = False

    @property
    def name(self) -> str:
        """Return the member's name, e.g. ``z1-v50k-w200``."""
        return f"z{self.exponent:g}-v{self.vocabulary // 1000}k-w{self.words}" + (
            "-wide" if self.wide else ""
        )

    def length(self, rng: np.random.Generator) -> int:
        """Draw one document's length in words."""
        if self.wide:
            return int(math.exp(rng.uniform(math.log(50), math.log(2000))))
        return max(1, int(self.words * rng.uniform(0.5, 1.5)))


#: The family: every exponent, vocabulary and length of the ranges, in combinations whose
#: unrelated documents sit at median TF cosines of 0.3 to 0.77 (measured on 400 documents
#: each; a steeper law or longer documents put most pairs above 0.9).
FAMILY: tuple[Shape, ...] = (
    Shape(1.0, 50_000, 200),  # unrelated documents at 0.72: the shape of the hard corpus
    Shape(0.8, 10_000, 500),  # 0.59
    Shape(0.8, 200_000, 2000),  # 0.60, long documents
    Shape(1.0, 10_000, 50),  # 0.45, short documents
    Shape(1.0, 200_000, 100),  # 0.5
    Shape(1.2, 200_000, 50),  # 0.74, the steepest law
    Shape(1.2, 10_000, 50),  # 0.77, the heaviest head
    Shape(0.8, 100_000, 300, wide=True),  # lengths 50 to 2,000: 0.04 to 0.65
)

#: Edit rates of the family's copies; each rate, and exact copies, take this share.
FAMILY_EDIT_RATES: tuple[float, ...] = (0.01, 0.05, 0.10, 0.20)
FAMILY_SHARE = 0.02

#: Words a family corpus holds at most (members of long documents have fewer documents).
FAMILY_WORDS = 10_000_000


def family_docs(shape: Shape, docs: int) -> int:
    """Return the documents a member's corpus holds when ``docs`` are asked for."""
    mean = 700 if shape.wide else shape.words
    return min(docs, FAMILY_WORDS // mean // 1000 * 1000)


def shape_named(name: str) -> Shape:
    """Return the member of :data:`FAMILY` called ``name``."""
    for shape in FAMILY:
        if shape.name == name:
            return shape
    raise SystemExit(f"no shape {name!r}; the family: {', '.join(s.name for s in FAMILY)}")


@functools.cache
def _unlisted() -> frozenset[str]:
    """Return every word of every stop-word list simdup has (pseudo-words avoid them)."""
    from simdup.params import LANGUAGES
    from simdup.text.languages import stopword_list

    return frozenset().union(*(stopword_list(code) for code in LANGUAGES))


def heavy_generate(
    docs: int, shape: Shape, seed: int = 20260101
) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    """Return ``(documents, truth)`` of a family member, as :func:`generate` does."""
    rng = np.random.default_rng([seed, int(shape.exponent * 100), shape.vocabulary, shape.words])
    words = content_vocabulary(shape.vocabulary, rng, _unlisted())
    none = np.zeros((0, 0), dtype=np.int64)
    vocab = Vocabulary(words, zipf_cdf(len(words), shape.exponent), none, np.ones(1))
    per_rate = int(docs * FAMILY_SHARE)
    kinds = [f"edit-{rate:.2f}" for rate in FAMILY_EDIT_RATES for _ in range(per_rate)]
    kinds += ["exact"] * per_rate
    ids = [vocab.sample(rng, shape.length(rng)) for _ in range(docs - len(kinds))]
    return with_copies(ids, kinds, vocab, rng)


def write(
    docs: int,
    out: Path,
    seed: int = 20260101,
    hard: bool = False,
    shape: Shape | None = None,
    shards: int = 1,
) -> tuple[Path, Path]:
    """Generate the corpus and write it (skipped when both files already exist).

    ``shape``: a member of the heavy-background family (``docs`` as :func:`family_docs`).
    ``shards`` > 1: that many corpora of ``docs`` documents, one after the other.
    """
    out.mkdir(parents=True, exist_ok=True)
    if shape is not None:
        docs = family_docs(shape, docs)
    kind = f"{shape.name}-" if shape is not None else "hard-" if hard else ""
    corpus = out / f"corpus-{kind}{docs * shards}.jsonl"
    truth_path = out / f"truth-{kind}{docs * shards}.tsv"
    if corpus.exists() and truth_path.exists():
        return corpus, truth_path
    tmp, tmp_truth = corpus.with_suffix(".tmp"), truth_path.with_suffix(".tmp")
    width = len(str(shards - 1))
    with tmp.open("w", encoding="utf-8") as fh, tmp_truth.open("w", encoding="utf-8") as th:
        for k in range(shards):
            shard = None if shards == 1 else k
            prefix = "" if shard is None else f"s{k:0{width}d}-"
            documents, truth = (
                generate(docs, seed, hard, shard)
                if shape is None
                else heavy_generate(docs, shape, seed)
            )
            for name, text in documents:
                fh.write(json.dumps({"id": prefix + name, "text": text}) + "\n")
            th.write("".join(f"{prefix}{a}\t{prefix}{b}\t{what}\n" for a, b, what in truth))
            del documents, truth
    tmp.replace(corpus)
    tmp_truth.replace(truth_path)
    return corpus, truth_path


def main() -> None:
    """Parse the command line and write the corpus."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "data")
    parser.add_argument(
        "--hard", action="store_true", help="a heavy shared head of words no stop list removes"
    )
    parser.add_argument("--family", action="store_true", help="every heavy-background shape")
    parser.add_argument("--shape", help="one heavy-background shape, e.g. z1-v50k-w200")
    parser.add_argument(
        "--shards", type=int, default=1, help="write this many corpora of --docs into one file"
    )
    args = parser.parse_args()
    if args.shards > 1 and (args.family or args.shape):
        parser.error("--shards is for the default and --hard corpora")
    shapes: list[Shape | None] = [None]
    if args.family:
        shapes = list(FAMILY)
    elif args.shape:
        shapes = [shape_named(args.shape)]
    for shape in shapes:
        corpus, truth = write(args.docs, args.out, args.seed, args.hard, shape, args.shards)
        print(f"{corpus} ({corpus.stat().st_size / 1e6:.1f} MB), {truth}")


if __name__ == "__main__":
    main()
