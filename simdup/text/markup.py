"""The text of markup: what HTML, XML, Markdown and man pages say, without their syntax.

Tag names, troff font codes and Markdown punctuation are not words of a document: left
in, two pages share ``html``, ``font`` or ``fr`` whatever they say. ``--text`` chooses how
a file's text is read (:data:`simdup.params.TEXT_MODES`); ``auto`` chooses by the file's
name (:func:`mode_for`). Plain text is returned as it is, character for character, so
its fingerprints never change.

HTML and XML are read with the standard library's parser (script and style contents
left out, entities decoded), Markdown with pulldown-cmark (``pyromark``), and troff by
stripping requests, comments and escapes.
"""

from __future__ import annotations

import os
import re
import string
import unicodedata
from collections.abc import Callable
from html.parser import HTMLParser

from simdup.errors import ParameterError
from simdup.params import TEXT_MODES

#: Name endings read as HTML or XML by ``auto``.
HTML_SUFFIXES = (".html", ".htm", ".xhtml", ".shtml", ".xml", ".svg")

#: Name endings read as Markdown by ``auto``.
MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdown", ".mkd")

#: A manual page's name: a section number (and a suffix such as ``3pm``), or ``.man``.
_MAN_NAME = re.compile(r"\.(?:[1-9n][a-z0-9]{0,6}|man)$", re.IGNORECASE)

#: Macros whose arguments are text to keep (headings, fonts, tagged paragraphs).
_TEXT_MACROS = frozenset(
    ["SH", "SS", "B", "I", "BI", "BR", "IB", "IR", "RB", "RI", "SM", "SB", "IP", "TP", "UR",
     "MT", "Nm", "Nd", "Ar", "Fl", "Sh", "Ss", "Pa", "Dt"]
)  # fmt: skip

#: A request line (``.SH``, ``'br``: its name is the first word after the dot) with the
#: line end before it, in a text that starts with a line end. Matching from that line end
#: lets the search skip to line ends rather than test every character as a line start.
_REQUEST = r"\n[.'][ \t]*+"

#: A text macro's name, as a whole word (the test after it makes the order of names moot).
_TEXT_MACRO = r"(?:{})(?!\S)".format("|".join(sorted(_TEXT_MACROS)))

#: A request line that holds no text (all but the text macros'), to the end of its line.
_EMPTY_REQUEST = re.compile(rf"{_REQUEST}(?!{_TEXT_MACRO})[^\n]*")

#: A text macro's line: group 1 holds its arguments.
_TEXT_REQUEST = re.compile(rf"{_REQUEST}{_TEXT_MACRO}[ \t]*+([^\n]*)")

#: Special characters with a meaning in words: dashes, quotes, a bullet, letters.
_SPECIAL = {"em": "-", "en": "-", "hy": "-", "mi": "-", "lq": '"', "rq": '"', "oq": "'",
            "cq": "'", "aq": "'", "dq": '"', "bu": " ", "co": "(c)", "rg": "(R)",
            "ss": "\u00df", "ae": "\u00e6", "AE": "\u00c6", "oe": "\u0153", "OE": "\u0152",
            "/l": "\u0142", "/L": "\u0141", "/o": "\u00f8", "/O": "\u00d8", "-D": "\u00d0",
            "Sd": "\u00f0", "TP": "\u00de", "Tp": "\u00fe", ".i": "\u0131", "IJ": "\u0132",
            "ij": "\u0133", "ff": "ff", "fi": "fi", "fl": "fl", "Fi": "ffi", "Fl": "ffl",
            "vS": "\u0160", "vs": "\u0161", "vZ": "\u017d", "vz": "\u017e", "oA": "\u00c5",
            "oa": "\u00e5"}  # fmt: skip

#: The accents of letters groff names by a mark and the letter: ``\(:u`` is u with a
#: diaeresis, ``\('e`` e with an acute accent (the table above has the other letters).
_MARKS = {":": "\u0308", "'": "\u0301", "`": "\u0300", "^": "\u0302", "~": "\u0303",
          ",": "\u0327"}  # fmt: skip

_SPECIAL.update(
    (mark + letter, composed)
    for mark, accent in _MARKS.items()
    for letter in string.ascii_letters
    if len(composed := unicodedata.normalize("NFC", letter + accent)) == 1
)

#: A character named by its code point (``\[u00E9]``, ``\[u0065_0301]``) or its code
#: in the input (``\[char233]``).
_NUMBERED = re.compile(r"u((?:[0-9A-F]{4,6})(?:_[0-9A-F]{4,6})*)|char([0-9]{1,3})")

#: Code points no glyph name stands for: controls and surrogates.
_UNNAMED = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")

