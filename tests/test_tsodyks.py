"""Short-term plasticity (rv.TsodyksMarkram: NEST's tsodyks_synapse, cpp/synapses/tsodyks.cpp).

- Against NEST 3.10 itself (skipped without it): one source with an irregular train onto
  iaf_psc_exp targets, one parameter set each (depressing, facilitating, another initial
  state, inhibitory): every synapse's u, x, y after the run equal NEST's to 1e-12 relative (they
  are the same operations: bit for bit here), the targets spike in the same steps, and their
  membrane potential differs from NEST's by no more than the fixed point of synaptic input
  allows (each delivered efficacy rounded to 2^-fraction_bits pA).
- The network of tests/mpi_runner.py (model "tsodyks"): identical spikes and synapse state for
  1 and 2 threads, every placement, 1 and 2 ranks; a checkpoint resumed gives the uninterrupted
  run's spikes and state.
- Bad parameters are refused before anything is built, naming the field.
"""
from __future__ import annotations

import numpy as np
import pytest

import ranvier as rv
from conftest import counters, spikes_per_population
from ranvier.errors import ConfigError

H = 0.1
W_PA = 900.0
DELAY_MS = 1.5
I_E_PA = 340.0                 # V_inf 13.6 mV above rest, threshold at 15: the input makes the spikes
# (U, tau_psc, tau_rec, tau_fac, u0, x0, y0, sign)
SETS = {
    "depressing": (0.5, 3.0, 800.0, 0.0, 0.0, 1.0, 0.0, 1.0),          # NEST's defaults
    "facilitating": (0.1, 2.0, 100.0, 1000.0, 0.0, 1.0, 0.0, 1.0),
    "initial-state": (0.3, 5.0, 50.0, 20.0, 0.2, 0.7, 0.1, 1.0),
    "inhibitory": (0.4, 4.0, 300.0, 100.0, 0.0, 1.0, 0.0, -1.0),
}


def train_ms() -> np.ndarray:
    """An irregular train: bursts (1.3 ms apart) and pauses (up to 150 ms), 120 spikes."""
    rng = np.random.default_rng(3)
    t = np.cumsum(rng.choice([1.3, 2.7, 5.0, 17.9, 61.3, 150.2], size=120))
    return np.unique(np.round(t / H) * H).round(1)


def nest_run(times, duration_ms):
    import nest
    nest.ResetKernel()
    nest.verbosity = nest.VerbosityLevel.ERROR
    nest.resolution = H
    gen = nest.Create("spike_generator", params={"spike_times": times})
    parrot = nest.Create("parrot_neuron")
    nest.Connect(gen, parrot, syn_spec={"delay": H})
    rec = nest.Create("spike_recorder")
    nest.Connect(parrot, rec)
    targets = []
    for U, tau_psc, tau_rec, tau_fac, u0, x0, y0, sign in SETS.values():
        n = nest.Create("iaf_psc_exp", params={"I_e": I_E_PA, "tau_syn_ex": tau_psc, "tau_syn_in": tau_psc})
        nest.Connect(parrot, n, syn_spec={"synapse_model": "tsodyks_synapse", "weight": sign * W_PA,
                                          "delay": DELAY_MS, "U": U, "tau_psc": tau_psc, "tau_rec": tau_rec,
                                          "tau_fac": tau_fac, "u": u0, "x": x0, "y": y0})
        targets.append(n)
    everyone = targets[0]
    for n in targets[1:]:
        everyone = everyone + n
    meter = nest.Create("multimeter", params={"record_from": ["V_m"], "interval": H})
    nest.Connect(meter, everyone)
    spikes = nest.Create("spike_recorder")
    nest.Connect(everyone, spikes)
    nest.Simulate(duration_ms)
    state = [np.array([nest.GetConnections(parrot, n).get(k) for k in ("u", "x", "y")], dtype=float) for n in targets]
    ev, sp = meter.get("events"), spikes.get("events")
    V = [ev["V_m"][ev["senders"] == n.global_id] - n.get("E_L") for n in targets]
    fired = [np.rint(sp["times"][sp["senders"] == n.global_id] / H).astype(np.int64) for n in targets]
    return rec.get("events")["times"], state, V, fired


