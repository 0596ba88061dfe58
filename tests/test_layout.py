"""The package's layout is its architecture: the path is the import, the folders are the layers,
and imports only go down (no cycles). The rules are those of ``jobs/gridlake/__init__.py``.

The import graph is read from the source (every ``import`` and ``from ... import``, at module
level or inside a function: a lazy import is still a dependency), so nothing is executed.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from gridlake.settings import REPO_ROOT

PACKAGE = REPO_ROOT / "jobs" / "gridlake"

# The layer of each top-level module or subpackage, lowest first (see jobs/gridlake/__init__.py).
LAYERS: dict[str, int] = {
    "": 0,  # the package itself (__init__)
    "settings": 0,
    "spark": 0,
    "deltalog": 0,
    "tabledef": 0,
    "contracts": 0,
    "quality": 0,
    "reference": 0,
    "alerts": 0,
    "contacts": 0,
    "sources": 1,
    "bronze": 2,
    "silver": 3,
    "gold": 4,
    "catalog": 5,
    "serving": 6,
    "ops": 7,
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The gridlake modules a file imports (``from a import b`` counts a.b when it is a module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] != "gridlake":
                continue
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "gridlake")
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}: relative import (write gridlake.<module>)")
    return {m for m in found if m in known}


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: imports_of(path, set(mods)) - {name} for name, path in mods.items()}


def layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else ""
    if top not in LAYERS:
        raise AssertionError(
            f"{module}: top-level module or folder {top!r} has no layer; add it to LAYERS here "
            "and to the list in jobs/gridlake/__init__.py (or move it into a layer's folder)"
        )
    return LAYERS[top]


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle():
    assert cycles(graph()) == []


def test_imports_only_go_down_the_layers():
    upward = [
        f"{m} (layer {layer(m)}) imports {d} (layer {layer(d)})"
        for m, deps in graph().items()
        for d in sorted(deps)
        if layer(d) > layer(m)
    ]
    assert not upward, "\n".join(upward)


def test_the_checks_catch_a_planted_cycle_and_an_upward_import():
    """The two rules above can fail: a cycle and a silver -> gold import, planted in a copy of the
    real graph, are both found."""
    edges = {m: set(d) for m, d in graph().items()}
    edges["gridlake.silver.refine"].add("gridlake.gold.analyze")
    edges["gridlake.gold.analyze"].add("gridlake.silver.refine")
    assert ["gridlake.gold.analyze", "gridlake.silver.refine"] in cycles(edges)
    assert layer("gridlake.gold.analyze") > layer("gridlake.silver.refine")
    with pytest.raises(AssertionError, match="has no layer"):
        layer("gridlake.helpers")


def test_the_path_is_the_import():
    """Every file under jobs/gridlake imports under the name its path gives, from that file."""
    for name, path in modules().items():
        if name.endswith("build_cpu_models"):  # a script: run by path, standard library only
            continue
        module = importlib.import_module(name)
        assert Path(module.__file__).resolve() == path.resolve(), name
    assert not [p for p in (REPO_ROOT / "jobs").glob("*.py")], "jobs/ holds the package only"
