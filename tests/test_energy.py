"""ranvier.runtime.energy on fake meters: a powercap tree in tmp_path, NVML-like modules, recorded power
traces and a power model, driven by a fake clock (no real waiting except one short thread test)."""
from __future__ import annotations

import json
import sys
import time

import pytest

from ranvier.runtime import energy
from ranvier.runtime.energy import REPORT_KEYS, EnergySession, ExternalTrace, NvmlMeter, PowerModel, RaplMeter, Unavailable, counter_energy, format_lines, integrate_power, report_from_marks, select_meter, unavailable_report, unwrap
from ranvier.errors import ConfigError

EPOCH = 1_700_000_000.0
EVENTS = {"recurrent": 400_000_000, "external": 200_000_000}


class FakeClock:
    def __init__(self, t=EPOCH):
        self.t = t

    def __call__(self):
        return self.t


# -- pure arithmetic -----------------------------------------------------------------------
def test_unwrap_adds_the_range_at_each_decrease():
    assert unwrap([10, 20, 5, 15, 2], 30).tolist() == [10, 20, 35, 45, 62]
    assert unwrap([1, 2, 3], None).tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match="range is unknown"):
        unwrap([5, 3], None)


def test_counter_energy_interpolates_between_bracketing_samples():
    assert counter_energy([0, 10], [0, 100], 2.5, 7.5) == pytest.approx(50)
    # t0 = 0.5 -> 5 J, t1 = 2 -> 10 + 40 / 2 = 30 J
    assert counter_energy([0, 1, 3], [0, 10, 50], 0.5, 2) == pytest.approx(25)
    assert counter_energy([0, 1, 3], [0, 10, 50], 1, 3) == pytest.approx(40)
    with pytest.raises(ValueError, match="not covered"):
        counter_energy([0, 1], [0, 1], -0.1, 1)


def test_integrate_power_trapezoid_clipped_at_the_marks():
    t, w = [0, 2, 4], [10, 30, 10]
    assert integrate_power(t, w, 0, 4) == pytest.approx(80)
    # P(1) = 20, P(2) = 30, P(3) = 20: 25 + 25
    assert integrate_power(t, w, 1, 3) == pytest.approx(50)
    # inside one segment: P(0.5) = 15, P(1.5) = 25
    assert integrate_power(t, w, 0.5, 1.5) == pytest.approx(20)
    assert integrate_power(t, w, 2, 2) == 0
    with pytest.raises(ValueError, match="not covered"):
        integrate_power(t, w, 1, 5)
    with pytest.raises(ValueError, match="strictly increasing"):
        integrate_power([0, 0, 1], [1, 1, 1], 0, 1)


# -- RAPL --------------------------------------------------------------------------------
def make_rapl(root, max_range_uj=1_000_000_000, with_range=True):
    """package-0 with dram and core subdomains, as /sys/class/powercap lists them (flat), plus the
    MMIO copy of the package counter, which must be ignored."""
    domains = {"intel-rapl:0": "package-0", "intel-rapl:0:0": "dram", "intel-rapl:0:1": "core",
               "intel-rapl-mmio:0": "package-0"}
    for d, name in domains.items():
        (root / d).mkdir(parents=True)
        (root / d / "name").write_text(name + "\n")
        (root / d / "energy_uj").write_text("0\n")
        if with_range:
            (root / d / "max_energy_range_uj").write_text(f"{max_range_uj}\n")
    return root


def set_rapl(root, package_j, dram_j, core_j=None):
    (root / "intel-rapl:0" / "energy_uj").write_text(f"{round(package_j * 1e6)}\n")
    (root / "intel-rapl:0:0" / "energy_uj").write_text(f"{round(dram_j * 1e6)}\n")
    # core would double count: give it absurd values so that counting it shows
    (root / "intel-rapl:0:1" / "energy_uj").write_text(f"{round((core_j or package_j * 7) * 1e6)}\n")
    (root / "intel-rapl-mmio:0" / "energy_uj").write_text(f"{round(package_j * 3e6)}\n")


