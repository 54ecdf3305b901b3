"""Get a data set from its public original and derive Ranvier's files from it.

Each fetch downloads the pinned commit's archive from GitHub, derives the data set's files in a
work folder beside the destination, checks them, and only then moves them into place: a fetch
that fails leaves no half-written data set behind (and says where its work folder is, when it
keeps one to look at).

- sonata-300: the files of AllenInstitute/sonata's `300_pointneurons` example that Ranvier reads,
  each checked against its SHA-256.
- multi-area-model: the model's own code (INM-6/multi-area-model) is run in a virtual
  environment with the package versions the data set was first derived with, by
  derive_multi_area.py (ours), which writes structure.json and structure.npz; its totals and the
  model's label are then checked against the published figures.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from . import DATASETS, DataSet, folder


class FetchError(Exception):
    """A fetch that cannot go on: one line that says why and what to do."""


# -- downloading ----------------------------------------------------------------------------
def download(url: str, to: Path, timeout_s: float = 60.0) -> Path:
    """The file at `url` saved as `to`; an unreachable network or a refused download is one line."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response, open(to, "wb") as out:
            shutil.copyfileobj(response, out, 1 << 20)
    except urllib.error.HTTPError as e:
        raise FetchError(f"cannot download {url}: HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", None) or e
        raise FetchError(f"cannot download {url}: {reason}; fetching needs a connection to GitHub (or copy the "
                         f"data set's folder from a machine that has it, docs/data.md)") from None
    return to


