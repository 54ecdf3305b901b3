"""Statistics of spiking activity as the microcircuit literature reports them, and the check of
population rates against the reference (docs/microcircuit.md).

Per population, over a window [start_ms, stop_ms):

- rate: mean firing rate (Hz) = spikes in the window / (population size x window length),
  silent neurons included;
- irregularity: coefficient of variation of the inter-spike intervals, CV = sd / mean of a
  neuron's ISIs (sd with ddof = 0, as numpy.std and elephant's cv), computed per neuron from
  its spikes inside the window, for neurons with at least `min_spikes` (default 3, so at least
  2 ISIs) spikes there; reported as the mean over those neurons, with their number;
- synchrony: variance / mean (ddof = 0) of the population spike-count histogram, bins of
  `bin_ms` (default 3 ms) from start_ms (a last, incomplete bin is dropped with its spikes),
  counting the spikes of a fixed subsample: the first `max_neurons` (default 1000) ids of the
  population (all of it if smaller). Independent Poisson trains give 1; synchronous
  activity gives much more.

Inputs are plain NumPy arrays: global neuron ids and spike times (ms), and the populations as
(name, first_id, size). Everything is vectorised (one sort of the window's spikes, bincounts),
a few tenths of a second for the ~3 million spikes of a 10 s full-scale microcircuit run.
"""
from __future__ import annotations

import math

import numpy as np

# Potjans & Diesmann (2014), full scale, Poisson input: one long NEST run (docs/workloads/microcircuit.md).
MICROCIRCUIT_POPULATIONS = ("L23E", "L23I", "L4E", "L4I", "L5E", "L5I", "L6E", "L6I")
REFERENCE_RATES_HZ = {"L23E": 0.903, "L23I": 2.965, "L4E": 4.414, "L4I": 5.876,
                      "L5E": 7.569, "L5I": 8.633, "L6E": 1.105, "L6I": 7.829}
# Allowed |deviation| of the mean rate over seeds from the reference, percent, by population
# class: the last letter of the name (E or I). A population's own name may override it.
DEFAULT_TOLERANCES_PCT = {"E": 10.0, "I": 15.0}
CV_MIN_SPIKES = 3
SYNCHRONY_BIN_MS = 3.0
SYNCHRONY_MAX_NEURONS = 1000
# A deviation that equals the tolerance up to rounding (1e-9 percentage points) passes.
_BOUNDARY_SLACK_PCT = 1e-9

STATISTICS = ("rate_hz", "spikes", "neurons", "cv_isi", "cv_neurons", "synchrony", "synchrony_neurons")


def reference_rates() -> dict[str, float]:
    """The reference rates (Hz) of the eight populations, keyed L23E ... L6I (a copy)."""
    return dict(REFERENCE_RATES_HZ)


# -- inputs ---------------------------------------------------------------------------------
def _populations(populations) -> tuple[list[str], np.ndarray, np.ndarray]:
    names, firsts, sizes = [], [], []
    for entry in populations:
        try:
            name, first, size = entry
        except (TypeError, ValueError):
            raise ValueError(f"a population must be (name, first_id, size), got {entry!r}") from None
        if int(size) <= 0 or int(first) < 0:
            raise ValueError(f"population {name!r}: first_id must be >= 0 and size > 0, got {first}, {size}")
        names.append(str(name))
        firsts.append(int(first))
        sizes.append(int(size))
    if not names:
        raise ValueError("no populations given")
    if len(set(names)) != len(names):
        raise ValueError(f"population names repeat: {names}")
    firsts, sizes = np.asarray(firsts, dtype=np.int64), np.asarray(sizes, dtype=np.int64)
    order = np.argsort(firsts, kind="stable")
    ends = firsts[order] + sizes[order]
    if np.any(firsts[order][1:] < ends[:-1]):
        raise ValueError("populations overlap: their id ranges [first_id, first_id + size) must be disjoint")
    return names, firsts, sizes


