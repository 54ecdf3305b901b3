"""docs/validation.md's table stays true to the repository: every test a row names exists (the
file, and for a `file::name` node the function, found with ast; a parametrized id counts by its
function's name), every full-scale command's bench script exists and the command is the one
another page documents, and every test file that .ci/run runs against NEST or NESTML has a row,
so a new comparison cannot be added without one. Pure Python; each check is fed a fake row it
must reject (the self-checks at the end)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "validation.md"
CI = ROOT / ".ci" / "run"

HEADER = ("what", "reference", "compared quantity and agreement", "test (reduced scale)", "full-scale command")
TEST_REF = re.compile(r"`(tests/[\w./-]+\.py)(?:::([^`\s]+))?`")
COMMAND = re.compile(r"`((?:python bench/|ranvier )[^`]*|ranvier run)`")
CI_REF = re.compile(r"(tests/[\w./-]+\.py)(?:::(\w+))?")
# .ci/run's steps that compare against NEST and NESTML: each starts with such an echo line
CI_SECTIONS = ('echo "== against NEST', 'echo "== NESTML')


def table_rows(text: str) -> list[list[str]]:
    """The cells of each body row of the page's table (the one whose header is HEADER)."""
    lines = text.splitlines()
    for start, line in enumerate(lines):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and tuple(cells) == HEADER:
            break
    else:
        raise AssertionError(f"no table with the columns {' | '.join(HEADER)}")
    rows = []
    for line in lines[start + 2:]:                       # after the header and the |---| line
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def _normalized(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"\\\n", " ", text))


def documented_elsewhere(root: Path) -> str:
    """README.md and every docs page but this one, whitespace and continued lines normalized."""
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    return " ".join(_normalized(p.read_text()) for p in pages if p.is_file() and p.name != "validation.md")


def functions_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def row_problems(rows: list[list[str]], root: Path) -> list[str]:
    """What is wrong with the rows: a row of the wrong width, one that names no test, a test file
    or function that does not exist, a bench script that does not exist, a command no other page
    documents."""
    problems = []
    documented = documented_elsewhere(root)
    for row in rows:
        if len(row) != len(HEADER):
            problems.append(f"row {row[0]!r}: {len(row)} cells, the table has {len(HEADER)}")
            continue
        what, tests, commands = row[0], row[3], row[4]
        refs = TEST_REF.findall(tests)
        if not refs:
            problems.append(f"row {what!r}: names no test (`tests/FILE.py` or `tests/FILE.py::test_name`)")
        for file, node in refs:
            path = root / file
            if not path.is_file():
                problems.append(f"row {what!r}: {file} does not exist")
            elif node and node.split("[")[0] not in functions_of(path):
                problems.append(f"row {what!r}: {file} defines no function {node.split('[')[0]}")
        found = COMMAND.findall(commands)
        if not found and commands not in ("—", "-"):
            problems.append(f"row {what!r}: the command column holds no `python bench/...` or `ranvier ...` "
                            f"command (write — where there is none)")
        for command in found:
            script = re.match(r"python (bench/\S+)", command)
            if script and not (root / script.group(1)).is_file():
                problems.append(f"row {what!r}: {script.group(1)} does not exist")
            if _normalized(command) not in documented:
                problems.append(f"row {what!r}: `{command}` is documented on no other page (copy it from one)")
    return problems


def ci_comparisons(run_text: str) -> list[tuple[str, str]]:
    """(file, node or "") of every test .ci/run runs in its NEST and NESTML steps."""
    lines = run_text.splitlines()
    refs = []
    for marker in CI_SECTIONS:
        starts = [i for i, line in enumerate(lines) if line.startswith(marker)]
        assert len(starts) == 1, f".ci/run has no single step starting {marker!r}"
        end = next((i for i in range(starts[0] + 1, len(lines)) if lines[i].startswith('echo "==')), len(lines))
        section = [(file, node) for line in lines[starts[0] + 1:end] for file, node in CI_REF.findall(line)]
        assert section, f".ci/run's step {marker!r} runs no test file"
        refs += section
    return refs


def uncovered(ci_refs: list[tuple[str, str]], rows: list[list[str]]) -> list[str]:
    """The CI comparisons no row names: a file is covered by a row naming it or a node of it; a
    node by a row naming it or its whole file."""
    named = {ref for row in rows if len(row) == len(HEADER) for ref in TEST_REF.findall(row[3])}
    files = {file for file, _ in named}
    missing = []
    for file, node in ci_refs:
        covered = (file, node) in named or (file, "") in named if node else file in files
        if not covered:
            missing.append(f"{file}::{node}" if node else file)
    return sorted(set(missing))