def test_rapl_meter_reads_package_and_dram_only(tmp_path):
    root = make_rapl(tmp_path / "powercap")
    set_rapl(root, 12.5, 3.0)
    m = RaplMeter(root)
    assert [d.name for d in m.domains] == ["package-0", "dram-0"]
    assert m.read() == (12_500_000.0, 3_000_000.0)
    assert m.name == "rapl" and not m.estimate
    assert "package-0 + dram-0" in m.describes and "not the rest of the node" in m.describes
    with pytest.raises(ConfigError, match="twice"):
        RaplMeter(root, domains=("package", "core"))
    assert [d.name for d in RaplMeter(root, domains=("core",)).domains] == ["core-0"]


def rapl_run(tmp_path, baseline=True):
    """Step by step with a fake clock: 40 W idle (30 package + 10 dram), 100 W while simulating
    (80 + 20), the package counter wrapping at 1000 J during the baseline."""
    root = make_rapl(tmp_path / "powercap")
    clock = FakeClock()
    set_rapl(root, 900, 0)
    s = EnergySession(RaplMeter(root), interval_s=0.1, clock=clock)
    s.sample_now()                                    # what start() does first
    script = [(0, "baseline_start", 900, 0), (5, "baseline_end", 1050, 50),
              (6, "simulation_start", 1080, 60), (11, None, 1480, 160), (16, "simulation_end", 1880, 260),
              (17, None, 1910, 270)]
    if not baseline:
        script = [x if x[1] not in ("baseline_start", "baseline_end") else (x[0], None, *x[2:]) for x in script]
    for dt, mark, pkg, dram in script:
        clock.t = EPOCH + 0.5 + dt
        set_rapl(root, pkg % 1000, dram)             # the package counter wraps past 1000 J
        if mark:
            s.mark(mark)
        else:
            s.sample_now()
    s.stop()
    return s


def test_rapl_session_baseline_arithmetic_with_wraparound(tmp_path):
    s = rapl_run(tmp_path)
    r = s.report(EVENTS)
    assert r["available"] and r["reason"] is None
    assert r["meter"] == "rapl" and r["rate_hz"] == pytest.approx(10)
    assert r["baseline_s"] == pytest.approx(5) and r["simulation_s"] == pytest.approx(10)
    assert r["baseline_power_w"] == pytest.approx(40)
    assert r["energy_total_j"] == pytest.approx(1000)
    assert r["energy_j"] == pytest.approx(600)
    assert r["mean_power_w"] == pytest.approx(100)
    assert r["mean_power_above_baseline_w"] == pytest.approx(60)
    assert r["j_per_synaptic_event"]["all"] == pytest.approx(600 / 600e6)
    assert r["j_per_synaptic_event"]["recurrent"] == pytest.approx(600 / 400e6)
    assert set(r["domains"]) == {"package-0", "dram-0"}
    assert r["domains"]["package-0"]["energy_total_j"] == pytest.approx(800)
    assert r["domains"]["package-0"]["energy_j"] == pytest.approx(800 - 30 * 10)
    assert r["domains"]["dram-0"]["energy_j"] == pytest.approx(200 - 10 * 10)
    assert r["samples"] == 5                          # marks at 0, 5, 6, 16 and the sample at 11
    assert any("wrap-around" in n for n in r["notes"])
    assert r["marks"]["simulation_start"] == EPOCH + 6.5
    assert r["events"] == EVENTS
    json.dumps(r)


def test_rapl_without_baseline_reports_total_and_says_so(tmp_path):
    r = rapl_run(tmp_path, baseline=False).report(EVENTS)
    assert r["energy_j"] == r["energy_total_j"] == pytest.approx(1000)
    assert r["baseline_power_w"] is None and r["baseline_s"] is None
    assert energy.NOTE_NO_BASELINE in r["notes"]
    rows = dict(format_lines(r))
    assert "including idle power" in rows["energy to solution"]


