"""dpsnn's slow-wave state (regime = "swa", the dpsnn-swa workload): up and down states at
reduced size, none in the awake state, and the awake state's spikes unchanged."""
import hashlib
import json

import numpy as np
import pytest

import ranvier as rv
from conftest import ranvier_cli

# The spikes of dpsnn(neurons=1024, synapses_per_neuron=200), seed 1, 500 ms, hashed by the
# build before the regime parameter existed (commit f58db22): AW must stay exactly that.
AW_SPIKES, AW_HASH = 10995, "59a15080f5bef23d7096b2c0cb95ff1e375186d603b7c00b38f5725be05e9675"


def _hash(result):
    return hashlib.sha256(np.asarray(result.spike_ids, np.int64).tobytes()
                          + np.asarray(result.spike_steps, np.int64).tobytes()).hexdigest()


@pytest.mark.parametrize("extra", [{}, {"regime": "aw"}])
def test_the_awake_state_is_unchanged(extra):
    r = rv.Simulation(rv.models.dpsnn(neurons=1024, synapses_per_neuron=200, **extra), threads=1, seed=1).run(500.0)
    assert r.spike_ids.size == AW_SPIKES and _hash(r) == AW_HASH


def test_reduced_swa_has_up_and_down_states_and_aw_has_none():
    with rv.Simulation(rv.models.dpsnn(neurons=2048, regime="swa"), threads=2) as sim:
        result = sim.run(4000.0)
        assert sim.rate_counts.sum() == result.spikes_total and sim.rate_counts.size == 800   # 5 ms bins
    swa = result.summary()["up_down"]
    assert swa["has_up_down"], swa.get("reason")
    assert 0.5 <= swa["frequency_hz"] <= 2.0
    assert swa["up_states"] >= 3
    assert swa["rate_up_hz"] > 5 * swa["rate_down_hz"]
    assert swa["down_duration"]["mean_ms"] > swa["up_duration"]["mean_ms"] > 30
    aw = rv.Simulation(rv.models.dpsnn(neurons=2048), threads=2).run(4000.0).summary()["up_down"]
    assert not aw["has_up_down"] and "no distinct states" in aw["reason"]
    assert aw["mean_rate_hz"] > 2.0                       # asynchronous, not silent


def test_the_regime_sets_defaults_that_can_still_be_overridden():
    swa = rv.models.dpsnn(neurons=600, synapses_per_neuron=60, regime="swa")
    assert swa.name == "dpsnn-swa" and swa.parameters["g_c_exc_mV_per_ms"] == rv.models.DPSNN_SWA["g_c_exc_mV_per_ms"]
    tuned = rv.models.build("dpsnn-swa", neurons=600, synapses_per_neuron=60, g_c_exc_mV_per_ms=0.3)
    assert tuned.parameters["g_c_exc_mV_per_ms"] == 0.3 and tuned.parameters["J_FF"] == rv.models.DPSNN_SWA["J_FF"]
    assert rv.models.defaults("dpsnn-swa")["regime"] == "swa"
    with pytest.raises(rv.ConfigError, match="'regime'"):
        rv.models.dpsnn(regime="sleep")
    with pytest.raises(rv.ConfigError, match="dpsnn-swa"):
        rv.models.build("dpsnn-swa", regime="aw")


def test_the_run_summary_reports_the_slow_oscillation(tmp_path):
    done = ranvier_cli("run", "dpsnn-swa", "--neurons", "2048", "--duration-ms", "4000", "--energy", "none",
                       "--out", tmp_path / "swa")
    assert done.returncode == 0, done.stderr
    assert "up/down states" in done.stdout and "slow oscillation" in done.stdout
    s = json.loads((tmp_path / "swa" / "summary.json").read_text())
    assert s["model"] == "dpsnn-swa" and s["up_down"]["has_up_down"]
    assert len(s["up_down"]["rate_trace"]["hz"]) == 800              # 4 s in 5 ms bins
