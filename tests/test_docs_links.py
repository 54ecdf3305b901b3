"""The product documents itself: no file points into folders that exist only on the developers'
machine (the workload notes and the papers once lived in shared/, outside the repository), and
every relative Markdown link resolves to a file of the repository, and its #anchor to a heading.

The repository's own pages for what those folders held: docs/workloads/ and docs/theory.md.
"""
from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# What the checks read: the user-facing files. tests/ is left out: this file names the paths.
SCANNED_FILES = ("README.md", "pyproject.toml", "CMakeLists.txt")
SCANNED_DIRS = ("docs", "src", "examples", "bench", "cpp")
SKIPPED_DIRS = {"__pycache__", "build", "dist", "_skbuild", "results"}

# Machine-local folders, outside the repository: a pointer into them is a dead end for users.
FORBIDDEN = ("shared/models", "shared/seeds", "../shared")

# [text](target) or [text](target "title"); images too. Bare URLs and reference links are not
# relative links.
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(\s*)(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")    # http:, https:, mailto:, ...


def text_files(root: Path):
    """(path, text) of every UTF-8 text file the checks cover; binaries are skipped."""
    paths = [root / name for name in SCANNED_FILES if (root / name).is_file()]
    for top in SCANNED_DIRS:
        base = root / top
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            parts = path.relative_to(root).parts
            if any(p.startswith(".") or p in SKIPPED_DIRS or p.endswith(".egg-info") for p in parts):
                continue
            if path.is_file():
                paths.append(path)
    for path in paths:
        data = path.read_bytes()
        if b"\0" in data:
            continue
        try:
            yield path, data.decode("utf-8")
        except UnicodeDecodeError:
            continue


def prose_lines(text: str, blank_code: bool = True):
    """(line number, line) outside fenced code blocks, with inline code spans blanked out
    (kept with blank_code=False: a heading's anchor includes its code)."""
    fence = None
    for number, line in enumerate(text.splitlines(), start=1):
        m = FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(2)
            elif m.group(2) == fence:
                fence = None
            continue
        if fence is None:
            yield number, INLINE_CODE.sub(lambda c: " " * len(c.group(0)), line) if blank_code else line


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, markup and punctuation dropped, spaces
    to hyphens (letters, digits, '-' and '_' are kept)."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)     # a link in a heading keeps its text
    text = re.sub(r"<[^>]+>", "", text).lower()
    kept = "".join(ch for ch in text if ch in " -_" or unicodedata.category(ch)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for _, line in prose_lines(text, blank_code=False):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def forbidden_mentions(root: Path) -> list[str]:
    found = []
    for path, text in text_files(root):
        if path.suffix == ".json" and "measurements" in path.parts:
            continue              # a run's record: the arguments it was given, where it ran
        for number, line in enumerate(text.splitlines(), start=1):
            for needle in FORBIDDEN:
                if needle in line:
                    found.append(f"{path.relative_to(root)}:{number}: mentions {needle}: {line.strip()}")
    return found


def broken_links(root: Path) -> list[str]:
    """Relative links of the Markdown files that leave the repository, name a missing path, or
    name an anchor that the target page does not have."""
    root = root.resolve()
    pages = {path.resolve(): text for path, text in text_files(root) if path.suffix == ".md"}
    broken = []
    for page, text in pages.items():
        for number, line in prose_lines(text):
            for target in LINK.findall(line):
                if EXTERNAL.match(target):
                    continue
                where = f"{page.relative_to(root)}:{number}: ({target})"
                path_part, _, anchor = target.partition("#")
                path_part = path_part.split("?", 1)[0]
                if path_part.startswith("/"):
                    broken.append(f"{where} is absolute; link relative to the page")
                    continue
                resolved = (page.parent / path_part).resolve() if path_part else page
                if resolved != root and root not in resolved.parents:
                    broken.append(f"{where} points outside the repository")
                    continue
                if not resolved.exists():
                    broken.append(f"{where} does not exist")
                    continue
                if anchor and resolved.suffix == ".md":
                    target_text = pages.get(resolved)
                    if target_text is None:
                        target_text = resolved.read_text(encoding="utf-8")
                    if anchor not in anchors(target_text):
                        broken.append(f"{where}: no heading with anchor #{anchor} in "
                                      f"{resolved.relative_to(root)}")
    return broken


def test_no_file_points_into_machine_local_folders():
    found = forbidden_mentions(ROOT)
    assert not found, ("these folders are not part of the repository; point to docs/workloads/ or "
                       "docs/theory.md instead:\n" + "\n".join(found))


def test_every_relative_markdown_link_resolves():
    broken = broken_links(ROOT)
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_the_workload_pages_exist_and_are_linked_from_the_readme():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for page in ("docs/workloads/README.md", "docs/workloads/dpsnn.md", "docs/workloads/microcircuit.md",
                 "docs/workloads/mam-benchmark.md", "docs/workloads/artificial-cells.md", "docs/theory.md"):
        assert (ROOT / page).is_file(), page
        assert f"]({page})" in readme, f"README.md does not link {page}"


def test_every_registered_model_has_a_workload_page():
    models = pytest.importorskip("ranvier.models")
    index = (ROOT / "docs/workloads/README.md").read_text(encoding="utf-8")
    for name in models.REGISTRY:
        assert (ROOT / "docs/workloads" / f"{name}.md").is_file(), f"no docs/workloads/{name}.md"
        assert f"]({name}.md)" in index, f"docs/workloads/README.md does not list {name}"


def test_every_default_parameter_is_documented_on_its_page():
    models = pytest.importorskip("ranvier.models")
    for name in models.REGISTRY:
        page = (ROOT / "docs/workloads" / f"{name}.md").read_text(encoding="utf-8")
        missing = [key for key in models.defaults(name) if f"`{key}`" not in page]
        assert not missing, f"docs/workloads/{name}.md does not document {missing}"


# -- the checks themselves catch what they are for ------------------------------------------

def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_checker_flags_a_mention_of_a_machine_local_folder(tmp_path):
    root = _tree(tmp_path, {"README.md": "fine\n", "src/pkg/mod.py": '"""See shared/models/x.md."""\n',
                            "examples/a.toml": "# nothing here\n"})
    found = forbidden_mentions(root)
    assert len(found) == 1 and found[0].startswith("src/pkg/mod.py:1:")


def test_checker_flags_missing_outside_and_anchor_links(tmp_path):
    root = _tree(tmp_path, {
        "README.md": "[ok](docs/a.md) [gone](docs/missing.md) [web](https://example.org/x.md)\n"
                     "[anchor](docs/a.md#the-model-k_p) [bad anchor](docs/a.md#nothing) [self](#top)\n"
                     "`[in code](nowhere.md)`\n```\n[in a fence](nowhere.md)\n```\n",
        "docs/a.md": "# Top\n## The `model`: k_P\n[up](../README.md) [escape](../../outside.md)\n",
    })
    broken = broken_links(root)
    assert len(broken) == 4, broken
    assert any("docs/missing.md" in b and "does not exist" in b for b in broken)
    assert any("#nothing" in b for b in broken)
    assert any("#top" in b for b in broken)           # the README has no heading "top"
    assert any("outside the repository" in b for b in broken)


def test_slug_follows_githubs_rules():
    assert slug("3. Communication") == "3-communication"
    assert slug("The `mam-benchmark` workload") == "the-mam-benchmark-workload"
    assert slug("Against NEST on the same machine") == "against-nest-on-the-same-machine"
    assert slug("Rates, irregularity and synchrony (full scale, 3 seeds)") == \
        "rates-irregularity-and-synchrony-full-scale-3-seeds"


def test_every_bench_script_is_listed_on_the_benchmarks_page():
    """docs/benchmarks.md lists the scripts of bench/, each by its name in backticks: a new one
    cannot be added without its line there, nor a listed one removed without the line."""
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    listed = set(re.findall(r"`([A-Za-z0-9_]+\.(?:py|c|cpp))`", page))
    present = {p.name for p in (ROOT / "bench").iterdir() if p.suffix in (".py", ".c", ".cpp")}
    assert present - listed == set(), f"bench/ scripts missing from docs/benchmarks.md: {sorted(present - listed)}"
    assert listed - present == set(), f"docs/benchmarks.md lists scripts bench/ lacks: {sorted(listed - present)}"
