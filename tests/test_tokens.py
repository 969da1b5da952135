"""Text to features: normalisation, words, bigrams of unspaced scripts, stop words, n-grams."""

from __future__ import annotations

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from simdup.errors import ParameterError
from simdup.model import Params
from simdup.simhash import fingerprint
from simdup.stopwords import STOPWORD_LISTS
from simdup.tokens import (
    MAX_TOKEN_LENGTH,
    normalize,
    shingles,
    stopword_set,
    tokenize,
    tokenize_many,
    words,
)
from simdup.weights import term_weights

# Any Python string: lone surrogates, control characters, unassigned code points.
ANY_TEXT = st.text(alphabet=st.characters(exclude_categories=()), max_size=200)
UNSPACED = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\p{Thai}\u30fc]")


def plain(text: str, ngram: int = 1) -> list[str]:
    """Tokenize with stop words kept, to see the tokenizer alone."""
    return tokenize(text, stopwords=False, ngram=ngram)


# --- scripts written without spaces ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("中文分词", ["中文", "文分", "分词"]),  # Chinese (Han)
        ("ひらがな", ["ひら", "らが", "がな"]),  # Japanese Hiragana
        ("コーヒー", ["コー", "ーヒ", "ヒー"]),  # Katakana with the long-vowel mark
        ("日本語のテキスト", ["日本", "本語", "語の", "のテ", "テキ", "キス", "スト"]),
        ("안녕하세요", ["안녕", "녕하", "하세", "세요"]),  # Korean (Hangul)
        ("ภาษาไทย", ["ภา", "าษ", "ษา", "าไ", "ไท", "ทย"]),  # Thai
    ],
)
def test_unspaced_scripts_become_overlapping_bigrams(text: str, expected: list[str]) -> None:
    assert plain(text) == expected
    assert tokenize(text) == expected  # the English stop-word list does not touch them


def test_single_unspaced_character_is_a_unigram() -> None:
    assert plain("猫") == ["猫"]
    assert plain("猫 and 犬") == ["猫", "and", "犬"]
    assert plain("한") == ["한"]


def test_unspaced_runs_end_at_spaces_punctuation_and_other_scripts() -> None:
    assert plain("hello世界") == ["hello", "世界"]
    assert plain("中文\uff0c分词")  # full-width comma == ["中文", "分词"]
    assert plain("안녕 세계") == ["안녕", "세계"]
    assert plain("abc中文def") == ["abc", "中文", "def"]


def test_cjk_text_gives_many_features_not_one_giant_token() -> None:
    sentence = "我们今天去公园散步然后回家吃晚饭"
    features = plain(sentence)
    assert len(features) == len(sentence) - 1
    assert all(len(f) == 2 for f in features)


# --- stop words -------------------------------------------------------------------------------


def test_stop_words_removed_by_default_and_kept_when_off() -> None:
    text = "The cat sat on the mat"
    assert tokenize(text) == ["cat", "sat", "mat"]
    assert tokenize(text, stopwords=True) == ["cat", "sat", "mat"]
    assert tokenize(text, stopwords="en") == ["cat", "sat", "mat"]
    assert tokenize(text, stopwords=False) == ["the", "cat", "sat", "on", "the", "mat"]
    assert tokenize(text, stopwords="none") == ["the", "cat", "sat", "on", "the", "mat"]


def test_stop_words_match_after_case_folding() -> None:
    assert tokenize("THE And OF Cat") == ["cat"]


def test_stop_word_lists() -> None:
    english = stopword_set(True)
    assert {"the", "and", "of", "a", "is"} <= english
    assert "cat" not in english
    assert stopword_set(False) == frozenset()
    assert stopword_set("en") == english
    for words_ in STOPWORD_LISTS.values():
        assert all(normalize(w) == w for w in words_)


def test_unknown_stop_word_list_raises_naming_it() -> None:
    with pytest.raises(ParameterError, match="'klingon'"):
        tokenize("text", stopwords="klingon")


def test_params_stopwords_is_validated() -> None:
    with pytest.raises(ParameterError, match="'xx'"):
        Params(stopwords="xx")


# --- normalisation and case folding -----------------------------------------------------------


def test_nfkc_folds_compatibility_forms() -> None:
    assert plain("\uff46\uff55\uff4c\uff4c \uff37\uff29\uff24\uff34\uff28") == ["full", "width"]
    assert plain("ﬁne ﬂow") == ["fine", "flow"]
    assert plain("x² ①") == ["x2", "1"]
    assert plain("\uff21\uff22\uff23\uff11\uff12\uff13") == ["abc123"]  # full-width ABC123


def test_composed_and_decomposed_accents_agree() -> None:
    assert plain("café") == plain("cafe\u0301") == ["café"]


def test_case_folding() -> None:
    assert plain("Straße") == plain("STRASSE") == plain("strasse") == ["strasse"]
    assert plain("ẞ") == ["ss"]
    # Greek: capital, final and medial sigma all fold to the medial form.
    assert plain("ΟΔΟΣ") == plain("οδος") == plain("οδοσ") == ["οδοσ"]
    assert plain("HELLO World") == ["hello", "world"]


