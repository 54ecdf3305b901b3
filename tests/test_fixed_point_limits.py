"""Values that go into the engine's fixed-point or narrow fields: exact, or refused before the
build in one line naming the field, its value and the largest (or smallest) that fits.

Synaptic input is summed in 32-bit fixed point at a scale of 2^-fraction_bits chosen per network
(ranvier.core.spec.fraction_bits); a synapse's weight is one such word. A weight beyond the word used
to wrap silently (1e9 mV became -8388608 mV: an excitatory synapse turned inhibitory), and a
weight below half a step was stored as 0. Step counts (refractory periods, intervals, times)
go into 32- or 64-bit integers, counts into fields of their own width.
"""
import re

import numpy as np
import pytest

import ranvier as rv
from ranvier.core import spec
from ranvier.core.network import MAX_NORMAL_DEVIATE

LIF = dict(tau_m_ms=20.0, theta_mV=20.0, reset_mV=10.0, tau_arp_ms=2.0)
# The largest |weight| one 32-bit word holds at the coarsest scale, 2^-8: (2^31 - 1) / 2^8 mV.
LARGEST_AT_COARSEST = (2**31 - 1) / 2.0**spec.MIN_FRACTION_BITS


def e_to_i(weight, **kw):
    """E drives I through one synapse per neuron of this weight; E fires from its constant drive.
    E's own synapses of 1 mV keep the scale fine: a network of huge weights alone packs them at
    a scale coarser than 2^-8, where they fit."""
    net = rv.Network()
    net.add_population(rv.Population("E", 20, dict(LIF, dc_mV_per_ms=5.0)))
    net.add_population(rv.Population("I", 20, dict(LIF)))
    net.connect(rv.Projection(source="E", target="E", weight=1.0, indegree=1, delay_ms=1.0))
    net.connect(rv.Projection(source="E", target="I", weight=weight, indegree=1, delay_ms=1.0, **kw))
    return net


# -- the sign flip ------------------------------------------------------------------------
def test_an_extra_huge_excitatory_projection_is_refused_not_turned_inhibitory():
    """The issue's network: dpsnn plus an extra E->E projection of weight 1e9. It used to build
    with the weight stored as -8388608 mV, which silenced I instead of exciting E."""
    net = rv.models.dpsnn(neurons=500, synapses_per_neuron=20)
    net.connect(rv.Projection(source="F", target="B", weight=1e9, indegree=5, delay_ms=1.0))
    with pytest.raises(rv.ConfigError) as e:
        rv.Simulation(net, threads=1)
    message = str(e.value)
    assert "\n" not in message
    assert "projection F->B" in message and "'weight' = 1e+09 mV" in message
    assert f"{LARGEST_AT_COARSEST:.6g} mV" in message and "2^-8" in message
    assert "chosen per network" in message


def test_the_largest_weight_that_fits_is_stored_with_its_sign():
    for w in (8e6, LARGEST_AT_COARSEST, -LARGEST_AT_COARSEST):
        sim = rv.Simulation(e_to_i(w), threads=1)
        assert sim.fraction_bits == spec.MIN_FRACTION_BITS
        c = sim.connections()
        assert np.all(c.weight[c.target >= 20] == w)         # exact at 2^-8: a multiple of it
    sim = rv.Simulation(e_to_i(8e6), threads=1)
    res = sim.run(20.0)
    assert res.rates()["I"] > 0             # excitation excites


def test_huge_weights_alone_are_packed_at_a_coarser_scale_where_they_fit():
    net = rv.Network()
    net.add_population(rv.Population("A", 40, dict(LIF)))
    net.connect(rv.Projection(source="A", target="A", weight=5e6, weight_sd=1e6, indegree=1, delay_ms=1.0))
    sim = rv.Simulation(net, threads=1)
    assert sim.fraction_bits < spec.MIN_FRACTION_BITS and sim.spec.packed
    assert np.all((sim.connections().weight > 0) & (sim.connections().weight < 1e7))


# The nearest weight above the largest: (2^31 - 1/2) / 2^8 rounds (to even) to 2^31, one too many.
@pytest.mark.parametrize("weight", [1e9, -1e9, np.nextafter(LARGEST_AT_COARSEST + 1 / 512, np.inf)])
def test_a_weight_beyond_the_word_is_refused(weight):
    with pytest.raises(rv.ConfigError, match=r"projection E->I: 'weight' = .* mV does not fit .* the largest "
                                             r"\|weight\| is 8\.38861e\+06 mV"):
        rv.Simulation(e_to_i(weight), threads=1)


