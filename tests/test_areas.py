"""Structure-aware simulation of multi-area models: areas, placements, the two-tier exchange.

- The mam-benchmark model: areas, connection probabilities, Gaussian delays cut at d_min and
  at D * d_min, heterogeneity knobs that keep their means, ignore-and-fire neurons.
- Area placements (by-area, area-groups, balanced): segments that cover every neuron once,
  no padding, groups sized by cost, clear refusals.
- Decomposition invariance: the conventional scheme and the two-tier exchange give the same
  spikes (and the same network instance) for every placement, on 1 to 4 ranks, also with
  area groups of several ranks and with 2 threads per rank.
- The two-tier schedule: one group exchange per cycle, one global exchange per D cycles;
  D = 1 makes exactly as many global exchanges as the conventional scheme.
- Two-tier with overlap (cycles of half the minimum delay, both tiers overlapped): the same
  spikes for every placement and strategy on 1 to 4 ranks, with area groups of several ranks
  and with 2 threads; a burst whose inter-area spikes arrive at the first step the overlapped
  global exchange allows loses nothing; runs that end inside a window.
- The refusal of a global interval longer than the shortest inter-area delay (less one cycle
  with overlap), in Python and in the engine itself.
"""
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import MPI_TIMEOUT_S, ROOT, TESTS, check_balance, counters, mpiexec_path, subprocess_env

import ranvier as rv
from ranvier import _engine
from ranvier.core import placement
from ranvier.bench import restore_cpus
from ranvier.errors import ConfigError

MS = 30.0                  # 300 cycles of 0.1 ms: 30 global exchanges at D = 10
SMALL = dict(model="mam-benchmark", neurons=300, synapses=60, ms=MS)
# Overlap needs an even minimum delay in steps: the same network with d_min = 0.2 ms (inter-area
# delays from 2 ms). Overlapped cycles are 0.1 ms, and D = 20 - 1 = 19.
SMALL_EVEN = dict(SMALL, d_min_ms=0.2)
OVERLAP_BASIC = ("allgather", "two-tier/allgather", "two-tier/alltoallv", "two-tier/p2p-nbx")
TWO_TIER_ALL = tuple(f"two-tier/{e}" for e in _engine.EXCHANGES)
BASIC = ("allgather", "alltoallv", "two-tier/allgather", "two-tier/alltoallv", "two-tier/p2p-nbx")
PLACEMENTS = ("round-robin", "block", "by-area", "area-groups", "balanced")


