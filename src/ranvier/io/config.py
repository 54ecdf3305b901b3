"""Run configurations: TOML files, command-line overrides, and the checks made before building.

    model = "dpsnn"
    [parameters]          # any model parameter: ranvier.models.defaults("dpsnn")
    neurons = 20480
    [simulation]
    duration_ms = 10000.0
    threads = 1           # omitted: the cores of the node divided by the ranks on it
    exchange = "allgather"
    placement = "round-robin"
    seed = 1
    resolution_ms = 0.1
    barrier = true
    overlap = false       # exchange each interval while the next is computed (intervals of half the minimum delay)
    pace = false          # hold the run to wall-clock time, never faster than biology (docs/real-time.md)
    global_interval = 10  # exchange = "two-tier" (multi-area models): all ranks every D cycles
    tier_exchange = "allgather"   # two-tier: the strategy of both tiers
    initial_weights = "results/learn/weights.h5"   # plastic networks: start from saved weights
    record_weights = 20   # plastic networks: synapses of each plastic projection sampled (0: none)
    weight_interval_ms = 100.0    # ... every this many ms (docs/plasticity.md)
"""
from __future__ import annotations

import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from ..errors import ConfigError

DEFAULT_MODEL = "dpsnn"
TOP_LEVEL_KEYS = ("model", "parameters", "simulation")
# Keyword arguments of Simulation(...), plus duration_ms (the argument of run).
MAX_CYCLES = 2**32 - 1          # cycles one simulation can run (Engine::run_steps)
SIMULATION_DEFAULTS = {
    "duration_ms": 10000.0,
    "threads": None,
    "exchange": "allgather",
    "placement": "round-robin",
    "seed": 1,
    "resolution_ms": 0.1,
    "barrier": True,
    "overlap": False,
    "pace": False,                # hold every cycle to wall-clock time (ranvier.analysis.deadlines)
    "global_interval": None,      # two-tier: cycles between global exchanges; omitted = automatic
    "tier_exchange": "allgather", # two-tier: the strategy of both tiers
    "initial_weights": None,      # plastic networks: a weights.h5 to start from; omitted = the drawn weights
    "record_weights": 0,          # plastic networks: synapses sampled per plastic projection (0: none)
    "weight_interval_ms": 100.0,  # the weight recorder's interval
    "record_state": None,         # global ids whose V, c, c_in are recorded (state.h5); omitted = none
    "record_state_interval_ms": None,  # their sampling interval; omitted = every step
    "record_spikes_of": None,     # global ids whose spikes are kept (spikes.h5); omitted = every neuron's
}
# Settings of the run command's plastic weights (ranvier.io.weights), not keyword arguments of Simulation.
WEIGHT_KEYS = ("initial_weights", "record_weights", "weight_interval_ms")


@dataclass
class RunConfig:
    model: str = DEFAULT_MODEL
    parameters: dict = field(default_factory=dict)       # overrides of the model's defaults
    simulation: dict = field(default_factory=lambda: dict(SIMULATION_DEFAULTS))

    def simulation_kwargs(self) -> dict:
        """Keyword arguments for Simulation(...): every setting except duration_ms and the plastic
        weights' (WEIGHT_KEYS: the run command turns them into Simulation's initial_weights and
        record_weights)."""
        return {k: v for k, v in self.simulation.items() if k != "duration_ms" and k not in WEIGHT_KEYS}


def _unknown(where: str, keys, known) -> None:
    unknown = sorted(set(keys) - set(known))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; known keys: {sorted(known)}")


MAX_CONFIG_BYTES = 1 << 20       # a run configuration is a few lines of TOML


def _file_kind(mode: int) -> str:
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


