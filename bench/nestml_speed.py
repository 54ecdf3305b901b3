"""How fast NESTML models run in Ranvier: the generated model against the hand-written one, and
a Brunel network of aeif_cond_exp neurons against NEST 3.10 on the same machine.

    python bench/nestml_speed.py                   # everything (NEST needs the `nest` extra)
    python bench/nestml_speed.py --only update     # generated iaf_psc_exp vs psc_exp, update time
    python bench/nestml_speed.py --only brunel --threads 1,2 --skip-nest

Three parts:

- compile: the time from a NESTML file to a loaded model, cold (an empty cache: NESTML,
  ODE-toolbox and the C++ compiler) and cached (the shared object found by its digest);
- update: a network of --neurons current-based LIF neurons (80 % excitatory, 20 % inhibitory,
  5 % connectivity, Poisson drive), once with NESTML's iaf_psc_exp_neuron and once with the
  built-in psc_exp, the same parameters; the engine's update phase (the neurons' step, nothing
  else), min and median of --repeats runs alternating the two;
- brunel: the same random network of 10,000 aeif_cond_exp neurons (Ranvier's built-in model and
  NESTML's aeif_cond_exp_neuron; NEST's aeif_cond_exp), 1 s, on each thread count: the wall time
  of the simulation alone (the build excluded, in each), and the rates, which should agree.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import ranvier as rv

H = 0.1


def nestml_file(name: str) -> Path:
    """A model of NESTML's own library (the models/neurons folder that nestml installs)."""
    path = Path(sys.prefix) / "models" / "neurons" / f"{name}.nestml"
    if not path.is_file():
        sys.exit(f"nestml_speed: {path} not found: install the nestml extra (pip install \"ranvier[nestml]\")")
    return path


# -- compile --------------------------------------------------------------------------------
def compile_times(name: str) -> tuple[float, float]:
    """Seconds to a loaded model from an empty cache, then from the cache (a fresh process each,
    so nothing of the first stays loaded)."""
    import subprocess
    code = ("import time, ranvier as rv; t = time.perf_counter(); "
            f"rv.nestml.neuron_model({str(nestml_file(name))!r}); print(time.perf_counter() - t)")
    cache = tempfile.mkdtemp(prefix="ranvier-nestml-cache-")
    env = {**os.environ, "RANVIER_CACHE_DIR": cache}
    try:
        seconds = []
        for _ in range(2):
            done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
            seconds.append(float(done.stdout.split()[-1]))
        return seconds[0], seconds[1]
    finally:
        shutil.rmtree(cache, ignore_errors=True)


# -- update: generated iaf_psc_exp against psc_exp --------------------------------------------
PSC = {"C_m": 250.0, "tau_m": 10.0, "tau_syn_exc": 2.0, "tau_syn_inh": 2.0, "refr_T": 2.0, "E_L": -70.0,
       "V_reset": -70.0, "V_th": -55.0, "I_e": 300.0}
BUILT_IN_NAMES = {"C_m": "C_m_pF", "tau_m": "tau_m_ms", "tau_syn_exc": "tau_syn_ex_ms", "tau_syn_inh": "tau_syn_in_ms",
                  "refr_T": "tau_arp_ms", "E_L": "E_L_mV", "V_reset": "V_reset_mV", "V_th": "V_th_mV", "I_e": "I_e_pA"}


def lif_network(n: int, model) -> rv.Network:
    built_in = model == "psc_exp"
    params = {BUILT_IN_NAMES[k]: v for k, v in PSC.items()} if built_in else dict(PSC)
    ne = n * 4 // 5
    net = rv.Network(name="nestml-speed")
    net.add_population(rv.Population("drive", 2000, {"rate_hz": 10.0, "start_ms": 0.0, "stop_ms": 1e9}, model="poisson_source"))
    net.add_population(rv.Population("E", ne, params, model=model))
    net.add_population(rv.Population("I", n - ne, params, model=model))
    for target in ("E", "I"):
        net.connect(rv.Projection(source="drive", target=target, probability=0.05, weight=40.0, delay_ms=1.0))
        net.connect(rv.Projection(source="E", target=target, probability=0.05, weight=10.0, delay_ms=1.5))
        net.connect(rv.Projection(source="I", target=target, probability=0.05, weight=-40.0, delay_ms=1.5))
    return net