def ranvier_network(parrot_ms):
    net = rv.Network()
    net.add_population(rv.Population("pre", 1, {"spike_times_ms": [list(parrot_ms)]}, model="spike_train"))
    for name, (U, tau_psc, tau_rec, tau_fac, u0, x0, y0, sign) in SETS.items():
        # NEST's iaf_psc_exp defaults; the synaptic time constant is the synapse's tau_psc
        net.add_population(rv.Population(name, 1, {"I_e_pA": I_E_PA, "tau_syn_ex_ms": tau_psc,
                                                   "tau_syn_in_ms": tau_psc}, model="psc_exp"))
        net.connect(rv.Projection(source="pre", target=name, sources=[0], targets=[0], weight=sign * W_PA,
                                  delay_ms=DELAY_MS,
                                  synapse=rv.TsodyksMarkram(U=U, tau_psc_ms=tau_psc, tau_rec_ms=tau_rec,
                                                            tau_fac_ms=tau_fac, u0=u0, x0=x0, y0=y0)))
    return net


def test_state_spikes_and_membrane_match_nest():
    pytest.importorskip("nest")
    times = train_ms()
    duration = round(float(np.ceil((times[-1] + 50.0) / DELAY_MS) * DELAY_MS), 1)   # whole cycles
    parrot, nest_state, nest_V, nest_fired = nest_run(times, duration)
    assert parrot.size == times.size
    net = ranvier_network(parrot)
    sim = rv.Simulation(net, threads=1, seed=1, resolution_ms=H, record_state=[1, 2, 3, 4])
    res = sim.run(duration)
    first = {name: net.population(name).first_id for name in SETS}
    q = 2.0 ** -sim.fraction_bits                     # the fixed point of synaptic input, pA
    for k, name in enumerate(SETS):
        s = sim.synapse_state("pre", name)
        ours = np.array([s["u"][0], s["x"][0], s["y"][0]])
        theirs = nest_state[k].ravel()
        assert np.all(np.abs(ours - theirs) <= 1e-12 * np.abs(theirs)), (name, ours, theirs)
        assert s["weight"][0] == SETS[name][7] * W_PA               # the weight itself never changes
        assert sim.weights("pre", name, up_to_date=True).weight[0] == SETS[name][7] * W_PA
        fired = res.spike_steps[res.spike_ids == first[name]]
        assert np.array_equal(fired, nest_fired[k]), (name, fired, nest_fired[k])
        assert fired.size > 0 or SETS[name][7] < 0, name                # the excitatory ones fire
        # V at the end of each step; NEST's multimeter starts at the first step, so does the trace.
        # Each delivered efficacy is rounded to q/2 at most; a jump of 1 pA in the synaptic current
        # moves V by at most tau_psc / C_m (250 pF) mV, and a spike resets V: the error is below
        # (spikes delivered) q/2 tau_psc / C_m.
        ours_V = np.asarray(res.state["V"][k])
        n = min(ours_V.size, nest_V[k].size)
        worst = float(np.max(np.abs(ours_V[:n] - nest_V[k][:n])))
        bound = parrot.size * (q / 2) * SETS[name][1] / 250.0
        assert worst <= bound, (name, worst, bound)
        print(f"{name}: u x y {ours} (NEST {theirs}), {fired.size} spikes, V deviates {worst:.3g} mV "
              f"(bound {bound:.3g})")
    assert sum(np.count_nonzero(res.spike_ids == i) for i in first.values()) > 20


# -- the invariance network (tests/mpi_runner.py, model "tsodyks") ------------------------------
RUN = dict(model="tsodyks", neurons=500, synapses=40, ms=200.0)
PROJECTIONS = ("E_to_E", "E_to_I", "I_to_E")


