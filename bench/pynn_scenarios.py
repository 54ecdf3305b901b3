"""PyNN's own system tests (test/system/scenarios of the PyNN 0.13.0 source distribution) run
against pyNN.ranvier, the way PyNN's test_nest.py runs them against pyNN.nest: each scenario
function called with the backend module. Prints passed / failed / skipped per scenario file and
why each failure or skip happened.

    python bench/pynn_scenarios.py [--sdist DIR] [--out FILE.md]

The source distribution is downloaded once (pip download --no-binary :all: --no-deps
pyNN==0.13.0) into ~/.cache/ranvier/pynn-0.13.0 unless --sdist (or RANVIER_PYNN_SDIST) names an
unpacked one. tests/test_pynn_scenarios.py runs the same scenarios under pytest.
"""
from __future__ import annotations

import argparse
import ast
import collections
import contextlib
import importlib
import os
import subprocess
import sys
import tarfile
import tempfile
import zlib
from pathlib import Path

VERSION = "0.13.0"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ranvier" / f"pynn-{VERSION}"


def sdist_dir(explicit: str | None = None) -> Path | None:
    """The unpacked PyNN source distribution (downloaded once), or None where it cannot be had."""
    given = explicit or os.environ.get("RANVIER_PYNN_SDIST")
    if given:
        return Path(given)
    if (CACHE / "test" / "system" / "scenarios").is_dir():
        return CACHE
    with tempfile.TemporaryDirectory() as tmp:
        try:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps", "-q",
                            f"pyNN=={VERSION}", "-d", tmp], check=True, capture_output=True, timeout=300)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError):
            return None
        archives = list(Path(tmp).glob("*.tar.gz"))
        if not archives:
            return None
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(archives[0]) as tar:
            top = tar.getnames()[0].split("/")[0]
            members = [m for m in tar.getmembers() if m.name.startswith(f"{top}/test/")]
            tar.extractall(CACHE.parent, members=members, filter="data")
        (CACHE.parent / top).rename(CACHE)
    return CACHE


def examples_dir() -> Path:
    """The `examples/` folder of PyNN's source distribution (RANVIER_PYNN_SDIST's, or downloaded
    once into the cache beside the scenarios)."""
    given = os.environ.get("RANVIER_PYNN_SDIST")
    if given:
        return Path(given) / "examples"
    target = CACHE / "examples"
    if (target / ".complete").exists():
        return target
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps", "-q",
                        f"pyNN=={VERSION}", "-d", tmp], check=True, capture_output=True, timeout=300)
        with tarfile.open(next(Path(tmp).glob("*.tar.gz"))) as tar:
            target.mkdir(parents=True, exist_ok=True)
            for member in tar.getmembers():
                parts = Path(member.name).parts
                if member.isfile() and len(parts) >= 3 and parts[1] == "examples":
                    out = target.joinpath(*parts[2:])
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_bytes(tar.extractfile(member).read())
    (target / ".complete").write_text("")
    return target


def scenarios(root: Path) -> list[tuple[str, str]]:
    """(file, function) of every scenario taking `sim`, found without importing anything."""
    out = []
    for path in sorted((root / "test" / "system" / "scenarios").glob("test_*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test") and \
                    [a.arg for a in node.args.args][:1] == ["sim"]:
                out.append((path.stem, node.name))
    return out


@contextlib.contextmanager
def unseeded_rngs_seeded_by(name: str):
    """PyNN's NumpyRNG() without a seed (the default of every RandomDistribution) seeded from
    `name` instead of the operating system's entropy: the k-th such generator of a scenario gets
    crc32(name) + k. Several scenarios test a statistic of random initial states (scenario3's
    t-test of weights after STDP passes with p < 0.01); with fresh entropy each run they fail now
    and then on any backend, NEST's included, and a test suite must give one answer."""
    import pyNN.random
    base, made, original = zlib.crc32(name.encode()), [0], pyNN.random.NumpyRNG.__init__

    def seeded(self, seed=None, parallel_safe=True):
        if seed is None:
            seed, made[0] = base + made[0], made[0] + 1
        original(self, seed, parallel_safe)

    pyNN.random.NumpyRNG.__init__ = seeded
    try:
        yield
    finally:
        pyNN.random.NumpyRNG.__init__ = original


def run_one(root: Path, module: str, function: str, folder: Path | None = None):
    """('passed' | 'failed' | 'skipped', why) of one scenario with pyNN.ranvier, run in `folder`
    (the files some scenarios write go there; a scratch folder if None)."""
    if folder is None:
        with tempfile.TemporaryDirectory() as tmp:
            return run_one(root, module, function, Path(tmp))
    import _pytest.outcomes as outcomes
    import pyNN.ranvier as backend
    system = str(root / "test" / "system")
    if system not in sys.path:
        sys.path.insert(0, system)
    func = getattr(importlib.import_module(f"scenarios.{module}"), function)
    here = os.getcwd()
    os.chdir(folder)
    try:
        with unseeded_rngs_seeded_by(f"{module}.{function}"):
            func(backend)
    except outcomes.Skipped as e:
        return "skipped", str(e.msg if hasattr(e, "msg") else e)
    except (Exception, outcomes.Failed) as e:
        return "failed", f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:200]
    finally:
        os.chdir(here)
    return "passed", ""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sdist", help="an unpacked PyNN 0.13.0 source distribution")
    ap.add_argument("--out", help="write the table (Markdown) here too")
    args = ap.parse_args(argv)
    import logging
    logging.disable(logging.CRITICAL)                  # the scenarios turn PyNN's debug logging on
    root = sdist_dir(args.sdist)
    if root is None:
        print("the PyNN 0.13.0 source distribution could not be downloaded", file=sys.stderr)
        return 1
    per_file = collections.defaultdict(collections.Counter)
    lines = []
    for module, function in scenarios(root):
        outcome, why = run_one(root, module, function)
        per_file[module][outcome] += 1
        lines.append(f"| {module} | {function} | {outcome} | {why.replace('|', '/')} |")
    table = ["| scenario file | passed | failed | skipped |", "|---|---|---|---|"]
    for module, c in per_file.items():
        table.append(f"| {module} | {c['passed']} | {c['failed']} | {c['skipped']} |")
    total = sum(per_file.values(), collections.Counter())
    table.append(f"| all | {total['passed']} | {total['failed']} | {total['skipped']} |")
    text = "\n".join(table + ["", "| file | scenario | outcome | why |", "|---|---|---|---|"] + lines)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
