"""dpsnn with plasticity="stdp" (docs/workloads/dpsnn.md, "Plasticity"): the four
excitatory-to-excitatory projections get NEST's stdp_synapse rule from the stdp_* model
parameters, the other five stay static; the config file, --set and bad values."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

import ranvier as rv

ROOT = Path(__file__).resolve().parent.parent
SMALL = {"neurons": 1000, "synapses_per_neuron": 100}
PLASTIC = {("F", "F"), ("F", "B"), ("B", "F"), ("B", "B")}
PAIRS = [(s, t) for s in "FBI" for t in "FBI"]


def test_static_by_default_and_with_none():
    for net in (rv.models.dpsnn(**SMALL), rv.models.dpsnn(**SMALL, plasticity=None),
                rv.models.dpsnn(**SMALL, plasticity="none")):
        assert all(pr.synapse is None for pr in net.projections)
        assert net.parameters["plasticity"] == "none"
    assert rv.models.defaults("dpsnn")["plasticity"] == "none"


def test_stdp_on_the_excitatory_to_excitatory_projections_only():
    net = rv.models.dpsnn(**SMALL, plasticity="stdp", stdp_lambda=0.02, stdp_w_max_factor=2.5,
                          stdp_tau_minus_ms=30.0, stdp_pairing="nearest-symmetric")
    p = net.parameters
    plastic = {(pr.source, pr.target): pr.synapse for pr in net.projections if pr.synapse is not None}
    assert set(plastic) == PLASTIC
    for (s, t), syn in plastic.items():
        assert isinstance(syn, rv.STDP)
        assert syn.w_max == pytest.approx(2.5 * p[f"J_{s}{t}"])
        assert (syn.lambda_, syn.alpha, syn.mu_plus, syn.mu_minus, syn.tau_plus_ms, syn.pairing) == \
            (0.02, 1.0, 1.0, 1.0, 20.0, "nearest-symmetric")
    taus = {pop.name: pop.tau_minus_ms for pop in net.populations}
    assert taus["F"] == taus["B"] == 30.0
    # the network is otherwise the static one: same projections, weights and delays
    static = rv.models.dpsnn(**SMALL)
    strip = lambda pr: {k: v for k, v in vars(pr).items() if k != "synapse"}   # noqa: E731
    assert [strip(a) for a in net.projections] == [strip(b) for b in static.projections]


def test_plastic_dpsnn_runs_and_only_the_e_to_e_weights_change():
    net = rv.models.dpsnn(**SMALL, plasticity="stdp")
    sim = rv.Simulation(net, threads=1, seed=3)
    before = {pair: sim.weights(*pair) for pair in PAIRS}
    res = sim.run(200.0)
    assert res.spikes_total > 0
    for pair in PAIRS:
        a, b = before[pair], sim.weights(*pair)
        assert np.array_equal(a.source, b.source) and np.array_equal(a.target, b.target)
        assert np.array_equal(a.delay_ms, b.delay_ms)
        if pair in PLASTIC:
            changed = np.mean(a.weight != b.weight)
            assert changed > 0.5, (pair, changed)
            w_max = 2.0 * net.parameters[f"J_{pair[0]}{pair[1]}"]
            assert b.weight.min() >= 0 and b.weight.max() <= w_max
        else:
            assert np.array_equal(a.weight, b.weight), pair
    # the same network, static: the same synapses, and STDP's initial weights are the static ones
    static = rv.Simulation(rv.models.dpsnn(**SMALL), threads=1, seed=3)
    for pair in PLASTIC:
        s, p = static.weights(*pair), before[pair]
        assert np.array_equal(s.source, p.source) and np.array_equal(s.target, p.target)
        assert np.allclose(s.weight, p.weight, rtol=0, atol=1e-6)   # static ones are fixed point


def run_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "ranvier", "run", *map(str, args)], cwd=cwd,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)


def test_config_file_and_set_reach_the_model(tmp_path):
    example = tomllib.loads((ROOT / "examples" / "dpsnn-stdp.toml").read_text())
    assert example["parameters"]["plasticity"] == "stdp"
    assert set(example["parameters"]) <= set(rv.models.defaults("dpsnn"))
    out = tmp_path / "run"
    r = run_cli(ROOT / "examples" / "dpsnn-stdp.toml", "--neurons", 1000, "--set", "synapses_per_neuron=100",
                "--set", "stdp_lambda=0.05", "--duration-ms", 100, "--threads", 1, "--out", out, "--quiet")
    assert r.returncode == 0, r.stderr
    written = tomllib.loads((out / "config.toml").read_text())["parameters"]
    assert written["plasticity"] == "stdp" and written["stdp_lambda"] == 0.05
    assert written["stdp_w_max_factor"] == 2.0
    # the written config runs again; so does a static run's (its stdp_* hold the defaults)
    again = run_cli(out / "config.toml", "--duration-ms", 100, "--quiet")
    assert again.returncode == 0, again.stderr
    static = tmp_path / "static"
    r = run_cli("dpsnn", "--neurons", 1000, "--set", "synapses_per_neuron=100", "--set", "plasticity=none",
                "--duration-ms", 100, "--threads", 1, "--out", static, "--quiet")
    assert r.returncode == 0, r.stderr
    assert tomllib.loads((static / "config.toml").read_text())["parameters"]["plasticity"] == "none"
    r = run_cli(static / "config.toml", "--duration-ms", 100, "--quiet")
    assert r.returncode == 0, r.stderr
    # --set plasticity=stdp (a bare word) on the command line
    r = run_cli("dpsnn", "--neurons", 1000, "--set", "synapses_per_neuron=100", "--set", "plasticity=stdp",
                "--duration-ms", 100, "--threads", 1, "--quiet")
    assert r.returncode == 0, r.stderr


BAD = [
    ({"plasticity": "hebb"}, "'plasticity' must be \"stdp\""),
    ({"plasticity": 1}, "'plasticity' must be \"stdp\""),
    ({"stdp_lambda": 0.05}, "plasticity=stdp"),                  # stdp_* without plasticity
    ({"plasticity": "stdp", "stdp_lambda": -0.1}, "'stdp_lambda' must be at least 0"),
    ({"plasticity": "stdp", "stdp_alpha": -1}, "'stdp_alpha' must be at least 0"),
    ({"plasticity": "stdp", "stdp_mu_plus": -1}, "'stdp_mu_plus' must be at least 0"),
    ({"plasticity": "stdp", "stdp_tau_plus_ms": 0}, "'stdp_tau_plus_ms' must be positive"),
    ({"plasticity": "stdp", "stdp_tau_minus_ms": -5}, "'stdp_tau_minus_ms' must be positive"),
    ({"plasticity": "stdp", "stdp_w_max_factor": 0}, "'stdp_w_max_factor' must be positive"),
    ({"plasticity": "stdp", "stdp_w_max_factor": 1.5}, "'stdp_w_max_factor' = 1.5 puts w_max below"),
    ({"plasticity": "stdp", "stdp_pairing": "nearest"}, "'stdp_pairing' must be one of"),
    ({"plasticity": "stdp", "stdp_lambda": "fast"}, "'stdp_lambda' must be a number"),
    ({"plasticity": "stdp", "J_FB": -0.4}, "'J_FB'"),
]


@pytest.mark.parametrize("overrides, message", BAD)
def test_bad_values_are_refused_by_name(overrides, message):
    with pytest.raises(rv.ConfigError) as e:
        rv.models.dpsnn(**SMALL, **overrides)
    assert message in str(e.value)


def test_w_max_factor_bound_follows_the_weight_spread():
    # without spread the initial efficacies are J: w_max = J is allowed, below it is not
    rv.models.dpsnn(**SMALL, plasticity="stdp", weight_relative_sd=0.0, stdp_w_max_factor=1.0)
    with pytest.raises(rv.ConfigError, match="use at least 1"):
        rv.models.dpsnn(**SMALL, plasticity="stdp", weight_relative_sd=0.0, stdp_w_max_factor=0.9)
    rv.models.dpsnn(**SMALL, plasticity="stdp", weight_relative_sd=0.05, stdp_w_max_factor=1.32)


@pytest.mark.parametrize("setting, word", [("plasticity=hebb", "plasticity"), ("stdp_lambda=-1", "stdp_lambda"),
                                           ("stdp_pairing=nearest", "stdp_pairing")])
def test_bad_set_is_one_line_and_exit_2(setting, word):
    r = run_cli("dpsnn", "--neurons", 1000, "--set", "synapses_per_neuron=100", "--set", "plasticity=stdp",
                "--set", setting, "--duration-ms", 100)
    assert r.returncode == 2
    assert word in r.stderr and "Traceback" not in r.stderr