def same_state(run, ref, what):
    assert np.array_equal(run["ids"], ref["ids"]) and np.array_equal(run["steps"], ref["steps"]), what
    for name in PROJECTIONS:
        for k in ("source", "target", "weight", "delay_ms", "u", "x", "y"):
            key = f"synapse_state_{name}_{k}"
            assert np.array_equal(run[key], ref[key]), (what, key)


@pytest.fixture(scope="module")
def reference(workloads):
    return workloads(1, threads=1, placement="round-robin", **RUN)


def test_reference_is_not_trivial(reference):
    ref = reference
    by_population = spikes_per_population(ref)
    assert np.all(by_population[:2] > 200), by_population        # E and I fire
    for name in PROJECTIONS:
        x = ref[f"synapse_state_{name}_x"]
        assert x.size > 1000 and np.count_nonzero(x < 0.99) > x.size // 2, name     # resources were used
    assert np.all(ref["synapse_state_I_to_E_weight"] < 0)
    assert counters(ref)["synaptic_events_recurrent"] > 50_000


@pytest.mark.parametrize("ranks,threads,placement", [(1, 2, "round-robin"), (1, 2, "block"), (1, 1, "random"),
                                                     (2, 1, "round-robin"), (2, 2, "by-area")])
def test_spikes_and_state_identical_for_any_decomposition(workloads, reference, ranks, threads, placement):
    run = workloads(ranks, threads=threads, placement=placement, **RUN)
    assert run["ranks"] == ranks
    same_state(run, reference, f"ranks={ranks} threads={threads} {placement}")


def test_resumed_checkpoint_gives_the_uninterrupted_run(workloads, reference, tmp_path):
    from conftest import run_workload
    ck = tmp_path / "ck"
    continued = run_workload(1, tmp_path, **RUN, save_at_ms=120.0, checkpoint=str(ck))
    resumed = run_workload(1, tmp_path, **RUN, threads=2, placement="block", resume=str(ck))
    same_state(continued, reference, "saved")
    same_state(resumed, reference, "resumed")


def test_state_after_a_resume_without_run_is_the_saved_state(tmp_path):
    """The state columns are each synapse's own: a checkpoint saved and resumed at once reads
    back every u, x, y as saved (not only the first)."""
    net = ranvier_network(train_ms())
    sim = rv.Simulation(net, threads=1, seed=1)
    sim.run(300.0)
    sim.save(tmp_path / "ck")
    again = rv.Simulation.resume(tmp_path / "ck", threads=2)
    for name in SETS:
        a, b = sim.synapse_state("pre", name), again.synapse_state("pre", name)
        for k in ("u", "x", "y"):
            assert a[k][0] == b[k][0], (name, k)
        assert 0 < a["x"][0] < 1


# -- bad parameters --------------------------------------------------------------------------
@pytest.mark.parametrize("kw, words", [
    (dict(U=1.5), "'U' must lie in [0, 1]"),
    (dict(U=-0.1), "'U' must lie in [0, 1]"),
    (dict(tau_psc_ms=0.0), "'tau_psc_ms' must be positive"),
    (dict(tau_rec_ms=-1.0), "'tau_rec_ms' must be positive"),
    (dict(tau_fac_ms=-1.0), "'tau_fac_ms' must be at least 0"),
    (dict(tau_psc_ms=5.0, tau_rec_ms=5.0), "divides by tau_psc - tau_rec"),
    (dict(u0=2.0), "'u0' must lie in [0, 1]"),
    (dict(x0=0.8, y0=0.3), "'x0' + 'y0' must be at most 1"),
    (dict(y0=-0.1), "'y0' must be at least 0"),
    (dict(U="half"), "'U' must be a finite number"),
])
def test_bad_parameters_are_refused_naming_the_field(kw, words):
    net = rv.Network()
    net.add_population(rv.Population("E", 10, {}, model="psc_exp"))
    with pytest.raises(ConfigError) as e:
        net.connect(rv.Projection(source="E", target="E", indegree=2, weight=10.0, delay_ms=1.0,
                                  synapse=rv.TsodyksMarkram(**kw)))
    assert words in str(e.value) and "E->E" in str(e.value), str(e.value)


