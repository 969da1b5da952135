"""Modules stay small and functions short, or say next to them why they are not.

The package is read stage by stage, so a module holds one stage and a function one step.
A module over :data:`MAX_MODULE_LINES` lines needs a comment ``# long: <reason>`` as its
first line; a function or method over :data:`MAX_FUNCTION_LINES` lines (``def`` to its
last line) needs one on the line before its ``def`` (above its decorators, if any).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import simdup

PACKAGE = Path(simdup.__file__).resolve().parent

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80

#: A reason: ``# long:`` followed by words.
REASON = re.compile(r"^\s*#\s*long:\s*\S")

#: Sizes allowed without a comment in the file, each with its reason. An entry that is
#: no longer over its limit fails the test too, so the list only shrinks.
KNOWN: dict[str, str] = {}


def _has_reason(lines: list[str], number: int) -> bool:
    """Tell whether line ``number`` (1-based) is a ``# long:`` comment with a reason."""
    return 1 <= number <= len(lines) and REASON.match(lines[number - 1]) is not None


def oversized(path: Path, root: Path) -> dict[str, str]:
    """Return the module and functions of ``path`` over their limit without a reason.

    Keys are ``relative/path.py`` for the module and ``relative/path.py::name`` for a
    function; values say how long it is.
    """
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    where = path.relative_to(root).as_posix()
    found: dict[str, str] = {}
    if len(lines) > MAX_MODULE_LINES and not _has_reason(lines, 1):
        found[where] = f"module of {len(lines)} lines"
    for node in ast.walk(ast.parse(text, str(path))):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        length = (node.end_lineno or node.lineno) - node.lineno + 1
        top = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        if length > MAX_FUNCTION_LINES and not _has_reason(lines, top - 1):
            found[f"{where}::{node.name}"] = f"function of {length} lines (line {node.lineno})"
    return found


def package_oversized() -> dict[str, str]:
    """Return everything in the package over its limit without a reason in the file."""
    found: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        found.update(oversized(path, PACKAGE.parent))
    return found


def test_no_module_or_function_is_long_without_a_reason() -> None:
    found = package_oversized()
    unexplained = {name: size for name, size in found.items() if name not in KNOWN}
    assert unexplained == {}


def test_every_known_exception_is_still_needed() -> None:
    found = package_oversized()
    assert sorted(name for name in KNOWN if name not in found) == []
    assert all(reason.strip() for reason in KNOWN.values())


def _function(name: str, body_lines: int) -> str:
    return f"def {name}() -> None:\n" + "    x = 1\n" * (body_lines - 1)


def test_the_size_check_sees_long_functions_and_their_reasons(tmp_path: Path) -> None:
    source = "\n".join(
        [
            "import functools",
            _function("short", MAX_FUNCTION_LINES),
            _function("long_unexplained", MAX_FUNCTION_LINES + 1),
            "# long: a table of cases read top to bottom",
            _function("long_explained", MAX_FUNCTION_LINES + 1),
            "# long:",
            _function("empty_reason", MAX_FUNCTION_LINES + 1),
            "# long: decorated, the reason above the decorator",
            "@functools.cache",
            _function("decorated", MAX_FUNCTION_LINES + 1),
            "class Holder:",
            "    " + _function("method", MAX_FUNCTION_LINES + 1).replace("\n", "\n    "),
        ]
    )
    path = tmp_path / "pkg" / "mod.py"
    path.parent.mkdir()
    path.write_text(source, encoding="utf-8")
    assert sorted(oversized(path, tmp_path)) == [
        "pkg/mod.py::empty_reason",
        "pkg/mod.py::long_unexplained",
        "pkg/mod.py::method",
    ]


def test_the_size_check_sees_long_modules_and_their_reasons(tmp_path: Path) -> None:
    long_module = tmp_path / "long.py"
    long_module.write_text("x = 1\n" * (MAX_MODULE_LINES + 1), encoding="utf-8")
    explained = tmp_path / "explained.py"
    explained.write_text(
        "# long: generated data\n" + "x = 1\n" * MAX_MODULE_LINES, encoding="utf-8"
    )
    limit = tmp_path / "limit.py"
    limit.write_text("x = 1\n" * MAX_MODULE_LINES, encoding="utf-8")
    assert oversized(long_module, tmp_path) == {
        "long.py": f"module of {MAX_MODULE_LINES + 1} lines"
    }
    assert oversized(explained, tmp_path) == {}
    assert oversized(limit, tmp_path) == {}