def check_input_file(path, what: str, hint: str = "") -> os.stat_result:
    """A path the run will read must be a readable regular file: ConfigError naming `what` (a
    flag, or 'config file') and what the path is otherwise. Checked without reading: a FIFO
    would block, a device (/dev/zero) never end. `hint` ('; ...') follows the reason."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise ConfigError(f"{what} '{path}' does not exist{hint}") from None
    except OSError as e:
        raise ConfigError(f"{what} '{path}' cannot be read: {e.strerror}{hint}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"{what} '{path}' is {_file_kind(info.st_mode)}, not a regular file{hint}")
    try:            # readable? (O_NONBLOCK: should it have become a FIFO since, do not wait)
        os.close(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)))
    except OSError as e:
        raise ConfigError(f"{what} '{path}' cannot be read: {e.strerror}{hint}") from None
    return info


def read_text_file(path, what: str, limit: int, hint: str = "") -> str:
    """The UTF-8 text of a regular file of at most `limit` bytes, else one-line ConfigError."""
    size = check_input_file(path, what, hint).st_size
    too_large = (f"{what} '{path}' is larger than {limit / 2**20:g} MiB; that cannot be a run "
                 f"configuration{hint}")
    if size > limit:
        raise ConfigError(too_large)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            mode = os.fstat(f.fileno()).st_mode
            if not stat.S_ISREG(mode):          # replaced since the check
                raise ConfigError(f"{what} '{path}' is {_file_kind(mode)}, not a regular file{hint}")
            data = f.read(limit + 1)            # never more, whatever the file has become
    except OSError as e:
        raise ConfigError(f"{what} '{path}' cannot be read: {e.strerror}{hint}") from None
    if len(data) > limit:
        raise ConfigError(too_large)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{what} '{path}' is not a text file: byte 0x{data[e.start]:02x} at offset {e.start} "
                          f"is not UTF-8{hint}") from None


def load(path) -> RunConfig:
    """Reads a TOML run configuration; unknown keys are refused with the list of known ones.

    Only a readable regular file of at most 1 MiB of UTF-8 text is read: a FIFO, a device or a
    directory is refused by what it is, without reading it."""
    path = Path(path)
    text = read_text_file(path, "config file", MAX_CONFIG_BYTES,
                          "; give the path of a .toml file (see examples/dpsnn.toml)")
    text = text.removeprefix("\ufeff")          # a byte-order mark, as some editors write UTF-8
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"config file '{path}' is not valid TOML: {e}") from None
    where = f"config file '{path}'"
    if not data:      # empty, or comments only: running the default job instead would be a guess
        raise ConfigError(f"{where} sets nothing (no model, [parameters] or [simulation]); name a model in it "
                          f"(model = \"dpsnn\", see examples/dpsnn.toml), or run 'ranvier run' without a file for "
                          f"the default job")
    _unknown(where, data, TOP_LEVEL_KEYS)
    model = data.get("model", DEFAULT_MODEL)
    if not isinstance(model, str):
        raise ConfigError(f"{where}: 'model' must be a string such as \"dpsnn\", got {model!r}")
    for table in ("parameters", "simulation"):
        if not isinstance(data.get(table, {}), dict):
            raise ConfigError(f"{where}: '{table}' must be a table: write it as [{table}]")
    simulation = data.get("simulation", {})
    _unknown(f"{where} [simulation]", simulation, SIMULATION_DEFAULTS)
    return RunConfig(model=model, parameters=dict(data.get("parameters", {})),
                     simulation={**SIMULATION_DEFAULTS, **simulation})


def looks_like_path(text: str) -> bool:
    """A name that can only mean a file: it ends .toml or names a folder on the way."""
    return text.endswith(".toml") or "/" in text or os.sep in text


def from_model_or_file(text: str, what: str = "") -> RunConfig:
    """A model name (`ranvier run dpsnn`) or the path of a run configuration
    (`ranvier run examples/dpsnn.toml`), the one convention of every command that names a
    model. A bare word is a model name first; a path that ends .toml or holds a / is a file;
    anything else that is an existing file is read as one. Neither: one line naming both."""
    from .. import models

    known = sorted(models.REGISTRY)
    if str(text).endswith(".json"):                      # a SONATA simulation config
        return sonata_run_config(text)
    if not looks_like_path(text):
        if text in models.REGISTRY:
            return RunConfig(model=text)
        if not os.path.lexists(text):
            raise ConfigError(f"{what + ' ' if what else ''}'{text}' is neither a model name ({', '.join(known)}) "
                              f"nor a config file: no such file")
    elif not os.path.lexists(text):
        raise ConfigError(f"config file '{text}': no such file; give the path of a .toml file (see examples/) or "
                          f"a model name ({', '.join(known)})")
    return load(text)


def sonata_run_config(path) -> RunConfig:
    """`ranvier run simulation_config.json`: model "sonata" (ranvier.io.sonata), its duration
    (run.tstop) and resolution (run.dt) from the SONATA config."""
    from .sonata import read_config

    check_input_file(path, "SONATA config")
    run = read_config(path).get("run", {})
    if "tstop" not in run:
        raise ConfigError(f"SONATA config '{path}': 'run' has no 'tstop' (the simulated time, ms)")
    dt = float(run.get("dt", 0.1))
    return RunConfig(model="sonata", parameters={"config": str(Path(path).resolve()), "dt_ms": dt},
                     simulation={**SIMULATION_DEFAULTS, "duration_ms": float(run["tstop"]), "resolution_ms": dt})


def override(cfg: RunConfig, model: str | None = None, parameters: dict | None = None,
             simulation: dict | None = None) -> RunConfig:
    """cfg with command-line values on top (None values mean: not given)."""
    simulation = {k: v for k, v in (simulation or {}).items() if v is not None}
    _unknown("simulation settings", simulation, SIMULATION_DEFAULTS)
    return RunConfig(model=cfg.model if model is None else model, parameters={**cfg.parameters, **(parameters or {})},
                     simulation={**cfg.simulation, **simulation})


def parse_assignment(text: str) -> tuple[str, object]:
    """'KEY=VALUE' with VALUE read as a TOML scalar (1, 0.5, true, "x"); a bare word stays a string."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"expected KEY=VALUE (for example --set neurons=2048), got {text!r}")
    try:
        parsed = tomllib.loads(f"v = {value.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = value.strip()
    if isinstance(parsed, (dict, list)):
        raise ConfigError(f"{key}: the value must be a single number, boolean or string, got {value!r}")
    return key, parsed


def _number(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ConfigError(f"[simulation] '{name}' must be a number, got {value!r}")
    return float(value)


def check_simulation(cfg: RunConfig, network) -> float:
    """What Simulation.run checks only after the build is checked here, before anything is built.
    Returns the communication interval (ms)."""
    s = cfg.simulation
    resolution = _number("resolution_ms", s["resolution_ms"])
    if resolution <= 0:
        raise ConfigError(f"[simulation] 'resolution_ms' must be positive, got {s['resolution_ms']!r}")
    network.validate(resolution)                  # every delay a whole number of steps, at least one
    if not isinstance(s["overlap"], bool):
        raise ConfigError(f"[simulation] 'overlap' must be true or false, got {s['overlap']!r}")
    if not isinstance(s["pace"], bool):
        raise ConfigError(f"[simulation] 'pace' must be true or false, got {s['pace']!r}")
    for key in ("record_state", "record_spikes_of"):
        ids = s.get(key)
        if ids is not None and (not isinstance(ids, (list, tuple)) or
                                not all(isinstance(i, int) and not isinstance(i, bool) for i in ids)):
            raise ConfigError(f"[simulation] '{key}' must be a list of global neuron ids (integers), got {ids!r:.60}")
    # The communication interval, as ranvier.core.spec makes it: the minimum delay in whole steps (one
    # step without projections), half of it with overlap.
    min_delay_steps = round(network.min_delay_ms() / resolution) if network.projections else 1
    interval = "communication interval (the minimum delay)"
    cycle_steps = min_delay_steps
    if s["overlap"]:
        if min_delay_steps % 2:
            raise ConfigError(f"[simulation] 'overlap' needs a minimum delay of an even number of steps (it runs "
                              f"intervals of half of it); it is {min_delay_steps * resolution:g} ms = "
                              f"{min_delay_steps} step(s) at resolution {resolution:g} ms: use a resolution_ms "
                              f"that divides half the minimum delay, or overlap = false")
        cycle_steps //= 2
        interval = "communication interval (half the minimum delay, with overlap)"
    duration = _number("duration_ms", s["duration_ms"])
    if duration <= 0:
        raise ConfigError(f"[simulation] 'duration_ms' must be positive, got {s['duration_ms']!r}")
    cycle_ms = cycle_steps * resolution
    n = duration / resolution
    if not math.isfinite(n):                      # more steps than a float counts: far beyond 2^32 cycles
        raise _too_long(s["duration_ms"], duration, cycle_ms, interval)
    if round(n) < 1:
        raise ConfigError(f"[simulation] 'duration_ms' = {s['duration_ms']} is shorter than one step of "
                          f"{resolution:g} ms (resolution_ms); simulate at least {resolution:g} ms")
    if abs(n - round(n)) > 1e-9 * max(1.0, n):
        nearest = " or ".join(f"{k * resolution:g}" for k in (math.floor(n), math.ceil(n)) if k > 0)
        raise ConfigError(f"[simulation] 'duration_ms' = {s['duration_ms']} is not a multiple of the resolution "
                          f"{resolution:g} ms; use for example {nearest}")
    # The engine counts cycles in 32 bits (Engine::run_steps): at most 2^32 - 1 per simulation,
    # a cycle begun counting as one.
    if -(-round(n) // cycle_steps) > MAX_CYCLES:
        raise _too_long(s["duration_ms"], duration, cycle_ms, interval)
    if not isinstance(s["barrier"], bool):
        raise ConfigError(f"[simulation] 'barrier' must be true or false, got {s['barrier']!r}")
    check_weight_settings(s)
    return cycle_ms


def _too_long(given, duration: float, cycle_ms: float, interval: str) -> ConfigError:
    longest = MAX_CYCLES * cycle_ms
    cycles = duration / cycle_ms
    many = f"{cycles:.3g}" if math.isfinite(cycles) else "more than 1e308"
    return ConfigError(f"[simulation] 'duration_ms' = {given} is {many} cycles of {cycle_ms:g} ms (one per "
                       f"{interval}); the engine runs at most 2^32 - 1 cycles, {longest:.10g} ms here "
                       f"({longest / 8.64e7:.3g} days): choose a shorter duration_ms")


def check_weight_settings(s: dict) -> None:
    """[simulation]'s plastic weight settings (WEIGHT_KEYS): their types; whether the network has
    plastic projections, and the file itself, are checked by Simulation before the build."""
    initial = s.get("initial_weights")
    if initial is not None and not (isinstance(initial, (str, os.PathLike)) and str(initial)):
        raise ConfigError(f"[simulation] 'initial_weights' must be the path of a weights.h5 (a string), got "
                          f"{initial!r}")
    n = s.get("record_weights", 0)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ConfigError(f"[simulation] 'record_weights' must be a whole number of synapses per plastic "
                          f"projection (0: none), got {n!r}")
    interval = _number("weight_interval_ms", s.get("weight_interval_ms", 100.0))
    if interval <= 0:
        raise ConfigError(f"[simulation] 'weight_interval_ms' must be positive, got {s['weight_interval_ms']!r}")