def test_drawn_weights_that_reach_beyond_the_word_are_refused():
    """Weights drawn in (0, 2 weight), or weight + 6.5 sd when clipped, must all fit."""
    with pytest.raises(rv.ConfigError, match=r"'weight' = 5e\+06 mV with 'weight_sd' = 1e\+06 mV \(drawn weights "
                                             r"reach 2 x weight: 1e\+07 mV\)"):
        rv.Simulation(e_to_i(5e6, weight_sd=1e6), threads=1)
    with pytest.raises(rv.ConfigError, match=r"reach weight \+ 6\.5 sd, clipped: 1\.15e\+07 mV"):
        rv.Simulation(e_to_i(5e6, weight_sd=1e6, weight_clip=True), threads=1)
    rv.Simulation(e_to_i(4e6, weight_sd=1e6), threads=1)        # 2 x 4e6 fits


def test_a_listed_weight_beyond_the_word_is_named_by_its_entry():
    net = rv.Network()
    net.add_population(rv.Population("A", 4, dict(LIF)))
    net.connect(rv.Projection(source="A", target="A", sources=[0, 1, 2], targets=[1, 2, 3],
                              weight=[0.5, -3e9, 0.1], delay_ms=1.0))
    with pytest.raises(rv.ConfigError, match=r"projection A->A: 'weight\[1\]' = -3e\+09 mV does not fit"):
        rv.Simulation(net, threads=1)


def test_a_plastic_weight_bound_beyond_the_word_is_refused():
    net = e_to_i(1.0, synapse=rv.STDP(w_max=1e9))
    with pytest.raises(rv.ConfigError, match=r"projection E->I: 'w_max' = 1e\+09 mV does not fit"):
        rv.Simulation(net, threads=1)


def test_a_drive_weight_beyond_the_word_is_refused():
    net = e_to_i(1.0)
    net.drive(rv.PoissonDrive("I", n_synapses=1, rate_hz=1.0, weight=1e9))
    with pytest.raises(rv.ConfigError, match=r"external drive of 'I': 'weight' = 1e\+09 mV does not fit"):
        rv.Simulation(net, threads=1)
    net = e_to_i(1.0)
    net.drive(rv.PoissonDrive("I", n_synapses=1, rate_hz=1.0, weight=5e6, weight_sd=1e6))
    reach = 5e6 + MAX_NORMAL_DEVIATE * 1e6
    with pytest.raises(rv.ConfigError, match=re.escape(f"events reach {reach:.6g} mV")):
        rv.Simulation(net, threads=1)


def test_input_sums_that_can_overflow_are_refused():
    """Every weight fits its word, but 400 synapses of 1e5 mV arriving in one step do not fit the
    32-bit sum of a neuron's input (at the coarsest scale); another population's large in-degree
    with small weights does not count against it."""
    net = rv.Network()
    net.add_population(rv.Population("A", 400, dict(LIF)))
    net.add_population(rv.Population("B", 400, dict(LIF)))
    net.connect(rv.Projection(source="A", target="A", weight=0.5, indegree=1, delay_ms=1.0))
    net.connect(rv.Projection(source="A", target="B", weight=1e5, indegree=400, delay_ms=1.0))
    with pytest.raises(rv.ConfigError, match=r"population 'B' can receive .* in one step.*projection A->B: 'weight' "
                                             r"= 100000 mV.*32-bit input sums"):
        rv.Simulation(net, threads=1)
    net = rv.Network()
    net.add_population(rv.Population("A", 400, dict(LIF)))
    net.add_population(rv.Population("B", 400, dict(LIF)))
    net.connect(rv.Projection(source="A", target="A", weight=0.01, indegree=400, delay_ms=1.0))
    net.connect(rv.Projection(source="A", target="B", weight=1e5, indegree=2, delay_ms=1.0))
    rv.Simulation(net, threads=1)


# -- weights that round to zero -------------------------------------------------------------------
def test_a_weight_that_rounds_to_zero_is_refused():
    with pytest.raises(rv.ConfigError, match=r"projection E->I: 'weight' = 1e-12 mV rounds to 0 .*2\^-24 mV"):
        rv.Simulation(e_to_i(1e-12), threads=1)
    # the smallest weights that keep a step at the finest scale
    sim = rv.Simulation(e_to_i(2.0 ** -24), threads=1)
    c = sim.connections()
    assert sim.fraction_bits == 24 and np.all(c.weight[c.target >= 20] == 2.0 ** -24)


