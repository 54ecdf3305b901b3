"""The package's layout: no import circle among ranvier's modules.

Every module's imports are read with `ast` (at any depth, so an import inside a function, made
to break a circle at run time, still counts) and the graph of ranvier modules must be acyclic.
`from . import models` is an edge to the module ranvier.models, not to the package; a name
taken from a package's __init__ is an edge to that __init__. The root __init__ holds the state
of the process at import (ROOT_STATE), which modules read from it lazily: those names alone
are not edges (the root imports most modules, so anything else taken from it is a circle).
"""
from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import ranvier

PACKAGE_DIR = Path(ranvier.__file__).resolve().parent
ROOT = "ranvier"
ROOT_STATE = {"_cpus_at_import", "_wait_policy_chosen"}


def module_files() -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, whether it is a package's __init__)."""
    modules = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        modules[".".join(parts)] = (path, is_package)
    return modules


def is_module(name: str, modules) -> bool:
    """A ranvier source module, or a compiled one (ranvier._engine)."""
    if name in modules:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def import_graph() -> dict[str, set[str]]:
    modules = module_files()
    graph = {}
    for name, (path, is_package) in modules.items():
        package = name.split(".") if is_package else name.split(".")[:-1]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names if alias.name.split(".")[0] == ROOT)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[:len(package) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] != ROOT:
                    continue
                for alias in node.names:
                    if is_module(f"{target}.{alias.name}", modules):
                        edges.add(f"{target}.{alias.name}")          # a submodule
                    elif not (target == ROOT and alias.name in ROOT_STATE):
                        edges.add(target)                            # a name from the module (or __init__)
        graph[name] = {e for e in edges if e in modules and e != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
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

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_checker_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_among_ranvier_modules():
    graph = import_graph()
    assert "ranvier.bench.worker" in graph and "ranvier.cli.run" in graph     # the walk sees subpackages
    assert not cycles(graph), f"import circles among ranvier modules: {cycles(graph)}"


def test_the_old_flat_benchmark_modules_are_gone():
    names = module_files()
    for old in ("ranvier.bench_areas", "ranvier.bench_scaling", "ranvier.validation"):
        assert old not in names
    assert names["ranvier.bench"][1], "ranvier.bench is a package"
