"""bench/stdp_compare.py: the plastic dpsnn on Ranvier and NEST. Its model arithmetic (the delay
law and the tree that draws it in NEST, the neuron and drive mapping), its arguments, and runs
at a tiny size: Ranvier alone, and with NEST where `nest` is importable."""
from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
TINY = ["--neurons", "1000", "--synapses-per-neuron", "100", "--duration-ms", "200", "--transient-ms", "50",
        "--threads", "1"]


def _load():
    sys.path.insert(0, str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location("stdp_compare", ROOT / "bench" / "stdp_compare.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("stdp_compare", module)
    spec.loader.exec_module(module)
    return module


sc = _load()


def harness(*args, timeout=600):
    return subprocess.run([sys.executable, str(ROOT / "bench" / "stdp_compare.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def nest_importable() -> bool:
    return subprocess.run([sys.executable, "-c", "import nest"], capture_output=True).returncode == 0


# -- model arithmetic ----------------------------------------------------------------------------
@pytest.mark.parametrize("dmax", [80.0, 20.0, 7.5, 1.0])
def test_delay_tree_draws_the_law_exactly(dmax):
    delays, probs = sc.delay_law(1.0, dmax)
    assert math.isclose(sum(probs), 1.0, rel_tol=1e-12)
    assert delays[0] == 1.0 and delays[-1] == 1.0 + math.ceil(dmax) - 1
    drawn = sc.tree_probabilities(sc.delay_tree(delays, probs))
    assert sorted(drawn) == delays
    assert max(abs(drawn[d] - q) for d, q in zip(delays, probs)) < 1e-12
    # halves of about equal mass: a draw takes few uniforms (log2 of 80 is 6.3)
    def depth(t):
        return 0 if not isinstance(t, tuple) else 1 + max(depth(t[1]), depth(t[2]))
    assert depth(sc.delay_tree(delays, probs)) <= 2 * math.ceil(math.log2(len(delays))) + 1


def test_delay_law_is_ranviers():
    """The law's probabilities against the delays Ranvier's engine draws for dpsnn."""
    import ranvier as rv
    net = rv.models.dpsnn(neurons=2000, synapses_per_neuron=200)
    sim = rv.Simulation(net, threads=1, seed=5)
    c = sim.connections()
    n_exc = sum(p.size for p in net.populations if p.name in ("F", "B"))
    for from_exc, dmax in ((True, 80.0), (False, 20.0)):
        d = c.delay_ms[(c.source < n_exc) == from_exc]
        delays, probs = sc.delay_law(1.0, dmax)
        counts = np.array([np.count_nonzero(np.isclose(d, x)) for x in delays])
        assert counts.sum() == d.size                 # every delay is one of the law's
        expected = np.array(probs) * d.size
        chi2 = float(((counts - expected) ** 2 / expected).sum())
        assert chi2 < len(delays) + 6 * math.sqrt(2 * len(delays)), chi2


def test_neuron_and_drive_mapping():
    import ranvier as rv
    p = rv.models.dpsnn(neurons=1000, synapses_per_neuron=100).parameters
    model, e = sc.nest_neuron(p, "exc")
    assert model == "aeif_psc_delta"
    assert e["C_m"] / e["g_L"] == p["tau_m_exc_ms"] and e["tau_w"] == p["tau_c_exc_ms"]
    assert e["b"] == pytest.approx(e["C_m"] * p["g_c_exc_mV_per_ms"] * p["alpha_c"])
    assert (e["a"], e["Delta_T"], e["E_L"], e["V_th"], e["V_peak"], e["V_reset"], e["t_ref"]) == \
        (0.0, 0.0, 0.0, p["theta_mV"], p["theta_mV"], p["reset_mV"], p["tau_arp_exc_ms"])
    model, i = sc.nest_neuron(p, "inh")         # g_c = 0: lifca is iaf_psc_delta
    assert model == "iaf_psc_delta" and i["tau_m"] == p["tau_m_inh_ms"] and i["t_ref"] == p["tau_arp_inh_ms"]
    assert sc.nest_neuron(p, "exc", "iaf_psc_delta")[0] == "iaf_psc_delta"
    rate, w = sc.nest_drive(p, "exc")           # mean and variance of the shot noise kept
    n, r, m, s = (p["external_synapses"], p["external_rate_exc_hz"], p["external_weight_exc_mV"],
                  p["external_weight_relative_sd"])
    assert rate * w == pytest.approx(n * r * m)
    assert rate * w * w == pytest.approx(n * r * m * m * (1 + s * s))


@pytest.mark.skipif(importlib.util.find_spec("nest") is None, reason="needs NEST (pip install nest-simulator)")
def test_nest_neuron_fires_like_lifca_under_the_drive():
    """1000 unconnected F neurons under the dpsnn drive for 1 s: NEST's aeif_psc_delta (with the
    moment-matched generator) and Ranvier's lifca fire at the same rate."""
    import nest
    import ranvier as rv
    p = rv.models.dpsnn(neurons=1000, synapses_per_neuron=100).parameters
    n, duration = 1000, 1000.0
    model, params = sc.nest_neuron(p, "exc")
    nest.ResetKernel()
    nest.set(resolution=0.1, local_num_threads=1, rng_seed=3)
    pop = nest.Create(model, n, params=params)
    rate, w = sc.nest_drive(p, "exc")
    gen = nest.Create("poisson_generator", params={"rate": rate})
    nest.Connect(gen, pop, "all_to_all", {"weight": w, "delay": 1.0})
    rec = nest.Create("spike_recorder")
    nest.Connect(pop, rec)
    nest.Simulate(duration)
    nest_rate = rec.n_events / n / (duration * 1e-3)

    net = rv.Network(name="drive")
    cell = {"tau_m_ms": p["tau_m_exc_ms"], "theta_mV": p["theta_mV"], "reset_mV": p["reset_mV"],
            "tau_arp_ms": p["tau_arp_exc_ms"], "alpha_c": p["alpha_c"], "tau_c_ms": p["tau_c_exc_ms"],
            "g_c_mV_per_ms": p["g_c_exc_mV_per_ms"], "dc_mV_per_ms": 0.0}
    net.add_population(rv.Population("F", n, cell))
    m = p["external_weight_exc_mV"]
    net.drive(rv.PoissonDrive("F", p["external_synapses"], p["external_rate_exc_hz"], weight=m,
                              weight_sd=p["external_weight_relative_sd"] * m))
    res = rv.Simulation(net, threads=1, seed=3).run(duration)
    ranvier_rate = res.rates()["F"]
    assert 10 < ranvier_rate < 30
    assert nest_rate == pytest.approx(ranvier_rate, rel=0.03)


# -- arguments -----------------------------------------------------------------------------------
def test_defaults():
    a = sc.parse_args([])
    assert (a.neurons, a.synapses_per_neuron, a.duration_ms, a.threads, a.seed) == (20480, 1125, 10000.0, 2, 1)
    assert a.transient_ms == 1000.0 and a.nest_neuron == "aeif_psc_delta" and a.sets == []


@pytest.mark.parametrize("argv, message", [
    (["--neurons", "2"], "--neurons must be at least 3"),
    (["--neurons", "1000"], "--synapses-per-neuron must lie in [0, --neurons = 1000)"),
    (["--threads", "0"], "--threads must be at least 1"),
    (["--duration-ms", "0"], "--duration-ms must be positive"),
    (["--duration-ms", "100.05"], "multiple of the resolution"),
    (["--duration-ms", "200", "--transient-ms", "200"], "--transient-ms must lie in [0,"),
    (["--seed", "0"], "--seed must lie in [1,"),
    (["--set", "neurons=100"], "use --neurons"),
    (["--set", "plasticity=stdp"], "the harness sets 'plasticity' itself"),
    (["--set", "stdp_lambda"], "--set expects KEY=VALUE"),
    (["--skip-nest", "--skip-ranvier"], "leave nothing to run"),
])
def test_bad_arguments_are_refused_clearly(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        sc.parse_args(argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_bad_model_value_is_refused_before_any_run():
    r = harness(*TINY, "--skip-nest", "--set", "stdp_lambda=-1")
    assert r.returncode == 2
    assert "'stdp_lambda' must be at least 0" in r.stderr and "Traceback" not in r.stderr
    assert "ranvier static ..." not in r.stderr


# -- runs ----------------------------------------------------------------------------------------
def _check_ranvier(results: dict):
    static, plastic = results["ranvier_static"], results["ranvier_plastic"]
    assert static["synapses"] == plastic["synapses"] > 0
    for r in (static, plastic):
        assert r["construction_s"] > 0 and r["simulate_s"] > 0 and r["peak_rss_bytes"] > 0
        assert all(r["rates_hz"][k] > 0 for k in ("F", "B", "I", "E", "all"))
        assert r["ee_weights_mV"]["count"] > 0
    # the same E->E synapses; STDP moved their weights
    assert static["ee_weights_mV"]["count"] == plastic["ee_weights_mV"]["count"]
    assert static["ee_weights_mV"]["sd"] != plastic["ee_weights_mV"]["sd"]


def test_ranvier_only_tiny(tmp_path):
    out = tmp_path / "out"
    r = harness(*TINY, "--skip-nest", "--set", "stdp_lambda=0.05", "--out", out)
    assert r.returncode == 0, r.stderr
    assert r.stderr.index("ranvier static") < r.stderr.index("ranvier plastic")
    for label in ("Ranvier static", "Ranvier STDP", "STDP / static", "real-time factor", "bytes per synapse",
                  "peak resident memory", "rate excitatory"):
        assert label in r.stdout
    record = json.loads((out / "stdp_compare.json").read_text())
    assert set(record["results"]) == {"ranvier_static", "ranvier_plastic"}
    assert record["resolved"]["parameters"]["stdp_lambda"] == 0.05
    assert record["resolved"]["plastic_projections"] == ["F->F", "F->B", "B->F", "B->B"]
    _check_ranvier(record["results"])
    row = {r["key"]: r for r in record["table"]}["simulate_s"]
    assert row["ranvier_ratio"] == pytest.approx(row["ranvier_plastic"] / row["ranvier_static"])


@pytest.mark.skipif(not nest_importable(), reason="needs NEST (pip install nest-simulator)")
def test_all_four_runs_tiny(tmp_path):
    out = tmp_path / "out"
    done = harness(*TINY, "--out", out)
    assert done.returncode == 0, done.stderr
    assert "NEST STDP" in done.stdout and "NEST / Ranvier (STDP)" in done.stdout
    order = [done.stderr.index(f"{run} ...") for run in ("ranvier static", "ranvier plastic", "nest static",
                                                         "nest plastic")]
    assert order == sorted(order)
    record = json.loads((out / "stdp_compare.json").read_text())
    results = record["results"]
    assert set(results) == {"ranvier_static", "ranvier_plastic", "nest_static", "nest_plastic"}
    _check_ranvier(results)
    ns, npl = results["nest_static"], results["nest_plastic"]
    assert ns["simulator"].startswith("NEST") and ns["neuron_models"] == \
        {"F": "aeif_psc_delta", "B": "aeif_psc_delta", "I": "iaf_psc_delta"}
    expected = 1000 * 100 * 999 / 1000        # p = K / N over the N (N - 1) ordered pairs
    for r in (ns, npl):
        assert abs(r["synapses"] - expected) < 5 * math.sqrt(expected)
        assert all(r["rates_hz"][k] > 0 for k in ("F", "B", "I"))
        assert r["ee_weights_mV"]["count"] > 0
    assert ns["synapses"] == npl["synapses"]               # the same seed draws the same network
    assert ns["ee_weights_mV"]["sd"] != npl["ee_weights_mV"]["sd"]
    row = {r["key"]: r for r in record["table"]}["peak_rss_mib"]
    assert row["nest_ratio"] == pytest.approx(row["nest_plastic"] / row["nest_static"])