def test_a_small_weight_lost_beside_a_large_one_is_refused():
    """A large weight coarsens the whole network's scale; a small weight elsewhere then rounds to 0."""
    net = e_to_i(1e6)
    net.connect(rv.Projection(source="I", target="E", weight=-1e-4, indegree=2, delay_ms=1.0))
    with pytest.raises(rv.ConfigError, match=r"projection I->E: 'weight' = -0\.0001 mV rounds to 0"):
        rv.Simulation(net, threads=1)


def test_listed_weights_that_round_to_zero_are_counted():
    net = rv.Network()
    net.add_population(rv.Population("A", 4, dict(LIF)))
    net.connect(rv.Projection(source="A", target="A", sources=[0, 1, 2, 3], targets=[1, 2, 3, 0],
                              weight=[0.5, 1e-12, 0.0, -1e-13], delay_ms=1.0))
    with pytest.raises(rv.ConfigError, match=r"'weight\[1\]' = 1e-12 mV and 1 more non-zero weight\(s\) round to 0"):
        rv.Simulation(net, threads=1)


def test_a_drive_weight_that_rounds_to_zero_is_refused():
    net = e_to_i(1.0)
    net.drive(rv.PoissonDrive("I", n_synapses=100, rate_hz=10.0, weight=1e-12))
    with pytest.raises(rv.ConfigError, match=r"external drive of 'I': 'weight' = 1e-12 mV rounds to 0"):
        rv.Simulation(net, threads=1)
    net = e_to_i(1.0)
    net.drive(rv.PoissonDrive("I", n_synapses=100, rate_hz=0.0, weight=1e-12))   # no events: nothing lost
    rv.Simulation(net, threads=1)


# -- step counts -----------------------------------------------------------------------------------
def test_a_refractory_period_beyond_the_32_bit_counter_is_refused():
    largest = re.escape(f"{(2**31 - 1) * 0.1:.6g}")
    for value in (1e9, np.array([2.0] * 19 + [1e9]), rv.random.Uniform(1.0, 1e9)):
        net = e_to_i(1.0)
        net.population("I").params["tau_arp_ms"] = value
        with pytest.raises(rv.ConfigError, match=rf"population 'I': 'tau_arp_ms'.* the largest is {largest} ms"):
            rv.Simulation(net, threads=1)


def test_artificial_intervals_beyond_the_engines_draw_are_refused():
    net = rv.Network()
    net.add_population(rv.Population("C", 10, {"isi_min_ms": 1.0, "isi_max_ms": 1e9}, model="artificial"))
    with pytest.raises(rv.ConfigError, match=r"population 'C': 'isi_max_ms' - 'isi_min_ms' .*2\^32 steps"):
        rv.Simulation(net, threads=1)
    net = rv.Network()
    net.add_population(rv.Population("C", 10, {"isi_min_ms": 1e300, "isi_max_ms": 1e300}, model="artificial"))
    with pytest.raises(rv.ConfigError, match=r"population 'C': 'isi_max_ms' = 1e\+300 ms .*steps"):
        rv.Simulation(net, threads=1)


def test_an_ignore_and_fire_period_beyond_the_step_counter_is_refused():
    net = rv.Network()
    net.add_population(rv.Population("C", 10, {"rate_hz": 1e-300}, model="ignore_and_fire"))
    with pytest.raises(rv.ConfigError, match=r"population 'C': 'rate_hz' = 1e-300 .*steps"):
        rv.Simulation(net, threads=1)
    net = rv.Network()
    net.add_population(rv.Population("C", 10, {"rate_hz": 1e-9}, model="ignore_and_fire"))
    rv.Simulation(net, threads=1)             # 1e13 steps: fits


def test_a_poisson_window_beyond_any_run_never_fires():
    """A window bound beyond the step counter lies beyond any run: exact as 'never'."""
    for params in ({"rate_hz": 500.0, "start_ms": 1e300, "stop_ms": 1e301},
                   {"rate_hz": np.full(10, 500.0), "start_ms": np.full(10, 1e300), "stop_ms": np.full(10, 1e301)}):
        net = rv.Network()
        net.add_population(rv.Population("P", 10, params, model="poisson_source"))
        res = rv.Simulation(net, threads=1, resolution_ms=0.01).run(10.0)
        assert res.spike_ids.size == 0
    net = rv.Network()                        # stop far away at a fine resolution: runs to the end
    net.add_population(rv.Population("P", 10, {"rate_hz": 500.0, "stop_ms": 1e17}, model="poisson_source"))
    assert rv.Simulation(net, threads=1, resolution_ms=0.01).run(10.0).spike_ids.size > 0


