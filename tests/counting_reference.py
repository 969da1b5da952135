"""The reference term counts, through the slow tokenizer, for tests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from simdup.text.counting import merge
from simdup.text.counts import ChunkCounts, CountMatrix
from simdup.text.tokens import tokenize


def tokenized_counts(
    texts: Sequence[str], stopwords: bool | str, ngram: int, segment: str = "bigrams"
) -> CountMatrix:
    """Return the term counts through the reference :func:`tokenize` (slow; for tests)."""
    parts = []
    for text in texts:
        found = Counter(tokenize(text, stopwords=stopwords, ngram=ngram, segment=segment))
        parts.append(
            ChunkCounts.of(
                list(found),
                np.array([len(found)], dtype=np.int64),
                np.arange(len(found)),
                np.fromiter(found.values(), dtype=np.int64, count=len(found)),
            )
        )
    return merge(parts)
