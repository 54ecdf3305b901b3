"""Energy to solution and joules per synaptic event (theory.md section 4).

Energy to solution E = integral of (P(t) - P_baseline) dt over the simulation, P_baseline the
mean power over an idle plateau before it (the DPSNN study paused 5 s at start for this and
read a multimeter). Cost per synaptic event = E / synaptic events, recurrent and external
counted apart by the engine and reported both ways.

Where the power comes from is a `Meter`; each says what it measures (`describes`) and how
often (`rate_hz`):

- `RaplMeter`: the CPU's RAPL energy counters (Linux powercap), package + DRAM of each
  socket. Cumulative counters, sampled by a background thread.
- `NvmlMeter`: NVIDIA GPU boards through NVML: the board's total-energy counter where the GPU
  has one (Volta and newer), power samples integrated by the trapezoid rule otherwise.
- `ExternalTrace`: a power trace recorded by an outside meter (a wall-socket or PDU meter
  writing CSV), read whole after the run and aligned with the run's marks (epoch seconds).
- `PowerModel`: a user-given model (static + per-core watts). An estimate, labelled as such.

`EnergySession` samples the live meters in the background and records the marks
("baseline_start", "baseline_end", "simulation_start", "simulation_end", epoch seconds);
`EnergySession.report(events)` does the arithmetic with the small pure functions `unwrap`,
`counter_energy` and `integrate_power`. A report always has the same keys (`REPORT_KEYS`);
when nothing can be measured it says why and every energy figure is None, never a guess.

This module does not import the engine.
"""
from __future__ import annotations

import contextlib
import csv
import math
import os
import re
import statistics
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

from ..errors import ConfigError

MARKS = ("baseline_start", "baseline_end", "simulation_start", "simulation_end")
KINDS = ("auto", "rapl", "nvml", "none")
REPORT_KEYS = ("available", "reason", "meter", "describes", "rate_hz", "estimate", "marks", "baseline_s",
               "baseline_power_w", "simulation_s", "energy_total_j", "energy_j", "mean_power_w",
               "mean_power_above_baseline_w", "j_per_synaptic_event", "events", "domains", "samples", "notes")

NOTE_NO_BASELINE = "includes idle power: no baseline (use --baseline-s)"
RAPL_PERMISSION_FIX = (
    "since Linux 5.10 energy_uj is readable by root only; run as root, or let users read it with "
    "`sudo chmod o+r /sys/class/powercap/intel-rapl:*/energy_uj` (until reboot) or a udev rule "
    "(docs/measuring.md, section Energy)")
NVML_INSTALL_FIX = "pip install nvidia-ml-py"


class Unavailable(Exception):
    """No energy measurement possible; str(e) says why and, where there is one, the fix."""


