"""Noise-word lists of many languages and the per-document language guess."""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from counting_reference import tokenized_counts
from hypothesis import given, settings
from hypothesis import strategies as st

from simdup.errors import ParameterError
from simdup.params import LANGUAGES, parse_setting
from simdup.text import languages
from simdup.text.counting import count_chunk, merge
from simdup.text.counts import ChunkCounts
from simdup.text.languages import (
    MIN_EVIDENCE,
    cut_entry,
    drop_guessed_noise,
    drop_noise,
    english_evidence,
    guess_language,
    lists_digest,
    removal,
    removed_words,
    stopword_list,
)
from simdup.text.normalize import MAX_TOKEN_LENGTH, normalize
from simdup.text.stopwords import ENGLISH
from simdup.text.tokens import text_words, words

SAMPLES = Path(__file__).parent / "data" / "languages"
SAMPLE_LANGUAGES = sorted(p.stem for p in SAMPLES.glob("*.txt"))


def sample(code: str) -> str:
    return (SAMPLES / f"{code}.txt").read_text(encoding="utf-8")


def clear_caches() -> None:
    # _raw_lists may be replaced by a plain function while a test runs.
    for name in (
        "_raw_lists",
        "stopword_list",
        "_word_masks",
        "_table",
        "english_evidence",
        "lists_digest",
    ):
        clear = getattr(getattr(languages, name), "cache_clear", None)
        if clear is not None:
            clear()


@pytest.fixture
def fresh_lists() -> Iterator[None]:
    clear_caches()
    yield
    clear_caches()


def test_samples_cover_at_least_six_languages_besides_english() -> None:
    assert len(set(SAMPLE_LANGUAGES) - {"en"}) >= 6


@pytest.mark.parametrize("code", SAMPLE_LANGUAGES)
def test_each_sample_is_guessed_as_its_language(code: str) -> None:
    assert guess_language(Counter(text_words(sample(code)))) == code


@pytest.mark.parametrize("code", ["en", "zh", "es", "de", "fr", "ja", "ru", "pt", "it", "nl"])
def test_languages_with_the_most_text_have_lists(code: str) -> None:
    assert code in LANGUAGES
    assert len(stopword_list(code)) >= 100


@pytest.mark.parametrize("code", ["pl", "tr", "ar", "ko"])
def test_more_languages_have_lists(code: str) -> None:
    assert len(stopword_list(code)) >= 100


def test_english_keeps_the_glasgow_list() -> None:
    assert stopword_list("en") is ENGLISH


@pytest.mark.parametrize("code", LANGUAGES)
def test_lists_are_in_the_form_tokens_take(code: str) -> None:
    for word in stopword_list(code):
        assert word == normalize(word)
        assert cut_entry(word) == [word]
        assert not word.isdecimal()


def test_lists_match_text_whatever_its_case_and_width() -> None:
    assert "über" in stopword_list("de")
    assert guess_language(Counter(text_words("ÜBER DER BRÜCKE UND DIE STADT IST"))) == "de"


@given(st.text(alphabet=st.characters(categories=["L", "M", "Zs", "P"]), max_size=60))
@settings(max_examples=200)
def test_entries_are_cut_like_spaced_text(text: str) -> None:
    spaced = "".join(c for c in text if not languages._UNSPACED_RE.match(c))
    assert cut_entry(spaced) == words(normalize(spaced))


def test_few_noise_words_are_not_enough_to_leave_english() -> None:
    german = ["der", "und", "nicht", "ist", "wird"]
    evidence = MIN_EVIDENCE - 1
    assert guess_language(Counter({w: 5 for w in german[:evidence]} | {"hund": 1})) == "en"
    assert guess_language(Counter({w: 1 for w in german[: MIN_EVIDENCE + 1]})) == "de"


def test_english_words_are_no_evidence_for_other_languages() -> None:
    # "in", "so", "an", "was" are German noise words, and English ones too.
    assert guess_language(Counter({"in": 3, "so": 2, "an": 2, "was": 2, "kernel": 4})) == "en"


def test_ties_go_to_the_language_listed_first() -> None:
    masks = languages._word_masks()
    de, nl = 1 << LANGUAGES.index("de"), 1 << LANGUAGES.index("nl")
    only_de = sorted(w for w, (_, e) in masks.items() if e == de)[:3]
    only_nl = sorted(w for w, (_, e) in masks.items() if e == nl)[:3]
    counts = Counter(only_de + only_nl)
    assert guess_language(counts) == "de"
    assert guess_language(Counter(only_nl + only_de)) == "de"  # order of words is irrelevant