def _spikes(ids, times) -> tuple[np.ndarray, np.ndarray]:
    ids = np.asarray(ids)
    times = np.asarray(times, dtype=np.float64)
    if ids.ndim != 1 or times.ndim != 1 or ids.shape != times.shape:
        raise ValueError(f"ids and times must be 1-d arrays of the same length, got shapes "
                         f"{ids.shape} and {times.shape}")
    if ids.size and not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"ids must be integers, got {ids.dtype}")
    return ids.astype(np.int64, copy=False), times


def _window(start_ms, stop_ms) -> tuple[float, float]:
    start, stop = float(start_ms), float(stop_ms)
    if not (math.isfinite(start) and math.isfinite(stop)) or stop <= start:
        raise ValueError(f"empty or invalid window [{start_ms}, {stop_ms}) ms")
    return start, stop


def _population_of(ids: np.ndarray, firsts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Per spike, the index of its population, -1 for ids outside every population."""
    order = np.argsort(firsts, kind="stable")
    sorted_firsts = firsts[order]
    k = np.searchsorted(sorted_firsts, ids, side="right") - 1
    kc = np.clip(k, 0, None)
    inside = (k >= 0) & (ids < sorted_firsts[kc] + sizes[order][kc])
    return np.where(inside, order[kc], -1)


# -- the statistics -------------------------------------------------------------------------
def population_statistics(ids, times, populations, start_ms: float, stop_ms: float, *,
                          min_spikes: int = CV_MIN_SPIKES, bin_ms: float = SYNCHRONY_BIN_MS,
                          max_neurons: int = SYNCHRONY_MAX_NEURONS) -> dict[str, dict]:
    """All statistics per population over [start_ms, stop_ms) (see the module docstring).

    Returns {name: {"rate_hz", "spikes", "neurons", "cv_isi", "cv_neurons", "synchrony",
    "synchrony_neurons"}}; cv_isi is NaN where no neuron has min_spikes spikes in the window,
    synchrony NaN where the subsample has no spike there. Spikes of ids outside every
    population are ignored.
    """
    names, firsts, sizes = _populations(populations)
    ids, times = _spikes(ids, times)
    start, stop = _window(start_ms, stop_ms)
    if int(min_spikes) < 2:
        raise ValueError(f"min_spikes must be >= 2 (at least one interval), got {min_spikes}")
    if not bin_ms > 0:
        raise ValueError(f"bin_ms must be positive, got {bin_ms}")
    if int(max_neurons) < 1:
        raise ValueError(f"max_neurons must be >= 1, got {max_neurons}")
    P = len(names)
    span_s = (stop - start) * 1e-3

    pop = _population_of(ids, firsts, sizes)
    keep = (pop >= 0) & (times >= start) & (times < stop)
    pop, ids, times = pop[keep], ids[keep], times[keep]
    local = ids - firsts[pop]
    spikes = np.bincount(pop, minlength=P)

    # Irregularity: one sort by (neuron, time); neurons numbered compactly over all populations.
    offsets = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    neuron = offsets[pop] + local
    total = int(sizes.sum())
    if times.size > 1 and not np.all(times[1:] >= times[:-1]):     # spike files come sorted by time
        by_time = np.argsort(times, kind="stable")
        order = by_time[np.argsort(neuron[by_time], kind="stable")]
    else:
        order = np.argsort(neuron, kind="stable")
    neuron_sorted, t_sorted = neuron[order], times[order]
    per_neuron = np.bincount(neuron_sorted, minlength=total)
    same = neuron_sorted[1:] == neuron_sorted[:-1]
    isi = np.diff(t_sorted)[same]
    owner = neuron_sorted[1:][same]
    n_isi = np.bincount(owner, minlength=total)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_isi = np.bincount(owner, weights=isi, minlength=total) / n_isi
        deviation = isi - mean_isi[owner]           # two passes: no cancellation for regular trains
        var_isi = np.bincount(owner, weights=deviation * deviation, minlength=total) / n_isi
        cv = np.sqrt(var_isi) / mean_isi
    qualified = (per_neuron >= int(min_spikes)) & (mean_isi > 0)
    pop_of_neuron = np.repeat(np.arange(P), sizes)
    cv_neurons = np.bincount(pop_of_neuron[qualified], minlength=P)
    cv_sum = np.bincount(pop_of_neuron[qualified], weights=cv[qualified], minlength=P)

    # Synchrony: counts of the subsample in bins of bin_ms from start; the incomplete last bin dropped.
    n_bins = int(np.floor((stop - start) / bin_ms + 1e-9))
    sub_sizes = np.minimum(sizes, int(max_neurons))
    if n_bins >= 1:
        b = np.floor((times - start) / bin_ms).astype(np.int64)
        in_sub = (local < sub_sizes[pop]) & (b < n_bins)
        hist = np.bincount(pop[in_sub] * n_bins + b[in_sub], minlength=P * n_bins).reshape(P, n_bins)
        hist_mean = hist.mean(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            sync = np.where(hist_mean > 0, hist.var(axis=1) / hist_mean, np.nan)
    else:                                           # window shorter than one bin
        sync = np.full(P, np.nan)

    out = {}
    for i, name in enumerate(names):
        out[name] = {
            "rate_hz": float(spikes[i] / sizes[i] / span_s),
            "spikes": int(spikes[i]),
            "neurons": int(sizes[i]),
            "cv_isi": float(cv_sum[i] / cv_neurons[i]) if cv_neurons[i] else math.nan,
            "cv_neurons": int(cv_neurons[i]),
            "synchrony": float(sync[i]),
            "synchrony_neurons": int(sub_sizes[i]),
        }
    return out


def firing_rates(ids, times, populations, start_ms: float, stop_ms: float) -> dict[str, float]:
    """Mean firing rate (Hz) per population over [start_ms, stop_ms), silent neurons included."""
    names, firsts, sizes = _populations(populations)
    ids, times = _spikes(ids, times)
    start, stop = _window(start_ms, stop_ms)
    pop = _population_of(ids, firsts, sizes)
    keep = (pop >= 0) & (times >= start) & (times < stop)
    counts = np.bincount(pop[keep], minlength=len(names))
    span_s = (stop - start) * 1e-3
    return {name: float(counts[i] / sizes[i] / span_s) for i, name in enumerate(names)}


def cv_isi(ids, times, populations, start_ms: float, stop_ms: float,
           min_spikes: int = CV_MIN_SPIKES) -> dict[str, dict]:
    """{name: {"cv_isi": mean CV over qualifying neurons, "cv_neurons": how many qualified}}."""
    stats = population_statistics(ids, times, populations, start_ms, stop_ms, min_spikes=min_spikes)
    return {name: {"cv_isi": s["cv_isi"], "cv_neurons": s["cv_neurons"]} for name, s in stats.items()}


def synchrony(ids, times, populations, start_ms: float, stop_ms: float, bin_ms: float = SYNCHRONY_BIN_MS,
              max_neurons: int = SYNCHRONY_MAX_NEURONS) -> dict[str, dict]:
    """{name: {"synchrony": variance / mean of the subsample's count histogram, "synchrony_neurons"}}."""
    stats = population_statistics(ids, times, populations, start_ms, stop_ms, bin_ms=bin_ms,
                                  max_neurons=max_neurons)
    return {name: {"synchrony": s["synchrony"], "synchrony_neurons": s["synchrony_neurons"]}
            for name, s in stats.items()}


# -- the check against the reference --------------------------------------------------------
def tolerance_pct(name: str, tolerances: dict | None = None) -> float:
    """A population's tolerance (percent): its own entry in tolerances, else its class (the
    name's last letter, E or I)."""
    tolerances = DEFAULT_TOLERANCES_PCT if tolerances is None else tolerances
    if name in tolerances:
        return float(tolerances[name])
    if name[-1:] in tolerances:
        return float(tolerances[name[-1:]])
    raise ValueError(f"no tolerance for population {name!r}: its name ends in neither "
                     f"{' nor '.join(sorted(k for k in tolerances if len(k) == 1))} and it has no entry of its own")


def compare_rates(mean_rates: dict, reference: dict | None = None,
                  tolerances: dict | None = None) -> dict[str, dict]:
    """Each reference population's rate against its reference.

    mean_rates: {name: Hz} (e.g. the mean over seeds); reference: {name: Hz}, default
    reference_rates(); tolerances: percent, keyed by population name or class letter, default
    {"E": 10, "I": 15}. Populations of mean_rates absent from the reference (a thalamic
    population, say) are left out. Returns, in the reference's order, {name: {"rate_hz",
    "reference_hz", "deviation_pct", "tolerance_pct", "passed"}}; deviation = 100 (rate -
    reference) / reference; passed when |deviation| <= tolerance. A population without a
    (finite) rate fails, with rate_hz and deviation_pct None.
    """
    reference = reference_rates() if reference is None else reference
    out = {}
    for name, ref in reference.items():
        tol = tolerance_pct(name, tolerances)
        rate = mean_rates.get(name)
        if rate is None or not math.isfinite(float(rate)):
            out[name] = {"rate_hz": None, "reference_hz": float(ref), "deviation_pct": None,
                         "tolerance_pct": tol, "passed": False}
            continue
        deviation = 100.0 * (float(rate) - float(ref)) / float(ref)
        out[name] = {"rate_hz": float(rate), "reference_hz": float(ref), "deviation_pct": deviation,
                     "tolerance_pct": tol, "passed": bool(abs(deviation) <= tol + _BOUNDARY_SLACK_PCT)}
    return out


# -- several seeds --------------------------------------------------------------------------
def aggregate_seeds(per_seed: list[dict]) -> dict[str, dict]:
    """Mean and sd across seeds of every numeric statistic of every population.

    per_seed: one {population: {statistic: value}} per seed (population_statistics' output).
    Returns {population: {statistic: {"mean", "sd", "n"}}}: n seeds with a finite value, their
    mean, and their sample standard deviation (ddof = 1; NaN when n < 2). A statistic NaN in
    every seed has mean NaN and n = 0. Populations appear in the order first met.
    """
    names = list(dict.fromkeys(name for seed in per_seed for name in seed))
    out = {}
    for name in names:
        keys = list(dict.fromkeys(k for seed in per_seed for k in seed.get(name, {})))
        out[name] = {}
        for key in keys:
            values = [seed[name][key] for seed in per_seed if name in seed and key in seed[name]]
            if not all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
                       for v in values if v is not None):
                continue
            x = np.array([math.nan if v is None else float(v) for v in values], dtype=np.float64)
            x = x[np.isfinite(x)]
            out[name][key] = {"mean": float(x.mean()) if x.size else math.nan,
                              "sd": float(x.std(ddof=1)) if x.size >= 2 else math.nan,
                              "n": int(x.size)}
    return out


# -- reading a run --------------------------------------------------------------------------
def read_spikes(path, populations) -> tuple[np.ndarray, np.ndarray]:
    """(global ids int64, times ms float64) from a SONATA spike file as `ranvier run` writes it:
    /spikes/<population>/{node_ids, timestamps}, node ids local to their population (SONATA's
    rule), made global here with the populations' first ids. A population without a group has
    no spikes; a group that names no population, or a node id >= its population's size, is an
    error (the populations do not describe the run that wrote the file)."""
    import h5py

    names, firsts, sizes = _populations(populations)
    ids, times = [], []
    with h5py.File(path, "r") as f:
        if "spikes" not in f:
            raise ValueError(f"{path}: no /spikes group; not a SONATA spike file")
        groups = f["spikes"]
        unknown = sorted(set(groups) - set(names))
        if unknown:
            raise ValueError(f"{path}: spike population(s) {unknown} are not among the populations "
                             f"{names} of this run")
        for i, name in enumerate(names):
            if name not in groups:
                continue
            local = np.asarray(groups[name]["node_ids"][()], dtype=np.int64)
            stamps = np.asarray(groups[name]["timestamps"][()], dtype=np.float64)
            if local.shape != stamps.shape:
                raise ValueError(f"{path}: /spikes/{name}: node_ids and timestamps differ in length")
            if local.size and (local.min() < 0 or local.max() >= sizes[i]):
                raise ValueError(f"{path}: /spikes/{name}: node id {int(local.max())} outside the "
                                 f"population's {int(sizes[i])} neurons")
            ids.append(local + firsts[i])
            times.append(stamps)
    if not ids:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    return np.concatenate(ids), np.concatenate(times)