# -- running the matrix --------------------------------------------------------------------
def mam_sweep(tmp_path: Path, ranks: int, placements, exchanges, overlap: bool = False, **kw) -> dict:
    """{(placement, exchange): run} from one launch of tests/mpi_runner.py."""
    import mpi_runner

    kw = {**SMALL, **kw}
    if ranks == 1:
        return {(p, e): mpi_runner.run_config(placement=p, exchange=e, overlap=overlap, **kw)
                for p in placements for e in exchanges}
    mpiexec = mpiexec_path()
    if mpiexec is None:
        pytest.skip("no mpiexec found (pip install mpich mpi4py)")
    base = tmp_path / f"mam{ranks}_{time.monotonic_ns()}"
    cmd = [mpiexec, "-n", str(ranks), sys.executable, str(TESTS / "mpi_runner.py"), "--out", str(base),
           "--placement", ",".join(placements),
           "--exchange", ",".join(exchanges), "--overlap", str(int(overlap))]
    for key, value in kw.items():
        cmd += [f"--{key.replace('_', '-')}", str(value)]
    proc = subprocess.run(cmd, cwd=ROOT, env=subprocess_env(), capture_output=True, text=True,
                          timeout=MPI_TIMEOUT_S, preexec_fn=restore_cpus)
    runs = {}
    for p in placements:
        for e in exchanges:
            prefix = f"{base}-{p}" if len(placements) > 1 else str(base)
            path = Path(f"{prefix}-{e.replace('/', '+')}-{int(overlap)}.npz")
            if proc.returncode != 0 or not path.exists():
                pytest.fail(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
            with np.load(path) as f:
                runs[(p, e)] = {k: (f[k].item() if f[k].ndim == 0 and k != "digest" else f[k]) for k in f.files}
    return runs


@pytest.fixture(scope="module")
def reference():
    import mpi_runner
    return mpi_runner.run_config(placement="round-robin", exchange="allgather", **SMALL)


def assert_same(runs: dict, reference: dict, cycles: int | None = None):
    """Every run has the reference's network and spikes, balanced counters, and the exchange
    counts of its schedule: `cycles` of its own (by default its duration over its cycle)."""
    failures = []
    for (p, e), run in runs.items():
        if run["digest"] != reference["digest"]:
            failures.append(f"{p} {e}: network instance differs")
        elif not (np.array_equal(run["ids"], reference["ids"]) and np.array_equal(run["steps"], reference["steps"])):
            failures.append(f"{p} {e}: {run['ids'].size} spikes vs {reference['ids'].size}")
        c = counters(run)
        check_balance(c, run["ids"].size)
        per_rank = {str(k): run["counters_per_rank"][:, i] for i, k in enumerate(run["counter_names"])}
        n = cycles if cycles is not None else round(run["duration_ms"] / (run["steps_per_cycle"] * 0.1))
        if e.startswith("two-tier"):
            D = run["global_interval"]
            assert np.all(per_rank["exchanges_local"] == n), (p, e)
            assert np.all(per_rank["exchanges_global"] == math.ceil(n / D)), (p, e)
        else:
            assert np.all(per_rank["exchanges_global"] == n) and np.all(per_rank["exchanges_local"] == 0)
    assert not failures, "\n".join(failures)


# -- invariance -----------------------------------------------------------------------------
@pytest.mark.parametrize("ranks", (1, 2, 3, 4))
def test_every_placement_and_scheme_gives_the_reference_spikes(tmp_path, reference, ranks):
    assert reference["ids"].size > 800
    placements = [p for p in PLACEMENTS if not (p == "by-area" and ranks > 4)]
    runs = mam_sweep(tmp_path, ranks, placements, BASIC, ranks_per_node=2 if ranks > 2 else 0)
    assert_same(runs, reference, cycles=round(MS / 0.1))


@pytest.mark.parametrize("ranks", (2, 4))
def test_every_strategy_in_both_tiers_gives_the_reference_spikes(tmp_path, reference, ranks):
    runs = mam_sweep(tmp_path, ranks, ("by-area",), TWO_TIER_ALL, ranks_per_node=2 if ranks > 2 else 0)
    assert_same(runs, reference, cycles=round(MS / 0.1))


@pytest.mark.parametrize("ranks", (3, 4))
def test_area_groups_spanning_several_ranks(tmp_path, ranks):
    """2 areas on 3 or 4 ranks: each area is a group of ranks, exchanging inside every cycle."""
    import mpi_runner
    ref = mpi_runner.run_config(placement="round-robin", exchange="allgather", areas=2, **SMALL)
    runs = mam_sweep(tmp_path, ranks, ("area-groups",),
                     ("two-tier/allgather", "two-tier/alltoallv", "two-tier/p2p", "two-tier/allgather-compressed",
                      "two-tier/hierarchical"), areas=2, ranks_per_node=2)
    assert_same(runs, ref, cycles=round(MS / 0.1))
    run = runs[("area-groups", "two-tier/alltoallv")]
    per_rank = {str(k): run["counters_per_rank"][:, i] for i, k in enumerate(run["counter_names"])}
    # inside a group of several ranks the group exchange carries data
    assert per_rank["bytes_sent"].sum() > per_rank["global_bytes_sent"].sum() > 0


def test_two_threads_per_rank(tmp_path, reference):
    runs = mam_sweep(tmp_path, 2, ("by-area", "round-robin"), ("two-tier/alltoallv", "allgather"), threads=2)
    assert_same(runs, reference, cycles=round(MS / 0.1))


def test_study_parameters_give_the_reference_network_and_spikes(tmp_path):
    """mam-benchmark-study (the study's fixed in-degrees and bounded delays), 300 neurons per area
    on average, in-degree 60 inside the area and 20 from each other: the same network instance and
    spikes on 1 to 3 ranks, for every placement, conventional and two-tier."""
    import mpi_runner
    study = dict(SMALL, model="mam-benchmark-study")
    ref = mpi_runner.run_config(placement="round-robin", exchange="allgather", **study)
    assert ref["ids"].size > 800 and ref["global_interval"] == 0
    sizes = ref["population_sizes"]
    assert sizes.size == 4 and len(set(sizes.tolist())) == 4                 # areas of different sizes
    assert ref["synapses_per_rank"].sum() == sizes.sum() * (60 + 3 * 20)      # fixed in-degrees
    assert set(np.flatnonzero(ref["synapses_per_delay"])) <= set(range(1, 21))  # 0.1 .. 2 ms
    for ranks in (1, 2, 3):
        runs = mam_sweep(tmp_path, ranks, PLACEMENTS, ("allgather", "alltoallv", "two-tier/allgather",
                                                       "two-tier/alltoallv"), **study)
        for (p, e), run in runs.items():
            if e.startswith("two-tier"):
                assert run["global_interval"] == 10, (ranks, p, e)          # threshold 1 ms / d_min 0.1 ms
        assert_same(runs, ref)


# -- two-tier with overlap ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def even_reference():
    """The network with d_min = 0.2 ms, conventional and without overlap on one rank."""
    import mpi_runner
    return mpi_runner.run_config(placement="round-robin", exchange="allgather", **SMALL_EVEN)


def assert_overlapped(runs: dict):
    for (p, e), run in runs.items():
        assert run["overlap"] and run["steps_per_cycle"] == 1, (p, e)
        if e.startswith("two-tier"):
            assert run["global_interval"] == 19, (p, e)     # 2 ms of inter-area delay = 20 cycles, less one


@pytest.mark.parametrize("ranks", (1, 2, 3, 4))
def test_two_tier_with_overlap_gives_the_reference_spikes(tmp_path, even_reference, ranks):
    assert even_reference["ids"].size > 800 and even_reference["steps_per_cycle"] == 2
    runs = mam_sweep(tmp_path, ranks, PLACEMENTS, OVERLAP_BASIC, overlap=True, d_min_ms=0.2,
                     ranks_per_node=2 if ranks > 2 else 0)
    assert_overlapped(runs)
    assert_same(runs, even_reference)


@pytest.mark.parametrize("ranks", (2, 4))
def test_every_strategy_in_both_tiers_with_overlap(tmp_path, even_reference, ranks):
    runs = mam_sweep(tmp_path, ranks, ("by-area",), TWO_TIER_ALL, overlap=True, d_min_ms=0.2,
                     ranks_per_node=2 if ranks > 2 else 0)
    assert_overlapped(runs)
    assert_same(runs, even_reference)
    per_rank = {str(k): runs[("by-area", "two-tier/alltoallv")]["counters_per_rank"][:, i]
                for i, k in enumerate(runs[("by-area", "two-tier/alltoallv")]["counter_names"])}
    assert np.all(per_rank["global_bytes_sent"] > 0)        # the global tier carried the inter-area spikes


def test_area_groups_with_overlap(tmp_path):
    """2 areas on 3 ranks: one area's group of two ranks exchanges data every cycle, overlapped."""
    import mpi_runner
    ref = mpi_runner.run_config(placement="round-robin", exchange="allgather", areas=2, **SMALL_EVEN)
    runs = mam_sweep(tmp_path, 3, ("area-groups",), ("two-tier/allgather", "two-tier/alltoallv", "two-tier/p2p"),
                     overlap=True, areas=2, d_min_ms=0.2, ranks_per_node=2)
    assert_overlapped(runs)
    assert_same(runs, ref)
    run = runs[("area-groups", "two-tier/alltoallv")]
    per_rank = {str(k): run["counters_per_rank"][:, i] for i, k in enumerate(run["counter_names"])}
    assert per_rank["bytes_sent"].sum() > per_rank["global_bytes_sent"].sum() > 0


def test_two_threads_per_rank_with_overlap(tmp_path, even_reference):
    runs = mam_sweep(tmp_path, 2, ("by-area", "round-robin"), ("two-tier/alltoallv", "allgather"), overlap=True,
                     threads=2, d_min_ms=0.2)
    assert_overlapped(runs)
    assert_same(runs, even_reference)


@pytest.mark.parametrize("ranks,placement", ((1, "by-area"), (2, "by-area"), (3, "area-groups")))
def test_burst_through_the_overlapped_global_tier_arrives_on_time(tmp_path, ranks, placement):
    """Every neuron of two areas fires in the same step, which with overlap opens a global window;
    its inter-area spikes (1.1 ms) are due at the first step the overlapped global exchange allows,
    (D + 1) cycles later. All arrive: every synapse is delivered by the end (7 ms), none pending,
    the counters balance, with and without overlap, conventional and two-tier."""
    import mpi_runner
    from mpi_runner import BURST_AREAS_DELAYS_MS, BURST_STEP
    n, p = 4000, 0.01
    exchanges = ("allgather", "two-tier/allgather", "two-tier/alltoallv")
    # The membrane potentials show when the inhibition arrived: a spike a step late changes them.
    ref = mpi_runner.run_config(model="burst-areas", neurons=n, probability=p, ms=7.0)
    ids = ref["state_ids"]
    V = ref["state_V"]
    assert V.shape[1] == 70 and np.all(V[:, 61] < V[:, 60])    # every step; the kick 1.1 ms after the burst
    for overlap in (False, True):
        runs = mam_sweep(tmp_path, ranks, (placement,), exchanges, overlap=overlap, model="burst-areas", neurons=n,
                         probability=p, ms=7.0)
        for (_, e), run in runs.items():
            what = f"{e}, overlap={overlap}"
            assert np.array_equal(run["ids"], np.arange(n)) and np.all(run["steps"] == BURST_STEP), what
            c = counters(run)
            check_balance(c, n)
            per_delay = run["synapses_per_delay"]
            assert set(np.flatnonzero(per_delay)) == {round(d / 0.1) for d in BURST_AREAS_DELAYS_MS}, what
            assert c["events_expected"] == per_delay.sum() == c["synaptic_events_recurrent"], what
            assert c["events_pending"] == 0, what
            assert np.array_equal(run["state_ids"], ids) and np.array_equal(run["state_V"], V), what
            if e.startswith("two-tier"):
                L, D = run["steps_per_cycle"], run["global_interval"]
                assert (L, D) == ((1, 10) if overlap else (2, 5)), what
                if overlap:            # the burst's cycle opens a window, and 1.1 ms = (D + 1) cycles exactly
                    assert (BURST_STEP - 1) // L % D == 0 and (D + 1) * L == round(BURST_AREAS_DELAYS_MS[1] / 0.1)
                if ranks > 1:
                    assert counters(run)["global_spikes_sent"] > 0, what


def test_split_runs_with_overlap_end_inside_windows():
    """Runs that end inside a window of D cycles flush both tiers and keep every spike: the same
    spikes as one run, and the counters balance after each."""
    net = small_network(d_min_ms=0.2)
    whole = rv.Simulation(net, threads=1, exchange="two-tier", placement="by-area", overlap=True).run(40.0)
    sim = rv.Simulation(net, threads=1, exchange="two-tier", placement="by-area", overlap=True)
    assert (sim.global_interval, sim.steps_per_cycle) == (19, 1)
    parts = []
    for ms in (10.5, 7.3, 22.2):           # 105, 73 and 222 cycles: each ends inside a window of 19
        res = sim.run(ms)
        parts.append(res)
        check_balance(res.counters, res.counters["spikes_emitted"])
    assert parts[0].counters["exchanges_global"] == 6       # 5 whole windows and a flush
    last = parts[-1]                       # a Result holds everything since the start
    assert np.array_equal(last.spike_ids, whole.spike_ids) and np.array_equal(last.spike_steps, whole.spike_steps)
    for key in ("synaptic_events_recurrent", "events_scheduled", "events_pending"):
        assert last.counters[key] == whole.counters[key], key


# -- the schedule ----------------------------------------------------------------------------
def small_network(**kw):
    return rv.models.build("mam-benchmark", **{"n_areas": 2, "area_size": 300, "K": 30, "rate_hz": 20.0, **kw})


def exchange_counts(sim, ms):
    res = sim.run(ms)
    return res.counters["exchanges_local"], res.counters["exchanges_global"], res


def test_d1_makes_as_many_global_exchanges_as_the_conventional_scheme():
    net = small_network()
    local, conventional, ref = exchange_counts(rv.Simulation(net, threads=1, placement="by-area"), 50.0)
    assert (local, conventional) == (0, 500)
    local, glob, res = exchange_counts(rv.Simulation(net, threads=1, exchange="two-tier", placement="by-area",
                                                     global_interval=1), 50.0)
    assert glob == conventional and local == 500
    assert np.array_equal(res.spike_ids, ref.spike_ids) and np.array_equal(res.spike_steps, ref.spike_steps)
    local, glob, _ = exchange_counts(rv.Simulation(net, threads=1, exchange="two-tier", placement="by-area"), 50.0)
    assert (local, glob) == (500, 50)                       # D = delay_ratio = 10 by default


def test_d1_global_exchange_count_on_two_ranks(tmp_path, reference):
    runs = mam_sweep(tmp_path, 2, ("by-area",), ("allgather", "two-tier/allgather"), global_interval=1)
    conventional = counters(runs[("by-area", "allgather")])["exchanges_global"]
    two_tier = counters(runs[("by-area", "two-tier/allgather")])
    assert conventional == 2 * 300 == two_tier["exchanges_global"]
    assert two_tier["exchanges_local"] == 2 * 300
    assert_same(runs, reference, cycles=300)


def test_global_exchange_flushed_at_the_end_of_a_run():
    """A run that ends inside a window of D cycles still delivers every spike (conservation)."""
    sim = rv.Simulation(small_network(), threads=1, exchange="two-tier", placement="by-area")
    res = sim.run(10.5)        # 105 cycles: 10 whole windows and a flush
    assert res.counters["exchanges_global"] == 11
    sim.run(9.5)               # the rest of the window, then whole ones
    res = sim.run(20.0)
    assert res.counters["events_scheduled"] == res.counters["events_expected"]


def test_too_long_global_interval_is_refused_with_the_reason():
    net = small_network(delay_ratio=5)
    with pytest.raises(ConfigError, match=r"global_interval = 6 .*shortest inter-area delay is 0.5 ms.*<= 5"):
        rv.Simulation(net, exchange="two-tier", placement="by-area", global_interval=6)
    sim = rv.Simulation(net, threads=1, exchange="two-tier", placement="by-area")
    assert sim.global_interval == 5
    with pytest.raises(ConfigError, match="applies to exchange 'two-tier' only"):
        rv.Simulation(net, global_interval=2)
    # with overlap: cycles of 0.1 ms, and the global exchange finishes a cycle after its window
    even = small_network(delay_ratio=5, d_min_ms=0.2)       # inter-area delays from 1 ms = 10 cycles
    with pytest.raises(ConfigError, match=r"global_interval = 10 .*1 ms = 10 cycle.*with overlap.*D \+ 1.*<= 9"):
        rv.Simulation(even, exchange="two-tier", placement="by-area", overlap=True, global_interval=10)
    assert rv.Simulation(even, threads=1, exchange="two-tier", placement="by-area", overlap=True).global_interval == 9


def test_engine_refuses_a_global_interval_longer_than_the_inter_area_delay():
    """The engine checks it too, whoever builds its configuration."""
    sim = rv.Simulation(small_network(delay_ratio=4), threads=1, exchange="two-tier", placement="by-area")
    cfg = sim._engine_config(True)
    cfg.global_interval = 5
    with pytest.raises(ValueError, match=r"would deliver spikes late: the shortest inter-area delay .* is 4 step"):
        _engine.Engine(cfg)
    cfg.global_interval = 4
    _engine.Engine(cfg)
    # overlapped: one cycle more to wait, so D + 1 cycles must fit
    sim = rv.Simulation(small_network(delay_ratio=4, d_min_ms=0.2), threads=1, exchange="two-tier",
                        placement="by-area", overlap=True)
    cfg = sim._engine_config(True)
    assert (cfg.steps_per_cycle, cfg.global_interval) == (1, 7)
    cfg.global_interval = 8
    with pytest.raises(ValueError, match=r"is 8 step.*D \+ 1 \(with overlap.*choose D <= 7"):
        _engine.Engine(cfg)


def test_two_tier_needs_areas():
    net = rv.models.dpsnn(neurons=200, synapses_per_neuron=20)
    with pytest.raises(ConfigError, match="needs every population in an area"):
        rv.Simulation(net, exchange="two-tier")
    with pytest.raises(ConfigError, match="has no area"):
        rv.Simulation(net, placement="by-area")


# -- the model ----------------------------------------------------------------------------
def test_mam_benchmark_structure_and_delays():
    net = rv.models.build("mam-benchmark", n_areas=3, area_size=500, K=100, delay_ratio=10)
    assert [p.area for p in net.populations] == ["A0", "A1", "A2"] and net.areas == ["A0", "A1", "A2"]
    assert len(net.projections) == 9
    sim = rv.Simulation(net, threads=1)
    src, tgt, w, d = sim.connections()
    area = lambda g: g // 500
    inter = area(src) != area(tgt)
    # expected out-degree K, half inside the area
    assert abs(src.size / 1500 - 100) < 2
    assert abs(inter.mean() - 0.5) < 0.02
    assert d[~inter].min() == pytest.approx(0.1) and d[inter].min() == pytest.approx(1.0)
    # Gaussian delays, redrawn below the minimum: the truncated normal's mean
    def truncated_mean(mu, sd, lo):
        a = (lo - mu) / sd
        phi = math.exp(-a * a / 2) / math.sqrt(2 * math.pi)
        return mu + sd * phi / (1 - 0.5 * (1 + math.erf(a / math.sqrt(2))))
    assert abs(d[~inter].mean() - truncated_mean(1.5, 0.75, 0.1)) < 0.03
    assert abs(d[inter].mean() - truncated_mean(6.0, 3.0, 1.0)) < 0.1
    assert np.all(w == pytest.approx(0.1))
    assert net.min_inter_area_delay_ms() == pytest.approx(1.0)


def test_heterogeneity_knobs_keep_their_means():
    net = rv.models.build("mam-benchmark", n_areas=6, area_size=1000, area_size_sd=300.0, rate_sd=1.0)
    sizes = [p.size for p in net.populations]
    rates = [p.params["rate_hz"] for p in net.populations]
    assert sum(sizes) == 6000 and len(set(sizes)) > 1
    assert sum(rates) / 6 == pytest.approx(2.5) and len(set(rates)) > 1
    again = rv.models.build("mam-benchmark", n_areas=6, area_size=1000, area_size_sd=300.0, rate_sd=1.0)
    assert [p.size for p in again.populations] == sizes     # seeded by structure_seed


def test_mam_benchmark_errors_name_the_parameter():
    with pytest.raises(ConfigError, match="'frac_intra'"):
        rv.models.build("mam-benchmark", frac_intra=1.5)
    with pytest.raises(ConfigError, match="K \\* frac_intra"):
        rv.models.build("mam-benchmark", area_size=100, K=1000)
    with pytest.raises(ConfigError, match="'delay_ratio'"):
        rv.models.build("mam-benchmark", delay_ratio=0)
    with pytest.raises(ConfigError, match="unknown parameter"):
        rv.models.build("mam-benchmark", areas=3)


def test_ignore_and_fire_fires_at_its_rate_whatever_its_input():
    net = rv.models.build("mam-benchmark", n_areas=2, area_size=200, K=50, rate_hz=50.0, weight_mV=5.0)
    res = rv.Simulation(net, threads=1).run(100.0)
    ids, steps = res.spike_ids, res.spike_steps
    assert ids.size == 2 * 200 * 5                          # period 200 steps: 5 spikes each in 100 ms
    for g in (0, 137, 399):
        s = np.sort(steps[ids == g])
        assert np.all(np.diff(s) == 200) and 0 < s[0] <= 200
    phases = np.array([steps[ids == g].min() for g in range(400)])
    assert len(np.unique(phases)) > 150                     # phases drawn per neuron


# -- placements -----------------------------------------------------------------------------
def hetero(n_areas=4, sd=400.0):
    return rv.models.build("mam-benchmark", n_areas=n_areas, area_size=1000, K=50, area_size_sd=sd, rate_sd=1.0)


def owned(bounds, owners, ranks):
    n = np.zeros(ranks, dtype=int)
    for s, r in enumerate(owners):
        n[r] += bounds[s + 1] - bounds[s]
    return n


@pytest.mark.parametrize("name,ranks", [("by-area", 4), ("by-area", 2), ("area-groups", 7), ("area-groups", 3),
                                        ("balanced", 3), ("balanced", 1)])
def test_area_placements_cover_every_neuron_once(name, ranks):
    net = hetero()
    bounds, owners = placement.segments(net, name, ranks, 0.1)
    assert bounds[0] == 0 and bounds[-1] == net.size and all(b < e for b, e in zip(bounds, bounds[1:]))
    assert sorted(set(owners)) == list(range(ranks))        # every rank holds neurons
    assert owned(bounds, owners, ranks).sum() == net.size   # no padding
    areas = placement.area_ranges(net)
    if name != "area-groups" or ranks < len(areas):
        for _, first, size in areas:                         # whole areas on one rank
            s = int(np.searchsorted(bounds, first, side="right")) - 1
            assert bounds[s + 1] >= first + size


def test_area_groups_share_ranks_by_cost():
    net = hetero(n_areas=3, sd=0.0)
    bounds, owners = placement.segments(net, "area-groups", 6, 0.1)
    assert owned(bounds, owners, 6).tolist() == [500] * 6   # equal areas: 2 ranks each
    sizes = rv.models.build("mam-benchmark", n_areas=2, area_size=1000, K=50, area_size_sd=600.0)
    n0 = sizes.populations[0].size
    bounds, owners = placement.segments(sizes, "area-groups", 5, 0.1)
    share0 = len({r for s, r in enumerate(owners) if bounds[s] < n0})
    expected = round(5 * n0 / 2000)
    assert abs(share0 - expected) <= 1 and share0 >= 1
    loads = placement.rank_loads(sizes, bounds, owners, 5, 0.1)
    assert max(loads) / min(loads) < 2.0


def test_balanced_packs_by_cost():
    net = hetero(n_areas=6, sd=500.0)
    bounds, owners = placement.segments(net, "balanced", 2, 0.1)
    loads = placement.rank_loads(net, bounds, owners, 2, 0.1)
    rr = placement.rank_loads(net, *placement.segments(net, "by-area", 2, 0.1), 2, 0.1)
    assert max(loads) <= max(rr) + 1e-6
    assert max(loads) / min(loads) < 1.5


def test_area_placement_errors():
    net = hetero()
    with pytest.raises(ConfigError, match="'by-area' puts each area on one rank: 4 area.* use placement 'area-groups'"):
        placement.segments(net, "by-area", 5, 0.1)
    with pytest.raises(ConfigError, match="'balanced' packs whole areas"):
        placement.segments(net, "balanced", 5, 0.1)
    net = rv.Network()
    net.add_population(rv.Population("a", 10, {"rate_hz": 1.0}, model="ignore_and_fire", area="X"))
    net.add_population(rv.Population("b", 10, {"rate_hz": 1.0}, model="ignore_and_fire", area="Y"))
    net.add_population(rv.Population("c", 10, {"rate_hz": 1.0}, model="ignore_and_fire", area="X"))
    with pytest.raises(ConfigError, match="area 'X': its populations must be added one after another"):
        placement.area_ranges(net)


# -- delay segments: the irregular-access model at the granularity of the delivery layout -----
def test_delay_law_in_steps():
    from ranvier.analysis import theory
    pmf = theory.truncated_normal_steps(1.5, 0.75, 0.1, 0.1)
    assert pmf.sum() == pytest.approx(1.0) and pmf[:1].sum() == 0 and pmf[1] > 0
    assert (np.arange(pmf.size) * pmf).sum() * 0.1 == pytest.approx(1.554, abs=0.01)   # the truncated mean
    fixed = theory.truncated_normal_steps(2.0, 0.0, 0.1, 0.1)
    assert fixed[20] == 1.0
    # one delay only: segments are the threads hit, the thread-level model of theory.md
    f = theory.segment_fraction_mam(100, 0.5, 4, 2, fixed, fixed, by_area=False)
    assert f == pytest.approx(8 * -math.expm1(-100 / 8) / 100)


def test_predicted_delay_segments_match_the_count():
    net = rv.models.build("mam-benchmark", n_areas=1, area_size=3000, K=300, rate_hz=20.0)
    res = rv.Simulation(net, threads=2, placement="by-area").run(100.0)
    seg = res.theory()["delay_segments"]
    assert seg["measured_per_event"] == pytest.approx(seg["predicted_per_event"], rel=0.03)
    assert res.counters["delivery_segments"] > 0


# -- the communication model in the summary (theory.md section 3) ----------------------------
def test_summary_predicts_exchange_time_from_an_mpi_fit(tmp_path):
    import json
    mpiexec = mpiexec_path()
    if mpiexec is None:
        pytest.skip("no mpiexec found (pip install mpich mpi4py)")
    fit = {"ranks": 2, "primitives": {"allgather": {"latency_s": 2e-6, "bandwidth_bytes_per_s": 1e9}}}
    (tmp_path / "fit.json").write_text(json.dumps(fit))
    out = tmp_path / "run"
    cmd = [mpiexec, "-n", "2", sys.executable, "-m", "ranvier", "run", "--model", "mam-benchmark",
           "--set", "n_areas=2", "--set", "area_size=300", "--set", "K=30", "--set", "rate_hz=20.0",
           "--duration-ms", "20", "--threads", "1", "--exchange", "two-tier", "--placement", "by-area",
           "--mpi-fit", str(tmp_path / "fit.json"), "--out", str(out)]
    done = subprocess.run(cmd, cwd=ROOT, env=subprocess_env(), capture_output=True, text=True,
                          timeout=MPI_TIMEOUT_S, preexec_fn=restore_cpus)
    assert done.returncode == 0, done.stderr
    assert "one global exchange of D cycles" in done.stdout
    s = json.loads((out / "summary.json").read_text())
    comm, c = s["theory"]["communication"], s["counters"]
    per_exchange = c["global_bytes_sent"] / 2 / (c["exchanges_global"] // 2)
    one = 2 * 2e-6 + per_exchange / 1e9              # allgather: counts, then records (latency each)
    assert comm["predicted_global_s_per_exchange"] == pytest.approx(one)
    assert comm["predicted_D_separate_s_per_cycle"] == pytest.approx(2 * 2e-6 + per_exchange / 10 / 1e9)
    assert comm["predicted_s_per_cycle"] == pytest.approx(one / 10)   # groups of one rank: no traffic
    assert comm["measured_s_per_cycle"] > 0


def test_fast_chunks_grow_in_whole_global_windows(monkeypatch):
    """Chunks that grow (fast runs: simulation.FAST_CHUNK_S) stay whole windows of D cycles, up to
    the longest chunk rounded down to one: no global exchange is flushed off its schedule."""
    from ranvier.core import simulation
    monkeypatch.setattr(simulation, "FAST_CHUNK_S", 1e9)                # every chunk counts as fast
    sim = rv.Simulation(small_network(delay_ratio=3), threads=1, exchange="two-tier", placement="by-area")
    assert sim.global_interval == 3 and sim.cycle_ms == 0.1
    res = sim.run(3000.0)                                                 # 30,000 cycles: 10,000 windows
    assert res.counters["exchanges_global"] == 10000
    assert res.counters["events_scheduled"] == res.counters["events_expected"]