def test_parse_setting_spellings() -> None:
    assert parse_setting("auto").auto
    assert parse_setting(" AUTO ").name == "auto"
    assert parse_setting(True).languages == ("en",)
    assert parse_setting(False).languages == ()
    assert parse_setting("none").name is False
    assert parse_setting("fr, de,fr").name == "de,fr"
    assert not parse_setting("en").uses_data_package()
    assert parse_setting("en,de").uses_data_package()


@pytest.mark.parametrize("value", ["xx", "de,klingon", 3])
def test_parse_setting_refuses_unknown_lists(value: object) -> None:
    with pytest.raises(ParameterError, match="auto"):
        parse_setting(value)  # type: ignore[arg-type]


Chunk = tuple[list[str], "npt.NDArray[np.int64]", "npt.NDArray[np.int64]", "npt.NDArray[np.int64]"]


def chunk_of(texts: list[str]) -> tuple[Chunk, list[Counter[str]]]:
    """Return a chunk's vocabulary, lengths, ids and counts, and the per-document counters."""
    vocab: dict[str, int] = {}
    lengths: list[int] = []
    ids: list[int] = []
    counts: list[int] = []
    counters: list[Counter[str]] = []
    for text in texts:
        found = Counter(text_words(text))
        counters.append(found)
        lengths.append(len(found))
        ids.extend(vocab.setdefault(w, len(vocab)) for w in found)
        counts.extend(found.values())
    chunk: Chunk = (
        list(vocab),
        np.array(lengths, dtype=np.int64),
        np.array(ids, dtype=np.int64),
        np.array(counts, dtype=np.int64),
    )
    return chunk, counters


def check_removal(texts: list[str], setting_name: str) -> None:
    setting = parse_setting(setting_name)
    chunk, counters = chunk_of(texts)
    result = removal(setting, *chunk)
    at = 0
    for row, found in enumerate(counters):
        language = LANGUAGES[result.languages[row]] if setting.auto else None
        if setting.auto:
            assert language == guess_language(found)
        stop = removed_words(setting, language)
        expected = [w not in stop for w in found]
        assert result.keep[at : at + len(found)].tolist() == expected
        assert result.removed[row] == sum(c for w, c in found.items() if w in stop)
        at += len(found)
    assert at == len(result.keep)


@pytest.mark.parametrize("setting_name", ["auto", "de,fr", "en", "none"])
def test_chunk_removal_equals_the_per_document_rule(setting_name: str) -> None:
    texts = [sample(code) for code in SAMPLE_LANGUAGES] + ["", "der die und", "42 x"]
    check_removal(texts, setting_name)


_WORDS = sorted(
    {w for code in ("en", "de", "fr", "es", "zh") for w in sorted(stopword_list(code))[:40]}
    | {"hund", "chat", "gato", "kernel", "文本"}
)


@given(st.lists(st.lists(st.sampled_from(_WORDS), max_size=30), max_size=8))
@settings(max_examples=60, deadline=None)
def test_chunk_removal_equals_the_per_document_rule_on_any_chunk(docs: list[list[str]]) -> None:
    check_removal([" ".join(d) for d in docs], "auto")


def test_auto_removes_the_guessed_list_plus_english() -> None:
    text = sample("de") + " the and of"
    setting = parse_setting("auto")
    chunk, counters = chunk_of([text])
    result = removal(setting, *chunk)
    kept = {w for w, k in zip(counters[0], result.keep.tolist(), strict=True) if k}
    assert LANGUAGES[result.languages[0]] == "de"
    assert {"der", "und", "the", "and", "of"}.isdisjoint(kept)
    assert {"fingerabdruck", "dokuments", "bits"} <= kept


