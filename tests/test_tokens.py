"""Text to features: normalisation, words, bigrams of unspaced scripts, stop words, n-grams."""

from __future__ import annotations

import unicodedata

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from simdup.errors import ParameterError
from simdup.fingerprints.simhash import fingerprint
from simdup.fingerprints.weights import term_weights
from simdup.params import Params
from simdup.text import tokens
from simdup.text.normalize import MAX_TOKEN_LENGTH, normalize
from simdup.text.stopwords import STOPWORD_LISTS
from simdup.text.tokens import shingles, stopword_set, text_words, tokenize, tokenize_many, words

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


# --- the fast path: the same words as the reference tokenizer --------------------------------

#: Characters and sequences where normalisation, case folding or the word class is subtle.
HARD = [
    "é",  # precomposed
    "e\u0301",  # decomposed: NFKC composes it
    "\u0301",  # a mark with nothing to attach to
    "\u0915\u093f\u0928\u094d",  # Devanagari with vowel sign and virama (marks in words)
    "\u09be\u0bbe\u0d3e",  # vowel signs NFKC may compose
    "\uff21\uff22\uff43\uff11\uff12",  # full-width letters and digits
    "ﬁ ﬀ ﬃ ﬆ",  # ligatures
    "\u0130stanbul \u0131i",  # Turkish dotted capital I and dotless i
    "Straße STRASSE ẞ",  # sharp s, capital sharp s
    "ǅ ǈ",  # title-case digraphs
    "²³ ½ ⅷ ª º µ",  # superscripts, fractions, Roman numerals, ordinals, micro sign
    "中文分词",  # Han
    "ひらがな カタカナ コーヒー",  # Hiragana, Katakana, the long-vowel mark
    "한국어 안녕",  # Hangul syllables
    "\u1100\u1161\u11a8",  # conjoining jamo: NFKC composes a syllable
    "ภาษาไทย",  # Thai: unspaced, with combining vowels
    "😀👍🏽 🇩🇪",  # emoji, skin tone modifier, flags
    "\U0001d400\U0001d401 \U0001d7cf",  # mathematical bold letters, digit (NFKC folds them)
    "𐐀𐐨",  # Deseret: letters above U+FFFF that case fold
    "𠀀𠀁",  # Han above U+FFFF (unspaced)
    "…",  # ellipsis: NFKC makes three full stops
    "snake_case",  # the underscore is not a word character
    "\u00a0\u2009\u3000",  # no-break, thin and ideographic spaces
    "\ud800 \udfff",  # lone surrogates
    "\x00\x1b[31m",  # control characters
    "don\u2019t e-mail",
    "x" * 70,  # over the length cut
    "é" * 70,
]

#: Mostly-ASCII text with rare characters of every kind, and long texts whose rare
#: characters fall in different pieces of :func:`simdup.text.tokens._nfkc`.
MOSTLY_ASCII = st.lists(
    st.one_of(
        st.text(alphabet=st.characters(max_codepoint=127), max_size=40),
        st.sampled_from(HARD),
        st.characters(exclude_categories=()),
        st.sampled_from([" ", "\n", "\n\n"]),
    ),
    max_size=40,
).map("".join)
LONG = st.tuples(MOSTLY_ASCII, st.integers(0, 3000), MOSTLY_ASCII, st.integers(0, 3000)).map(
    lambda p: p[0] + "\n" + "word " * p[1] + p[2] + "\nline\n" * p[3]
)
#: Text of each Unicode category in turn, every code point possible.
CATEGORIES = (
    "Lu Ll Lt Lm Lo Mn Mc Me Nd Nl No Pc Pd Ps Pe Pi Pf Po Sm Sc Sk So Zs Zl Zp Cc Cf Cs Co Cn"
)
BY_CATEGORY = st.sampled_from(CATEGORIES.split()).flatmap(
    lambda category: st.text(
        alphabet=st.one_of(
            st.characters(categories=[category]),  # type: ignore[list-item]
            st.sampled_from(" a"),
        ),
        max_size=60,
    )
)