# -- energy arithmetic (pure functions) -----------------------------------------------------
def unwrap(values, max_range) -> np.ndarray:
    """A wrapping cumulative counter made monotonic: each decrease adds `max_range` once.

    `max_range` is the counter's range in the same unit (RAPL: max_energy_range_uj). A counter
    that wraps more than once between two samples cannot be detected: sample faster than
    range / peak power (RAPL package: about 262 kJ, so minutes at any plausible power).
    With `max_range` None a decreasing counter is an error.
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1:
        raise ValueError("unwrap: values must be one-dimensional")
    if v.size < 2:
        return v.copy()
    drops = np.diff(v) < 0
    if not drops.any():
        return v.copy()
    if max_range is None or not max_range > 0:
        i = int(np.argmax(drops)) + 1
        raise ValueError(f"counter decreased at sample {i} ({v[i - 1]:g} -> {v[i]:g}) and its range is unknown")
    wraps = np.concatenate(([0], np.cumsum(drops)))
    return v + wraps * float(max_range)


def _check_series(times, values, t0, t1, what: str):
    t = np.asarray(times, dtype=np.float64)
    y = np.asarray(values, dtype=np.float64)
    if t.ndim != 1 or t.shape != y.shape:
        raise ValueError(f"{what}: times and values must be one-dimensional and of the same length")
    if t.size < 2:
        raise ValueError(f"{what}: at least two samples are needed (got {t.size})")
    if np.any(np.diff(t) <= 0):
        raise ValueError(f"{what}: sample times must be strictly increasing")
    if not t0 <= t1:
        raise ValueError(f"{what}: interval end {t1!r} is before its start {t0!r}")
    if t0 < t[0] or t1 > t[-1]:
        raise ValueError(f"{what}: interval [{t0:.6f}, {t1:.6f}] is not covered by the samples "
                         f"[{t[0]:.6f}, {t[-1]:.6f}]")
    return t, y


def counter_energy(times, joules, t0: float, t1: float) -> float:
    """Energy (J) between t0 and t1 from a monotonic cumulative counter (already unwrapped).

    The counter is interpolated linearly between the samples bracketing each end.
    """
    t, y = _check_series(times, joules, t0, t1, "counter_energy")
    return float(np.interp(t1, t, y) - np.interp(t0, t, y))


def integrate_power(times, watts, t0: float, t1: float) -> float:
    """Energy (J) between t0 and t1 from power samples (W): trapezoid rule, power
    interpolated linearly at the ends of the interval."""
    t, y = _check_series(times, watts, t0, t1, "integrate_power")
    inside = (t > t0) & (t < t1)
    x = np.concatenate(([t0], t[inside], [t1]))
    p = np.concatenate(([np.interp(t0, t, y)], y[inside], [np.interp(t1, t, y)]))
    return float(np.sum((p[1:] + p[:-1]) * 0.5 * np.diff(x)))


def mean_power(energy_j: float, seconds: float) -> float | None:
    return energy_j / seconds if seconds > 0 else None


# -- meters --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Domain:
    """One measured quantity of a meter.

    kind "counter": cumulative energy, raw value * unit = joules, wrapping at max_range (raw).
    kind "power": instantaneous power, raw value * unit = watts.
    """
    name: str
    kind: str
    unit: float
    max_range: float | None = None


class Meter:
    """What measures energy. Live meters (`live` True) are read by `EnergySession` through
    `read()`: one raw value per entry of `domains`. Others produce their series after the run
    (`series`) or have none at all (PowerModel)."""
    name: str = ""
    describes: str = ""
    rate_hz: float | None = None
    estimate: bool = False
    live: bool = False
    domains: tuple[Domain, ...] = ()

    def read(self) -> tuple[float, ...]:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __repr__(self):
        return f"<{type(self).__name__} {self.name}: {self.describes}>"


def _read_text(path) -> str:
    with open(path) as f:
        return f.read()


_RAPL_DIR = re.compile(r"^intel-rapl:(\d+)(?::(\d+))?$")
_RAPL_NAMES = ("package", "dram", "core", "uncore", "psys")
_RAPL_WHAT = {"package": "CPU sockets", "dram": "their DRAM", "core": "CPU cores",
              "uncore": "uncore/integrated GPU", "psys": "the SoC platform"}


class RaplMeter(Meter):
    """RAPL energy counters through Linux powercap (/sys/class/powercap/intel-rapl:*).

    Reads every top-level domain intel-rapl:N named package-N and every subdomain
    intel-rapl:N:M named dram, each an energy_uj counter wrapping at max_energy_range_uj.
    core and uncore are parts of the package and psys contains it, so combining them with
    package would count energy twice: such requests are refused. The intel-rapl-mmio tree
    repeats the package counter and is ignored. AMD CPUs expose the same tree.
    """
    name = "rapl"
    live = True

    def __init__(self, root="/sys/class/powercap", domains=("package", "dram")):
        self.root = Path(root)
        wanted = tuple(domains)
        bad = [d for d in wanted if d not in _RAPL_NAMES]
        if bad or not wanted:
            raise ConfigError(f"RAPL domains must be among {', '.join(_RAPL_NAMES)} (got {', '.join(map(str, wanted)) or 'none'})")
        if "package" in wanted and ({"core", "uncore", "psys"} & set(wanted)):
            raise ConfigError("RAPL domains: core and uncore are inside package and psys contains it; "
                              "asking for them together would count energy twice")
        if "psys" in wanted and len(wanted) > 1:
            raise ConfigError("RAPL domains: psys (the whole platform) contains the other domains; ask for it alone")
        if not self.root.is_dir():
            raise Unavailable(f"no RAPL counters: {self.root} does not exist (not Linux, or the intel_rapl "
                              f"powercap driver is not loaded; virtual machines and containers usually do not "
                              f"expose the host's counters)")
        found = []          # (sort key, label, directory)
        any_rapl = False
        for entry in sorted(self.root.iterdir(), key=lambda p: p.name):
            m = _RAPL_DIR.match(entry.name)
            if not m:
                continue
            any_rapl = True
            try:
                kind_name = _read_text(entry / "name").strip()
            except OSError:
                continue
            top, sub = int(m.group(1)), m.group(2)
            base = kind_name.split("-")[0]
            if base not in wanted:
                continue
            if base == "package" or base == "psys":
                label = kind_name if base == "package" and "-" in kind_name else (
                    f"package-{top}" if base == "package" else "psys")
            else:
                label = f"{base}-{self._package_index(top)}"
            found.append(((top, -1 if sub is None else int(sub)), label, entry))
        if not any_rapl:
            raise Unavailable(f"no RAPL counters: {self.root} has no intel-rapl domains")
        if not found:
            raise Unavailable(f"no RAPL counters: {self.root} has no {' or '.join(wanted)} domain")
        found.sort(key=lambda f: f[0])
        self._files = []
        doms = []
        for _, label, entry in found:
            energy = entry / "energy_uj"
            try:
                int(_read_text(energy).strip())
            except PermissionError:
                raise Unavailable(f"RAPL counters are not readable: {energy}: permission denied; "
                                  f"{RAPL_PERMISSION_FIX}") from None
            except (OSError, ValueError) as e:
                raise Unavailable(f"RAPL counter {energy} cannot be read: {e}") from None
            try:
                max_range = float(int(_read_text(entry / "max_energy_range_uj").strip()))
            except (OSError, ValueError):
                max_range = None
            self._files.append(energy)
            doms.append(Domain(label, "counter", 1e-6, max_range))
        self.domains = tuple(doms)
        labels = " + ".join(d.name for d in self.domains)
        what = " and ".join(_RAPL_WHAT[w] for w in wanted)
        self.describes = (f"RAPL powercap: {labels} ({what}; not the rest of the node: no disks, fans, "
                          f"network, GPUs or power-supply losses)")

    def _package_index(self, top: int) -> int:
        try:
            name = _read_text(self.root / f"intel-rapl:{top}" / "name").strip()
            if name.startswith("package-"):
                return int(name.split("-", 1)[1])
        except (OSError, ValueError):
            pass
        return top

    def read(self) -> tuple[float, ...]:
        out = []
        for path in self._files:
            try:
                out.append(float(int(_read_text(path).strip())))
            except PermissionError:
                raise Unavailable(f"RAPL counters are not readable: {path}: permission denied; "
                                  f"{RAPL_PERMISSION_FIX}") from None
        return tuple(out)


class NvmlMeter(Meter):
    """NVIDIA GPU boards through NVML (the `pynvml` module of the package nvidia-ml-py).

    Per GPU: the board's total-energy counter (mJ, Volta and newer) where it has one, power
    samples (mW) integrated by the trapezoid rule otherwise. `nvml` injects a module with the
    same functions (tests); `devices` limits the GPUs (indices, default all).
    """
    name = "nvml"
    live = True

    def __init__(self, nvml=None, devices=None):
        if nvml is None:
            try:
                import pynvml as nvml
            except ImportError:
                raise Unavailable(f"the pynvml module is not installed ({NVML_INSTALL_FIX})") from None
        self._nvml = nvml
        error = getattr(nvml, "NVMLError", Exception)
        try:
            nvml.nvmlInit()
        except error as e:
            raise Unavailable(f"no NVIDIA driver or GPU: NVML does not start ({e})") from None
        self._open = True
        try:
            count = int(nvml.nvmlDeviceGetCount())
            if count == 0:
                raise Unavailable("no NVIDIA GPU: NVML finds 0 devices")
            indices = list(range(count)) if devices is None else [int(i) for i in devices]
            missing = [i for i in indices if not 0 <= i < count]
            if missing:
                raise ConfigError(f"GPU indices {missing} do not exist: NVML finds {count} device(s), 0 to {count - 1}")
            self._handles, self._kinds, doms, parts, skipped = [], [], [], [], []
            for i in indices:
                h = nvml.nvmlDeviceGetHandleByIndex(i)
                name = nvml.nvmlDeviceGetName(h)
                name = name.decode() if isinstance(name, bytes) else str(name)
                try:
                    nvml.nvmlDeviceGetTotalEnergyConsumption(h)
                    kind = "counter"
                except error:
                    try:
                        nvml.nvmlDeviceGetPowerUsage(h)
                        kind = "power"
                    except error as e:
                        skipped.append(f"gpu-{i} ({name}): neither energy counter nor power reading ({e})")
                        continue
                self._handles.append(h)
                self._kinds.append(kind)
                doms.append(Domain(f"gpu-{i}", kind, 1e-3))
                parts.append(f"gpu-{i} {name} " + ("energy counter" if kind == "counter" else
                                                   "power samples (trapezoid; the driver may average each reading over up to 1 s)"))
            if not self._handles:
                raise Unavailable("no NVIDIA GPU with an energy counter or a power reading: " + "; ".join(skipped))
        except BaseException:
            self.close()
            raise
        self.domains = tuple(doms)
        self.skipped = skipped
        self.describes = "NVML: " + ", ".join(parts) + " (whole GPU boards, not the CPUs or the rest of the node)"

    def read(self) -> tuple[float, ...]:
        n = self._nvml
        return tuple(float(n.nvmlDeviceGetTotalEnergyConsumption(h) if k == "counter" else n.nvmlDeviceGetPowerUsage(h))
                     for h, k in zip(self._handles, self._kinds))

    def close(self) -> None:
        if getattr(self, "_open", False):
            self._open = False
            with contextlib.suppress(Exception):
                self._nvml.nvmlShutdown()


_TIME_NAMES = ("time_s", "time", "t", "timestamp", "epoch", "epoch_s", "seconds")
_WATT_NAMES = ("watts", "power_w", "power", "w", "watt", "p_w")
EPOCH_MIN = 1e9          # 2001-09-09: numeric times below are taken as relative to the trace start


def _column_key(text: str) -> str:
    t = text.strip().strip('"\'').strip().lower()
    t = re.sub(r"[\(\[].*?[\)\]]", "", t).strip()   # "power (W)" -> "power"
    return re.sub(r"[\s\-]+", "_", t)


class ExternalTrace(Meter):
    """A power trace recorded by an outside meter (wall socket, PDU, bench multimeter).

    CSV with a header row; comma, semicolon or tab separated (with semicolons a decimal comma is
    accepted); lines starting with # and blank lines are skipped. Columns, case-insensitive and
    with any unit in brackets ignored ("power (W)"): time from time_s/time/t/timestamp/epoch,
    power in watts from watts/power_w/power/W. Times are epoch seconds (Unix time, the clock of
    the run's marks), or ISO 8601 date-times (with a time zone; without one, local time).
    When the logger writes seconds since its own start instead, give `clock_offset_s` = the epoch
    time of its t=0: epoch = t + clock_offset_s.

    Not sampled live: read whole after the run (the logger may still be writing it when the
    run starts) and aligned with the run's marks. The trace must cover the simulation.
    """
    name = "external"

    def __init__(self, path, clock_offset_s: float | None = 0.0):
        self.path = Path(path)
        self.clock_offset_s = None if clock_offset_s is None else float(clock_offset_s)
        self._offset_given = bool(self.clock_offset_s)
        self.domains = (Domain("external", "power", 1.0),)
        self.describes = (f"external power trace {self.path} (what its meter was wired to: a wall-socket "
                          f"meter includes the whole node and its power-supply losses)")
        self._series = None

    def load(self) -> tuple[np.ndarray, np.ndarray]:
        """(epoch seconds, watts) of the whole trace; ConfigError naming the file and line."""
        if self._series is not None:
            return self._series
        p = self.path
        try:
            text = p.read_text(encoding="utf-8-sig")
        except FileNotFoundError:
            raise ConfigError(f"power trace {p} does not exist; record it with the meter's logger, or fix the path") from None
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"power trace {p} cannot be read: {e}") from None
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1)
                 if line.strip() and not line.lstrip().startswith("#")]
        if not lines:
            raise ConfigError(f"power trace {p} is empty; it needs a header row (time_s,watts) and samples")
        hn, header = lines[0]
        sep = ";" if ";" in header else "," if "," in header else "\t" if "\t" in header else None
        if sep is None:
            raise ConfigError(f"{p}: line {hn}: header {header.strip()!r} has one column; a time and a watts "
                              f"column are needed, separated by commas or semicolons (e.g. time_s,watts)")
        names = [_column_key(c) for c in next(csv.reader([header], delimiter=sep))]

        def column(options, what, fix):
            for o in options:
                if o in names:
                    return names.index(o)
            raise ConfigError(f"{p}: line {hn}: no {what} column in the header {header.strip()!r}; "
                              f"name it one of {', '.join(options[:4])} ({fix})")

        ti = column(_TIME_NAMES, "time", "epoch seconds, or seconds since the trace start with --clock-offset-s")
        wi = column(_WATT_NAMES, "power", "watts")
        times, watts, iso = [], [], False
        for n, row in zip((n for n, _ in lines[1:]), csv.reader([l for _, l in lines[1:]], delimiter=sep)):
            if len(row) <= max(ti, wi):
                raise ConfigError(f"{p}: line {n}: {len(row)} field(s), the header has {len(names)}; "
                                  f"fix or delete the line")
            t_text, w_text = row[ti].strip(), row[wi].strip()
            if sep == ";":
                w_text = w_text.replace(",", ".")
            try:
                w = float(w_text)
            except ValueError:
                w = math.nan
            if not math.isfinite(w):
                raise ConfigError(f"{p}: line {n}: power {row[wi].strip()!r} is not a number of watts; "
                                  f"fix or delete the line")
            try:
                t = float(t_text.replace(",", ".") if sep == ";" else t_text)
                if not math.isfinite(t):
                    raise ValueError
            except ValueError:
                try:
                    t = datetime.fromisoformat(t_text).timestamp()
                    iso = True
                except ValueError:
                    raise ConfigError(f"{p}: line {n}: time {t_text!r} is neither seconds nor an ISO 8601 "
                                      f"date-time; fix or delete the line") from None
            if times and t <= times[-1]:
                raise ConfigError(f"{p}: line {n}: time {t_text} is not after the previous sample's; "
                                  f"the trace must be sorted by time, one sample per time")
            times.append(t)
            watts.append(w)
        if len(times) < 2:
            raise ConfigError(f"power trace {p} has {len(times)} sample(s); at least two are needed")
        t = np.asarray(times)
        if iso and self._offset_given:
            raise ConfigError(f"power trace {p} has date-times, which are absolute: leave out --clock-offset-s")
        if not iso:
            if self.clock_offset_s is not None:
                t = t + self.clock_offset_s
            if t[-1] < EPOCH_MIN:
                raise ConfigError(f"power trace {p}: times end at {times[-1]:g}, so they are seconds since the "
                                  f"trace start, not epoch seconds; give the epoch time of its t=0 with "
                                  f"--clock-offset-s")
        self.rate_hz = 1.0 / statistics.median(np.diff(t))
        self._series = (t, np.asarray(watts, dtype=np.float64))
        return self._series

    def series(self):
        t, w = self.load()
        return t, (w,)


class PowerModel(Meter):
    """An explicit, user-given estimate, not a measurement: power above idle during the
    simulation = static_w + per_core_w * cores."""
    name = "model"
    estimate = True
    rate_hz = None
    SPEC_KEYS = ("static", "per_core")

    def __init__(self, static_w: float, per_core_w: float, cores: int):
        for key, v in (("static", static_w), ("per_core", per_core_w)):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ConfigError(f"power model: {key} must be a number of watts >= 0 (got {v!r})")
        if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
            raise ConfigError(f"power model: cores must be an integer >= 1 (got {cores!r})")
        self.static_w, self.per_core_w, self.cores = float(static_w), float(per_core_w), cores
        self.power_w = self.static_w + self.per_core_w * cores
        self.domains = (Domain("model", "power", 1.0),)
        self.describes = (f"estimate from a user-given power model, not a measurement: {self.static_w:g} W static + "
                          f"{self.per_core_w:g} W per core x {cores} cores = {self.power_w:g} W above idle "
                          f"during the simulation")

    @classmethod
    def from_spec(cls, spec: str, cores: int) -> PowerModel:
        """From "static=10,per_core=15" (watts; a trailing W is allowed)."""
        values = {}
        for part in str(spec).split(","):
            if not part.strip():
                continue
            key, eq, value = part.partition("=")
            key = key.strip().lower().replace("-", "_")
            if not eq:
                raise ConfigError(f"power model {spec!r}: {part.strip()!r} is not key=value; "
                                  f"write e.g. static=10,per_core=15 (watts)")
            if key not in cls.SPEC_KEYS:
                raise ConfigError(f"power model {spec!r}: unknown key {key!r}; the keys are static and per_core "
                                  f"(watts), e.g. static=10,per_core=15")
            if key in values:
                raise ConfigError(f"power model {spec!r}: key {key!r} given twice")
            text = value.strip()
            text = text[:-1].strip() if text[-1:] in ("W", "w") else text
            try:
                values[key] = float(text)
            except ValueError:
                raise ConfigError(f"power model {spec!r}: {key}={value.strip()!r} is not a number of watts") from None
        missing = [k for k in cls.SPEC_KEYS if k not in values]
        if missing:
            raise ConfigError(f"power model {spec!r}: missing {' and '.join(missing)}; write e.g. static=10,per_core=15 (watts)")
        return cls(values["static"], values["per_core"], cores)


def select_meter(kind: str = "auto", power_trace: str | None = None, clock_offset_s: float | None = None,
                 power_model: str | None = None, cores: int = 1, *, rapl_root="/sys/class/powercap",
                 nvml=None) -> Meter:
    """The meter for a run.

    power_trace gives an ExternalTrace, power_model a PowerModel (estimate); otherwise kind:
    "rapl", "nvml", or "auto" = RAPL if readable, else NVML, else Unavailable with every reason.
    "none" raises Unavailable. Conflicting options raise ConfigError. rapl_root and nvml
    (a module like pynvml) are for tests.
    """
    if kind not in KINDS:
        raise ConfigError(f"energy meter must be one of {', '.join(KINDS)} (got {kind!r})")
    if power_trace is not None and power_model is not None:
        raise ConfigError("give either a power trace (a measurement) or a power model (an estimate), not both")
    if clock_offset_s is not None and power_trace is None:
        raise ConfigError("--clock-offset-s applies to a power trace (--power-trace FILE)")
    if kind == "none":
        if power_trace is not None or power_model is not None:
            raise ConfigError("--energy none switches energy off; leave out --power-trace/--power-model, or the --energy none")
        raise Unavailable("energy measurement switched off (--energy none)")
    if power_trace is not None or power_model is not None:
        if kind != "auto":
            raise ConfigError(f"--energy {kind} measures with {kind.upper()}; it cannot be combined with "
                              f"{'--power-trace' if power_trace is not None else '--power-model'}")
        if power_trace is not None:
            return ExternalTrace(power_trace, clock_offset_s)
        return PowerModel.from_spec(power_model, cores)
    reasons = []
    if kind in ("auto", "rapl"):
        try:
            return RaplMeter(rapl_root)
        except Unavailable as e:
            if kind == "rapl":
                raise
            reasons.append(f"RAPL: {e}")
    try:
        return NvmlMeter(nvml)
    except Unavailable as e:
        if kind == "nvml":
            raise
        reasons.append(f"NVML: {e}")
    raise Unavailable("; ".join(reasons))


# -- session ---------------------------------------------------------------------------------
def unavailable_report(reason: str, events: dict | None = None, marks: dict | None = None, *,
                       meter: Meter | None = None) -> dict:
    """The report when there is nothing to measure with: every energy figure None.

    `marks` (epoch seconds) are kept so a power trace can still be applied later
    (`report_from_marks`)."""
    ev = _events(events)
    return {
        "available": False, "reason": str(reason), "meter": meter.name if meter else None,
        "describes": meter.describes if meter else None, "rate_hz": None,
        "estimate": bool(meter.estimate) if meter else False,
        "marks": {k: float(v) for k, v in (marks or {}).items()},
        "baseline_s": None, "baseline_power_w": None, "simulation_s": None, "energy_total_j": None,
        "energy_j": None, "mean_power_w": None, "mean_power_above_baseline_w": None,
        "j_per_synaptic_event": {"all": None, "recurrent": None}, "events": ev, "domains": {}, "samples": 0,
        "notes": [],
    }


def _events(events) -> dict:
    events = dict(events or {})
    return {"recurrent": int(events.get("recurrent", 0) or 0), "external": int(events.get("external", 0) or 0)}


def _per_event(energy_j, events) -> dict:
    total = events["recurrent"] + events["external"]
    return {"all": energy_j / total if energy_j is not None and total > 0 else None,
            "recurrent": energy_j / events["recurrent"] if energy_j is not None and events["recurrent"] > 0 else None}


class EnergySession:
    """Samples a live meter in a background thread and records named marks (epoch seconds).

    Use:
        session = EnergySession(meter)          # meter None: report() says unavailable_reason
        session.start()
        session.idle_baseline(5.0)              # marks baseline_start/_end around a sleep
        session.mark("simulation_start"); sim.run(...); session.mark("simulation_end")
        session.stop()
        report = session.report({"recurrent": r, "external": e})

    mark() also reads a live meter at once, so each mark has a sample of its own; the thread
    only fills in between (for power-sampled GPUs the samples between matter). `sample_now()`
    takes one sample (tests drive a session step by step with it and a fake clock).
    """

    def __init__(self, meter: Meter | None, interval_s: float = 0.1, clock=time.time,
                 unavailable_reason: str | None = None):
        if not interval_s > 0:
            raise ConfigError(f"energy sampling interval must be > 0 s (got {interval_s!r})")
        self.meter = meter
        self.interval_s = float(interval_s)
        self.clock = clock
        self.unavailable_reason = unavailable_reason
        self.marks: dict[str, float] = {}
        self.times: list[float] = []
        self.values: list[tuple[float, ...]] = []
        self.errors: list[str] = []
        self.failed_samples = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        self._stopped = False
        if self.live:
            meter.rate_hz = 1.0 / self.interval_s

    @classmethod
    def from_marks(cls, meter: Meter | None, marks: dict, unavailable_reason: str | None = None) -> EnergySession:
        """A session for marks recorded earlier (`ranvier energy RUN_DIR --power-trace FILE`)."""
        s = cls(meter, unavailable_reason=unavailable_reason)
        s.marks = {k: float(v) for k, v in (marks or {}).items()}
        return s

    @property
    def live(self) -> bool:
        return self.meter is not None and self.meter.live

    def sample_now(self) -> bool:
        """Read the live meter once and store (clock(), values). False when nothing was stored."""
        return self._sample() is not None

    def _sample(self) -> float | None:
        """One reading; its time, or None (no live meter, stopped, failed read, clock stood still)."""
        if not self.live or self._stopped:
            return None
        with self._lock:
            t = float(self.clock())
            try:
                v = self.meter.read()
            except Exception as e:  # noqa: BLE001 -- a failing read must not stop the run: it is reported
                self.failed_samples += 1
                msg = str(e) or type(e).__name__
                if msg not in self.errors:
                    self.errors.append(msg)
                return None
            if self.times and t <= self.times[-1]:
                return None             # a clock that did not move: one sample per time
            self.times.append(t)
            self.values.append(tuple(float(x) for x in v))
            return t

    def _loop(self):
        while not self._stop.wait(self.interval_s):
            self.sample_now()

    def start(self):
        """Start background sampling of a live meter (RAPL, NVML); nothing for the others."""
        if not self.live or self._thread is not None:
            return
        self.sample_now()
        self._thread = threading.Thread(target=self._loop, name="ranvier-energy", daemon=True)
        self._thread.start()

    def mark(self, name: str) -> float:
        """Record clock() under `name` (and, for a live meter, a sample at that time)."""
        t = self._sample()
        if t is None:
            t = float(self.clock())
        self.marks[name] = t
        return t

    def idle_baseline(self, seconds: float, sleep=time.sleep):
        """Mark baseline_start, stay idle for `seconds`, mark baseline_end."""
        self.mark("baseline_start")
        sleep(seconds)
        self.mark("baseline_end")

    @contextlib.contextmanager
    def phase(self, name: str = "simulation"):
        """with session.phase(): ... marks name_start and name_end around the block."""
        self.mark(f"{name}_start")
        try:
            yield self
        finally:
            self.mark(f"{name}_end")

    def stop(self):
        """Stop sampling (taking a last sample) and release the meter."""
        if self._stopped:
            return
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
        self.sample_now()
        self._stopped = True
        if self.meter is not None:
            self.meter.close()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    # -- the arithmetic --
    def _series(self):
        """(times, per-domain arrays in J (counters, unwrapped) or W (power)), or raise Unavailable."""
        m = self.meter
        if m.live:
            with self._lock:
                t = np.asarray(self.times, dtype=np.float64)
                raw = np.asarray(self.values, dtype=np.float64).reshape(len(self.times), len(m.domains))
            cols = [raw[:, i] for i in range(len(m.domains))]
            what = "samples"
        else:
            try:
                t, cols = m.series()
            except ConfigError as e:
                raise Unavailable(str(e)) from None
            what = f"power trace {m.path}"
        if t.size < 2:
            extra = f" ({'; '.join(self.errors)})" if self.errors else ""
            raise Unavailable(f"{m.name}: {t.size} sample(s), at least two are needed{extra}")
        out, wraps = [], 0
        for d, c in zip(m.domains, cols):
            if d.kind == "counter":
                try:
                    u = unwrap(c, d.max_range)
                except ValueError as e:
                    raise Unavailable(f"{m.name} {d.name}: {e}") from None
                wraps += int(np.sum(np.diff(c) < 0))
                out.append(u * d.unit)
            else:
                out.append(c * d.unit)
        return t, out, wraps, what

    def report(self, events: dict) -> dict:
        """The energy report (REPORT_KEYS); never raises for a measurement problem: then
        available is False and reason says why."""
        m = self.meter
        marks = dict(self.marks)
        if m is None:
            return unavailable_report(self.unavailable_reason or "no energy meter", events, marks)
        ev = _events(events)
        s0, s1 = marks.get("simulation_start"), marks.get("simulation_end")
        if s0 is None or s1 is None:
            return unavailable_report("the simulation_start and simulation_end marks are missing", ev, marks, meter=m)
        if not s1 >= s0:
            return unavailable_report(f"simulation_end ({s1}) is before simulation_start ({s0})", ev, marks, meter=m)
        sim_s = s1 - s0
        notes = []
        b0, b1 = marks.get("baseline_start"), marks.get("baseline_end")
        has_baseline = b0 is not None and b1 is not None and b1 > b0
        if (b0 is not None or b1 is not None) and not has_baseline:
            notes.append("baseline marks incomplete or empty: no baseline subtracted")

        if isinstance(m, PowerModel):
            e = m.power_w * sim_s
            notes.append("estimate from a user-given power model, not a measurement")
            r = unavailable_report(None, ev, marks, meter=m)
            r.update(available=True, reason=None, rate_hz=None, estimate=True, simulation_s=sim_s,
                     baseline_s=(b1 - b0) if has_baseline else None, energy_j=e,
                     mean_power_above_baseline_w=mean_power(e, sim_s), j_per_synaptic_event=_per_event(e, ev),
                     domains={"model": {"energy_total_j": None, "energy_j": e, "baseline_power_w": None}},
                     samples=0, notes=[*notes, ("the model gives power above idle only: total energy and "
                                             "baseline power are not known")])
            return r

        try:
            t, cols, wraps, what = self._series()
        except Unavailable as e:
            return unavailable_report(str(e), ev, marks, meter=m)

        def covers(a, b, label):
            gaps = []
            if a < t[0]:
                gaps.append(f"{'they start' if m.live else 'it starts'} {t[0] - a:.3f} s after {label}_start")
            if b > t[-1]:
                gaps.append(f"{'they end' if m.live else 'it ends'} {b - t[-1]:.3f} s before {label}_end")
            return " and ".join(gaps)

        gap = covers(s0, s1, "simulation")
        if gap:
            if m.live:
                extra = f" ({'; '.join(self.errors)})" if self.errors else ""
                reason = f"{m.name}: the samples do not cover the simulation: {gap}{extra}"
            else:
                reason = (f"the {what} does not cover the simulation: {gap}; record from before the run "
                          f"starts until after it ends")
            return unavailable_report(reason, ev, marks, meter=m)
        if has_baseline:
            gap = covers(b0, b1, "baseline")
            if gap:
                notes.append(f"the baseline is not covered ({gap}): no baseline subtracted")
                has_baseline = False

        domains, total, above, base_total = {}, 0.0, 0.0, 0.0
        for d, c in zip(m.domains, cols):
            f = counter_energy if d.kind == "counter" else integrate_power
            e_tot = f(t, c, s0, s1)
            if has_baseline:
                p_base = f(t, c, b0, b1) / (b1 - b0)
                e_above = e_tot - p_base * sim_s
            else:
                p_base, e_above = None, e_tot
            domains[d.name] = {"energy_total_j": e_tot, "energy_j": e_above, "baseline_power_w": p_base}
            total += e_tot
            above += e_above
            base_total += p_base or 0.0
        lo = b0 if has_baseline else s0
        used = int(np.count_nonzero((t >= lo) & (t <= s1)))

        if not has_baseline:
            notes.append(NOTE_NO_BASELINE)
        elif above < 0:
            notes.append("energy above baseline is negative: the run drew less than the idle baseline "
                         "(noise, or the baseline was not idle)")
        rate = m.rate_hz
        if any(d.kind == "power" for d in m.domains) and rate and sim_s < 2.0 / rate:
            notes.append(f"the simulation ({sim_s:.3g} s) spans fewer than two power samples "
                         f"({rate:g} Hz): the figure is coarse")
        if wraps:
            notes.append(f"counter wrap-around handled ({wraps} time(s))")
        if self.failed_samples:
            notes.append(f"{self.failed_samples} sample(s) failed and were left out: {'; '.join(self.errors)}")
        if getattr(m, "skipped", None):
            notes.append("left out: " + "; ".join(m.skipped))
        return {
            "available": True, "reason": None, "meter": m.name, "describes": m.describes,
            "rate_hz": float(rate) if rate else None, "estimate": bool(m.estimate), "marks": marks,
            "baseline_s": (b1 - b0) if has_baseline else None,
            "baseline_power_w": base_total if has_baseline else None,
            "simulation_s": sim_s, "energy_total_j": total, "energy_j": above,
            "mean_power_w": mean_power(total, sim_s), "mean_power_above_baseline_w": mean_power(above, sim_s),
            "j_per_synaptic_event": _per_event(above, ev), "events": ev, "domains": domains,
            "samples": used, "notes": notes,
        }


def report_from_marks(meter: Meter | None, marks: dict, events: dict, unavailable_reason: str | None = None) -> dict:
    """The report for a run measured afterwards (an ExternalTrace or a PowerModel) from its
    recorded marks and event counts. A live meter has no samples of a past run."""
    if meter is not None and meter.live:
        return unavailable_report(f"{meter.name} samples exist only while the run goes on; for a past run give "
                                  f"--power-trace FILE", events, marks, meter=meter)
    return EnergySession.from_marks(meter, marks, unavailable_reason).report(events)


def combine_node_reports(reports: list[dict], events: dict) -> dict:
    """One report for a run measured on several nodes, each by its own live meter (RAPL or
    NVML sees only its node): energies and powers are summed over nodes, J per synaptic event
    recomputed from the sum and the run's events. Unavailable if any node's report is. The
    nodes' own reports are kept under "nodes"."""
    if len(reports) == 1:
        return reports[0]
    missing = [f"node {i}: {r['reason']}" for i, r in enumerate(reports) if not r["available"]]
    if missing:
        out = unavailable_report("not measured on every node (" + "; ".join(missing) + ")", events,
                                 reports[0]["marks"])
        out["nodes"] = reports
        return out
    out = dict(reports[0])
    out["describes"] = f"{len(reports)} nodes, each: {reports[0]['describes']}"
    for key in ("baseline_power_w", "energy_total_j", "energy_j", "mean_power_w", "mean_power_above_baseline_w"):
        values = [r[key] for r in reports]
        out[key] = None if any(v is None for v in values) else float(sum(values))
    out["samples"] = int(sum(r["samples"] for r in reports))
    out["domains"] = {f"node{i}/{name}": d for i, r in enumerate(reports) for name, d in r["domains"].items()}
    out["j_per_synaptic_event"] = _per_event(out["energy_j"], _events(events))
    out["notes"] = sorted({n for r in reports for n in r["notes"]}) + [f"summed over {len(reports)} nodes"]
    out["nodes"] = reports
    return out


# -- measuring a simulation -----------------------------------------------------------------
def choose_meter(kind: str = "auto", *, power_trace: str | None = None, clock_offset_s: float | None = None,
                 power_model: str | None = None, cores: int | None = None):
    """The meter for a run, or the reason there is none: an Unavailable, returned, not raised
    (the run goes on and its report says why). Conflicting options raise ConfigError.

    A power model given as a spec counts the cores the run uses on each node, known once the
    simulation is built (measure()); `cores` (default: this machine's) only checks the spec now."""
    try:
        meter = select_meter(kind, power_trace=power_trace, clock_offset_s=clock_offset_s, power_model=power_model,
                             cores=cores or os.cpu_count() or 1)
    except Unavailable as e:
        return e
    if isinstance(meter, PowerModel):
        meter.cores_of_run = True
    return meter


class Measurement:
    """How Simulation.run(energy=...) measures: a meter and an idle baseline before the simulation.

    meter: a kind of KINDS ("auto", "rapl", "nvml", "none"), a Meter (RaplMeter, NvmlMeter,
    ExternalTrace, PowerModel), or an Unavailable (the reason there is none). baseline_s: idle
    seconds before the simulation, for the baseline power (the DPSNN study used 5)."""

    def __init__(self, meter="auto", baseline_s: float = 0.0):
        if isinstance(meter, str):
            meter = choose_meter(meter)
        elif not isinstance(meter, (Meter, Unavailable)):
            raise ConfigError(f"energy must be one of {', '.join(KINDS)}, a meter from ranvier.runtime.energy or None "
                              f"(got {meter!r})")
        if isinstance(baseline_s, bool) or not isinstance(baseline_s, (int, float)) \
                or not (baseline_s >= 0 and math.isfinite(baseline_s)):
            raise ConfigError(f"energy baseline must be zero or a positive number of seconds (got {baseline_s!r})")
        self.meter = meter
        self.baseline_s = float(baseline_s)

    def measures_here(self, sim) -> bool:
        """Whether this rank runs a session: live meters (RAPL, NVML) see one node, so the first
        rank of each node measures it; a trace or a model covers the whole run: rank 0 alone."""
        live = getattr(self.meter, "live", False) and not isinstance(self.meter, Unavailable)
        return sim.comm.node_rank == 0 if live else sim.rank == 0

    def session(self, sim) -> EnergySession:
        meter = self.meter
        if isinstance(meter, Unavailable):
            return EnergySession(None, unavailable_reason=str(meter))
        if getattr(meter, "cores_of_run", False):      # the cores this node runs on are known only now
            meter = PowerModel(meter.static_w, meter.per_core_w, cores=sim.comm.ranks_on_node * sim.threads)
        return EnergySession(meter)


def measure(sim, energy, simulate):
    """Runs simulate() (a run of `sim` that returns its Result) inside an energy measurement;
    returns that Result with `.energy` set: the report on rank 0 (one for the whole run, the
    node reports combined), None on the other ranks. Every rank calls it (it is collective).

    energy: a Measurement, or what Measurement() takes as its meter. The live meters sample in
    a background thread from before the idle baseline (every rank idles through it) to the end
    of the simulation; the marks are those of MARKS (epoch seconds)."""
    m = energy if isinstance(energy, Measurement) else Measurement(energy)
    session = m.session(sim) if m.measures_here(sim) else None
    if session:
        session.start()
        session.mark("baseline_start")
    if m.baseline_s:
        time.sleep(m.baseline_s)
    sim.comm.barrier()
    if session:
        session.mark("baseline_end")
        session.mark("simulation_start")
    try:
        result = simulate()
    finally:
        if session:
            session.mark("simulation_end")
            session.stop()
    # the events of this session: a resumed run's counters also hold the part before its checkpoint
    offset = getattr(sim, "counters_before", {})
    events = {"recurrent": result.counters["synaptic_events_recurrent"] - offset.get("synaptic_events_recurrent", 0),
              "external": result.counters["synaptic_events_external"] - offset.get("synaptic_events_external", 0)} \
        if sim.rank == 0 else None
    events = sim.comm.bcast(events)
    reports = sim.comm.gather(session.report(events=events) if session else None)
    result.energy = combine_node_reports([r for r in reports if r is not None], events) if sim.rank == 0 else None
    return result


# -- the run summary -------------------------------------------------------------------------
def _joules(x: float) -> str:
    a = abs(x)
    for unit, scale in (("kJ", 1e3), ("J", 1.0), ("mJ", 1e-3), ("µJ", 1e-6), ("nJ", 1e-9), ("pJ", 1e-12)):
        if a >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x:.3g} J"