@pytest.mark.parametrize("model, params", [
    ("spike_train", {"spike_times_ms": [1.0, 1e20]}),
    ("inhomogeneous_poisson", {"rate_times_ms": [0.0, 1e300], "rates_hz": [1.0, 2.0]}),
])
def test_event_times_beyond_the_step_counter_are_refused(model, params):
    net = rv.Network()
    net.add_population(rv.Population("P", 3, params, model=model))
    with pytest.raises(rv.ConfigError, match=r"population 'P': .*1e\+(20|300) ms.*steps of 0\.1 ms.*at most"):
        rv.Simulation(net, threads=1)


def test_current_times_beyond_the_step_counter_are_refused():
    net = rv.Network()
    net.add_population(rv.Population("P", 3, {}, model="psc_exp"))
    net.inject(rv.StepCurrent("P", times_ms=[1.0, 1e20], amplitudes_pA=[100.0, 0.0]))
    with pytest.raises(rv.ConfigError, match=r"current source on 'P': time 1e\+20 ms .*at most"):
        rv.Simulation(net, threads=1)
    net = rv.Network()
    net.add_population(rv.Population("P", 3, {}, model="psc_exp"))
    net.inject(rv.NoiseCurrent("P", mean_pA=10.0, std_pA=1.0, dt_ms=1e300))
    with pytest.raises(rv.ConfigError, match=r"noise current on 'P': dt_ms 1e\+300 ms .*at most"):
        rv.Simulation(net, threads=1)
    net = rv.Network()                        # a noise window that ends beyond any run: to the end
    net.add_population(rv.Population("P", 3, {}, model="psc_exp"))
    net.inject(rv.NoiseCurrent("P", mean_pA=10.0, std_pA=1.0, dt_ms=1.0, stop_ms=1e300))
    rv.Simulation(net, threads=1).run(2.0)


# -- counts ----------------------------------------------------------------------------------------
def test_drive_synapse_counts_are_integers_that_fit():
    with pytest.raises(rv.ConfigError, match=r"external drive of 'I': 'n_synapses' must be a non-negative integer, "
                                             r"got True"):
        e_to_i(1.0).drive(rv.PoissonDrive("I", n_synapses=True, rate_hz=10.0, weight=0.1))
    with pytest.raises(rv.ConfigError, match=r"'n_synapses' = 1180591620717411303424 .*at most 9223372036854775807"):
        e_to_i(1.0).drive(rv.PoissonDrive("I", n_synapses=2**70, rate_hz=0.0, weight=0.1))
    net = e_to_i(1.0)
    d = net.drive(rv.PoissonDrive("I", n_synapses=np.int64(40), rate_hz=10.0, weight=0.1))
    assert type(d.n_synapses) is int and d.n_synapses == 40
    rv.Simulation(net, threads=1).run(1.0)


def test_synapses_beyond_a_threads_32_bit_count_are_refused_before_the_build():
    net = rv.Network()
    net.add_population(rv.Population("A", 10, dict(LIF)))
    net.connect(rv.Projection(source="A", target="A", total_synapses=2**33, weight=1e-3, delay_ms=1.0))
    with pytest.raises(rv.ConfigError, match=r"8\.59e\+09 synapses .* 1 rank\(s\) x 2 thread\(s\); .*2\^32 - 1: "
                                             r".*more threads or ranks"):
        rv.Simulation(net, threads=2, max_memory_bytes=2**50)


def test_plastic_synapses_beyond_a_neurons_24_bit_count_are_refused_before_the_build():
    net = rv.Network()
    net.add_population(rv.Population("A", 2, dict(LIF)))
    net.connect(rv.Projection(source="A", target="A", indegree=2**24, weight=0.01, delay_ms=1.0,
                              synapse=rv.STDP(w_max=0.1)))
    with pytest.raises(rv.ConfigError, match=r"population 'A': 16777216 incoming plastic synapses per neuron.*"
                                             r"2\^24 - 1"):
        rv.Simulation(net, threads=1, max_memory_bytes=2**50)
