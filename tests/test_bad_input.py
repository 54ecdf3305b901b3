"""Inputs found by fuzzing that used to crash, hang, exhaust memory or give a wrong network: each
is now refused before the network is built, as one line `ranvier: error: ...` naming the field
and the fix, with exit status 2, no traceback and no output folder. Every case runs the command
as a user types it (`python -m ranvier run ...`, in a child process)."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time

import pytest

import ranvier as rv
from conftest import ROOT, mpiexec_path, needs_mpiexec, subprocess_env
from ranvier.runtime import resources
from ranvier.core import spec
from ranvier.bench import restore_cpus
from ranvier.core.network import MAX_NORMAL_DEVIATE

# A small dpsnn that runs in well under a second: the flags under test come after it and win.
SMALL = ["--neurons", "2000", "--set", "synapses_per_neuron=20", "--duration-ms", "10", "--threads", "1"]
MAM = ["--model", "mam-benchmark", "--set", "n_areas=2", "--set", "area_size=100", "--set", "K=10",
       "--duration-ms", "10", "--threads", "1"]
REFUSAL_SECONDS = 60          # a refusal comes before the build: seconds, not the minutes a build takes


def cli(*args, env=None, timeout=120, shell_prefix=None):
    """`python -m ranvier ARGS` as a user types it; shell_prefix (e.g. 'ulimit -v 3000000') runs first."""
    argv = [sys.executable, "-m", "ranvier", *map(str, args)]
    if shell_prefix:
        argv = ["bash", "-c", f"{shell_prefix}; exec \"$@\"", "bash", *argv]
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env or subprocess_env(), capture_output=True, text=True, timeout=timeout,
                          check=False, preexec_fn=restore_cpus, cwd=ROOT)
    done.seconds = time.perf_counter() - t0
    return done


# case -> (arguments after `ranvier run`, words the one line must hold, shell prefix or None)
CASES = {
    # 1. 2^31 neurons: was ValueError: math domain error (ranvier.core.spec.fraction_bits)
    "2^31 neurons": (["--set", "neurons=2147483648"], ["will not fit in memory", "synapses", "fewer neurons"], None),
    # 2. a delay over 65535 steps: was a RuntimeError from engine.build()
    "exponential delay over 65535 steps": (
        [*SMALL, "--set", "delay_max_exc_ms=7000"],
        ["'delay_max_exc_ms' = 7000 ms", "'delay_min_ms'", "65535 steps", "6553.5 ms", "resolution_ms"], None),
    "normal delay over 65535 steps": (
        [*MAM, "--set", "inter_delay_mean_ms=6000", "--set", "inter_delay_sd_ms=100"],
        ["'inter_delay_mean_ms' = 6000 ms", "'inter_delay_sd_ms' = 100 ms", "65535 steps", "resolution_ms"], None),
    "microcircuit delay over 65535 steps": (
        ["--model", "microcircuit", "--set", "delay_exc_ms=3000", "--duration-ms", "10", "--threads", "1"],
        ["'delay_exc_ms' = 3000 ms", "delay_relative_sd", "65535 steps"], None),
    # 3. delay_min_ms above a maximum delay: was accepted, and gave a wrong network
    "delay_min_ms above delay_max_inh_ms": (
        [*SMALL, "--set", "delay_min_ms=30"], ["'delay_min_ms' = 30 ms", "'delay_max_inh_ms' = 20 ms"], None),
    "delay_min_ms above delay_max_exc_ms": (
        [*SMALL, "--set", "delay_min_ms=30", "--set", "delay_max_inh_ms=40", "--set", "delay_max_exc_ms=25"],
        ["'delay_min_ms'", "'delay_max_exc_ms' = 25 ms"], None),
    # 4. an absurd drive: built for a minute, reached 7 GB, then std::bad_alloc
    "drive beyond the input sums": (
        [*SMALL, "--set", "external_rate_exc_hz=1e9"],
        ["external drive of 'F'", "'external_synapses' = 400", "'external_rate_exc_hz' = 1e+09 Hz",
         "external_weight_exc_mV"], None),
    "drive beyond the Poisson table": (
        [*SMALL, "--set", "external_rate_exc_hz=1e10", "--set", "external_weight_exc_mV=1e-6"],
        ["external drive of 'F'", "'external_rate_exc_hz' = 1e+10 Hz", "Poisson table"], None),
    "drive beyond memory": (
        [*SMALL, "--set", "external_rate_exc_hz=1e8"],
        ["will not fit in memory", "external drive", "'external_rate_exc_hz' = 1e+08 Hz", "lower the external drive"],
        None),
    # 5. ulimit -v: was a std::bad_alloc traceback
    "ulimit -v": (["--neurons", "327680", "--duration-ms", "100"],
                  ["will not fit in memory", "per rank", "ulimit -v allows", "raise ulimit -v"], "ulimit -v 3000000"),
    # 6. far more threads than cores: was accepted
    "threads far above the cores": ([*SMALL, "--threads", "1000"], ["threads = 1000", "cores", "at most"], None),
    # 7. a duration beyond the engine's 2^32 cycles: was accepted (and ran for ever)
    "duration beyond 2^32 cycles": ([*SMALL, "--duration-ms", "1e12"],
                                    ["'duration_ms'", "2^32 - 1 cycles", "4294967295 ms", "shorter duration_ms"], None),
}


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    """outcome(case) -> (the finished command, its --out folder); each case runs once per module."""
    cache = {}

    def run(case: str):
        if case not in cache:
            args, _, prefix = CASES[case]
            out = tmp_path_factory.mktemp("case") / "out"
            cache[case] = (cli("run", *args, "--out", out, shell_prefix=prefix), out)
        return cache[case]
    return run


def assert_one_line_refusal(done, out=None) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-3000:]
    assert len(lines) == 1, done.stderr[-3000:]
    assert lines[0].startswith("ranvier: error: "), lines[0]
    assert "Traceback" not in done.stderr + done.stdout
    if out is not None:
        assert not out.exists(), f"{out} was written"
        assert not list(out.parent.iterdir()), list(out.parent.iterdir())
    return lines[0]


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_refused_in_one_line_before_the_build(case, outcome):
    done, out = outcome(case)
    line = assert_one_line_refusal(done, out)
    for word in CASES[case][1]:
        assert word in line, line
    assert done.seconds < REFUSAL_SECONDS, f"{case}: refused only after {done.seconds:.0f} s"


# -- 1. 2^31 neurons --------------------------------------------------------------------------------
def test_fraction_bits_for_2_to_the_31_neurons_and_more():
    """4-byte synapses cannot hold a target index of 31 bits or more: the scale falls back to the
    overflow bound instead of failing on the logarithm of zero."""
    for n in (2**31, 2**31 + 5, 2**35):
        net = rv.Network()
        net.add_population(rv.Population("A", n, dict(tau_m_ms=20.0, theta_mV=20.0, reset_mV=10.0, tau_arp_ms=2.0,
                                                       alpha_c=0.0, tau_c_ms=100.0, g_c_mV_per_ms=0.0,
                                                       dc_mV_per_ms=0.0)))
        net.connect(rv.Projection(source="A", target="A", probability=1e-6, weight=0.5, weight_sd=0.1,
                                  delay_offset_ms=1.0, delay_scale_ms=1.0, delay_cut_ms=1.0))
        bits = spec.fraction_bits(net, min_delay_ms=1.0)          # only the arithmetic, no build
        assert 8 <= bits <= 24
        assert not spec.packs(net, bits)
        assert spec.bytes_per_synapse_peak(net, bits) == 11.0


# -- 2. delays over 65535 steps: exactly the networks the engine refuses ------------------------------
def test_largest_normal_deviate_is_the_engines():
    # inverse_normal(1 - 2^-33): the largest uniform the engine draws, from the largest 32-bit word
    assert MAX_NORMAL_DEVIATE == pytest.approx(6.33795775, abs=1e-7)


@pytest.mark.parametrize("mean, sd, h, expected", [
    (6000.0, 3.0, 0.1, math.floor((6000.0 + 3.0 * MAX_NORMAL_DEVIATE) / 0.1 + 0.5)),
    (1.5, 0.75, 0.1, 63),                  # microcircuit: 1.5 + 6.34 * 0.75 = 6.25 ms
    (0.1, 0.0, 0.1, 1),
])
def test_max_delay_of_the_normal_law(mean, sd, h, expected):
    pr = rv.Projection(source="A", target="A", probability=0.1, weight=1.0, delay_offset_ms=h,
                       delay_distribution="normal", delay_mean_ms=mean, delay_sd_ms=sd)
    assert pr.max_delay_steps(h) == expected


@pytest.mark.parametrize("offset, cut, step, scale, h, expected", [
    (1.0, 80.0, 1.0, 80.0 / math.log(20.0), 0.1, 800),       # dpsnn: 1 + 79 whole ms
    (1.0, 80.5, 1.0, 80.5 / math.log(20.0), 0.1, 810),       # 1 + 80 ms: the cut lies inside the last ms
    (1.0, 1.0, 1.0, 1.0, 0.1, 10),                           # artificial-cells: one fixed delay
    (1.0, 1e6, 1.0, 1.0, 0.1, 10 + 22 * 10),                 # the cut is never reached: -log(2^-33) = 22.9
])
def test_max_delay_of_the_exponential_law(offset, cut, step, scale, h, expected):
    pr = rv.Projection(source="A", target="A", probability=0.1, weight=1.0, delay_offset_ms=offset,
                       delay_scale_ms=scale, delay_cut_ms=cut, delay_step_ms=step)
    assert pr.max_delay_steps(h) == expected


def test_delay_limit_is_the_engines_own(monkeypatch):
    """delay_max_exc_ms = 6553 (delays up to 65530 steps) builds; 6554 (65540 steps) is refused, and
    with the check switched off the engine itself refuses the same network: no more, no less."""
    small = dict(neurons=10000, synapses_per_neuron=100)
    rv.Simulation(rv.models.dpsnn(**small, delay_max_exc_ms=6553.0), threads=1)
    with pytest.raises(rv.ConfigError, match="'delay_max_exc_ms' = 6554 ms .* 65540 steps"):
        rv.Simulation(rv.models.dpsnn(**small, delay_max_exc_ms=6554.0), threads=1)
    monkeypatch.setattr(rv.Projection, "max_delay_steps", lambda self, h: 0)
    with pytest.raises(RuntimeError, match="65535"):
        rv.Simulation(rv.models.dpsnn(**small, delay_max_exc_ms=6554.0), threads=1)


def test_equal_minimum_and_maximum_delay_is_accepted():
    net = rv.models.dpsnn(neurons=300, synapses_per_neuron=10, delay_min_ms=20.0, delay_max_inh_ms=20.0)
    assert all(pr.max_delay_steps(0.1) >= 200 for pr in net.projections)


# -- 4. the drive's memory ----------------------------------------------------------------------------
DRIVE_SCRIPT = """
import resource, sys
import ranvier as rv
net = rv.models.dpsnn(neurons=2000, synapses_per_neuron=20, external_rate_exc_hz=float(sys.argv[1]))
sim = rv.Simulation(net, threads=1)
sim.run(1.0)
print(sim.memory_estimate_bytes, sim.memory_parts()["drive"], resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def test_memory_estimate_counts_the_drive():
    """A strong drive (4e4 events per neuron and window) needs hundreds of MiB of event buffers:
    the estimate covers the measured peak, and would not without its drive part."""
    done = subprocess.run([sys.executable, "-c", DRIVE_SCRIPT, "1e5"], env=subprocess_env(), capture_output=True,
                          text=True, timeout=300, preexec_fn=restore_cpus)
    assert done.returncode == 0, done.stderr[-3000:]
    estimate, drive, peak = map(float, done.stdout.split())
    assert peak <= estimate, (peak, estimate)
    assert estimate - drive < peak, (estimate, drive, peak)


def test_default_drive_costs_little():
    net = rv.models.dpsnn()
    assert spec.drive_bytes(net, resolution_ms=0.1, drive_steps=10, threads=2, ranks=1) < 2**20
    spec.check_drives(net, resolution_ms=0.1, drive_steps=10)


# -- 5. memory limits ------------------------------------------------------------------------------
def test_the_tightest_limit_is_named(monkeypatch):
    gib = 2**30
    limits = [resources.MemoryLimit(100 * gib, "100.0 GiB available", False),
              resources.MemoryLimit(1 * gib, "the cgroup v2 memory limit (memory.max of /sys/fs/cgroup/x) allows "
                                             "1.0 GiB more (limit 2.0 GiB)", False)]
    monkeypatch.setattr(resources, "memory_limits", lambda: limits)
    with pytest.raises(rv.ConfigError, match=r"will not fit in memory: .* on this node .*cgroup v2 memory limit"):
        rv.Simulation(rv.models.dpsnn(neurons=200000), threads=1)


def test_a_per_process_limit_holds_one_rank():
    gib = 2**30
    shared = resources.MemoryLimit(10 * gib, "available", False)
    own = resources.MemoryLimit(3 * gib, "ulimit -v", True)
    # 2 GiB per rank, 4 ranks: 8 of the 10 shared, 2 of the 3 per process: the shared one is closer
    ratio, which = resources.tightest_memory_limit(2 * gib, 4, [shared, own])
    assert which is shared and ratio == pytest.approx(0.8)
    ratio, which = resources.tightest_memory_limit(2 * gib, 1, [shared, own])
    assert which is own and ratio == pytest.approx(2 / 3)


def test_cgroup_limits_are_read_for_the_process_and_its_ancestors(tmp_path):
    v2, v1 = tmp_path / "unified", tmp_path / "memory"
    (v2 / "user" / "job").mkdir(parents=True)
    (v2 / "user" / "job" / "memory.max").write_text("max\n")
    (v2 / "user" / "memory.max").write_text(str(4 * 2**30))
    (v2 / "user" / "memory.current").write_text(str(1 * 2**30))
    (v1 / "batch").mkdir(parents=True)
    (v1 / "batch" / "memory.limit_in_bytes").write_text(str(2 * 2**30))
    (v1 / "batch" / "memory.usage_in_bytes").write_text(str(2**29))
    (v1 / "memory.limit_in_bytes").write_text("9223372036854771712")      # v1's "no limit"
    cgroup = tmp_path / "cgroup"
    cgroup.write_text("4:memory:/batch\n1:cpu:/\n0::/user/job\n")
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(f"30 20 0:26 / {v2} rw,relatime shared:5 - cgroup2 cgroup2 rw\n"
                         f"31 20 0:27 / {v1} rw,relatime shared:6 - cgroup cgroup rw,memory\n"
                         f"32 20 0:28 / {tmp_path}/cpu rw,relatime shared:7 - cgroup cgroup rw,cpu\n")
    limits = resources._cgroup_limits(str(cgroup), str(mountinfo))
    assert sorted(round(x.room_bytes / 2**30, 2) for x in limits) == [1.5, 3.0]
    assert all(not x.per_process for x in limits)
    assert any("memory.max of" in x.what and "allows 3 GiB more" in x.what for x in limits)
    assert any("memory.limit_in_bytes" in x.what and "allows 1.5 GiB more" in x.what for x in limits)


def test_no_limit_no_refusal_from_cgroups(tmp_path):
    (tmp_path / "cgroup").write_text("0::/\n")
    (tmp_path / "mountinfo").write_text("")
    assert resources._cgroup_limits(str(tmp_path / "cgroup"), str(tmp_path / "mountinfo")) == []


def test_out_of_memory_in_the_build_is_a_memory_error_of_one_line(monkeypatch, capsys, tmp_path):
    """A std::bad_alloc the estimate did not foresee: the engine's threads pass it on as a
    RuntimeError('std::bad_alloc'); it reaches the user as a MemoryError, one line, exit 1."""
    from ranvier import _engine, cli
    from ranvier.core import simulation

    class Engine:
        def __init__(self, config):
            pass

        def build(self):
            raise RuntimeError("std::bad_alloc")

    class EngineModule:
        def __getattr__(self, name):
            return Engine if name == "Engine" else getattr(_engine, name)

    monkeypatch.setattr(simulation, "_engine", EngineModule())
    with pytest.raises(MemoryError, match="ran out of memory"):
        rv.Simulation(rv.models.dpsnn(neurons=300, synapses_per_neuron=10), threads=1)
    out = tmp_path / "out"
    assert cli.main(["run", "--neurons", "300", "--set", "synapses_per_neuron=10", "--duration-ms", "10",
                     "--threads", "1", "--quiet", "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ranvier: error: ") and "MemoryError" in err[0], err
    assert "ran out of memory" in err[0]
    assert not out.exists()


# -- 6. threads --------------------------------------------------------------------------------------
def test_threads_limit_keeps_what_tests_and_benches_use():
    cores = resources.cores()
    net = rv.models.dpsnn(neurons=300, synapses_per_neuron=10)
    sim = rv.Simulation(net, threads=min(3, resources.MAX_THREADS_PER_CORE * cores))
    assert sim.threads >= 1
    with pytest.raises(rv.ConfigError, match=f"threads = {4 * cores + 1} per rank .* {cores} cores"):
        rv.Simulation(net, threads=resources.MAX_THREADS_PER_CORE * cores + 1)


# -- 8. oversubscription -------------------------------------------------------------------------------
@pytest.mark.parametrize("environ, cores, chosen", [
    ({"MPI_LOCALNRANKS": "4"}, 2, True),                                   # hydra: 4 ranks x 2 > 2 cores
    ({"OMPI_COMM_WORLD_LOCAL_SIZE": "2"}, 2, True),                        # Open MPI: 2 x 2 > 2
    ({"MPI_LOCALNRANKS": "2", "OMP_NUM_THREADS": "1"}, 2, False),          # 2 x 1 = 2 cores
    ({"MPI_LOCALNRANKS": "4"}, 16, False),
    ({}, 2, False),                                                        # not under mpiexec
    ({"MPI_LOCALNRANKS": "4", "OMP_WAIT_POLICY": "active"}, 2, False),     # the user's choice stands
])
def test_wait_policy_chosen_before_the_engine_loads(environ, cores, chosen):
    env = dict(environ)
    assert resources.choose_wait_policy(env, cpu_count=cores) is chosen
    expected = "passive" if chosen else environ.get("OMP_WAIT_POLICY")
    assert env.get("OMP_WAIT_POLICY") == expected


def test_oversubscription_warning(monkeypatch):
    assert resources.oversubscription_warning(2, 1, cpu_count=2) is None
    monkeypatch.setenv("OMP_WAIT_POLICY", "passive")
    line = resources.oversubscription_warning(4, 2, cpu_count=2)
    assert line.startswith("ranvier: warning: ") and "8 threads on 2 cores" in line and "passively" in line
    monkeypatch.setenv("OMP_WAIT_POLICY", "active")
    assert "set OMP_WAIT_POLICY=passive" in resources.oversubscription_warning(1, 3, cpu_count=2)


@needs_mpiexec
@pytest.mark.skipif((os.cpu_count() or 1) > 4, reason="needs 4 ranks x 2 threads to outnumber the cores")
def test_oversubscribed_ranks_wait_passively_and_warn_once(tmp_path):
    """mpiexec -n 4 ranvier run --threads 2 on 2 cores, OMP_WAIT_POLICY unset: ranvier chooses the
    passive policy before the engine loads (measured: 69-181 s -> 3-12 s for 1 s of this network),
    and rank 0 says so in one warning line."""
    env = subprocess_env()
    env.pop("OMP_WAIT_POLICY", None)
    out = tmp_path / "out"
    cmd = [mpiexec_path(), "-n", "4", sys.executable, "-m", "ranvier", "run", "--neurons", "2000", "--set",
           "synapses_per_neuron=100", "--duration-ms", "300", "--threads", "2", "--quiet", "--out", str(out)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240, preexec_fn=restore_cpus,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    warnings = [line for line in done.stderr.splitlines() if line.startswith("ranvier: warning:")]
    assert len(warnings) == 1, done.stderr
    assert "4 rank(s) x 2 thread(s) = 8 threads" in warnings[0] and "passively" in warnings[0]
    omp = json.loads((out / "environment.json").read_text())["omp"]
    assert omp.get("OMP_WAIT_POLICY") == "passive" and omp.get("wait_policy_chosen_by_ranvier") is True


# -- every malformed input at once ----------------------------------------------------------------------
def _other_suites_cases():
    """The arguments-only bad inputs of test_cli.py (its config-file cases need their files)."""
    try:
        from test_cli import BAD_INPUT, SMALL as CLI_SMALL
    except ImportError:      # pragma: no cover
        return {}
    return {f"test_cli: {name}": [*CLI_SMALL, *args] for name, (args, text, _) in BAD_INPUT.items() if text is None}


def test_every_malformed_input_is_one_line_exit_2(outcome, tmp_path):
    """Every input above and the argument-only bad inputs of test_cli.py: exit 2, exactly one
    line on stderr starting `ranvier: error:`, no traceback, no output folder."""
    runs = {name: outcome(name) for name in CASES}
    for j, (name, args) in enumerate(_other_suites_cases().items()):
        folder = tmp_path / f"other{j}"
        folder.mkdir()
        runs[name] = (cli("run", *args, "--out", folder / "out"), folder / "out")
    failures = []
    for name, (done, out) in runs.items():
        try:
            assert_one_line_refusal(done, out)
        except AssertionError as e:
            failures.append(f"{name}: {e}")
    assert not failures, "\n".join(failures)


# -- found by tests/test_fuzz_cli.py ---------------------------------------------------------------------
# case -> (arguments after `ranvier run`, words the one line must hold); run in a folder that holds
# only a regular file 'afile', which must be all it holds afterwards.
FUZZ_FOUND = {
    # steps counted in a float that overflowed: was OverflowError, exit 1
    "duration of 1e308 ms": ([*SMALL, "--duration-ms", "1e308", "--out", "out"],
                             ["'duration_ms' = 1e+308 is 1e+308 cycles", "2^32 - 1 cycles"]),
    "resolution of 5e-324 ms": ([*SMALL, "--resolution-ms", "5e-324", "--out", "out"],
                                ["'delay_min_ms' = 1.0 ms", "more than 1e308 steps", "coarser resolution_ms"]),
    # an empty name meant "not given": was a run of the default model (dpsnn, 20480 neurons, 10 s)
    "empty --model": ([*SMALL, "--model", "", "--out", "out"], ["unknown model ''", "available"]),
    "empty model or config": (["", *SMALL, "--out", "out"], ["'' is neither a model name", "nor a config file"]),
    # the folder's name with ranvier's additions beyond NAME_MAX: was OSError File name too long, exit 1
    "--out name too long": ([*SMALL, "--out", "o" * 300], ["has 300 bytes", "allows 224", "shorter name"]),
    "--out with a long folder on the way": ([*SMALL, "--out", "a/" + "b" * 300 + "/c"],
                                            ["has 300 bytes", "allows 255"]),
    # a regular file on the way: was NotADirectoryError (the lock file), exit 1
    "--out under a regular file": ([*SMALL, "--out", "afile/out"], ["'afile/out'", "is a file, not a folder"]),
    "--out deeper under a regular file": ([*SMALL, "--out", "afile/x/out"], ["is a file, not a folder"]),
    # every id listed before any check: filled the memory, then MemoryError, exit 1
    "--record-state of 10^12 ids": ([*SMALL, "--record-state", "0-999999999999", "--out", "out"],
                                    ["--record-state", "1,000,000,000,000 neuron ids", "1,000,000"]),
    # n_areas^2 projections built in Python: MemoryError at 2^40 areas, minutes at 2000
    "2^40 areas": ([*MAM, "--set", "n_areas=1099511627776", "--out", "out"], ["'n_areas' = 1099511627776",
                                                                              "at most 1024 areas"]),
    "2000 areas": ([*MAM, "--set", "n_areas=2000", "--out", "out"], ["4e+06 area-to-area projections"]),
    # was the Python API's "it needs record_spikes = true"
    "--record-spikes-of without --out": ([*SMALL, "--record-spikes-of", "0-9"],
                                         ["--record-spikes-of", "give --out DIR"]),
}


@pytest.mark.parametrize("case", FUZZ_FOUND, ids=list(FUZZ_FOUND))
def test_fuzz_found_refused_in_one_line(case, tmp_path, monkeypatch, capsys):
    from ranvier import cli
    args, words = FUZZ_FOUND[case]
    (tmp_path / "afile").write_text("mine\n")
    monkeypatch.chdir(tmp_path)
    t0 = time.perf_counter()
    assert cli.main(["run", *args]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ranvier: error: "), captured.err
    for word in words:
        assert word in lines[0], lines[0]
    assert captured.out == ""
    assert [p.name for p in tmp_path.iterdir()] == ["afile"]
    assert time.perf_counter() - t0 < REFUSAL_SECONDS