def update_seconds(net: rv.Network, duration_ms: float, threads: int) -> tuple[float, float]:
    """(update-phase seconds, mean rate of E and I in Hz)."""
    res = rv.Simulation(net, threads=threads, seed=3, resolution_ms=H).run(duration_ms)
    neurons = sum(p.size for p in net.populations[1:])
    recurrent = np.asarray(res.spike_ids) >= net.populations[0].size       # the drive's spikes left out
    return res.phase_times()["update"], int(recurrent.sum()) / neurons / (duration_ms / 1000.0)


def part_update(args) -> None:
    generated = rv.nestml.neuron_model(nestml_file("iaf_psc_exp_neuron"))
    nets = {"psc_exp (built in)": lif_network(args.neurons, "psc_exp"),
            "iaf_psc_exp_neuron (NESTML)": lif_network(args.neurons, generated)}
    seconds = {k: [] for k in nets}
    rates = {}
    for _ in range(args.repeats):                  # alternating, so drifts of the machine hit both
        for name, net in nets.items():
            s, rates[name] = update_seconds(net, args.duration_ms, 1)
            seconds[name].append(s)
    print(f"\nupdate phase, {args.neurons:,} neurons, {args.duration_ms:g} ms, 1 thread, {args.repeats} runs each")
    print(f"{'model':<30} {'min s':>8} {'median s':>9} {'rate Hz':>8}")
    for name, s in seconds.items():
        print(f"{name:<30} {min(s):8.3f} {statistics.median(s):9.3f} {rates[name]:8.2f}")
    base, gen = seconds["psc_exp (built in)"], seconds["iaf_psc_exp_neuron (NESTML)"]
    print(f"generated / built-in: {min(gen) / min(base):.2f} (min), "
          f"{statistics.median(gen) / statistics.median(base):.2f} (median)")


# -- brunel: aeif_cond_exp against NEST ------------------------------------------------------
# NEST's aeif_cond_exp defaults but for the synaptic time constants (those of the COBA benchmark).
AEIF = {"tau_syn_ex": 5.0, "tau_syn_in": 10.0}
NE, NI, EPS, DELAY = 8000, 2000, 0.1, 1.5
W_EX, W_IN, NU_EXT, W_EXT = 0.5, -4.0, 4000.0, 1.0      # nS, nS, Hz per neuron, nS


def brunel_ranvier(model, threads: int, duration_ms: float) -> tuple[float, float]:
    if model == "aeif_cond_exp":
        params = {"tau_syn_ex_ms": AEIF["tau_syn_ex"], "tau_syn_in_ms": AEIF["tau_syn_in"], "V0_mean_mV": -70.6}
    else:
        params = {"tau_syn_exc": AEIF["tau_syn_ex"], "tau_syn_inh": AEIF["tau_syn_in"]}
    n = NE + NI
    net = rv.Network(name="brunel-aeif")
    net.add_population(rv.Population("E", NE, params, model=model))
    net.add_population(rv.Population("I", NI, params, model=model))
    for target in ("E", "I"):             # NEST's poisson_generator: an independent train per neuron
        net.drive(rv.PoissonDrive(target, n_synapses=1, rate_hz=NU_EXT, weight=W_EXT))
        net.connect(rv.Projection(source="E", target=target, indegree=int(EPS * NE), weight=W_EX, delay_ms=DELAY))
        net.connect(rv.Projection(source="I", target=target, indegree=int(EPS * NI), weight=W_IN, delay_ms=DELAY))
    res = rv.Simulation(net, threads=threads, seed=7, resolution_ms=H).run(duration_ms)
    return res.simulate_seconds, np.asarray(res.spike_ids).size / n / (duration_ms / 1000.0)