def unpack(archive: Path, to: Path) -> Path:
    """The archive's single top-level folder (GitHub names it REPOSITORY-COMMIT), unpacked into `to`."""
    try:
        with tarfile.open(archive) as tar:
            if not hasattr(tarfile, "data_filter"):       # Python before 3.11.4
                raise FetchError("unpacking needs Python 3.11.4 or later (tarfile's data filter)")
            tar.extractall(to, filter="data")       # no links out of `to`, no absolute paths
    except (tarfile.TarError, OSError) as e:
        raise FetchError(f"cannot unpack the downloaded archive {archive.name}: {e}") from None
    tops = [p for p in to.iterdir()]
    if len(tops) != 1 or not tops[0].is_dir():
        raise FetchError(f"the downloaded archive holds {len(tops)} top-level entries, not one folder")
    return tops[0]


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# -- sonata-300 -----------------------------------------------------------------------------
# Our path -> (the path in the repository's archive, its SHA-256 at the pinned commit). The
# example's Python scripts and its unreadable output/membrane_potential.h5 are left out.
SONATA_300_FILES = {
    "LICENSE.txt": ("LICENSE.txt", "39a0bc5c5d0418375ef65d2f2ac73059505afa912132fd91c34b8b21637ac563"),
    **{f"300_pointneurons/{name}": (f"examples/300_pointneurons/{name}", digest) for name, digest in (
        ("circuit_config.json", "2d6487f8127c102e4bd240dbd93f2c917b46b2776fa46ff9ef356d757f51bb30"),
        ("config.json", "90b849e738f0cc7ae8dafe277807f7e0d62cad98e35579a94a41317b0879a137"),
        ("inputs/external_spike_trains.h5", "c4153b10df21253df6f62b6946b924e2c5c06a19b31ad60c684b5ed70a87eb9f"),
        ("network/external_internal_edge_types.csv", "44f74d64128231821f2201baec95ad1591b99e6411f3a9e3c98545d49497ef2d"),
        ("network/external_internal_edges.h5", "031a45db4887767588d7384a50ec380a0a2c59170f8847ddf27f63bd4016830f"),
        ("network/external_node_types.csv", "df3ca6c3279f77c1771e2e1300a7cccb5351ee88a1398043d2e43c7ada41e9a6"),
        ("network/external_nodes.h5", "71875102577ed64cb21ac32e2bb14b9ab1bd55c98ae9323c1e4138327d015631"),
        ("network/internal_internal_edge_types.csv", "97dfcab731e1d4a990f4b4c12d52725138c1606c3cdc1b9f0b62f3eeea9a5b58"),
        ("network/internal_internal_edges.h5", "9483bf861fbf89252334a2de2b230b303ace94aca9897a8fe1ab5afa7ca1062c"),
        ("network/internal_node_types.csv", "1cdaa82c932822a024c010f8cfbfe5126c1fa2ee489f748684d6910439b05540"),
        ("network/internal_nodes.h5", "332e8902fb69a9e5552062c5e09f18a5b3f2dff0143dd5d8bba703feff6f6241"),
        ("node_sets.json", "ef1a4aa2830e239d7df016b551f733e28739571cb76b63510691d34c184d816c"),
        ("output/spikes.h5", "11bf470bd51c40f959a54403c1e804b2e7775592219194d6fd73458dd726006d"),
        ("simulation_config.json", "7460b8f32acd0eb1f1e6b0cf2111b672d47fef9f9d7919c3c7383c0bedeade2f"),
    )},
    **{f"shared_components/nest_models/{name}": (f"examples/shared_components/nest_models/{name}", digest)
       for name, digest in (
        ("cell_models/472363762_point.json", "43b04d107f56511805981ddf89099d667da99981fd943a9f9593fa990ee2f78a"),
        ("cell_models/472912177_point.json", "7fc21a51874f304d1d93275974be56cad71a619c6ae69e9ba73215a7fd1292a7"),
        ("cell_models/473862421_point.json", "e816db0127a616cb84bc9c0837dd8d98c973317d2b5ad9d4a6a00b1390fef5af"),
        ("cell_models/473863035_point.json", "c05713dca0dbd9ba57dd70eb76cf3c7c2562734cfaa5ede19fc0762a7aef84ea"),
        ("cell_models/473863510_point.json", "c2a1ea8e4456bc28d19e1663051b326c25ca9fd47260c5fe4ea97172d67e8b07"),
        ("synaptic_models/ExcToExc.json", "d914176fd50bd7f565700006a31aa97b79d3ad17cee20c8e5ff2061d5cb74817"),
        ("synaptic_models/ExcToInh.json", "d914176fd50bd7f565700006a31aa97b79d3ad17cee20c8e5ff2061d5cb74817"),
        ("synaptic_models/InhToExc.json", "60536a3ce2c7d65fe6c682a5dabc229acb5597dcda69138151ac482dd0f157ba"),
        ("synaptic_models/InhToInh.json", "60536a3ce2c7d65fe6c682a5dabc229acb5597dcda69138151ac482dd0f157ba"),
    )},
}


def derive_sonata_300(d: DataSet, source: Path, out: Path, work: Path, python: str | None, files=None) -> None:
    for ours, (theirs, digest) in (files or SONATA_300_FILES).items():
        src = source / theirs
        if not src.is_file():
            raise FetchError(f"the archive of {d.repository} at {d.commit[:12]} has no {theirs}")
        if sha256(src) != digest:
            raise FetchError(f"{theirs} in the archive of {d.repository} at {d.commit[:12]} is not the file "
                             f"Ranvier was checked with (SHA-256 differs)")
        (out / ours).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, out / ours)
    _write_readme(d, out, "The example's files as they are at that commit (the Python scripts and the unreadable "
                          "`output/membrane_potential.h5` left out), each checked against its SHA-256. "
                          "`output/spikes.h5` is the reference output of NEST through BMTK's PointNet, in the "
                          "pre-1.0 SONATA spike layout. License: LICENSE.txt.")


# -- multi-area-model -----------------------------------------------------------------------
MULTI_AREA_COMMIT_DATE = "2025-03-21T15:11:16+01:00"
# The environment the data set was first derived in (numpy 1.26 needs a Python of 3.9 to 3.12).
MULTI_AREA_PACKAGES = ("numpy==1.26.4", "scipy==1.13.1", "pandas==2.2.3", "nested_dict==1.61", "dicthash==0.0.2",
                       "future", "matplotlib==3.8.4")
