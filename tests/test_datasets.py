"""The data sets Ranvier reads but does not ship (ranvier.datasets, docs/data.md): where they are
looked for, the one line a model or a command gives without them, and `python -m
ranvier.datasets fetch` offline: argument handling, an unreachable network, a data set already
there, unpacking and checking a downloaded archive (a local one), and the multi-area derivation
run on a stand-in for the model's repository built from the data set itself (where it is here).
"""
from __future__ import annotations

import json
import socket
import sys
import tarfile
import urllib.error
from pathlib import Path

import data_sets
import numpy as np
import pytest
from conftest import assert_bad_input

from ranvier import datasets
from ranvier.datasets import __main__ as datasets_cli
from ranvier.errors import ConfigError
from ranvier.datasets import fetch as fetching


@pytest.fixture
def no_network(monkeypatch):
    """Every download fails as on a machine without a name server."""
    def unreachable(url, timeout=None):
        raise urllib.error.URLError(socket.gaierror(-2, "Name or service not known"))
    monkeypatch.setattr(fetching.urllib.request, "urlopen", unreachable)


@pytest.fixture
def empty_root(tmp_path, monkeypatch):
    root = tmp_path / "data-root"
    root.mkdir()
    monkeypatch.setenv(datasets.ROOT_ENV, str(root))
    monkeypatch.delenv("RANVIER_MULTI_AREA_DATA", raising=False)
    return root


