"""The structure docs/architecture.md describes, checked on the source: no import cycle among
Ranvier's modules (imports inside functions count), no function over 120 lines (the binding
table aside), MPI in the communication layer alone and no environment read inside the engine."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
CPP = ROOT / "cpp"
MAX_LINES = 120


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imported(name: str, path: Path, node, modules) -> set[str]:
    """The modules of ours that an import statement in module `name` loads. `from pkg import
    sub` of a submodule (or the compiled _engine) depends on the submodule, not on pkg's
    __init__: a package is always initialised before its submodules, so that is no cycle."""
    if isinstance(node, ast.Import):
        wanted = [a.name for a in node.names]
    else:
        if node.level:
            package = name if path.name == "__init__.py" else name.rpartition(".")[0]
            parts = package.split(".")
            base = ".".join(parts[:len(parts) - node.level + 1])
            module = f"{base}.{node.module}" if node.module else base
        else:
            module = node.module
        subs = [f"{module}.{a.name}" for a in node.names]
        wanted = [s for s in subs if s in modules]
        if len(wanted) + sum(s.endswith("._engine") for s in subs) < len(subs):
            wanted.append(module)
    out = set()
    for m in wanted:
        while m and m not in modules:
            m = m.rpartition(".")[0]
        if m and m != name:
            out.add(m)
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
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
    return found


def test_no_import_cycle_counting_imports_inside_functions():
    modules = _modules()
    graph = {}
    for name, path in modules.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                deps |= _imported(name, path, node, modules)
        graph[name] = deps
    assert len(graph) > 50                # the walk found the package
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_python_function_over_120_lines():
    long = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert long == []


def _cpp_functions(text: str):
    """(first line, line count, signature) of each function body at namespace or class level: a
    '{' that follows a parameter list ')' (with qualifiers) and is not a control statement."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group()), text, flags=re.S)
    code = re.sub(r'"(\\.|[^"\\\n])*"', '""', code)
    depth, scopes, out = 0, [], []
    for match in re.finditer(r"[{}]", code):
        if match.group() == "{":
            head = code[max(0, match.start() - 400):match.start()]
            head = head[max(head.rfind(";"), head.rfind("}"), head.rfind("{")) + 1:]
            is_function = bool(re.search(r"\)\s*(const|noexcept|override|final|->\s*[\w:<>,\s*&]+|\s)*$", head)) \
                and not re.search(r"\b(if|for|while|switch|catch)\s*\(", head) \
                and not re.search(r"\b(struct|class|enum|union|namespace)\b", head) \
                and not any(scopes)        # a lambda or block inside a function is part of it
            scopes.append(is_function)
            if is_function:
                out.append([code.count("\n", 0, match.start()) + 1, None, " ".join(head.split())[-80:]])
        else:
            if scopes.pop() and out:
                for entry in reversed(out):
                    if entry[1] is None:
                        entry[1] = code.count("\n", 0, match.start()) + 2 - entry[0]
                        break
    return out


def test_no_cpp_function_over_120_lines_but_the_binding_table():
    long = []
    for path in list(CPP.rglob("*.cpp")) + list(CPP.rglob("*.hpp")):
        for first, lines, signature in _cpp_functions(path.read_text()):
            if lines and lines > MAX_LINES and "NB_MODULE" not in signature:
                long.append(f"{path.relative_to(ROOT)}:{first} {signature} ({lines} lines)")
    assert long == []


def test_the_cpp_function_counter_counts_bodies_not_blocks():
    text = "namespace x {\nstruct S {\n  int f() const {\n    if (a) {\n      b();\n    }\n    return 1;\n  }\n};\n" \
           "void g(int a) {\n  auto h = [](int) { return 0; };\n}\n}\n"
    found = [(first, lines) for first, lines, _ in _cpp_functions(text)]
    assert found == [(3, 6), (10, 3)]


def test_mpi_lives_in_the_communication_layer():
    includes = [p.relative_to(ROOT).as_posix() for p in CPP.rglob("*.[ch]pp")
                if re.search(r"#include\s*[<\"]mpi\.h[>\"]", p.read_text())]
    assert includes and all(p.startswith("cpp/comm/") for p in includes), includes
    # Python: the simulator's packages reach MPI through ranvier.runtime only.
    for package in ("core", "io", "models", "pynn", "analysis"):
        for path in (SRC / "ranvier" / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                assert not any(n.split(".")[0] == "mpi4py" for n in names), \
                    f"{path.relative_to(ROOT)}:{node.lineno} imports mpi4py"


def test_the_engine_reads_no_environment_variable():
    readers = [p.relative_to(ROOT).as_posix() for p in CPP.rglob("*.[ch]pp")
               if re.search(r"\b(std::)?(getenv|secure_getenv)\s*\(", p.read_text())]
    assert readers == []