# -- the page ----------------------------------------------------------------------------------------
def test_every_row_names_tests_and_scripts_that_exist():
    rows = table_rows(PAGE.read_text())
    assert len(rows) >= 20, len(rows)
    problems = row_problems(rows, ROOT)
    assert not problems, "docs/validation.md: " + "; ".join(problems)


def test_every_nest_and_nestml_comparison_of_ci_has_a_row():
    refs = ci_comparisons(CI.read_text())
    assert len(refs) >= 15, refs
    missing = uncovered(refs, table_rows(PAGE.read_text()))
    assert not missing, f"tests .ci/run runs against NEST or NESTML with no row in docs/validation.md: {missing}"


# -- the checks can fail ----------------------------------------------------------------------------------
FAKE_PAGE = """intro

| what | reference | compared quantity and agreement | test (reduced scale) | full-scale command |
|---|---|---|---|---|
| good | NEST | V | `tests/test_good.py::test_real[a-b]`; `tests/test_good.py` | `python bench/real.py --x 1` |
| no file | NEST | V | `tests/test_missing.py` | — |
| no function | NEST | V | `tests/test_good.py::test_imagined` | — |
| no test | NEST | V | none | — |
| no script | NEST | V | `tests/test_good.py` | `python bench/imagined.py` |
| undocumented | NEST | V | `tests/test_good.py` | `python bench/real.py --y 2` |
| no command | NEST | V | `tests/test_good.py` | see elsewhere |
| too narrow | NEST | `tests/test_good.py` |

after the table: | not a row | of it |
"""


def _fake_repository(tmp_path: Path) -> Path:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_good.py").write_text("import pytest\n\n@pytest.mark.parametrize('x', [1])\n"
                                                     "def test_real(x):\n    pass\n")
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "real.py").write_text("")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "validation.md").write_text(FAKE_PAGE)
    (tmp_path / "docs" / "other.md").write_text("```sh\npython bench/real.py \\\n    --x 1\n```\n")
    (tmp_path / "README.md").write_text("# fake\n")
    return tmp_path


def test_the_checks_report_each_bad_row(tmp_path):
    root = _fake_repository(tmp_path)
    rows = table_rows(FAKE_PAGE)
    assert [r[0] for r in rows] == ["good", "no file", "no function", "no test", "no script", "undocumented",
                                    "no command", "too narrow"]
    problems = row_problems(rows, root)
    assert not [p for p in problems if "'good'" in p], problems       # a parametrized node, a continued command
    for what, words in [("no file", "tests/test_missing.py does not exist"),
                        ("no function", "defines no function test_imagined"),
                        ("no test", "names no test"),
                        ("no script", "bench/imagined.py does not exist"),
                        ("undocumented", "documented on no other page"),
                        ("no command", "holds no"),
                        ("too narrow", "3 cells")]:
        assert any(f"row {what!r}" in p and words in p for p in problems), (what, problems)
    assert len(problems) == 8, problems       # "no script" is also undocumented


def test_a_page_without_the_table_is_refused():
    try:
        table_rows("| what | reference |\n|---|---|\n| a | b |\n")
    except AssertionError as e:
        assert "no table with the columns" in str(e)
    else:
        raise AssertionError("a page without the table was accepted")


def test_a_ci_comparison_without_a_row_is_reported():
    run = ('echo "== tests"\npython -m pytest -q tests/test_unrelated.py\n'
           'echo "== against NEST 3.10 (...)"\npip install nest && python -m pytest -q tests/test_good.py \\\n'
           '   tests/test_new_nest.py tests/test_part.py::test_one tests/test_whole.py::test_two\n'
           'echo "== NESTML models (...)"\npython -m pytest -q tests/test_new_nestml.py\n'
           'echo "== build"\npython -m pytest -q tests/test_after.py\n')
    refs = ci_comparisons(run)
    assert refs == [("tests/test_good.py", ""), ("tests/test_new_nest.py", ""), ("tests/test_part.py", "test_one"),
                    ("tests/test_whole.py", "test_two"), ("tests/test_new_nestml.py", "")]
    rows = [["a", "", "", "`tests/test_good.py::test_real`; `tests/test_part.py::test_other`; "
                          "`tests/test_whole.py`", "—"]]
    assert uncovered(refs, rows) == ["tests/test_new_nest.py", "tests/test_new_nestml.py",
                                     "tests/test_part.py::test_one"]
    try:
        ci_comparisons(run.replace('echo "== NESTML', 'echo "== other'))
    except AssertionError as e:
        assert "NESTML" in str(e)
    else:
        raise AssertionError("a .ci/run without its NESTML step was accepted")