# -- where the data sets are looked for -----------------------------------------------------------
def test_the_data_root_is_the_variable_else_data_in_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.delenv(datasets.ROOT_ENV, raising=False)
    monkeypatch.delenv("RANVIER_MULTI_AREA_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    assert datasets.data_root() == Path("data")
    assert datasets.folder("sonata-300") == Path("data/sonata")
    assert not datasets.present("sonata-300")
    (tmp_path / "data/sonata/300_pointneurons").mkdir(parents=True)
    (tmp_path / "data/sonata/300_pointneurons/simulation_config.json").write_text("{}")
    assert datasets.present("sonata-300")
    monkeypatch.setenv(datasets.ROOT_ENV, str(tmp_path / "elsewhere"))
    assert datasets.folder("multi-area-model") == tmp_path / "elsewhere" / "multi-area-model"
    assert not datasets.present("sonata-300")
    monkeypatch.setenv("RANVIER_MULTI_AREA_DATA", str(tmp_path / "mam"))       # names the folder itself
    assert datasets.folder("multi-area-model") == tmp_path / "mam"


def test_a_missing_data_set_is_one_line_that_says_how_to_get_it(empty_root, tmp_path, capsys):
    reason = datasets.missing("multi-area-model")
    assert str(empty_root / "multi-area-model") in reason
    assert "`python -m ranvier.datasets fetch multi-area-model`" in reason and "docs/data.md" in reason
    out = tmp_path / "out"
    assert_bad_input(["run", "--model", "multi-area", "--duration-ms", "10", "--out", str(out)],
                     "python -m ranvier.datasets fetch multi-area-model", out, capsys)
    with pytest.raises(ConfigError, match="no data set 'nope'; the data sets are multi-area-model, sonata-300"):
        datasets.dataset("nope")


def test_the_tests_skip_what_needs_an_absent_data_set(empty_root):
    """tests/data_sets.py: which documented commands read a data set, and the skip reason."""
    assert data_sets.needed_by("ranvier run --model multi-area --set scale=0.002") == ["multi-area-model"]
    assert data_sets.needed_by("ranvier bench structure-aware multi-area --ranks 2") == ["multi-area-model"]
    assert data_sets.needed_by("python bench/multi_area_nest.py --scale 0.01") == ["multi-area-model"]
    assert data_sets.needed_by("ranvier run data/sonata/300_pointneurons/simulation_config.json") == ["sonata-300"]
    assert data_sets.needed_by("python bench/sonata_300.py --out results/x") == ["sonata-300"]
    for other in ("ranvier run mam-benchmark", "ranvier run examples/multi-area-like.toml",
                  "ranvier run sonata-small/simulation_config.json", "ranvier run dpsnn --out data/x"):
        assert data_sets.needed_by(other) == [], other
    assert "fetch multi-area-model" in data_sets.missing_for("ranvier run --model multi-area")
    assert data_sets.missing_for("ranvier run dpsnn") is None


# -- the command line -----------------------------------------------------------------------------
def run_cli(argv, capsys):
    code = datasets_cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("argv,word", [([], "a command is required"), (["fetch"], "NAME"),
                                       (["fetch", "nope"], "no data set 'nope'"), (["fetch", "all", "--bogus"], "--bogus"),
                                       (["frobnicate"], "invalid choice")])
def test_bad_arguments_are_one_line_status_2(argv, word, capsys, empty_root):
    code, out, err = run_cli(argv, capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("ranvier: error: ") and word in err, err
    assert list(empty_root.iterdir()) == []


def test_list_says_where_each_data_set_is_looked_for(capsys, empty_root):
    code, out, _ = run_cli(["list"], capsys)
    assert code == 0
    for name, d in datasets.DATASETS.items():
        assert f"{name}: {empty_root / d.folder} (missing: python -m ranvier.datasets fetch {name})" in out
        assert d.repository in out and d.commit[:12] in out


def test_without_a_network_fetch_is_one_line_and_leaves_nothing(capsys, tmp_path, monkeypatch, no_network):
    root = tmp_path / "not-yet" / "data"
    monkeypatch.setenv(datasets.ROOT_ENV, str(root))
    code, _, err = run_cli(["fetch", "sonata-300"], capsys)
    assert code == 1
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("ranvier: error: sonata-300: cannot download https://codeload.github.com/"
                          "AllenInstitute/sonata/tar.gz/0ee3ad58df6caec3ac27d24c6777de9af1fd1f3a")
    assert "Name or service not known" in err and "needs a connection to GitHub" in err
    assert not (tmp_path / "not-yet").exists()           # the folders it made for the fetch are gone


def test_a_refused_connection_is_one_line_too(tmp_path):
    with socket.socket() as s:                   # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(fetching.FetchError, match=rf"cannot download http://127.0.0.1:{port}/x.tar.gz: .*refused"):
        fetching.fetch("multi-area-model", root=tmp_path, url=f"http://127.0.0.1:{port}/x.tar.gz", say=lambda _: None)
    assert list(tmp_path.iterdir()) == []


def test_a_data_set_already_there_is_kept(capsys, empty_root, no_network):
    marker = empty_root / "sonata" / "300_pointneurons" / "simulation_config.json"
    marker.parent.mkdir(parents=True)
    marker.write_text("{}")
    code, out, err = run_cli(["fetch", "sonata-300"], capsys)
    assert code == 0 and err == ""
    assert f"sonata-300: already in {empty_root / 'sonata'} (--force fetches it again)" in out
    code, _, err = run_cli(["fetch", "sonata-300", "--force"], capsys)      # --force downloads (and fails here)
    assert code == 1 and "cannot download" in err
    assert marker.read_text() == "{}"                                       # the one there is untouched


# -- unpacking and checking a downloaded archive ----------------------------------------------------
def github_archive(tmp_path: Path, top: str, files: dict[str, bytes]) -> str:
    """A .tar.gz laid out as GitHub's (one top folder), as a file:// address."""
    tree = tmp_path / "tree" / top
    for name, content in files.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_bytes(content)
    archive = tmp_path / f"{top}.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tree, arcname=top)
    return archive.resolve().as_uri()


def test_a_fetch_unpacks_checks_and_then_replaces(tmp_path):
    files = {"LICENSE.txt": b"license\n", "examples/300_pointneurons/simulation_config.json": b"{}\n",
             "examples/unused.py": b"print()\n"}
    table = {"LICENSE.txt": ("LICENSE.txt", fetching.hashlib.sha256(b"license\n").hexdigest()),
             "300_pointneurons/simulation_config.json": ("examples/300_pointneurons/simulation_config.json",
                                                         fetching.hashlib.sha256(b"{}\n").hexdigest())}
    url = github_archive(tmp_path, "sonata-0ee3ad5", files)
    root = tmp_path / "root"
    (root / "sonata").mkdir(parents=True)
    (root / "sonata" / "stale.txt").write_text("from before")          # incomplete: no marker file
    got = fetching.fetch("sonata-300", root=root, url=url, say=lambda _: None, derive_options={"files": table})
    assert got == root / "sonata"
    assert sorted(str(p.relative_to(got)) for p in got.rglob("*") if p.is_file()) == \
        ["300_pointneurons/simulation_config.json", "LICENSE.txt", "README.md"]
    readme = (got / "README.md").read_text()
    assert "AllenInstitute/sonata" in readme and datasets.DATASETS["sonata-300"].commit in readme
    assert [p.name for p in root.iterdir()] == ["sonata"]                  # no work folder left

    # a file that is not the one checked: refused, and the data set there stays as it was
    table["LICENSE.txt"] = ("LICENSE.txt", "0" * 64)
    with pytest.raises(fetching.FetchError, match="LICENSE.txt in the archive of AllenInstitute/sonata at "
                                                  "0ee3ad58df6c is not the file Ranvier was checked with"):
        fetching.fetch("sonata-300", root=root, url=url, force=True, say=lambda _: None,
                       derive_options={"files": table})
    assert (got / "README.md").read_text() == readme
    assert [p.name for p in root.iterdir()] == ["sonata"]


def test_an_archive_that_is_not_one_is_one_line(tmp_path):
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(b"not an archive")
    with pytest.raises(fetching.FetchError, match="cannot unpack the downloaded archive"):
        fetching.fetch("sonata-300", root=tmp_path / "root", url=bad.as_uri(), say=lambda _: None)
    assert not (tmp_path / "root").exists()


@pytest.mark.skipif(not data_sets.present("sonata-300"), reason=datasets.missing("sonata-300"))
def test_the_sonata_fetch_gives_the_data_set_from_the_repositorys_files(tmp_path):
    """The data set here, laid out as the repository's archive: the fetch checks every file against
    the digests Ranvier holds and gives the same folder back."""
    here = data_sets.folder("sonata-300")
    files = {theirs: (here / ours).read_bytes() for ours, (theirs, _) in fetching.SONATA_300_FILES.items()}
    files["examples/300_pointneurons/run_pointnet.py"] = b"# left out\n"
    url = github_archive(tmp_path, f"sonata-{datasets.DATASETS['sonata-300'].commit}", files)
    got = fetching.fetch("sonata-300", root=tmp_path / "root", url=url, say=lambda _: None)
    for ours in fetching.SONATA_300_FILES:
        assert (got / ours).read_bytes() == (here / ours).read_bytes(), ours
    assert not (got / "300_pointneurons" / "run_pointnet.py").exists()


# -- the multi-area derivation ---------------------------------------------------------------------
@pytest.mark.skipif(not data_sets.present("multi-area-model"), reason=datasets.missing("multi-area-model"))
def test_the_check_of_a_derived_multi_area_data_set(tmp_path):
    d = datasets.DATASETS["multi-area-model"]
    here = data_sets.folder("multi-area-model")
    fetching.check_multi_area(d, here)
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "structure.json").write_bytes((here / "structure.json").read_bytes())
    with np.load(here / "structure.npz") as s:
        arrays = {k: s[k] for k in s.files}
    arrays["synapses"] = arrays["synapses"] * (1 + 1e-6)
    np.savez(copy / "structure.npz", **arrays)
    with pytest.raises(fetching.FetchError, match="does not reproduce the model: synapses is"):
        fetching.check_multi_area(d, copy)


# A stand-in for the model's repository: its API (MultiAreaModel, default_params) and the files the
# derivation reads, serving the numbers of the data set here. Not the model's code: what
# derive_multi_area.py calls, so that the derivation and the fetch around it run without the network.
STAND_IN = '''
import json, os
import numpy as np
DATA = {data!r}
J = json.load(open(os.path.join(DATA, "structure.json")))
S = np.load(os.path.join(DATA, "structure.npz"))
AREAS = J["areas"]
POPS = J["populations"]
INDEX = [(a, p) for a in AREAS for p in POPS[a]]

def nested(matrix, extra=None):
    d = {{}}
    for i, (ta, tp) in enumerate(INDEX):
        row = d.setdefault(ta, {{}}).setdefault(tp, {{}})
        for j, (sa, sp) in enumerate(INDEX):
            row.setdefault(sa, {{}})[sp] = float(matrix[i, j])
        if extra is not None:
            row["external"] = {{"external": float(extra[i])}}
    return d

class MultiAreaModel:
    def __init__(self, params):
        c = params.get("connection_params", {{}})
        ground = c.get("cc_weights_factor") == 1.0
        raw = "K_stable" in c and c["K_stable"] is None
        base = os.path.dirname(os.path.abspath(__file__))
        cp = dict(J["connection_params_default"], K_stable=os.path.join(os.path.dirname(base), J["connection_params_default"]["K_stable"]))
        cp.update(c)
        self.area_list, self.structure = AREAS, POPS
        K = S["K_unstabilized"] if raw else S["K"]
        syn = S["synapses_unstabilized"] if raw else S["synapses"]
        self.K_matrix = np.column_stack([K, S["K_ext"]])
        self.N_vec = S["N"]
        self.syn_matrix = np.column_stack([syn, S["synapses_ext"]])
        W = S["W_ground"] if ground else S["W_metastable"]
        self.W_matrix = np.column_stack([W, S["W_ext"]])
        self.W = nested(W, S["W_ext"])
        self.W_sd = nested(S["W_sd_ground"] if ground else S["W_sd_metastable"])
        self.distances = J["delays"]["distances_mm"]
        self.K_areas = J["indegrees"]["K_area_level"]
        labels = J["provenance"]
        self.label = labels["model_label_ground_state_variant"] if ground else \\
            labels["model_label_unstabilized_variant"] if raw else labels["model_label_dicthash"]
        delays, neuron = J["delays"], J["neuron"]
        self.params = {{
            "connection_params": cp,
            "delay_params": {{"delay_e": delays["delay_e_ms"], "delay_i": delays["delay_i_ms"],
                             "delay_rel": delays["delay_rel_sd"], "interarea_speed": delays["interarea_speed_mm_per_ms"]}},
            "input_params": {{"rate_ext": J["external_input"]["rate_ext_per_source_spikes_per_s"]}},
            "neuron_params": {{"neuron_model": neuron["model"], "single_neuron_dict": neuron["params"],
                              "V0_mean": neuron["initial_V_m"]["mean_mV"], "V0_sd": neuron["initial_V_m"]["sd_mV"]}}}}
'''


def stand_in_repository(data: Path) -> dict[str, bytes]:
    info = json.loads((data / "structure.json").read_text())
    rows = ["6I", "6E", "5I", "5E", "4I", "4E", "23I", "23E"]
    m2e = info["reference_rates"]["M2E_pop_rates_ref"]["rates"]
    ref = np.array([[m2e[a].get(p, 0.0) for a in info["areas"]] for p in rows])
    import io
    npy = io.BytesIO()
    np.save(npy, ref)
    return {"multiarea_model/__init__.py": STAND_IN.format(data=str(data.resolve())).encode(),
            "multiarea_model/default_params.py": b"network_params = {}\nsim_params = {'dt': 0.1}\n",
            "tests/fullscale_rates.json": json.dumps(info["reference_rates"]["fullscale_rates_json"]["rates"]).encode(),
            "M2E_pop_rates_ref.npy": npy.getvalue(), "LICENSE.md": b"the model's license\n"}


def assert_same_json(ours, theirs, where="structure.json"):
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and sorted(ours) == sorted(theirs), where
        for key in theirs:
            assert_same_json(ours[key], theirs[key], f"{where}/{key}")
    elif isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same_json(a, b, f"{where}[{i}]")
    elif isinstance(theirs, float):
        assert ours == pytest.approx(theirs, rel=1e-14, abs=0), where
    else:
        assert ours == theirs, where


@pytest.mark.skipif(not data_sets.present("multi-area-model"), reason=datasets.missing("multi-area-model"))
def test_the_multi_area_fetch_derives_the_data_set_from_the_models_api(tmp_path):
    """The fetch unpacks the archive, writes the model's config.py and the stand-in for nest,
    runs derive_multi_area.py against the model's API (here this Python, which has numpy, and a
    stand-in serving the data set's numbers), checks the result and moves it into place: the
    arrays written are the ones served, and the JSON the same but for where it was made (and the
    last digit of totals summed by another numpy)."""
    here = data_sets.folder("multi-area-model")
    d = datasets.DATASETS["multi-area-model"]
    url = github_archive(tmp_path, f"multi-area-model-{d.commit}", stand_in_repository(here))
    got = fetching.fetch("multi-area-model", root=tmp_path / "root", url=url, python=sys.executable,
                         say=lambda _: None, derive_options={"environment": False})
    assert sorted(p.name for p in got.iterdir()) == ["LICENSE.md", "README.md", "structure.json", "structure.npz"]
    with np.load(got / "structure.npz") as ours, np.load(here / "structure.npz") as theirs:
        assert ours.files == theirs.files
        for key in theirs.files:
            assert np.array_equal(ours[key], theirs[key]), key
    ours, theirs = (json.loads((f / "structure.json").read_text()) for f in (got, here))
    for info in (ours, theirs):
        for key in ("python", "packages"):
            info["provenance"].pop(key)
    assert_same_json(ours, theirs)
    assert "CC BY-NC-SA 4.0" in (got / "README.md").read_text()
    assert [p.name for p in (tmp_path / "root").iterdir()] == ["multi-area-model"]


def test_a_failed_derivation_keeps_its_work_folder_and_names_its_log(tmp_path):
    d = datasets.DATASETS["multi-area-model"]
    broken = {"multiarea_model/__init__.py": b"raise ImportError('the stand-in is broken')\n",
              "multiarea_model/default_params.py": b"", "LICENSE.md": b""}
    url = github_archive(tmp_path, f"multi-area-model-{d.commit}", broken)
    with pytest.raises(fetching.FetchError, match=r"the derivation \(derive_multi_area.py\) failed \(exit 1\): "
                                                  r"ImportError: the stand-in is broken \(all of its output: .*derive.log\)"):
        fetching.fetch("multi-area-model", root=tmp_path / "root", url=url, python=sys.executable,
                       say=lambda _: None, derive_options={"environment": False})
    assert not (tmp_path / "root" / "multi-area-model").exists()
    work = [p for p in (tmp_path / "root").iterdir()]
    assert len(work) == 1 and (work[0] / "derive.log").is_file()