MULTI_AREA_PYTHONS = ((3, 9), (3, 12))
# What the derivation must reproduce: the published neuron count, the synapse total of the
# stabilised K, and the model's dicthash label of its default parameters.
MULTI_AREA_CHECKS = {"populations": 254, "neurons": 4130056.720218072, "synapses": 24126520948.72628,
                     "label": "c2776375839926e8a147b76a82ceab0a"}


def _python_for_environment(python: str | None) -> str:
    """A Python the pinned packages install on: `python`, this one, or python3.12 ... 3.9 on PATH."""
    if python:
        return python
    low, high = MULTI_AREA_PYTHONS
    if low <= sys.version_info[:2] <= high:
        return sys.executable
    for minor in range(high[1], low[1] - 1, -1):
        found = shutil.which(f"python3.{minor}")
        if found:
            return found
    raise FetchError(f"the derivation needs Python 3.{low[1]} to 3.{high[1]} (numpy 1.26.4), and this is "
                     f"{sys.version.split()[0]} with none of those on PATH; give one with --python")


def _run_logged(argv: list, log: Path, what: str, **kw) -> None:
    with open(log, "a") as f:
        f.write(f"$ {' '.join(map(str, argv))}\n")
        f.flush()
        try:
            done = subprocess.run([str(a) for a in argv], stdout=f, stderr=subprocess.STDOUT, check=False, **kw)
        except OSError as e:
            raise FetchError(f"{what}: cannot run {argv[0]}: {e.strerror}") from None
    if done.returncode != 0:
        last = (log.read_text().strip().splitlines() or [""])[-1]
        raise FetchError(f"{what} failed (exit {done.returncode}): {last} (all of its output: {log})")


def derive_multi_area(d: DataSet, source: Path, out: Path, work: Path, python: str | None,
                      environment: bool = True) -> None:
    """structure.json and structure.npz from the model's code in `source`. environment=False:
    `python` already has the packages (no virtual environment is made)."""
    if not (source / "multiarea_model" / "__init__.py").is_file():
        raise FetchError(f"the archive of {d.repository} at {d.commit[:12]} has no multiarea_model package")
    log = work / "derive.log"
    if environment:
        base = _python_for_environment(python)
        _run_logged([base, "-m", "venv", work / "venv"], log, "making the derivation's virtual environment")
        python = str(work / "venv" / "bin" / "python")
        _run_logged([python, "-m", "pip", "install", "--quiet", *MULTI_AREA_PACKAGES], log,
                    "installing the derivation's packages")
    # The model's code wants a config.py (config_template.py) and imports nest only to tell
    # NEST 2 from 3: an empty stand-in does (the structure does not call NEST).
    src = work / "src"
    if source != src:
        source.rename(src)
    (src / "config.py").write_text(f"base_path = {str(src)!r}\ndata_path = {str(work / 'simdata')!r}\n"
                                   "jobscript_template = ''\nsubmit_cmd = None\n")
    (work / "stubs").mkdir(exist_ok=True)
    (work / "stubs" / "nest.py").write_text("# empty stand-in for NEST\n")
    env = dict(os.environ, WORK=str(work), COMMIT=d.commit, COMMIT_DATE=MULTI_AREA_COMMIT_DATE)
    env.pop("PYTHONPATH", None)
    _run_logged([python, Path(__file__).with_name("derive_multi_area.py"), out], log,
                "the derivation (derive_multi_area.py)", cwd=src, env=env)
    check_multi_area(d, out)
    shutil.copyfile(src / "LICENSE.md", out / "LICENSE.md")
    _write_readme(d, out, "`structure.json` and `structure.npz`: the network structure of the multi-area model, "
                          "exported by Ranvier's derive_multi_area.py from the model's own code (`MultiAreaModel` "
                          "in its default configuration, plus the ground-state and the unstabilised variants). "
                          "They are Adapted Material of that repository: CC BY-NC-SA 4.0 (LICENSE.md), "
                          "attribution to the authors of Schmidt et al. 2018 (Brain Struct Funct 223:1409; "
                          "PLOS Comput Biol 14:e1006359) and Schuecker et al. 2017 (PLOS Comput Biol "
                          "13:e1005179). Do not copy them into Ranvier's source tree or package.")