def test_weights_of_both_signs_are_refused():
    net = rv.Network()
    net.add_population(rv.Population("E", 3, {}, model="psc_exp"))
    with pytest.raises(ConfigError, match="must all have one sign"):
        net.connect(rv.Projection(source="E", target="E", sources=[0, 1], targets=[1, 2], weight=[5.0, -5.0],
                                  delay_ms=1.0, synapse=rv.TsodyksMarkram()))


def test_synapse_state_of_a_static_projection_is_refused():
    net = rv.Network()
    net.add_population(rv.Population("E", 5, {}, model="psc_exp"))
    net.connect(rv.Projection(source="E", target="E", indegree=2, weight=10.0, delay_ms=1.0))
    sim = rv.Simulation(net, threads=1)
    with pytest.raises(ConfigError, match="keeps no per-synapse state"):
        sim.synapse_state("E", "E")


# -- pyNN.ranvier against pyNN.nest ----------------------------------------------------------
def pynn_run(name):
    """A PyNN script with TsodyksMarkramSynapse, excitatory and inhibitory: each target's V (mV)
    and spike times."""
    import importlib
    sim = importlib.import_module(f"pyNN.{name}")
    sim.setup(timestep=H, min_delay=1.0)
    times = train_ms()
    pre = sim.Population(3, sim.SpikeSourceArray(spike_times=[times[k::3].tolist() for k in range(3)]))
    post = sim.Population(4, sim.IF_curr_alpha(tau_syn_E=2.5, tau_syn_I=6.0, i_offset=0.7, tau_refrac=2.0))
    exc = sim.TsodyksMarkramSynapse(weight=4.0, delay=1.0, U=0.4, tau_rec=150.0, tau_facil=0.0)
    inh = sim.TsodyksMarkramSynapse(weight=-1.5, delay=1.5, U=0.2, tau_rec=80.0, tau_facil=300.0)
    sim.Projection(pre, post, sim.AllToAllConnector(), exc, receptor_type="excitatory")
    sim.Projection(pre[0:1], post, sim.AllToAllConnector(), inh, receptor_type="inhibitory")
    post.record(["v", "spikes"])
    sim.run(1500.0)
    block = post.get_data().segments[0]
    v = np.asarray(block.filter(name="v")[0].magnitude).T
    spikes = [np.asarray(st.magnitude) for st in block.spiketrains]
    sim.end()
    return v, spikes


def test_pynn_tsodyks_gives_pynn_nests_membrane_and_spikes():
    """pyNN.nest maps TsodyksMarkramSynapse to tsodyks_synapse with tau_psc the target's
    tau_syn_E or tau_syn_I by receptor type; pyNN.ranvier does the same. IF_curr_alpha: pyNN.nest
    gives IF_curr_exp NEST's precise iaf_psc_exp_ps (spikes off the grid), another model."""
    pytest.importorskip("nest")
    ours_v, ours_spikes = pynn_run("ranvier")
    theirs_v, theirs_spikes = pynn_run("nest")
    assert sum(map(len, theirs_spikes)) > 5
    steps = [[np.rint(t / H).astype(np.int64) for t in spikes] for spikes in (ours_spikes, theirs_spikes)]
    assert all(np.array_equal(a, b) for a, b in zip(*steps)), steps
    n = min(ours_v.shape[1], theirs_v.shape[1])
    worst = float(np.max(np.abs(ours_v[:, :n] - theirs_v[:, :n])))
    print(f"pyNN.ranvier vs pyNN.nest: V deviates {worst:.3g} mV")
    assert worst < 1e-4, worst