#: troff escapes: fonts, sizes, strings, special characters, and zero-width ones.
_ESCAPE = re.compile(
    r"""\\(?:
        [fFs*n]\((?P<two>..)              # \f(CW \*(lq: a two-letter name
      | [fFs*n]\[(?P<long>[^\]\n]*)\]     # \f[CW] \*[lq]: a long name
      | s[+-]?\d                          # \s-1: a size
      | [fFn*](?P<one>.)                  # \fB \*R: a one-letter name
      | \((?P<char>..)                    # \(em: a special character
      | \[(?P<named>[^\]\n]*)\]           # \[em]: a named character
      | (?P<comment>".*)                  # \" a comment to the end of the line
      | (?P<other>.)                      # \- \e \& \| \^ \c ...
    )""",
    re.VERBOSE,
)


def check_text_mode(mode: str) -> str:
    """Return ``mode`` if it is one of :data:`TEXT_MODES`.

    Raises:
        ParameterError: naming the mode and the choices.
    """
    if mode not in TEXT_MODES:
        raise ParameterError(f"unknown text mode {mode!r}; choose one of: {', '.join(TEXT_MODES)}")
    return mode


def looks_like_troff(text: str) -> bool:
    """Tell whether a text is troff: one of its first lines is a request or a comment.

    >>> looks_like_troff('.\\\\" comment\\n.TH LS 1\\n'), looks_like_troff("syslog line\\n")
    (True, False)
    """
    lines = [line for line in text.split("\n", 20)[:20] if line.strip()]
    return any(line.startswith((".", "'")) for line in lines[:5])


def mode_for(name: str, mode: str, text: str = "") -> str:
    """Return how to read the file ``name``: ``mode``, or for ``auto`` one by the name.

    ``.gz`` is looked through (``ls.1.gz`` is a man page). A name with a manual section
    (``ls.1``) is read as troff only if its text starts as troff does: rotated logs are
    named ``syslog.1`` too.

    >>> mode_for("a/page.HTML", "auto"), mode_for("README.md", "auto")
    ('html', 'markdown')
    >>> mode_for("ls.1.gz", "auto", ".TH LS 1"), mode_for("syslog.1", "auto", "Jan 1 boot")
    ('man', 'plain')
    >>> mode_for("notes.txt", "auto"), mode_for("notes.txt", "html")
    ('plain', 'html')
    """
    if mode != "auto":
        return mode
    base = os.path.basename(name).lower()
    if base.endswith(".gz"):
        base = base[:-3]
    if base.endswith(HTML_SUFFIXES):
        return "html"
    if base.endswith(MARKDOWN_SUFFIXES):
        return "markdown"
    if _MAN_NAME.search(base) and looks_like_troff(text):
        return "man"
    return "plain"


def read_text(text: str, mode: str, *, words: bool = False) -> str:
    """Return the text of ``text`` read as ``mode`` (``plain``: ``text`` itself).

    Markup's text comes as its non-blank lines, stripped (:func:`_lines`). With
    ``words``, for a reader that keeps only the words (a count drops the text), the lines
    are left as the reader found them: the same words, since no word crosses white space
    either way (folding took 0.12 s of troff's 0.28 s on 1,000 German manual pages).

    >>> read_text("<p>Caf&eacute; <b>open</b></p><script>x()</script>", "html")
    'Café open\\n'
    >>> read_text(".SH NAME\\nls \\\\- list \\\\fBfiles\\\\fR\\n.so man7/x.7\\n", "man")
    'NAME\\nls - list files\\n'
    >>> read_text("# Title\\n\\nSome *emphasis* and [a link](http://x).\\n", "markdown")
    'Title\\nSome emphasis and a link.\\n'
    >>> read_text("<p>Caf&eacute;  <b>open</b></p>", "html", words=True).split()
    ['Café', 'open']
    """
    reader = _READERS.get(mode)
    if reader is None:
        return text
    found = reader(text)
    return found if words else _lines(found)


#: Tags that start a new line of text (block elements and line breaks).
_BLOCK_TAGS = frozenset(
    ["address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "figcaption",
     "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li",
     "main", "nav", "ol", "p", "pre", "section", "table", "td", "th", "tr", "ul", "title"]
)  # fmt: skip

#: Tags whose content is not text to read.
_HIDDEN_TAGS = frozenset({"script", "style", "template", "noscript"})


