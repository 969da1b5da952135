"""Chinese word segmentation with the zh extra, and the fallback without it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from simdup.errors import ParameterError
from simdup.params import SEGMENTER_MODULE, zh_extra_installed
from simdup.text import segment

#: Imports of the segmenter fail in a process that runs this first.
BLOCK_EXTRA = f"import sys; sys.modules[{SEGMENTER_MODULE!r}] = None\n"


@pytest.fixture
def without_extra(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    segment._cut.cache_clear()
    monkeypatch.setitem(sys.modules, SEGMENTER_MODULE, None)
    yield
    segment._cut.cache_clear()


def test_the_extra_is_installed_for_the_tests() -> None:
    # `make test` installs simdup[zh]; the fallback is tested by blocking the import.
    assert zh_extra_installed()
    assert (segment.segmenter_version() or "").startswith(SEGMENTER_MODULE)


def test_a_han_run_is_cut_into_words() -> None:
    assert segment.segment_han("哈希函数是一种压缩映射") == [
        "哈希",
        "函数",
        "是",
        "一种",
        "压缩",
        "映射",
    ]
    assert segment.segment_han("") == []


def test_a_japanese_run_of_kanji_alone_is_cut_as_han_and_kana_stay_bigrams() -> None:
    from simdup.text.tokens import text_words

    # Between spaces, 環境変数 is a run of Han characters: the dictionary cuts it (its pieces
    # are the run), where bigrams overlap. Mixed with kana, the run stays bigrams.
    text = "これは 環境変数 です"
    words, bigrams = text_words(text, "words"), text_words(text, "bigrams")
    assert bigrams == ["これ", "れは", "環境", "境変", "変数", "です"]
    assert words[:2] == ["これ", "れは"]
    assert words[-1] == "です"
    assert "".join(words[2:-1]) == "環境変数"
    assert words != bigrams
    mixed = "環境変数を設定"
    assert text_words(mixed, "words") == text_words(mixed, "bigrams")


def test_segmentation_is_deterministic() -> None:
    run = "文档的指纹是根据文本中出现的加权词语计算出来的"
    assert segment.segment_han(run) == segment.segment_han(run)
    assert "".join(segment.segment_han(run) or []) == run


def test_modes_cut_with_the_extra() -> None:
    assert segment.segmentation("auto") == "words"
    assert segment.segmentation("words") == "words"
    assert segment.segmentation("bigrams") == "bigrams"


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ParameterError, match="bigrams"):
        segment.segmentation("characters")


@pytest.mark.usefixtures("without_extra")
def test_without_the_extra_auto_falls_back_to_bigrams() -> None:
    assert not zh_extra_installed()
    assert segment.segmenter_version() is None
    assert segment.segment_han("哈希函数") is None
    assert segment.segmentation("auto") == "bigrams"
    with pytest.raises(ParameterError, match=r"simdup\[zh\]"):
        segment.segmentation("words")


def test_without_the_extra_in_a_fresh_process() -> None:
    script = BLOCK_EXTRA + textwrap.dedent(
        """
        from simdup.text import segment
        from simdup.errors import ParameterError
        from simdup.params import zh_extra_installed
        print(zh_extra_installed(), segment.segmentation("auto"), segment.segment_han("中文"))
        try:
            segment.segmentation("words")
        except ParameterError as exc:
            print(exc)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0] == "False bigrams None"
    assert "pip install 'simdup[zh]'" in out[1]


def test_importing_simdup_does_not_load_the_segmenter() -> None:
    script = "import sys, simdup, simdup.cli\nprint(segment_loaded := 'rjieba' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


def test_the_segmenter_is_loaded_before_workers_only_for_han_text() -> None:
    # Loading it costs about 0.1 s: texts without Han never pay for it.
    script = textwrap.dedent(
        f"""
        import sys
        from simdup.text.segment import load_segmenter
        load_segmenter("auto", ["plain English", "und Deutsch"])
        print({SEGMENTER_MODULE!r} in sys.modules)
        load_segmenter("bigrams", ["哈希函数"])
        print({SEGMENTER_MODULE!r} in sys.modules)
        load_segmenter("auto", ["English", "哈希函数"])
        print({SEGMENTER_MODULE!r} in sys.modules)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["False", "False", "True"]


def _scan_without_extra(root: Path, *options: str) -> str:
    """Return the stderr of ``simdup scan root`` in a process where the extra is missing."""
    script = BLOCK_EXTRA + textwrap.dedent(
        f"""
        from simdup.cli import main
        sys.argv = ["simdup", "scan", {str(root)!r}, *{list(options)!r}]
        main()
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", "import sys\n" + script], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    return run.stderr


def test_the_fallback_note_is_given_once_when_chinese_was_cut_into_bigrams(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text("哈希函数是一种压缩映射 把任意长度的输入变成固定长度的输出")
    (tmp_path / "b.txt").write_text("plain english words about hashing functions and outputs")
    notes = [line for line in _scan_without_extra(tmp_path).splitlines() if "note:" in line]
    assert notes == [
        "note: Chinese text is cut into character bigrams; pip install 'simdup[zh]' "
        "segments it into words (--segment bigrams hides this note)"
    ]
    assert "note:" not in _scan_without_extra(tmp_path, "-q")
    assert "note:" not in _scan_without_extra(tmp_path, "--segment", "bigrams")


def test_no_fallback_note_for_a_corpus_without_chinese(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("plain english words about hashing functions and outputs")
    (tmp_path / "b.txt").write_text("Schlichte deutsche Wörter über Hashfunktionen")
    assert "note:" not in _scan_without_extra(tmp_path)


def test_compare_gives_the_fallback_note_for_chinese_text(tmp_path: Path) -> None:
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("哈希函数是一种压缩映射")
    second.write_text("哈希函数把输入变成输出")
    script = BLOCK_EXTRA + textwrap.dedent(
        f"""
        from simdup.cli import main
        sys.argv = ["simdup", "compare", {str(first)!r}, {str(second)!r}]
        main()
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", "import sys\n" + script], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert [line for line in run.stderr.splitlines() if line.startswith("note:")] == [
        "note: Chinese text is cut into character bigrams; pip install 'simdup[zh]' "
        "segments it into words (--segment bigrams hides this note)"
    ]
