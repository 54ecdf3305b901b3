"""The engine's settings from the environment (RANVIER_SIMD, RANVIER_RANKS_PER_NODE,
RANVIER_BUILD_GROUPED) are read once, by ranvier.core.options, into the engine's configuration: the
engine reads no environment variable, and a bad value is refused before anything is built,
naming the variable."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import ranvier as rv
from ranvier import _engine
from ranvier.errors import ConfigError
from ranvier.core.options import engine_settings

CPP = Path(__file__).resolve().parent.parent / "cpp"


def small_network():
    net = rv.Network()
    net.add_population(rv.Population("E", 20, dict(tau_m_ms=20.0, theta_mV=20.0, reset_mV=10.0, tau_arp_ms=2.0)))
    net.connect(rv.Projection(source="E", target="E", probability=0.2, weight=0.1, delay_ms=1.0))
    net.drive(rv.PoissonDrive("E", n_synapses=20, rate_hz=10.0, weight=1.0))
    return net


def test_the_engine_reads_no_environment():
    readers = [f"{p.relative_to(CPP)}:{n}" for p in sorted(CPP.rglob("*.[ch]pp"))
               for n, line in enumerate(p.read_text().splitlines(), 1) if re.search(r"\bgetenv\s*\(", line)]
    assert not readers, f"the engine reads the environment at {readers}: read it in ranvier.core.options"


@pytest.mark.parametrize("variable, value", [("RANVIER_SIMD", "avx3"), ("RANVIER_SIMD", "AVX2"),
                                             ("RANVIER_RANKS_PER_NODE", "0"), ("RANVIER_RANKS_PER_NODE", "two"),
                                             ("RANVIER_BUILD_GROUPED", "yes")])
def test_a_bad_value_is_refused_naming_the_variable(variable, value):
    with pytest.raises(ConfigError, match=rf"^{variable}={value!r}"):
        engine_settings({variable: value})


def test_unset_means_the_defaults():
    assert engine_settings({}) == rv.core.options.EngineSettings(simd="best", ranks_per_node=0, grouped_build=False)
    assert engine_settings({"RANVIER_SIMD": "scalar", "RANVIER_RANKS_PER_NODE": "3", "RANVIER_BUILD_GROUPED": "1"}) == \
        rv.core.options.EngineSettings(simd="scalar", ranks_per_node=3, grouped_build=True)


def test_the_settings_reach_the_engine_configuration(monkeypatch):
    monkeypatch.setenv("RANVIER_SIMD", "scalar")
    monkeypatch.setenv("RANVIER_RANKS_PER_NODE", "2")
    monkeypatch.setenv("RANVIER_BUILD_GROUPED", "1")
    cfg = rv.Simulation(small_network(), threads=1)._engine_config(True)
    assert (cfg.simd, cfg.ranks_per_node, cfg.grouped_build) == ("scalar", 2, True)
    monkeypatch.setenv("RANVIER_SIMD", "avx4")
    with pytest.raises(ConfigError, match="RANVIER_SIMD='avx4'"):
        rv.Simulation(small_network(), threads=1)


def test_the_engine_refuses_a_level_it_does_not_know():
    cfg = rv.Simulation(small_network(), threads=1)._engine_config(True)
    cfg.simd = "sse9"
    with pytest.raises(ValueError, match="simd = 'sse9'"):
        _engine.Engine(cfg)


def test_a_run_sets_the_process_kernels_it_was_configured_with(monkeypatch):
    best = _engine.best_simd()
    try:
        monkeypatch.setenv("RANVIER_SIMD", "scalar")
        rv.Simulation(small_network(), threads=1).run(10.0)
        assert _engine.neuron_simd() == "scalar"
        monkeypatch.delenv("RANVIER_SIMD")
        rv.Simulation(small_network(), threads=1).run(10.0)
        assert _engine.neuron_simd() == best
    finally:
        _engine.use_simd("best")
