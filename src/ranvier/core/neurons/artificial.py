"""artificial: cells that fire after random intervals, no membrane (cpp/neurons/artificial.cpp)."""
from __future__ import annotations

from ..checks import positive, whole_steps
from ...errors import ConfigError
from .base import MAX_TIME_STEPS, NeuronModel, Parameter, steps_beyond


class Artificial(NeuronModel):
    """Artificial cells (the spike-exchange benchmark): no membrane, input ignored; each fires after
    intervals drawn uniformly from [isi_min_ms, isi_max_ms], the first spike at a uniform phase in
    [0, isi_max_ms)."""
    name = "artificial"
    input_unit = None
    parameters = {
        "isi_min_ms": Parameter("ms", "shortest interval between two spikes of a cell"),
        "isi_max_ms": Parameter("ms", "longest interval between two spikes of a cell"),
    }

    @classmethod
    def check(cls, pop, where):
        lo = positive(where, "isi_min_ms", pop.params["isi_min_ms"])
        hi = positive(where, "isi_max_ms", pop.params["isi_max_ms"])
        if hi < lo:
            raise ConfigError(f"{where}: 'isi_max_ms' ({hi}) must not be below 'isi_min_ms' ({lo})")

    @classmethod
    def check_resolution(cls, pop, resolution_ms):
        where, h = f"population '{pop.name}'", resolution_ms
        for key in cls.parameters:
            whole_steps(where, key, pop.params[key], pop.origin, h, minimum=1)
        shortest, longest = (float(pop.params[k]) for k in ("isi_min_ms", "isi_max_ms"))
        low, high = round(shortest / h), round(longest / h)
        if high > MAX_TIME_STEPS:
            raise ConfigError(f"{where}: 'isi_max_ms' = {longest:g} ms is {high:.3g} steps of {h:g} ms; "
                              f"{steps_beyond(h)}")
        if high - low >= 2**32:                   # the interval is drawn from one 32-bit word
            raise ConfigError(f"{where}: 'isi_max_ms' - 'isi_min_ms' = {longest - shortest:g} ms spans "
                              f"{high - low + 1:.3g} steps of {h:g} ms; the engine draws an interval over at most "
                              f"2^32 steps: a difference of at most {(2**32 - 1) * h:.6g} ms")

    @classmethod
    def known_rate_hz(cls, params):
        return 2000.0 / (float(params["isi_min_ms"]) + float(params["isi_max_ms"]))

    @classmethod
    def to_engine(cls, pop, resolution_ms):
        return cls._spec(pop, {k: pop.params[k] for k in ("isi_min_ms", "isi_max_ms")})   # whole steps (checked)
