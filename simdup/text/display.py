"""Untrusted text (file names, document text) made safe to show on a terminal or in a line.

A name can hold escape sequences that recolour or rewrite a terminal, line breaks that
forge extra lines of output, and bytes that are not valid UTF-8. Everything simdup shows
of a name or a text passes through :func:`printable` first.
"""

from __future__ import annotations

from collections.abc import Sequence

import regex

#: Characters shown escaped: controls, format characters, line and paragraph separators,
#: undecodable bytes (lone surrogates) and the backslash that starts an escape.
_UNPRINTABLE = regex.compile(r"[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\ud800-\udfff\\]")


def printable(name: str) -> str:
    r"""Return ``name`` with control, format and undecodable characters escaped.

    Backslashes are doubled so the escaped form is unambiguous.

    >>> printable("a\x1b[31mb\nc\udcff\\d")
    'a\\x1b[31mb\\nc\\xff\\\\d'
    """
    if name.isascii() and name.isprintable() and "\\" not in name:
        return name  # printable ASCII is printable in every Unicode version: nothing to do

    def escape(match: regex.Match[str]) -> str:
        ch = match.group()
        code = ord(ch)
        if ch == "\\":
            return "\\\\"
        if 0xDC80 <= code <= 0xDCFF:
            return f"\\x{code - 0xDC00:02x}"
        if ch == "\n":
            return "\\n"
        if ch == "\t":
            return "\\t"
        if ch == "\r":
            return "\\r"
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _UNPRINTABLE.sub(escape, name)


def common_dir(names: Sequence[str]) -> str:
    """Return the longest directory prefix (ending in ``/``) all names share, or ``""``.

    >>> common_dir(["a/b/c.txt", "a/b/d/e.txt", "a/bc.txt"])
    'a/'
    >>> common_dir(["x.txt", "a/y.txt"])
    ''
    """
    if not names:
        return ""
    first, last = min(names), max(names)  # the prefix all share is the one these two share
    size = next(
        (k for k, (x, y) in enumerate(zip(first, last, strict=False)) if x != y),
        min(len(first), len(last)),
    )
    return first[: first.rfind("/", 0, size) + 1]
