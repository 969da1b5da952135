"""The package is built in floors: stages import only the stages below them.

Two rules, checked on every ``import`` and ``from ... import`` of the package (at module
level or inside a function):

* **Stages.** The top-level stages are listed from the bottom up (:data:`STAGES`); a
  module may import its own stage and those below it, never one above.
* **Floors.** Inside each package the modules are listed from the lowest floor up
  (:data:`FLOORS`); a module imports only siblings on lower floors, and no module below
  the package's ``__init__`` imports the package itself.

Together that rules out import cycles, and a reader can take the package bottom up.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import simdup

PACKAGE_ROOT = Path(simdup.__file__).resolve().parent

#: The stages of the package, from the bottom up. ``simdup`` itself (the version and the
#: lazy public names) may be imported from anywhere.
STAGES = [
    "errors",
    "sizes",
    "packed",
    "progress",
    "atomic",
    "derived",
    "allocator",
    "spill",
    "window",
    "params",
    "model",
    "text",
    "fingerprints",
    "inputs",
    "search",
    "engines",
    "dedupe",
    "index",
    "evaluate",
    "report",
    "serve",
    "cli",
    "__main__",
]

FLOORS = {
    "text": [
        "display",
        "counts",
        "normalize",
        "segment",
        "stopwords",
        "languages",
        "tokens",
        "bytecount",
        "counting",
        "markup",
    ],
    "fingerprints": ["hashing", "weights", "simhash", "listing"],
    "inputs": [
        "names",
        "columns",
        "files",
        "streams",
        "jsonl",
        "lines",
        "tables",
        "walk",
        "gather",
    ],
    "search": [
        "tables",
        "buckets",
        "identical",
        "candidates",
        "exact",
        "verify",
        "groups",
        "plan",
        "result",
        "held",
    ],
    "search/plan": [
        "memory",
        "recall",
        "reach",
        "cosines",
        "seconds",
        "pricing",
        "survey",
        "planner",
        "parts",
        "budget",
        "choice",
    ],
    "engines": ["pool", "local", "dask"],
    "engines/local": ["stored", "counting", "fingerprinting", "tiles", "pairs", "__init__"],
    "engines/dask": [
        "cluster",
        "partitions",
        "inputs",
        "shuffle",
        "joins",
        "stages",
        "__init__",
    ],
    "dedupe": ["keep", "files", "jsonl", "tables"],
    "index": [
        "packing",
        "keys",
        "schema",
        "store",
        "writing",
        "reading",
        "screen",
        "resident",
        "query",
        "optimize",
        "ingest",
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
    "report": [
        "seconds",
        "comparison",
        "plain_table",
        "shown",
        "fields",
        "render",
        "dedupe",
        "html",
    ],
    "report/html": [
        "frame",
        "charts",
        "pair",
        "compare",
        "scan",
        "evaluation",
        "dedupe",
        "__init__",
    ],
    "serve": ["contract", "openapi", "service", "app", "server"],
    "cli": [
        "interrupts",
        "status",
        "output",
        "meter",
        "checked",
        "options",
        "parsed",
        "inputs",
        "guard",
        "pairs",
        "plans",
        "cache",
        "distributed",
        "dedupe_inputs",
        "dedupe_outputs",
        "commands",
        "app",
        "__init__",
    ],
    "cli/commands": ["compare", "dedupe", "eval", "fingerprints", "index", "scan", "serve"],
}


def imported(path: Path) -> set[str]:
    """Return every ``simdup`` module name the file imports (``from a import b``: ``a.b``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.split(".")[0] == "simdup"}


def _sibling_imports(path: Path, package: str, modules: set[str]) -> set[str]:
    """Return the modules of ``simdup.<package>`` that the file imports (``__init__``: itself)."""
    prefix = "simdup." + package.replace("/", ".")
    found: set[str] = set()
    for name in imported(path):
        if not name.startswith(prefix + "."):
            continue
        head = name[len(prefix) + 1 :].split(".")[0]
        found.add(head if head in modules else "__init__")
    return found


def _module_file(package: str, module: str) -> Path:
    """Return the file of a floor: a module, or a subpackage's ``__init__``."""
    folder = PACKAGE_ROOT / package
    if module == "__init__":
        return folder / "__init__.py"
    if (folder / module).is_dir():
        return folder / module / "__init__.py"
    return folder / f"{module}.py"


@pytest.mark.parametrize("package", sorted(FLOORS))
def test_every_module_has_a_floor(package: str) -> None:
    folder = PACKAGE_ROOT / package
    found = {p.stem for p in folder.glob("*.py")} | {
        p.name for p in folder.iterdir() if (p / "__init__.py").exists()
    }
    listed = set(FLOORS[package]) | {"__init__"}
    assert found == listed


def test_every_package_is_listed() -> None:
    packages = {
        p.parent.relative_to(PACKAGE_ROOT).as_posix()
        for p in PACKAGE_ROOT.rglob("__init__.py")
        if p.parent != PACKAGE_ROOT
    }
    assert packages == set(FLOORS)


@pytest.mark.parametrize("package", sorted(FLOORS))
def test_imports_go_only_to_lower_floors(package: str) -> None:
    floors = FLOORS[package]
    if "__init__" not in floors:
        floors = [*floors, "__init__"]
    modules = set(floors)
    upward = []
    for level, module in enumerate(floors):
        for target in sorted(_sibling_imports(_module_file(package, module), package, modules)):
            if target != module and floors.index(target) >= level:
                upward.append(f"{module} imports {target}")
    assert upward == []


def _stage(name: str) -> str | None:
    """Return the stage of a dotted module name under ``simdup`` (None: ``simdup`` itself)."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in STAGES else None


def upward_stage_imports() -> set[str]:
    """Return ``"<stage> imports <stage>"`` for every import of a higher stage."""
    found: set[str] = set()
    for path in PACKAGE_ROOT.rglob("*.py"):
        relative = path.relative_to(PACKAGE_ROOT)
        here = relative.parts[0].removesuffix(".py")
        if here == "__init__":
            continue
        for name in imported(path):
            target = _stage(name)
            if target is not None and STAGES.index(target) > STAGES.index(here):
                found.add(f"{here} imports {target}")
    return found


def test_every_stage_is_listed() -> None:
    stages = {p.name.removesuffix(".py") for p in PACKAGE_ROOT.iterdir()}
    stages = {s for s in stages if not s.startswith("__") or s == "__main__"}
    stages -= {"py.typed"}
    assert stages == set(STAGES)


def test_stages_import_only_lower_stages() -> None:
    assert upward_stage_imports() == set()


def test_the_stage_check_sees_an_upward_import(tmp_path: Path) -> None:
    (tmp_path / "errors.py").write_text("from simdup.cli import main\n")
    names = imported(tmp_path / "errors.py")
    assert {_stage(name) for name in names} == {"cli"}


def test_the_floor_check_sees_an_upward_import(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(
        "from simdup.index import store\ndef f():\n    import simdup.index.handle\n"
        "from simdup.index import open_index\n"
    )
    found = _sibling_imports(path, "index", set(FLOORS["index"]))
    assert found == {"store", "handle", "__init__"}


def test_the_stage_check_reads_the_stage_of_a_name() -> None:
    assert _stage("simdup.search.plan.budget") == "search"
    assert _stage("simdup.model.Skip") == "model"
    assert _stage("simdup.find_duplicates") is None
