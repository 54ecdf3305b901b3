"""The structure docs/architecture.md describes, checked on the source: no function over 120
lines (the binding table aside), MPI in the communication layer alone and no environment read
inside the engine. (No import cycle among Ranvier's modules: tests/test_package.py.)"""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
CPP = ROOT / "cpp"
MAX_LINES = 120


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
    scopes, out = [], []
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