def _energy(x: float) -> str:
    return f"{x:.1f} J" if abs(x) < 1e5 else _joules(x)


def format_lines(report: dict) -> list[tuple[str, str]]:
    """Rows for the run summary table."""
    if not report.get("available"):
        return [("energy", f"unavailable: {report.get('reason')}")]
    est = " (estimate)" if report.get("estimate") else ""
    rate = report.get("rate_hz")
    how = report["describes"] + (f", sampled at {rate:.3g} Hz" if rate and report["meter"] != "external" else
                                 f", trace at {rate:.3g} Hz" if rate else "")
    e = report["energy_j"]
    if report["estimate"]:
        head = f"{_energy(e)} above idle in {report['simulation_s']:.2f} s ({how})"
    elif report["baseline_power_w"] is not None:
        head = (f"{_energy(e)} above a {report['baseline_power_w']:.1f} W baseline "
                f"({how})")
    else:
        head = f"{_energy(e)} including idle power, no baseline ({how})"
    rows = [(f"energy to solution{est}", head)]
    if not report["estimate"]:
        power = f"{report['mean_power_w']:.1f} W during the simulation" if report["mean_power_w"] is not None else ""
        if report["baseline_power_w"] is not None and report["mean_power_above_baseline_w"] is not None:
            power += (f", {report['mean_power_above_baseline_w']:.1f} W above baseline; total "
                      f"{_energy(report['energy_total_j'])} in {report['simulation_s']:.2f} s")
        if power:
            rows.append(("mean power", power))
        if len(report["domains"]) > 1:
            rows.append(("  by domain", ", ".join(f"{name} {_energy(d['energy_j'])}"
                                                  for name, d in report["domains"].items())))
    per = report["j_per_synaptic_event"]
    parts = []
    if per["all"] is not None:
        parts.append(f"{_joules(per['all'])} all")
    if per["recurrent"] is not None:
        parts.append(f"{_joules(per['recurrent'])} recurrent only")
    rows.append((f"J per synaptic event{est}", ", ".join(parts) if parts else "n/a (no synaptic events)"))
    for note in report.get("notes") or []:
        if note not in head:
            rows.append(("  note", note))
    return rows