class _TextParser(HTMLParser):
    """Collect the character data of a page, leaving out scripts and styles."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HIDDEN_TAGS:
            self.hidden += 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDDEN_TAGS:
            self.hidden = max(0, self.hidden - 1)
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.parts.append(data)


def _lines(text: str) -> str:
    """Return the non-blank lines of ``text``, each stripped, each ending in a newline.

    Built-in functions mapped over the lines (no Python frame per line): a fifth faster.
    """
    out = "\n".join(filter(None, map(_spaced, map(str.split, text.split("\n")))))
    return out + "\n" if out else ""


#: Words joined by single spaces.
_spaced = " ".join


def html_text(text: str) -> str:
    """Return the character data of HTML or XML: no tags, comments, scripts or styles."""
    return _lines(_html(text))


def _html(text: str) -> str:
    """Return :func:`html_text` with its lines as the parser left them."""
    parser = _TextParser()
    parser.feed(text)
    parser.close()
    return "".join(parser.parts)


def _escape(match: re.Match[str]) -> str:
    """Return what a troff escape stands for in the text (nothing for most).

    The group that matched names the kind (one lookup: a page has thousands of escapes);
    fonts, sizes, strings and comments stand for nothing.
    """
    kind = match.lastgroup
    if kind == "other":
        return _OTHER.get(match[kind], "")
    if kind == "char" or kind == "named":
        return _SPECIAL.get(match[kind]) or _character(match[kind])
    return ""


def _character(name: str) -> str:
    """Return the character a numbered glyph name stands for; a word break for others.

    Control characters and surrogates are word breaks too: a page names no such glyph.

    >>> _character("u00FC"), _character("u0065_0301"), _character("char233"), _character("xx")
    ('ü', 'é', 'é', ' ')
    >>> _character("u0000"), _character("char10"), _character("uD800"), _character("char300")
    (' ', ' ', ' ', ' ')
    """
    numbered = _NUMBERED.fullmatch(name)
    if numbered is None:
        return " "
    units, code = numbered.groups()
    if code is not None and int(code) >= 256:  # its codes are the input's bytes
        return " "
    points = [int(code)] if code is not None else [int(unit, 16) for unit in units.split("_")]
    if any(p >= 0x110000 or _UNNAMED.match(chr(p)) for p in points):
        return " "
    return unicodedata.normalize("NFC", "".join(map(chr, points)))


#: One-character escapes that stand for something: a dash, a backslash, spaces.
_OTHER = {"-": "-", "e": "\\", " ": " ", "~": " ", "0": " "}


def _arguments(match: re.Match[str]) -> str:
    """Return a text macro's line as its arguments, quotes made spaces (line end kept)."""
    return "\n" + match[1].replace('"', " ")


def _requests(text: str) -> str:
    """Return ``text`` with each request line replaced by the text it holds (often none).

    Two passes: the lines that hold no text (four in five) are dropped by the regular
    expression engine alone; only the text macros' lines call back into Python.
    """
    return _TEXT_REQUEST.sub(_arguments, _EMPTY_REQUEST.sub("\n", "\n" + text))[1:]


def troff_text(text: str) -> str:
    """Return the words of a troff page: requests, comments and escapes stripped.

    A line starting with ``.`` or ``'`` is a request: dropped, unless it is a heading or
    font macro (``.SH``, ``.B``, ``.IR``), whose arguments are text. ``.so`` stubs (a
    page that only names another) have no text at all. No pattern crosses a line end, so
    each pass runs over the whole text at once.
    """
    return _lines(_troff(text))


def _troff(text: str) -> str:
    """Return :func:`troff_text` with its lines as the passes left them."""
    return _ESCAPE.sub(_escape, _requests(text))


#: A lone surrogate, which the parser cannot take.
_SURROGATE = re.compile("[\ud800-\udfff]")

#: Inline elements of Markdown: where they start and end is no break between words.
_INLINE = frozenset(
    {"Emphasis", "Strong", "Strikethrough", "Link", "Image", "Superscript", "Subscript"}
)


def markdown_text(text: str) -> str:
    """Return the text of Markdown: no heading marks, emphasis, link targets or fences.

    Text, code and image descriptions are kept, each block on lines of its own; raw
    HTML blocks are read as HTML, inline tags dropped. The parser is pulldown-cmark's,
    for CommonMark (``pyromark``, compiled: about ten times the speed of a parser in
    Python, with the same text on every Markdown file of a Debian system).
    """
    return _lines(_markdown(text))


def _markdown(text: str) -> str:
    """Return :func:`markdown_text` with its lines as the parser left them."""
    import pyromark  # only Markdown needs it

    parts: list[str] = []
    html: list[str] | None = None  # the raw HTML of the block being read
    try:
        events = pyromark.events(text)
    except UnicodeEncodeError:  # lone surrogates (JSON allows them): word breaks either way
        events = pyromark.events(_SURROGATE.sub("\ufffd", text))
    for event in events:
        if isinstance(event, str):  # SoftBreak, HardBreak, Rule
            parts.append("\n")
            continue
        ((kind, value),) = event.items()
        if isinstance(value, str) and kind in ("Text", "Code"):
            parts.append(value)
        elif isinstance(value, str) and kind == "Html" and html is not None:
            html.append(value)
        elif kind in ("Start", "End"):
            tag = next(iter(value)) if isinstance(value, dict) else value  # {"Heading": ...}
            if tag == "HtmlBlock" and kind == "Start":
                html = []
            elif tag == "HtmlBlock" and html is not None:
                parts.append(html_text("".join(html)))
                html = None
            if tag not in _INLINE:
                parts.append("\n")
    return "".join(parts)


#: The reader of each markup mode, its lines not yet folded (:func:`read_text`).
_READERS: dict[str, Callable[[str], str]] = {"html": _html, "markdown": _markdown, "man": _troff}
