"""Noise words chosen per document and Chinese segmentation, through counting, scan and compare."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from counting_reference import tokenized_counts

from simdup.cli import cli
from simdup.engines.local.counting import count_matrix
from simdup.errors import ParameterError
from simdup.fingerprints.listing import fingerprint_settings
from simdup.fingerprints.weights import term_weights
from simdup.params import SEGMENTER_MODULE, Params
from simdup.search.verify import cosine
from simdup.text.counting import count_chunk, merge
from simdup.text.counts import CountMatrix
from simdup.text.tokens import stopword_set, tokenize

SAMPLES = Path(__file__).parent / "data" / "languages"
TEXTS = {p.stem: p.read_text(encoding="utf-8") for p in sorted(SAMPLES.glob("*.txt"))}

#: Blocks the segmenter's import in a fresh interpreter (the extra "not installed").
BLOCK_EXTRA = f"import sys; sys.modules[{SEGMENTER_MODULE!r}] = None\n"

#: Paraphrases in German and in Chinese, plus unrelated texts.
PARAPHRASES = {
    "de_a.txt": "Der Hund läuft jeden Morgen mit seinem Besitzer durch den großen Park am Fluss "
    "und bellt die Enten an, die auf dem Wasser schwimmen.",
    "de_b.txt": "Jeden Morgen läuft der Hund mit seinem Besitzer durch den großen Park am Fluss, "
    "wo er die Enten anbellt, die auf dem Wasser schwimmen.",
    "zh_a.txt": "哈希函数把任意长度的输入通过散列算法变换成固定长度的输出，这个输出就是散列值。",  # noqa: RUF001
    "zh_b.txt": "哈希函数通过散列算法把任意长度的输入变换成固定长度的输出，该输出就是散列值。",  # noqa: RUF001
    "fr.txt": TEXTS["fr"],
    "es.txt": TEXTS["es"],
}


def same_matrix(a: CountMatrix, b: CountMatrix) -> None:
    assert a.vocabulary == b.vocabulary
    assert a.indptr.tolist() == b.indptr.tolist()
    assert a.indices.tolist() == b.indices.tolist()
    assert a.counts.tolist() == b.counts.tolist()


def corpus() -> list[str]:
    # A run of ASCII documents long enough for the batch counter, between other scripts.
    ascii_run = [f"the cat and the dog {i} de la casa y el perro" for i in range(40)]
    return [*TEXTS.values(), *ascii_run, TEXTS["de"] + " " + TEXTS["en"], "", "的", *TEXTS.values()]


@pytest.mark.parametrize("segment", ["bigrams", "words"])
@pytest.mark.parametrize("ngram", [1, 2])
@pytest.mark.parametrize("stopwords", ["auto", "de,fr", True, False])
def test_chunk_counts_equal_the_reference_tokenizer(
    stopwords: bool | str, ngram: int, segment: str
) -> None:
    texts = corpus()
    got = merge([count_chunk(texts, stopwords, ngram, segment)])
    same_matrix(got, tokenized_counts(texts, stopwords, ngram, segment))


def test_counts_do_not_depend_on_chunking() -> None:
    texts = corpus()
    whole = count_matrix(texts, stopwords="auto", segment="words")
    for size in (1, 7, 33):
        same_matrix(
            count_matrix(texts, stopwords="auto", segment="words", chunk_documents=size), whole
        )


@pytest.mark.parametrize("code", sorted(TEXTS))
def test_auto_removes_each_languages_noise_words(code: str) -> None:
    kept = tokenize(TEXTS[code], stopwords="auto", segment="words")
    everything = tokenize(TEXTS[code], stopwords=False, segment="words")
    assert 0 < len(kept) < 0.8 * len(everything)


def test_forced_lists_remove_only_those_lists() -> None:
    german = TEXTS["de"] + " the and"
    assert "und" not in tokenize(german, stopwords="de")
    assert "the" in tokenize(german, stopwords="de")
    assert "the" not in tokenize(german, stopwords="de,en")
    assert stopword_set("de,fr") >= stopword_set("fr")
    with pytest.raises(ParameterError, match="depend on each document"):
        stopword_set("auto")


def test_chinese_is_segmented_and_its_noise_words_removed() -> None:
    words = tokenize(TEXTS["zh"], stopwords=False, segment="words")
    assert {"指纹", "文本", "的"} <= set(words)
    kept = tokenize(TEXTS["zh"], stopwords="auto", segment="words")
    assert "指纹" in kept
    assert "的" not in kept
    bigrams = tokenize(TEXTS["zh"], stopwords=False, segment="bigrams")
    assert "档的" in bigrams
    assert "档的" not in words


def test_english_results_do_not_change_under_auto() -> None:
    for text in (TEXTS["en"], *(p.read_text() for p in Path("sample_corpus").glob("doc*.txt"))):
        assert tokenize(text, stopwords="auto") == tokenize(text, stopwords=True)


def test_params_defaults_and_recorded_settings() -> None:
    params = Params()
    assert (params.stopwords, params.segment) == ("auto", "auto")
    settings = fingerprint_settings(params)
    assert settings["stopwords"] == "auto"
    assert settings["stopword_lists"].startswith("sha256:")
    assert settings["segment"].startswith("words (rjieba")
    old = fingerprint_settings(Params(stopwords=True, segment="bigrams"))
    assert old == {k: v for k, v in settings.items() if k in old} | {"stopwords": True}
    assert set(old) == {"bits", "seed", "weighting", "ngram", "stopwords", "fingerprint_format"}
    assert fingerprint_settings(Params(stopwords="en"))["stopwords"] is True
    assert fingerprint_settings(Params(stopwords="fr,de"))["stopwords"] == "de,fr"
    assert fingerprint_settings(Params(**Params.stored_settings(settings))) == settings
    assert Params(**Params.stored_settings(old)).segment == "bigrams"


def write_corpus(root: Path) -> Path:
    root.mkdir()
    for name, text in PARAPHRASES.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def pairs(stdout: str) -> set[tuple[str, str]]:
    return {(Path(p["a"]).name, Path(p["b"]).name) for p in json.loads(stdout)["pairs"]}


def test_scan_finds_paraphrases_in_german_and_chinese(tmp_path: Path, runner: CliRunner) -> None:
    root = write_corpus(tmp_path / "c")
    args = ["scan", "--format", "json", "--threshold", "0.6", "--max-distance", "63", str(root)]
    result = runner.invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["params"]["stopwords"], data["params"]["segment"]) == ("auto", "auto")
    assert pairs(result.stdout) == {("de_a.txt", "de_b.txt"), ("zh_a.txt", "zh_b.txt")}
    assert "note:" not in result.stderr  # the extra is installed


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (["--no-stopwords"], False),
        (["--stopwords", "fr,de"], "de,fr"),
        (["--stopwords", "none"], False),
        (["--stopwords", "en"], "en"),
    ],
)
def test_stopword_options_are_recorded(
    options: list[str], expected: object, tmp_path: Path, runner: CliRunner
) -> None:
    root = write_corpus(tmp_path / "c")
    result = runner.invoke(
        cli, ["scan", "--format", "json", *options, str(root)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["params"]["stopwords"] == expected


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--stopwords", "xx"], "no stop-word list for 'xx'"),
        (["--stopwords", "de", "--no-stopwords"], "not both"),
        (["--segment", "characters"], "characters"),
    ],
)
def test_bad_stopword_options_exit_2(
    options: list[str], message: str, runner: CliRunner, sample_corpus: Path
) -> None:
    result = runner.invoke(cli, ["scan", *options, str(sample_corpus)])
    assert result.exit_code == 2
    assert message in result.stderr


def test_compare_shows_languages_and_removed_noise_words(runner: CliRunner) -> None:
    a, b = str(SAMPLES / "de.txt"), str(SAMPLES / "nl.txt")
    table = runner.invoke(cli, ["compare", a, b], catch_exceptions=False)
    assert table.exit_code == 0, table.output
    assert "A language de, 26 of 41 words removed as noise" in table.stdout
    assert "B language nl, " in table.stdout
    record = json.loads(
        runner.invoke(cli, ["compare", "--format", "json", a, b], catch_exceptions=False).stdout
    )
    assert (record["language_a"], record["language_b"]) == ("de", "nl")
    assert record["noise_removed_a"] == 26
    forced = runner.invoke(cli, ["compare", "--format", "json", "--no-stopwords", a, b]).stdout
    assert json.loads(forced)["language_a"] is None
    assert json.loads(forced)["noise_removed_a"] == 0


def test_console_script_scans_mixed_languages(simdup_script: str, tmp_path: Path) -> None:
    root = write_corpus(tmp_path / "c")
    done = subprocess.run(
        [simdup_script, "scan", "--format", "json", "--threshold", "0.6", str(root)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert ("zh_a.txt", "zh_b.txt") in pairs(done.stdout)


def run_without_extra(args: list[str]) -> subprocess.CompletedProcess[str]:
    script = BLOCK_EXTRA + textwrap.dedent(
        f"""
        from simdup.cli import main
        sys.argv = ["simdup", *{args!r}]
        main()
        """
    )
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )


def test_without_the_extra_auto_falls_back_with_one_note(tmp_path: Path) -> None:
    root = write_corpus(tmp_path / "c")
    done = run_without_extra(["scan", "--format", "json", "--threshold", "0.6", str(root)])
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("note:") == 1
    assert "pip install 'simdup[zh]'" in done.stderr
    assert ("zh_a.txt", "zh_b.txt") in pairs(done.stdout)
    quiet = run_without_extra(["scan", "-q", "--segment", "bigrams", str(root)])
    assert quiet.returncode == 0
    assert "note:" not in quiet.stderr
    refused = run_without_extra(["scan", "--segment", "words", str(root)])
    assert refused.returncode == 2
    assert "simdup[zh]" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_without_the_extra_bigrams_are_what_the_extra_gives_with_bigrams(tmp_path: Path) -> None:
    root = write_corpus(tmp_path / "c")
    args = ["fingerprint", "--format", "jsonl", str(root)]
    fallback = run_without_extra(args)
    runner = CliRunner()
    forced = runner.invoke(cli, [*args, "--segment", "bigrams"], catch_exceptions=False)
    assert fallback.returncode == 0, fallback.stderr
    assert fallback.stdout == forced.stdout


def test_output_is_deterministic(tmp_path: Path, runner: CliRunner) -> None:
    root = write_corpus(tmp_path / "c")
    args = ["scan", "--format", "json", "--all", "--max-distance", "63", str(root)]
    first = runner.invoke(cli, args, catch_exceptions=False).stdout
    again = runner.invoke(cli, [*args, "--jobs", "2"], catch_exceptions=False).stdout
    assert first == again
    assert np.isfinite([p["cosine"] for p in json.loads(first)["pairs"]]).all()


def test_index_refuses_a_mix_of_stopword_settings(tmp_path: Path, runner: CliRunner) -> None:
    root = write_corpus(tmp_path / "c")
    db = str(tmp_path / "i.db")
    made = runner.invoke(cli, ["index", "add", str(root), "--db", db], catch_exceptions=False)
    assert made.exit_code == 0, made.output
    again = runner.invoke(cli, ["index", "add", str(root), "--db", db], catch_exceptions=False)
    assert again.exit_code == 0, again.output
    for options, requested in ((["--stopwords", "en"], "True"), (["--no-stopwords"], "False")):
        mixed = runner.invoke(cli, ["index", "add", str(root), "--db", db, *options])
        assert mixed.exit_code == 2, (options, mixed.output)
        assert "stopwords=auto" in mixed.stderr
        assert f"stopwords={requested}" in mixed.stderr


def test_words_separate_chinese_paraphrases_better_than_bigrams() -> None:
    data = json.loads((SAMPLES / "zh_paraphrases.json").read_text(encoding="utf-8"))
    texts = [(k, text) for k, pair in enumerate(data["paragraphs"]) for text in pair]

    def margin(segment: str) -> float:
        weights = [term_weights(tokenize(t, stopwords="auto", segment=segment)) for _, t in texts]
        same: list[float] = []
        other: list[float] = []
        for (a, (pa, _)), (b, (pb, _)) in itertools.combinations(enumerate(texts), 2):
            (same if pa == pb else other).append(cosine(weights[a], weights[b]))
        return min(same) - max(other)

    assert margin("words") > margin("bigrams") > 0


def test_index_refuses_a_mix_of_segmentations_and_keeps_its_own(
    tmp_path: Path, runner: CliRunner
) -> None:
    root = write_corpus(tmp_path / "c")
    words, bigrams = str(tmp_path / "w.db"), str(tmp_path / "b.db")
    assert runner.invoke(cli, ["index", "add", str(root), "--db", words]).exit_code == 0
    mixed = runner.invoke(cli, ["index", "add", str(root), "--db", words, "--segment", "bigrams"])
    assert mixed.exit_code == 2, mixed.output
    assert "segment=words (rjieba" in mixed.stderr
    assert "segment=None" in mixed.stderr
    # An index of bigrams keeps bigrams when the option is not given, extra or not.
    made = runner.invoke(cli, ["index", "add", str(root), "--db", bigrams, "--segment", "bigrams"])
    assert made.exit_code == 0, made.output
    (root / "zh_c.txt").write_text(PARAPHRASES["zh_a.txt"] + "哈希", encoding="utf-8")
    again = runner.invoke(cli, ["index", "add", str(root), "--db", bigrams])
    assert again.exit_code == 0, again.output
    exported = runner.invoke(cli, ["index", "export", "--db", bigrams], catch_exceptions=False)
    records = {Path(r["id"]).name: r for r in map(json.loads, exported.stdout.splitlines())}
    assert all("segment" not in r["params"] for r in records.values())
    direct = runner.invoke(
        cli,
        ["fingerprint", "--format", "jsonl", "--segment", "bigrams", str(root / "zh_c.txt")],
        catch_exceptions=False,
    )
    assert records["zh_c.txt"]["fingerprint"] == json.loads(direct.stdout)["fingerprint"]


def test_an_index_of_english_and_bigrams_keeps_its_settings(
    tmp_path: Path, runner: CliRunner
) -> None:
    # Its stored settings are those indexes had before other lists and segmentation existed.
    root = write_corpus(tmp_path / "c")
    db = str(tmp_path / "old.db")
    made = runner.invoke(
        cli, ["index", "add", str(root), "--db", db, "--stopwords", "en", "--segment", "bigrams"]
    )
    assert made.exit_code == 0, made.output
    (root / "more.txt").write_text(TEXTS["zh"], encoding="utf-8")
    again = runner.invoke(cli, ["index", "add", str(root), "--db", db, "--format", "json"])
    assert again.exit_code == 0, again.output
    settings = json.loads(
        runner.invoke(cli, ["index", "export", "--db", db]).stdout.splitlines()[0]
    )["params"]
    assert settings == fingerprint_settings(Params(stopwords=True, segment="bigrams"))
