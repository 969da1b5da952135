"""The markup readers work on whole texts: the same result as reading line by line.

``troff_text`` and ``_lines`` run regular expressions over the whole text rather than a
loop over its lines (several times faster on a tree of manual pages). The line-by-line
definitions below are the specification; hypothesis checks that both agree on texts
dense in troff's syntax and in every kind of whitespace.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from simdup.text import markup

#: The characters troff's syntax and whitespace are made of, and a few letters.
_ALPHABET = ".'\\\"f([]-ens*BRIS0123+ \t\r\n\x0b\x0c\x1c\x85\u00a0\u2028\u3000aéx"

#: Request names among the text macros and not, to make request lines likely.
_PIECES = [".SH ", ".B ", ".IR ", ".so ", ".\\\" ", "'br", "\\fB", "\\f(CW", "\\f[CR]",
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


#: Link targets of every kind the parser treats apart: web addresses and fragments (taken
#: as they are), unsafe schemes in any case, images as data, spaces, escapes, non-ASCII.
TARGETS = st.one_of(
    st.sampled_from(
        [
            "http://x.org/a b",
            "https://x.org/ü?q=1#f",
            "HTTP://X.ORG",
            "#frag ment",
            "javascript:alert(1)",
            "JavaScript:x",
            " javascript:x",
            "data:image/png;base64,AA",
            "data:text/html,x",
            "file:///etc",
            "vbscript:x",
            "mailto:a@b",
            "/rel/päth",
            "%41",
            "http://[::1]",
            "https://xn--ls8h.la/",
            "",
        ]
    ),
    st.text(st.characters(exclude_categories=["Cs"]), max_size=12),
)


@st.composite
def linked_markdown(draw: st.DrawFn) -> str:
    """Draw Markdown made of links, images, autolinks and reference definitions."""
    parts = []
    for target in draw(st.lists(TARGETS, min_size=1, max_size=6)):
        form = draw(st.sampled_from(["[t](%s)", "[t](<%s>)", "![i](%s)", "<%s>", "[r]\n\n[r]: %s"]))
        parts.append(form.replace("%s", target) + draw(st.sampled_from([" w", "\n", "\n\n"])))
    return "".join(parts)


@given(linked_markdown())
@settings(max_examples=300, deadline=None)
def test_links_taken_as_they_are_read_as_the_parser_normalising_them(
    text: str,
) -> None:
    fast = markup.markdown_text(text)
    every = markup._PLAIN_LINKS
    try:
        markup._PLAIN_LINKS = ()  # every target normalised, as the parser does by itself
        assert markup.markdown_text(text) == fast
    finally:
        markup._PLAIN_LINKS = every
