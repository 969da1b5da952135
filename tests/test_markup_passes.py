"""The markup readers work on whole texts: the same result as reading line by line.

``troff_text`` and ``_lines`` run regular expressions over the whole text rather than a
loop over its lines (several times faster on a tree of manual pages). The line-by-line
definitions below are the specification; hypothesis checks that both agree on texts
dense in troff's syntax and in every kind of whitespace.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simdup.text import markup
from simdup.text.tokens import text_words

#: The characters troff's syntax and whitespace are made of, and a few letters.
_ALPHABET = ".'\\\"f([]-ens*BRIS0123+ \t\r\n\x0b\x0c\x1c\x85\u00a0\u2028\u3000aéx"

#: Request names among the text macros and not, to make request lines likely.
_PIECES = [".SH ", ".B ", ".IR ", ".so ", ".\\\" ", "'br", ".  IP ", ". \tBR", ".BIR ", "'SH",
           "\\fB", "\\f(CW", "\\f[CR]",
           "\\(em", "\\[lq]", "\\*(lq", "\\s-1", "\\-", "\\e", "\\&",
           "\n", "\r\n", "\\"]  # fmt: skip

_texts = st.lists(st.one_of(st.text(_ALPHABET, max_size=6), st.sampled_from(_PIECES))).map("".join)


def _lines_by_line(text: str) -> str:
    lines = (" ".join(line.split()) for line in text.split("\n"))
    return "".join(line + "\n" for line in lines if line)


_REQUEST = re.compile(r"^[.'][ \t]*(\S*)[ \t]*(.*)$")


def _troff_by_line(text: str) -> str:
    out: list[str] = []
    for line in text.split("\n"):
        request = _REQUEST.match(line)
        if request is not None:
            name, rest = request.groups()
            if name not in markup._TEXT_MACROS:
                continue
            line = rest.replace('"', " ")
        out.append(markup._ESCAPE.sub(markup._escape, line))
    return _lines_by_line("\n".join(out))


@settings(max_examples=400)
@given(_texts)
def test_lines_as_line_by_line(text: str) -> None:
    assert markup._lines(text) == _lines_by_line(text)


@settings(max_examples=400)
@given(_texts)
def test_troff_as_line_by_line(text: str) -> None:
    assert markup.troff_text(text) == _troff_by_line(text)


def test_escapes_do_not_cross_lines() -> None:
    text = ".SH NAME\nls \\[em\nfoo] \\f[B\nbar]\n"
    assert markup.troff_text(text) == _troff_by_line(text) == "NAME\nls em\nfoo] B\nbar]\n"


def test_html_and_markdown_lines_unchanged() -> None:
    page = "<p> a \u00a0 b </p>\n\n<div>c\r\n d</div>"
    assert markup.html_text(page) == "a b\nc\nd\n"
    assert markup.markdown_text("# T\n\n  x  *y*  \n") == "T\nx y\n"


#: Words beside every kind of white space, combining marks, unspaced and astral text, a
#: lone surrogate, and the syntax of each markup.
_WORDY = _ALPHABET + "\u0301\u4e2d\u6587\u5206\u8bcd\U0001f600\ud800\u1680\u2009\u205f<>/p&;#*_`"
_MARKUP = [
    *_PIECES,
    "<p>",
    "</p>",
    "<br>",
    "<script>",
    "</script>",
    "&amp;",
    "# ",
    "* ",
    "`",
    "\n\n",
]
_wordy = st.lists(st.one_of(st.text(_WORDY, max_size=6), st.sampled_from(_MARKUP))).map("".join)


@settings(max_examples=300, deadline=None)
@given(_wordy, st.sampled_from(["man", "html", "markdown", "plain"]))
def test_words_alone_are_the_words_of_the_folded_lines(text: str, mode: str) -> None:
    # A count reads only the words: lines left unfolded give it the same ones, in order.
    folded, unfolded = markup.read_text(text, mode), markup.read_text(text, mode, words=True)
    for segment in ("bigrams", "words"):
        assert text_words(unfolded, segment) == text_words(folded, segment)


#: Markdown of every construct CommonMark has, and what is read of it.
CONSTRUCTS = Path(__file__).parent / "data" / "markdown" / "constructs.md"

CONSTRUCTS_TEXT = """Setext heading
ATX heading with code and emphasis
A paragraph with strong, emphasis, ~~not struck in CommonMark~~, an inline
tag, an entity & \u00a9 \u00e9, an escaped *star*,
a link, a relative link, an
autolink https://example.org/path, a mail me@example.org, a
reference link and a collapsed one, an image alt text,
a hard break
and a soft break
inside one paragraph; trailing words-with-hyphens and snake_case_words.
A block quote with a link.
a tight list item
another
An ordered item
with a second paragraph
Another item
lazily continued
[ ] not a task list in CommonMark
a star item
indented code block
with two lines
fenced = "code" # kept as text
tilde fence
An HTML block with bold and a script.
| a table | is a paragraph |
|---------|----------------|
| in | CommonMark |
Last line with a javascript link and words.
"""


def test_markdown_keeps_the_text_of_every_construct() -> None:
    # Link targets, emphasis marks, fences, comments and scripts are gone; code and the
    # descriptions of images stay; every block is on lines of its own.
    assert markup.markdown_text(CONSTRUCTS.read_text(encoding="utf-8")) == CONSTRUCTS_TEXT


@pytest.mark.parametrize(
    ("source", "text"),
    [
        ("", ""),
        ("word", "word\n"),
        ("a *b* c", "a b c\n"),  # inline elements join words, as in the text
        ("a*b*c", "abc\n"),
        ("x<br>y", "xy\n"),  # inline HTML is dropped, not a break
        ("# h\npara", "h\npara\n"),
        ("- a\n- b", "a\nb\n"),  # tight list items are blocks too
        ("<p>one</p>\n\ntwo", "one\ntwo\n"),
        ("[t](javascript:x)", "t\n"),  # a link of any scheme gives its text
        ("a\ud800b", "a\ufffdb\n"),  # a lone surrogate (JSON allows them) breaks words
    ],
)
def test_markdown_blocks_break_lines_and_inline_elements_do_not(source: str, text: str) -> None:
    assert markup.markdown_text(source) == text


_MARKDOWN_PIECES = ["# ", "\n", "\n\n", "*", "_", "`", "```\n", "    ", "> ", "- ", "1. ",
                    "[a](b)", "![i](p)", "<x>", "</div>", "<div>", "&amp;", "\\", "  \n", "---\n",
                    "[r]: u\n", "[r]", "w", "\u00a0", "\u2028", "\r\n", "\t", "\x00",
                    "\ud800"]  # fmt: skip


@settings(max_examples=300)
@given(st.lists(st.one_of(st.sampled_from(_MARKDOWN_PIECES), st.text(max_size=4))).map("".join))
def test_markdown_text_is_lines_of_words_whatever_the_input(source: str) -> None:
    text = markup.markdown_text(source)
    assert text == _lines_by_line(text)