def test_digest_is_stable_and_follows_the_data(
    fresh_lists: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = lists_digest()
    assert before == lists_digest(LANGUAGES)
    assert lists_digest(("de",)) != before
    data = json.loads(json.dumps(languages._raw_lists()))
    data["de"] = [*data["de"], "fingerabdruck"]
    clear_caches()
    monkeypatch.setattr(languages, "_raw_lists", lambda: data)
    assert "fingerabdruck" in stopword_list("de")
    assert lists_digest() != before


def test_data_version_names_the_installed_package() -> None:
    assert languages.data_version()[0].isdigit()


def test_drop_noise_renumbers_in_order_of_first_kept_occurrence() -> None:
    # "die" is removed from a German document but kept in the English one after it
    # ("der hund und die katze sind nicht hier", "die hard is a film").
    vocab = ["der", "hund", "und", "die", "katze", "sind", "nicht", "hier", "hard", "film"]
    ids = np.array([0, 1, 2, 3, 4, 5, 6, 7, 3, 8, 9], dtype=np.int64)
    counts = ChunkCounts.of(vocab, np.array([8, 3]), ids, np.ones(len(ids), dtype=np.int64))
    kept, found = drop_noise(counts, parse_setting("auto"))
    assert [LANGUAGES[i] for i in found.languages] == ["de", "en"]
    assert kept.vocabulary == ["hund", "katze", "die", "hard", "film"]
    assert kept.ids.tolist() == [0, 1, 2, 3, 4]
    assert kept.lengths.tolist() == [2, 3]
    # Ids not numbered by first occurrence take the general path, with the same result.
    shuffled = ChunkCounts.of(vocab[::-1], np.array([8, 3]), 9 - ids, counts.counts)
    again, _ = drop_noise(shuffled, parse_setting("auto"))
    assert again.vocabulary == kept.vocabulary
    assert again.ids.tolist() == kept.ids.tolist()


def test_normalisation_and_token_length_are_the_tokenizers() -> None:
    assert cut_entry("x" * (MAX_TOKEN_LENGTH + 5)) == words("x" * MAX_TOKEN_LENGTH)
    for text in ("\uff33\uff34\u1e9e \ufb01ne", "\u01c4 \u00df \u03c2 \u0130", "\uff21"):
        assert cut_entry(text) == words(normalize(text))


@functools.cache
def evidence_words(code: str) -> frozenset[str]:
    """The words that count for ``code``, straight from the rule the module states."""
    listed = stopword_list(code) if code == "en" else stopword_list(code) - ENGLISH
    return frozenset(w for w in listed if len(w) > 1 or languages._UNSPACED_RE.match(w))


def reference_guess(counts: Mapping[str, int]) -> str:
    """The guess done the plain way: every language's tokens and words, one by one."""
    tokens = {c: sum(n for w, n in counts.items() if w in evidence_words(c)) for c in LANGUAGES}
    best = max(LANGUAGES, key=tokens.__getitem__)  # max keeps the first of equal ones
    distinct = sum(1 for w in counts if w in evidence_words(best))
    return best if distinct >= MIN_EVIDENCE else "en"


#: Noise words of languages that share many of them, single letters and content words.
_MIXED = sorted(
    {
        w
        for code in ("en", "de", "fr", "es", "nl", "it", "pt", "sv", "ro", "tl", "zh")
        for w in sorted(stopword_list(code))[::15][:25]
    }
    | {"a", "i", "x", "die", "in", "was", "hund", "chat", "kernel", "fingerprint", "文本"}
)

#: Words that count for one language only, a few per language: close contests are frequent.
_ONLY = {
    code: sorted(
        w
        for w, (_, evidence) in languages._word_masks().items()
        if evidence == 1 << LANGUAGES.index(code) and w.isascii()
    )[:5]
    for code in ("en", "de", "fr", "nl")
}
_SINGLE = sorted(w for words in _ONLY.values() for w in words)

DOCUMENTS = st.lists(
    st.dictionaries(st.sampled_from(_MIXED), st.integers(1, 6), max_size=25)
    | st.dictionaries(st.sampled_from(_SINGLE), st.integers(1, 3), max_size=10),
    max_size=8,
)


def chunk_of_counts(docs: list[dict[str, int]], skip: frozenset[str]) -> ChunkCounts:
    """Return the counts of documents given as word counts, without the words of ``skip``."""
    vocab: dict[str, int] = {}
    kept = [{w: n for w, n in d.items() if w not in skip} for d in docs]
    ids = [vocab.setdefault(w, len(vocab)) for d in kept for w in d]
    return ChunkCounts.of(
        list(vocab),
        np.array([len(d) for d in kept], dtype=np.int64),
        np.array(ids, dtype=np.int64),
        np.array([n for d in kept for n in d.values()], dtype=np.int64),
    )


def same_counts(got: ChunkCounts, want: ChunkCounts) -> None:
    assert got.vocabulary == want.vocabulary
    assert got.lengths.tolist() == want.lengths.tolist()
    assert got.ids.tolist() == want.ids.tolist()
    assert got.counts.tolist() == want.counts.tolist()


@given(DOCUMENTS)
@settings(max_examples=150, deadline=None)
def test_guess_equals_the_plain_rule_on_mixed_noise_words(docs: list[dict[str, int]]) -> None:
    want = [reference_guess(d) for d in docs]
    assert [guess_language(d) for d in docs] == want
    counts = chunk_of_counts(docs, frozenset())
    _, found = drop_noise(counts, parse_setting("auto"))
    assert [LANGUAGES[i] for i in found.languages] == want


def test_guess_equals_the_plain_rule_around_every_boundary() -> None:
    # English against German and Dutch, token counts and distinct words on either side
    # of a tie and of the evidence threshold, in one chunk.
    en, de, nl = _ONLY["en"], _ONLY["de"], _ONLY["nl"]
    assert reference_guess(dict.fromkeys(de[:3], 1)) == "de"
    docs = [
        {w: 1 for w in en[:english]} | {w: repeat for w in de[:german]} | dict.fromkeys(nl[:3], 1)
        for english in range(5)
        for german in range(5)
        for repeat in (1, 2)
    ]
    want = [reference_guess(d) for d in docs]
    assert set(want) == {"en", "de", "nl"}
    _, found = drop_noise(chunk_of_counts(docs, frozenset()), parse_setting("auto"))
    assert [LANGUAGES[i] for i in found.languages] == want
    tallies = np.array([sum(d[w] for w in en if w in d) for d in docs], dtype=np.int64)
    got = drop_guessed_noise(chunk_of_counts(docs, ENGLISH), tallies)
    same_counts(got, drop_noise(chunk_of_counts(docs, frozenset()), parse_setting("auto"))[0])


@given(DOCUMENTS)
@settings(max_examples=150, deadline=None)
def test_counting_without_english_then_guessing_equals_guessing_on_all_words(
    docs: list[dict[str, int]],
) -> None:
    # English noise words removed while counting, only their evidence tokens kept.
    tallies = np.array(
        [sum(n for w, n in d.items() if w in english_evidence()) for d in docs], dtype=np.int64
    )
    got = drop_guessed_noise(chunk_of_counts(docs, ENGLISH), tallies)
    want, _ = drop_noise(chunk_of_counts(docs, frozenset()), parse_setting("auto"))
    same_counts(got, want)


def test_english_evidence_is_the_english_list_but_single_letters() -> None:
    assert english_evidence() == ENGLISH - {"a", "i"}


def test_a_chunk_guessed_english_is_returned_as_counted() -> None:
    docs = [{"cat": 2, "kernel": 1}, {"fingerprint": 3, "la": 1, "se": 1, "ne": 1}]
    counts = chunk_of_counts(docs, ENGLISH)
    assert drop_guessed_noise(counts, np.array([5, 4], dtype=np.int64)) is counts
    # Fewer English tokens than French ones: the second document is French.
    kept = drop_guessed_noise(counts, np.array([5, 2], dtype=np.int64))
    assert kept.vocabulary == ["cat", "kernel", "fingerprint"]


_SPELLINGS = st.sampled_from(_MIXED + _SINGLE).flatmap(
    lambda w: st.sampled_from([w, w.upper(), w.capitalize()])
)


@given(
    st.lists(
        st.lists(_SPELLINGS, max_size=30).map(" ".join) | st.sampled_from(["", "Straße", "..."]),
        max_size=12,
    ),
    st.sampled_from([1, 4, 100]),
)
@settings(max_examples=80, deadline=None)
def test_chunk_counts_under_auto_equal_the_tokenizer(texts: list[str], min_run: int) -> None:
    # Batches of ASCII texts and texts counted one by one both count without English
    # noise words and keep their evidence tokens for the guess.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("simdup.text.counting.MIN_ASCII_RUN", min_run)
        got = merge([count_chunk(texts, "auto", 1)])
    want = tokenized_counts(texts, "auto", 1)
    assert got.vocabulary == want.vocabulary
    assert got.indptr.tolist() == want.indptr.tolist()
    assert got.indices.tolist() == want.indices.tolist()
    assert got.counts.tolist() == want.counts.tolist()


def test_vocabulary_codes_mark_listed_words_with_their_languages() -> None:
    vocabulary = ["der", "hund", "the", "", "的", "der"]
    codes = languages.vocabulary_codes(vocabulary)
    assert (codes != 0).tolist() == [True, False, True, False, True, True]
    table, masks = languages._table(), languages._word_masks()
    for word, code in zip(vocabulary, codes.tolist(), strict=True):
        if code:
            assert int(table.listed[code]) == masks[word][0]
            assert bool(table.english[code]) == (word in english_evidence())