def test_rapl_missing_tree_and_empty_tree(tmp_path):
    with pytest.raises(Unavailable, match="does not exist"):
        RaplMeter(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(Unavailable, match="has no intel-rapl domains"):
        RaplMeter(tmp_path / "empty")


def test_rapl_permission_denied_is_explained(tmp_path, monkeypatch):
    root = make_rapl(tmp_path / "powercap")
    real = energy._read_text

    def denied(path):
        if str(path).endswith("energy_uj"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(energy, "_read_text", denied)
    with pytest.raises(Unavailable) as e:
        RaplMeter(root)
    text = str(e.value)
    assert "permission denied" in text and "intel-rapl:0/energy_uj" in text
    assert "Linux 5.10" in text and "root" in text and "sudo chmod o+r /sys/class/powercap/intel-rapl:*/energy_uj" in text
    assert "udev" in text


def test_rapl_counter_decreasing_without_range_is_refused(tmp_path):
    root = make_rapl(tmp_path / "powercap", with_range=False)
    clock = FakeClock()
    set_rapl(root, 500, 0)
    s = EnergySession(RaplMeter(root), clock=clock)
    for dt, mark, pkg in ((0, "simulation_start", 500), (1, None, 10), (2, "simulation_end", 20)):
        clock.t = EPOCH + dt
        set_rapl(root, pkg, 0)
        s.mark(mark) if mark else s.sample_now()
    r = s.report(EVENTS)
    assert not r["available"] and "range is unknown" in r["reason"]


def test_background_thread_samples_and_stops(tmp_path):
    root = make_rapl(tmp_path / "powercap")
    set_rapl(root, 1, 1)
    s = EnergySession(RaplMeter(root), interval_s=0.01)
    s.start()
    s.mark("simulation_start")
    time.sleep(0.06)
    s.mark("simulation_end")
    s.stop()
    assert not s._thread.is_alive() and s._thread.daemon
    assert len(s.times) >= 4                          # start, marks, stop and some in between
    assert all(b > a for a, b in zip(s.times, s.times[1:]))
    r = s.report(EVENTS)
    assert r["available"] and r["energy_j"] == pytest.approx(0)
    s.stop()                                          # idempotent


class BrokenMeter(energy.Meter):
    name, describes, live = "broken", "a meter whose reads fail", True
    domains = (energy.Domain("x", "counter", 1.0),)

    def read(self):
        raise OSError("device went away")


def test_failing_reads_do_not_raise_and_are_reported():
    clock = FakeClock()
    s = EnergySession(BrokenMeter(), clock=clock)
    s.start()
    s.mark("simulation_start")
    clock.t += 1
    s.mark("simulation_end")
    s.stop()
    r = s.report(EVENTS)
    assert not r["available"] and "device went away" in r["reason"]
    assert r["marks"] == {"simulation_start": EPOCH, "simulation_end": EPOCH + 1}


# -- NVML ----------------------------------------------------------------------------------
class FakeNVMLError(Exception):
    pass


class FakeNvml:
    """The pynvml functions the meter uses. GPU 0 has the total-energy counter (mJ), GPU 1 only
    power readings (mW) from a recorded trace; both follow the fake clock."""
    NVMLError = FakeNVMLError

    def __init__(self, clock, gpus, init_error=None):
        self.clock, self.gpus, self.init_error, self.shut = clock, gpus, init_error, False

    def nvmlInit(self):
        if self.init_error:
            raise FakeNVMLError(self.init_error)

    def nvmlShutdown(self):
        self.shut = True

    def nvmlDeviceGetCount(self):
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetName(self, h):
        return self.gpus[h]["name"].encode()          # old pynvml returns bytes

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        f = self.gpus[h].get("energy_mj")
        if f is None:
            raise FakeNVMLError("Not Supported")
        return f(self.clock() - EPOCH)

    def nvmlDeviceGetPowerUsage(self, h):
        return self.gpus[h]["power_mw"](self.clock() - EPOCH)


def gpu_counter(t):            # 50 W idle until t = 5, then 250 W
    return int(50_000 * t if t <= 5 else 250_000 + 250_000 * (t - 5))


POWER_TRACE_MW = {0: 60_000, 1: 60_000, 2: 60_000, 3: 60_000, 4: 60_000, 5: 60_000,
                  **{k: 160_000 for k in range(6, 17)}}


def gpu_power(t):
    return POWER_TRACE_MW.get(round(t), 60_000)


def fake_nvml(clock, **kw):
    return FakeNvml(clock, [{"name": "Tesla V100", "energy_mj": gpu_counter, "power_mw": gpu_power},
                            {"name": "Tesla P4", "power_mw": gpu_power}], **kw)


def test_nvml_counter_and_power_samples():
    clock = FakeClock()
    nv = fake_nvml(clock)
    m = NvmlMeter(nvml=nv)
    assert [(d.name, d.kind) for d in m.domains] == [("gpu-0", "counter"), ("gpu-1", "power")]
    assert "gpu-0 Tesla V100 energy counter" in m.describes and "gpu-1 Tesla P4 power samples" in m.describes
    s = EnergySession(m, interval_s=1.0, clock=clock)
    for t in range(17):
        clock.t = EPOCH + t
        if t == 0:
            s.mark("baseline_start")
        elif t == 5:
            s.mark("baseline_end")
            s.mark("simulation_start")                # same clock time: shares the sample
        elif t == 15:
            s.mark("simulation_end")
        else:
            s.sample_now()
    s.stop()
    assert nv.shut
    r = s.report(EVENTS)
    assert r["available"] and r["rate_hz"] == pytest.approx(1)
    g0, g1 = r["domains"]["gpu-0"], r["domains"]["gpu-1"]
    assert g0["energy_total_j"] == pytest.approx(2500) and g0["energy_j"] == pytest.approx(2000)
    # trapezoid: (60 + 160) / 2 over [5, 6], then 9 s at 160 W; baseline 60 W
    assert g1["energy_total_j"] == pytest.approx(110 + 1440) and g1["energy_j"] == pytest.approx(1550 - 600)
    assert r["baseline_power_w"] == pytest.approx(110)
    assert r["energy_j"] == pytest.approx(2950) and r["energy_total_j"] == pytest.approx(4050)


def test_nvml_unavailable_reasons(monkeypatch):
    clock = FakeClock()
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    with pytest.raises(Unavailable, match="pip install nvidia-ml-py"):
        NvmlMeter()
    with pytest.raises(Unavailable, match="no NVIDIA driver or GPU.*Driver Not Loaded"):
        NvmlMeter(nvml=fake_nvml(clock, init_error="Driver Not Loaded"))
    nv = FakeNvml(clock, [])
    with pytest.raises(Unavailable, match="0 devices"):
        NvmlMeter(nvml=nv)
    assert nv.shut


# -- external trace --------------------------------------------------------------------------
def marks_at(base, baseline=(1.0, 6.0), sim=(6.5, 16.0)):
    m = {"simulation_start": base + sim[0], "simulation_end": base + sim[1]}
    if baseline:
        m.update(baseline_start=base + baseline[0], baseline_end=base + baseline[1])
    return m


def trace_rows(offset=0.0):
    """40 W up to t = 6, 100 W from t = 7 on, one sample a second, t = 0..20."""
    return [(offset + k, 40.0 if k <= 6 else 100.0) for k in range(21)]


# over [6.5, 16]: P(6.5) = 70, (70 + 100) / 2 * 0.5 + 9 * 100 = 942.5 J; baseline 40 W
TRACE_TOTAL, TRACE_ABOVE = 942.5, 942.5 - 40 * 9.5


def test_external_trace_epoch_seconds(tmp_path):
    p = tmp_path / "trace.csv"
    p.write_text("# logged by the wall meter\ntimestamp,power_w\n" + "".join(f"{t},{w}\n" for t, w in trace_rows(EPOCH)))
    m = select_meter(power_trace=str(p))
    assert isinstance(m, ExternalTrace) and not m.live
    r = report_from_marks(m, marks_at(EPOCH), EVENTS)
    assert r["available"] and r["meter"] == "external" and r["rate_hz"] == pytest.approx(1)
    assert r["energy_total_j"] == pytest.approx(TRACE_TOTAL)
    assert r["baseline_power_w"] == pytest.approx(40)
    assert r["energy_j"] == pytest.approx(TRACE_ABOVE)
    assert r["samples"] == 16                         # t = 1 .. 16
    assert r["domains"]["external"]["energy_j"] == pytest.approx(TRACE_ABOVE)


def test_external_trace_relative_with_offset_semicolons_and_decimal_commas(tmp_path):
    p = tmp_path / "trace.csv"
    p.write_text("Time (s);Power (W)\n" + "".join(f"{t:.1f};{w:.2f}\n".replace(".", ",") for t, w in trace_rows()))
    r = report_from_marks(ExternalTrace(p, clock_offset_s=EPOCH), marks_at(EPOCH), EVENTS)
    assert r["available"] and r["energy_j"] == pytest.approx(TRACE_ABOVE)
    # the same trace without the offset: its times cannot be epoch seconds
    r = report_from_marks(ExternalTrace(p), marks_at(EPOCH), EVENTS)
    assert not r["available"] and "--clock-offset-s" in r["reason"] and str(p) in r["reason"]


def test_external_trace_session_marks_then_trace(tmp_path):
    """ranvier run --power-trace FILE: the logger writes the file while the run goes on."""
    p = tmp_path / "trace.csv"
    clock = FakeClock(EPOCH + 1)
    s = EnergySession(ExternalTrace(p), clock=clock)
    s.start()                                         # nothing to sample, no thread
    assert s._thread is None
    for t, name in ((1, "baseline_start"), (6, "baseline_end"), (6.5, "simulation_start"), (16, "simulation_end")):
        clock.t = EPOCH + t
        s.mark(name)
    s.stop()
    p.write_text("t,W\n" + "".join(f"{t},{w}\n" for t, w in trace_rows(EPOCH)))
    assert s.report(EVENTS)["energy_j"] == pytest.approx(TRACE_ABOVE)


@pytest.mark.parametrize("text, match", [
    ("time_s,watts\n1700000000,40\n1700000001,forty\n", r"trace.csv: line 3: power 'forty' is not a number"),
    ("time_s,watts\n1700000000,40\n1700000001\n", r"line 3: 1 field\(s\), the header has 2"),
    ("time_s,watts\n1700000001,40\n1700000000,40\n", r"line 3: .* not after the previous"),
    ("seconds;amps\n1;2\n2;3\n", r"line 1: no power column .* watts, power_w, power, w"),
    ("when,watts\n1,2\n2,3\n", r"line 1: no time column .* time_s, time, t, timestamp"),
    ("time_s,watts\n1700000000,40\n", r"1 sample\(s\); at least two"),
    ("time_s,watts\n1700000000,nan\n1700000001,40\n", r"line 2: power 'nan'"),
    ("time_s,watts\nyesterday,40\n1700000001,40\n", r"line 2: time 'yesterday' is neither seconds nor an ISO 8601"),
])
def test_external_trace_bad_files_name_file_line_and_fix(tmp_path, text, match):
    p = tmp_path / "trace.csv"
    p.write_text(text)
    with pytest.raises(ConfigError, match=match):
        ExternalTrace(p).load()
    with pytest.raises(ConfigError, match="does not exist"):
        ExternalTrace(tmp_path / "missing.csv").load()


def test_external_trace_iso_times(tmp_path):
    p = tmp_path / "trace.csv"
    p.write_text("timestamp,watts\n2024-01-01T00:00:00+00:00,10\n2024-01-01T00:00:10Z,30\n")
    t, w = ExternalTrace(p).load()
    assert t[0] == 1704067200.0 and t[1] == 1704067210.0 and w.tolist() == [10, 30]
    with pytest.raises(ConfigError, match="leave out --clock-offset-s"):
        ExternalTrace(p, clock_offset_s=5).load()


def test_external_trace_must_cover_the_simulation(tmp_path):
    p = tmp_path / "trace.csv"
    p.write_text("time,watts\n" + "".join(f"{t},{w}\n" for t, w in trace_rows(EPOCH)[:14]))   # ends at t = 13
    r = report_from_marks(ExternalTrace(p), marks_at(EPOCH), EVENTS)
    assert not r["available"] and r["energy_j"] is None
    assert "does not cover the simulation: it ends 3.000 s before simulation_end" in r["reason"]
    # a trace that misses only the baseline: no baseline subtracted, and a note says why
    p.write_text("time,watts\n" + "".join(f"{t},{w}\n" for t, w in trace_rows(EPOCH)[3:]))   # starts at t = 3
    r = report_from_marks(ExternalTrace(p), marks_at(EPOCH), EVENTS)
    assert r["available"] and r["baseline_power_w"] is None and r["energy_j"] == pytest.approx(TRACE_TOTAL)
    assert any("it starts 2.000 s after baseline_start" in n for n in r["notes"])


# -- power model -----------------------------------------------------------------------------
def test_power_model_is_a_labelled_estimate():
    m = PowerModel.from_spec("static=10, per_core=15W", cores=4)
    assert m.estimate and m.power_w == 70
    assert "estimate from a user-given power model" in m.describes and "10 W static + 15 W per core x 4" in m.describes
    r = report_from_marks(m, marks_at(EPOCH, baseline=None, sim=(0, 10)), EVENTS)
    assert r["available"] and r["estimate"] and r["energy_j"] == pytest.approx(700)
    assert r["energy_total_j"] is None and r["baseline_power_w"] is None
    assert r["j_per_synaptic_event"]["all"] == pytest.approx(700 / 600e6)
    assert any("estimate" in n for n in r["notes"])
    rows = format_lines(r)
    assert rows[0][0] == "energy to solution (estimate)" and "700.0 J" in rows[0][1]
    assert ("J per synaptic event (estimate)", "1.17 µJ all, 1.75 µJ recurrent only") in rows


@pytest.mark.parametrize("spec, match", [
    ("static=10,per_core=abc", r"per_core='abc' is not a number"),
    ("static=10,percore=5", r"unknown key 'percore'"),
    ("static=10", r"missing per_core"),
    ("static=10,per_core=1,static=2", r"key 'static' given twice"),
    ("static 10", r"'static 10' is not key=value"),
    ("static=-1,per_core=1", r"static must be a number of watts >= 0"),
])
def test_power_model_spec_errors_name_the_key(spec, match):
    with pytest.raises(ConfigError, match=match):
        PowerModel.from_spec(spec, cores=2)
    with pytest.raises(ConfigError, match="cores"):
        PowerModel(1, 1, cores=0)


# -- choosing the meter --------------------------------------------------------------------------
def test_select_meter_auto_joins_every_reason(tmp_path, monkeypatch):
    (tmp_path / "powercap").mkdir()
    clock = FakeClock()
    with pytest.raises(Unavailable) as e:
        select_meter("auto", rapl_root=tmp_path / "powercap", nvml=fake_nvml(clock, init_error="Driver Not Loaded"))
    assert str(e.value) == (f"RAPL: no RAPL counters: {tmp_path / 'powercap'} has no intel-rapl domains; "
                            f"NVML: no NVIDIA driver or GPU: NVML does not start (Driver Not Loaded)")
    monkeypatch.setitem(sys.modules, "pynvml", None)
    with pytest.raises(Unavailable, match=r"^RAPL: no RAPL counters: .* does not exist .*; NVML: .*pip install nvidia-ml-py"):
        select_meter(rapl_root=tmp_path / "absent")
    with pytest.raises(Unavailable, match="pip install nvidia-ml-py"):
        select_meter("nvml")
    with pytest.raises(Unavailable, match="does not exist"):
        select_meter("rapl", rapl_root=tmp_path / "absent")


def test_select_meter_prefers_rapl_then_nvml(tmp_path):
    clock = FakeClock()
    root = make_rapl(tmp_path / "powercap")
    assert isinstance(select_meter(rapl_root=root, nvml=fake_nvml(clock)), RaplMeter)
    assert isinstance(select_meter(rapl_root=tmp_path / "absent", nvml=fake_nvml(clock)), NvmlMeter)
    assert isinstance(select_meter("nvml", rapl_root=root, nvml=fake_nvml(clock)), NvmlMeter)


def test_select_meter_options(tmp_path):
    with pytest.raises(Unavailable, match=r"energy measurement switched off \(--energy none\)"):
        select_meter("none")
    assert isinstance(select_meter(power_model="static=1,per_core=2", cores=3), PowerModel)
    assert select_meter(power_trace="x.csv", clock_offset_s=EPOCH).clock_offset_s == EPOCH
    for kw, match in (({"kind": "gpu"}, "one of auto, rapl, nvml, none"),
                      ({"power_trace": "x.csv", "power_model": "static=1,per_core=1"}, "not both"),
                      ({"clock_offset_s": 5.0}, "applies to a power trace"),
                      ({"kind": "rapl", "power_trace": "x.csv"}, "cannot be combined"),
                      ({"kind": "none", "power_model": "static=1,per_core=1"}, "switches energy off")):
        with pytest.raises(ConfigError, match=match):
            select_meter(**kw)


# -- the report's shape ------------------------------------------------------------------------
def test_report_keys_are_the_same_available_or_not(tmp_path):
    reports = [
        unavailable_report("no RAPL counters: ...", EVENTS),
        EnergySession(None, unavailable_reason="energy measurement switched off (--energy none)").report(EVENTS),
        rapl_run(tmp_path / "a").report(EVENTS),
        rapl_run(tmp_path / "b", baseline=False).report({"recurrent": 0, "external": 0}),
        report_from_marks(PowerModel(1, 1, 1), marks_at(EPOCH), EVENTS),
        report_from_marks(ExternalTrace(tmp_path / "missing.csv"), marks_at(EPOCH), EVENTS),
        EnergySession(PowerModel(1, 1, 1)).report(EVENTS),      # no marks
    ]
    for r in reports:
        assert tuple(r) == REPORT_KEYS
        json.dumps(r)
    off = reports[1]
    assert off["reason"] == "energy measurement switched off (--energy none)" and not off["available"]
    for r in (reports[0], reports[1], reports[5], reports[6]):
        assert not r["available"] and r["reason"]
        assert all(r[k] is None for k in ("baseline_s", "baseline_power_w", "simulation_s", "energy_total_j",
                                          "energy_j", "mean_power_w", "mean_power_above_baseline_w", "rate_hz"))
        assert r["j_per_synaptic_event"] == {"all": None, "recurrent": None}
    assert "does not exist" in reports[5]["reason"] and "marks are missing" in reports[6]["reason"]
    assert reports[3]["j_per_synaptic_event"] == {"all": None, "recurrent": None}


def test_a_live_meter_cannot_measure_a_past_run(tmp_path):
    r = report_from_marks(RaplMeter(make_rapl(tmp_path)), marks_at(EPOCH), EVENTS)
    assert not r["available"] and "--power-trace" in r["reason"]


def test_format_lines(tmp_path):
    assert format_lines(unavailable_report("no RAPL counters: x", EVENTS)) == [("energy", "unavailable: no RAPL counters: x")]
    rows = format_lines(rapl_run(tmp_path).report(EVENTS))
    labels = [k for k, _ in rows]
    text = dict(rows)
    assert labels[0] == "energy to solution"
    assert text["energy to solution"].startswith("600.0 J above a 40.0 W baseline (RAPL powercap: package-0 + dram-0")
    assert text["energy to solution"].endswith("sampled at 10 Hz)")
    assert text["mean power"].startswith("100.0 W during the simulation, 60.0 W above baseline")
    assert text["  by domain"] == "package-0 500.0 J, dram-0 100.0 J"
    assert text["J per synaptic event"] == "1 µJ all, 1.5 µJ recurrent only"
    assert ("  note", "counter wrap-around handled (1 time(s))") in rows
    assert not any("estimate" in k for k in labels)


def test_node_reports_are_summed(tmp_path):
    """Two nodes measured by their own RAPL meters: energies and powers add up, J per event is
    recomputed from the sum; one node without a meter makes the whole run unavailable."""
    a = rapl_run(tmp_path / "a").report(EVENTS)
    b = rapl_run(tmp_path / "b").report(EVENTS)
    both = energy.combine_node_reports([a, b], EVENTS)
    assert both["available"] and len(both["nodes"]) == 2
    assert both["energy_j"] == pytest.approx(1200) and both["energy_total_j"] == pytest.approx(2000)
    assert both["baseline_power_w"] == pytest.approx(80) and both["mean_power_w"] == pytest.approx(200)
    assert both["j_per_synaptic_event"]["all"] == pytest.approx(1200 / 600e6)
    assert set(both["domains"]) == {"node0/package-0", "node0/dram-0", "node1/package-0", "node1/dram-0"}
    assert "summed over 2 nodes" in both["notes"]
    assert energy.combine_node_reports([a], EVENTS) is a
    missing = energy.combine_node_reports([a, energy.unavailable_report("no RAPL counters", EVENTS)], EVENTS)
    assert not missing["available"] and "node 1: no RAPL counters" in missing["reason"]
    assert missing["energy_j"] is None
    json.dumps(both)


# -- the Python API: Simulation.run(energy=...) ---------------------------------------------
def tiny_simulation():
    from ranvier import Simulation, models

    return Simulation(models.build("dpsnn", neurons=300, synapses_per_neuron=10), threads=1)


def test_simulation_run_measures_energy_with_a_fake_rapl_tree(tmp_path):
    """A meter object: the counters grow while the engine runs (12 J: 10 package + 2 DRAM), and
    the report is in the Result and in its summary, as `ranvier run` writes it."""
    root = make_rapl(tmp_path / "powercap")
    set_rapl(root, 0, 0)

    def progress(done_ms, total_ms, wall_s):
        set_rapl(root, 10 * done_ms / total_ms, 2 * done_ms / total_ms)

    with tiny_simulation() as sim:
        result = sim.run(10.0, progress=progress, energy=RaplMeter(root))
    r = result.energy
    assert set(r) >= set(REPORT_KEYS) and r["available"] and r["meter"] == "rapl"
    assert r["energy_total_j"] == pytest.approx(12.0)
    assert r["baseline_power_w"] == pytest.approx(0.0) and r["energy_j"] == pytest.approx(12.0)   # idle: no growth
    assert r["marks"]["baseline_start"] <= r["marks"]["simulation_start"] < r["marks"]["simulation_end"]
    events = {"recurrent": result.counters["synaptic_events_recurrent"],
              "external": result.counters["synaptic_events_external"]}
    assert r["events"] == events
    assert r["j_per_synaptic_event"]["all"] == pytest.approx(12.0 / sum(events.values()))
    assert result.summary()["energy"] == r
    json.dumps(result.summary())                     # as summary.json holds it


def test_simulation_run_with_a_power_model_and_a_baseline(tmp_path):
    """A power model is an estimate over the simulation's wall time; a Measurement adds an idle
    baseline before the simulation, which the marks show."""
    with tiny_simulation() as sim:
        result = sim.run(10.0, energy=energy.Measurement(PowerModel(10, 15, cores=2), baseline_s=0.05))
    r = result.energy
    marks = r["marks"]
    assert marks["baseline_end"] - marks["baseline_start"] >= 0.05
    assert r["available"] and r["estimate"]
    assert r["energy_j"] == pytest.approx(40.0 * (marks["simulation_end"] - marks["simulation_start"]))
    assert format_lines(r)[0][0] == "energy to solution (estimate)"


def test_simulation_run_energy_choices():
    with tiny_simulation() as sim:
        off = sim.run(10.0, energy="none").energy
        assert not off["available"] and "switched off" in off["reason"] and off["energy_j"] is None
        assert "simulation_start" in off["marks"]            # a trace can still be applied afterwards
        assert sim.run(10.0).energy is None and "energy" not in sim.run(10.0).summary()
        with pytest.raises(ConfigError, match="energy must be one of auto, rapl, nvml, none"):
            sim.run(10.0, energy=5)
        with pytest.raises(ConfigError, match="energy meter must be one of"):
            sim.run(10.0, energy="wattmeter")
        with pytest.raises(ConfigError, match="baseline"):
            energy.Measurement("none", baseline_s=-1)


def test_choose_meter_returns_the_reason_and_counts_the_run_cores(tmp_path):
    """What `ranvier run` and Simulation.run share: no meter is a reason, not an error; a power
    model given as a spec is rebuilt for the cores the run uses on the node."""
    reason = energy.choose_meter("none")
    assert isinstance(reason, Unavailable) and "switched off" in str(reason)
    model = energy.choose_meter(power_model="static=10,per_core=15", cores=64)
    with tiny_simulation() as sim:
        session = energy.Measurement(model).session(sim)
    assert session.meter.cores == sim.comm.ranks_on_node * sim.threads == 1
    assert session.meter.power_w == 25