def test_normalize_examples() -> None:
    assert normalize("ＳＴＲＡẞＥ ﬁne") == "strasse fine"
    assert normalize("") == ""


# --- word boundaries ---------------------------------------------------------------------------


def test_apostrophes_and_hyphens_split_words() -> None:
    assert plain("don't") == ["don", "t"]
    assert plain("don\u2019t") == plain("don't")  # typographic apostrophe
    assert plain("e-mail") == plain("e mail") == ["e", "mail"]
    assert plain("well-\nknown") == ["well", "known"]


def test_digits_and_combining_marks_belong_to_words() -> None:
    assert plain("route66 naïve") == ["route66", "naïve"]
    assert plain("हिन्दी") == ["हिन्दी"]  # Devanagari virama and vowel signs are marks


@pytest.mark.parametrize(
    "text",
    ["", " ", " \t\n\r ", "!!! ... --- ???", "«»—…·", "the and of a", "The AND is it"],
)
def test_texts_without_features(text: str) -> None:
    assert tokenize(text) == []
    assert tokenize(text, ngram=2) == []
    assert tokenize(text, ngram=3) == []


def test_punctuation_and_whitespace_only_without_stop_words() -> None:
    assert plain("  ,;:!?()[]{}<>\"' \u3000 ") == []


# --- n-grams -----------------------------------------------------------------------------------


def test_bigrams_and_trigrams() -> None:
    text = "red fox jumps high"
    assert plain(text, 2) == ["red fox", "fox jumps", "jumps high"]
    assert plain(text, 3) == ["red fox jumps", "fox jumps high"]
    assert plain(text, 4) == ["red fox jumps high"]


def test_shorter_text_than_ngram_gives_one_shingle() -> None:
    assert plain("red fox", 3) == ["red fox"]
    assert plain("fox", 2) == ["fox"]
    assert shingles(["a"], 5) == ["a"]
    assert shingles([], 3) == []


def test_ngrams_are_cut_after_stop_word_removal() -> None:
    assert tokenize("the red fox and the dog", ngram=2) == ["red fox", "fox dog"]


def test_ngram_below_one_is_rejected() -> None:
    for bad in (0, -1):
        with pytest.raises(ParameterError, match=str(bad)):
            tokenize("red fox", ngram=bad)
        with pytest.raises(ParameterError, match=str(bad)):
            Params(ngram=bad)


# --- limits and arbitrary input ----------------------------------------------------------------


def test_huge_token_is_capped() -> None:
    features = plain("a" * 1_000_000)
    assert features == ["a" * MAX_TOKEN_LENGTH]
    assert len(features[0]) == MAX_TOKEN_LENGTH
    assert plain("x " + "b" * (MAX_TOKEN_LENGTH + 1) + " y") == ["x", "b" * MAX_TOKEN_LENGTH, "y"]
    assert plain("c" * MAX_TOKEN_LENGTH) == ["c" * MAX_TOKEN_LENGTH]


def test_control_characters_and_lone_surrogates() -> None:
    assert plain("cat\x00dog\x1fbird\u200bfish") == ["cat", "dog", "bird", "fish"]
    assert plain("cat\ud800dog") == ["cat", "dog"]
    assert plain("\udfff") == []


def test_tokenize_many() -> None:
    texts = ["The cat", "", "中文分词"]
    assert tokenize_many(texts) == [tokenize(t) for t in texts]
    assert tokenize_many(texts, stopwords=False, ngram=2) == [
        tokenize(t, stopwords=False, ngram=2) for t in texts
    ]


def test_words_doctest_example() -> None:
    assert words("hello, 世界 and 中文分词!") == ["hello", "世界", "and", "中文", "文分", "分词"]


@given(ANY_TEXT, st.booleans(), st.integers(1, 3))
@settings(max_examples=300, deadline=None)
def test_any_text_tokenizes_deterministically(text: str, stopwords: bool, ngram: int) -> None:
    features = tokenize(text, stopwords=stopwords, ngram=ngram)
    assert features == tokenize(text, stopwords=stopwords, ngram=ngram)
    assert all(isinstance(f, str) and f for f in features)
    if ngram == 1:
        assert all(len(f) <= MAX_TOKEN_LENGTH and not any(c.isspace() for c in f) for f in features)
    # The features can always be weighted and fingerprinted.
    fingerprint(term_weights(features), 16)


@given(ANY_TEXT)
@settings(max_examples=300, deadline=None)
def test_normalize_is_a_fixed_point(text: str) -> None:
    once = normalize(text)
    assert normalize(once) == once


@given(ANY_TEXT)
@settings(max_examples=300, deadline=None)
def test_words_survive_retokenizing(text: str) -> None:
    """Words (not bigrams, which re-split) come back unchanged when joined by spaces."""
    spaced = [f for f in plain(text) if not UNSPACED.search(f) and len(f) < MAX_TOKEN_LENGTH]
    assert plain(" ".join(spaced)) == spaced