def check_multi_area(d: DataSet, out: Path) -> None:
    """The derived files reproduce the published model: one line naming what differs."""
    import numpy as np

    try:
        provenance = json.loads((out / "structure.json").read_text())["provenance"]
        with np.load(out / "structure.npz", allow_pickle=False) as s:
            got = {"populations": len(s["index"]), "neurons": float(s["N"].sum()),
                   "synapses": float(s["synapses"].sum()), "label": provenance["model_label_dicthash"]}
    except (OSError, KeyError, ValueError) as e:
        raise FetchError(f"the derivation's output in {out} cannot be read: {e}") from None
    for key, expected in MULTI_AREA_CHECKS.items():
        same = got[key] == expected if isinstance(expected, (int, str)) else \
            abs(got[key] - expected) <= 1e-9 * abs(expected)
        if not same:
            raise FetchError(f"the derived data set does not reproduce the model: {key} is {got[key]!r}, "
                             f"expected {expected!r}")
    if provenance.get("commit") != d.commit:
        raise FetchError(f"the derived data set names commit {provenance.get('commit')}, expected {d.commit}")


# -- the fetch ------------------------------------------------------------------------------
def _write_readme(d: DataSet, out: Path, body: str) -> None:
    (out / "README.md").write_text(
        f"# {d.name}: {d.what}\n\n"
        f"Fetched by `{d.fetch_command}` from https://github.com/{d.repository} at commit `{d.commit}` "
        f"(license: {d.license}).\n\n{body}\n\nRanvier's docs/data.md says what reads this folder.\n")


DERIVE = {"sonata-300": derive_sonata_300, "multi-area-model": derive_multi_area}


def fetch(name: str, root: Path | None = None, force: bool = False, python: str | None = None,
          url: str | None = None, say=print, derive_options: dict | None = None) -> Path:
    """The data set `name`, fetched into its folder (below `root`, else where it is looked for);
    a complete one already there is kept unless `force`. `url` replaces the archive's address."""
    d = DATASETS[name]
    target = Path(root) / d.folder if root is not None else folder(name)
    if (target / d.marker).is_file() and not force:
        say(f"{name}: already in {target} (--force fetches it again)")
        return target
    made = [p for p in (target.parent, *target.parent.parents) if not p.exists()]
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FetchError(f"cannot make the data folder {target.parent}: {e.strerror}") from None
    work = Path(tempfile.mkdtemp(prefix=f".{d.folder}-fetch-", dir=target.parent)).resolve()
    try:
        address = url or d.archive_url
        say(f"{name}: downloading {address}")
        source = unpack(download(address, work / "archive.tar.gz"), work / "archive")
        staged = work / "out"
        staged.mkdir()
        say(f"{name}: deriving Ranvier's files (work folder {work})")
        DERIVE[name](d, source, staged, work, python, **(derive_options or {}))
    except BaseException as e:
        if not (isinstance(e, FetchError) and (work / "derive.log").is_file()):
            _remove(work, made)                      # else kept: the message names its log
        raise
    old = target.with_name(f".{target.name}-old") if target.exists() else None
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
        target.rename(old)
    staged.rename(target)
    _remove(work, [])
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    say(f"{name}: in {target}")
    return target


def _remove(work: Path, made: list[Path]) -> None:
    """The work folder, and the empty folders this fetch made for it."""
    shutil.rmtree(work, ignore_errors=True)
    for path in made:
        try:
            path.rmdir()
        except OSError:
            break
