"""The index, eval, HTML and engines packages are built in floors: a module imports only lower ones.

Each package lists its modules from the lowest floor up; every import of a sibling (at
module level or inside a function) must point to a lower floor, and no module below the
package's ``__init__`` imports the package itself. Together that rules out import
cycles inside these packages.

Top-level stages cut into several modules are floors too (:data:`STAGE_FLOORS`): the
planner, the input stage and blocking.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import simdup

PACKAGE_ROOT = Path(simdup.__file__).resolve().parent

FLOORS = {
    "index": [
        "packing",
        "keys",
        "schema",
        "store",
        "writing",
        "reading",
        "query",
        "transfer",
        "handle",
        "__init__",
    ],
    "evaluate": [
        "results",
        "theory",
        "truth",
        "limits",
        "sweep",
        "schemes",
        "report",
        "run",
        "__init__",
    ],
    "html": ["frame", "charts", "pair", "compare", "scan", "evaluation", "__init__"],
    "engines": [
        "partitions",
        "shuffle",
        "joins",
        "cluster",
        "inputs",
        "stages",
        "dask",
        "__init__",
    ],
}

#: Modules of ``simdup`` that make up one stage, from the lowest floor up.
STAGE_FLOORS = {
    "plan": ["recall", "pricing", "plan"],
    "inputs": ["files", "walk", "corpus"],
    "blocking": ["buckets", "blocking"],
}


def _sibling_imports(path: Path, package: str, modules: set[str]) -> set[str]:
    """Return the modules of ``simdup.<package>`` that the file imports (``__init__``: itself)."""
    prefix = f"simdup.{package}"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names = [node.module]
            if node.module == prefix:
                names = [f"{prefix}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            if name == prefix:
                found.add("__init__")
            elif name.startswith(prefix + "."):
                head = name[len(prefix) + 1 :].split(".")[0]
                found.add(head if head in modules else "__init__")
    return found


@pytest.mark.parametrize("package", sorted(FLOORS))
def test_every_module_has_a_floor(package: str) -> None:
    files = {p.stem for p in (PACKAGE_ROOT / package).glob("*.py")}
    assert files == set(FLOORS[package])


@pytest.mark.parametrize("package", sorted(FLOORS))
def test_imports_go_only_to_lower_floors(package: str) -> None:
    floors = FLOORS[package]
    modules = set(floors)
    upward = []
    for level, module in enumerate(floors):
        path = PACKAGE_ROOT / package / f"{module}.py"
        for target in sorted(_sibling_imports(path, package, modules)):
            if floors.index(target) >= level:
                upward.append(f"{module} imports {target}")
    assert upward == []


def test_the_floor_check_sees_an_upward_import(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(
        "from simdup.index import store\ndef f():\n    import simdup.index.handle\n"
        "from simdup.index import open_index\n"
    )
    found = _sibling_imports(path, "index", set(FLOORS["index"]))
    assert found == {"store", "handle", "__init__"}


def _stage_imports(path: Path, modules: set[str]) -> set[str]:
    """Return the modules among ``simdup.<module>`` that the file imports."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names = [node.module]
            if node.module == "simdup":
                names = [f"simdup.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if len(parts) > 1 and parts[0] == "simdup" and parts[1] in modules:
                found.add(parts[1])
    return found


@pytest.mark.parametrize("stage", sorted(STAGE_FLOORS))
def test_stage_modules_import_only_lower_floors(stage: str) -> None:
    floors = STAGE_FLOORS[stage]
    upward = []
    for level, module in enumerate(floors):
        for target in sorted(_stage_imports(PACKAGE_ROOT / f"{module}.py", set(floors))):
            if floors.index(target) >= level:
                upward.append(f"{module} imports {target}")
    assert upward == []


def test_the_stage_check_sees_an_upward_import(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("from simdup.walk import find_files\nfrom simdup import corpus\nimport os\n")
    assert _stage_imports(path, set(STAGE_FLOORS["inputs"])) == {"walk", "corpus"}