@given(st.one_of(MOSTLY_ASCII, LONG, BY_CATEGORY, ANY_TEXT))
@settings(max_examples=500, deadline=None)
def test_fast_path_equals_the_reference_tokenizer(text: str) -> None:
    assert text_words(text) == words(normalize(text))


@given(st.one_of(MOSTLY_ASCII, LONG))
@settings(max_examples=200, deadline=None)
def test_piecewise_nfkc_equals_nfkc(text: str) -> None:
    assert tokens._nfkc(text) == unicodedata.normalize("NFKC", text)


@pytest.mark.parametrize("sample", HARD)
def test_fast_path_on_each_hard_case(sample: str) -> None:
    for text in (sample, f"plain {sample} text", sample.upper(), "\n" * 3000 + sample):
        assert text_words(text) == words(normalize(text))


def test_fast_cut_agrees_with_the_regex_class_on_every_code_point() -> None:
    """Both roads of the cut, over every code point: the word class and the bigrams."""

    def cut(text: str) -> list[str]:
        return [w[:MAX_TOKEN_LENGTH] for w in tokens._cut(text)]

    every = "".join(map(chr, range(0x110000)))
    assert cut(every) == words(every)  # unspaced and astral: the re road
    plain_bmp = "".join(
        ch for ch in every[:0x10000] if not UNSPACED.match(ch) and not 0xD800 <= ord(ch) < 0xE000
    )
    assert cut(plain_bmp) == words(plain_bmp)  # the numpy road
    spaced = " ".join(every)
    assert cut(spaced) == words(spaced)


def test_no_word_character_is_white_space() -> None:
    """The numpy road splits at white space, so a word character must never be one."""
    units = tokens._plane().word_units
    word_chars = [chr(c) for c in range(0x10000) if units[c] == c and c != ord(" ")]
    assert len(word_chars) > 10_000
    assert not any(ch.isspace() for ch in word_chars)


@pytest.mark.parametrize(
    "rare",
    ["中文", "中", "abc中文def", "ภาษาไทย", "コーヒー", "x中", "中,文", "\ud800", "\udcff中"],
)
@pytest.mark.parametrize("where", ["start", "middle", "end", "twice"])
def test_rare_unspaced_runs_in_long_text(rare: str, where: str) -> None:
    """Text mostly of words, with a rare unspaced run: cut around the run only."""
    body = "Plain words, café and naïve ones. " * 20
    text = {
        "start": rare + body,
        "middle": body + rare + body,
        "end": body + rare,
        "twice": body + rare + " " + rare + body + rare,
    }[where]
    assert text_words(text) == words(normalize(text))


#: Chinese, mixed with other scripts, for the segmenting road.
HAN_MIXED = st.lists(
    st.one_of(
        st.sampled_from(
            ["哈希函数是一种压缩映射", "中文分词", "中", "東京タワー", "café", " ", "\n"]
        ),
        st.text(alphabet=st.characters(categories=["Lo"]), max_size=8),
        MOSTLY_ASCII,
    ),
    max_size=20,
).map("".join)


@given(st.one_of(HAN_MIXED, MOSTLY_ASCII))
@settings(max_examples=200, deadline=None)
def test_fast_path_equals_the_reference_when_segmenting_words(text: str) -> None:
    """With Han runs cut into words (the zh extra, installed by ``make test``)."""
    assert text_words(text, "words") == words(normalize(text), "words")
    assert text_words(text, "auto") == words(normalize(text), "auto")


@pytest.mark.parametrize("segment", ["bigrams", "words"])
@pytest.mark.parametrize(
    "text", ["中" + "x" * 70, "x" * 70 + "中", "x" * 40 + "中文" + "y" * 40, "ab中" * 40]
)
def test_a_rare_unspaced_run_in_text_without_any_separator(text: str, segment: str) -> None:
    """No separator to cut around the run: the whole text is the stretch."""
    assert text_words(text, segment) == words(normalize(text), segment)