def brunel_nest(threads: int, duration_ms: float) -> tuple[float, float]:
    import nest
    nest.ResetKernel()
    nest.set_verbosity("M_ERROR")
    nest.SetKernelStatus({"resolution": H, "local_num_threads": threads, "rng_seed": 7, "print_time": False})
    neurons = nest.Create("aeif_cond_exp", NE + NI, params=AEIF)
    E, I = neurons[:NE], neurons[NE:]
    ext = nest.Create("poisson_generator", params={"rate": NU_EXT})
    nest.Connect(ext, neurons, syn_spec={"weight": W_EXT, "delay": DELAY})
    nest.Connect(E, neurons, {"rule": "fixed_indegree", "indegree": int(EPS * NE)}, {"weight": W_EX, "delay": DELAY})
    nest.Connect(I, neurons, {"rule": "fixed_indegree", "indegree": int(EPS * NI)}, {"weight": W_IN, "delay": DELAY})
    rec = nest.Create("spike_recorder")
    nest.Connect(neurons, rec)
    nest.Simulate(DELAY)                  # the first call prepares the kernel: outside the timing
    t0 = time.perf_counter()
    nest.Simulate(duration_ms)
    wall = time.perf_counter() - t0
    return wall, rec.n_events / (NE + NI) / ((duration_ms + DELAY) / 1000.0)


def part_brunel(args) -> None:
    threads = [int(t) for t in args.threads.split(",")]
    generated = rv.nestml.neuron_model(nestml_file("aeif_cond_exp_neuron"))
    print(f"\nBrunel network of aeif_cond_exp, {NE + NI:,} neurons, {args.brunel_ms:g} ms: simulation wall time "
          f"(min of {args.repeats}) and mean rate")
    print(f"{'simulator':<36} {'threads':>7} {'s':>8} {'rate Hz':>8} {'NEST / this':>11}")
    for k in threads:
        rows = {}
        for _ in range(args.repeats):
            for name, run in (("Ranvier aeif_cond_exp", lambda: brunel_ranvier("aeif_cond_exp", k, args.brunel_ms)),
                              ("Ranvier aeif_cond_exp_neuron (NESTML)", lambda: brunel_ranvier(generated, k, args.brunel_ms)),
                              *((("NEST 3.10 aeif_cond_exp", lambda: brunel_nest(k, args.brunel_ms)),)
                                if not args.skip_nest else ())):
                s, rate = run()
                best = rows.get(name, (float("inf"), rate))[0]
                rows[name] = (min(best, s), rate)
        nest_s = rows.get("NEST 3.10 aeif_cond_exp", (None,))[0]
        for name, (s, rate) in rows.items():
            ratio = f"{nest_s / s:11.1f}" if nest_s else f"{'-':>11}"
            print(f"{name:<36} {k:7d} {s:8.2f} {rate:8.2f} {ratio}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=("compile", "update", "brunel"), nargs="+", default=["compile", "update", "brunel"])
    ap.add_argument("--neurons", type=int, default=20480, help="neurons of the update part (dpsnn's size)")
    ap.add_argument("--duration-ms", type=float, default=2000.0, help="simulated time of the update part")
    ap.add_argument("--brunel-ms", type=float, default=1000.0, help="simulated time of the Brunel part")
    ap.add_argument("--threads", default="1,2", help="thread counts of the Brunel part")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-nest", action="store_true", help="the Brunel part without NEST")
    args = ap.parse_args(argv)
    if "compile" in args.only:
        for name in ("iaf_psc_exp_neuron", "aeif_cond_exp_neuron"):
            cold, cached = compile_times(name)
            print(f"compile {name}: {cold:.1f} s cold (empty cache), {cached:.2f} s cached")
    if "update" in args.only:
        part_update(args)
    if "brunel" in args.only:
        part_brunel(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
