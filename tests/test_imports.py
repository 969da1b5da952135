"""The package's import graph has no cycle: each module imports only modules below it.

Every ``import`` and ``from ... import`` in the package counts, including those inside
functions (a deferred import is how a cycle usually hides).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

import simdup

PACKAGE = Path(simdup.__file__).parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Return each module of the package and the package modules it imports."""
    files = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                for alias in node.names:  # `from simdup.cli import scan` may name a module
                    full = f"{base}.{alias.name}"
                    targets.add(full if full in files else base)
        graph[name] = {t for t in targets if t in files and t != name}
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Return the strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_every_import() -> None:
    graph = import_graph()
    assert "simdup.cli.pairs" in graph["simdup.cli.commands.scan"]
    assert "simdup.cli.distributed" in graph["simdup.cli.commands.scan"]  # inside a function
    assert "simdup.cli" in graph["simdup.__main__"]
    assert graph["simdup.errors"] == set()


def test_no_module_imports_a_module_that_imports_it_back() -> None:
    assert cycles(import_graph()) == []
