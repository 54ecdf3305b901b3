"""The multi-area model of macaque visual cortex (Schmidt et al. 2018) as a Ranvier workload.

32 areas, each a layered microcircuit of up to 8 populations of iaf_psc_exp neurons (TH has no
layer 4: 254 populations), with the model's population sizes, in-degrees (the stabilised K),
weights, intra-area delays and distance-dependent inter-area delays. The numbers are read from
the model's derived data (structure.npz, the multi-area-model data set of docs/data.md, which
`python -m ranvier.datasets fetch multi-area-model` derives from the model's repository): that
data is CC BY-NC-SA, so none of it ships with Ranvier; the loader takes the folder's path.

Scaling follows the model's own (multiarea_model.py): `scale` multiplies the neuron numbers and
the synapse totals (in-degrees kept), `k_scale` multiplies the in-degrees; below 1 the weights
grow by 1/sqrt(k_scale) and a DC current replaces the mean input lost, computed from the
full-scale rates in the data (docs/workloads/multi-area.md).
"""
from __future__ import annotations

import math
from pathlib import Path

from .. import datasets
from ..errors import ConfigError
from .parameters import check_overrides, check_scales
from ..core.network import Network, PoissonDrive, Population, Projection

DATA_SET = "multi-area-model"         # ranvier.datasets: where the data is looked for, how to get it
STATES = ("ground", "metastable")

MULTI_AREA_DEFAULTS = {
    "data": None,                  # folder with structure.npz; left out: the multi-area-model data set (docs/data.md)
    "state": "ground",             # "ground" (chi = 1) or "metastable" (chi = 1.9, chi_I = 2): the cortico-cortical weights
    "scale": 0.01,                 # neuron numbers (and synapse totals) scaled by this
    "k_scale": 1.0,                # in-degrees scaled by this, with the weight and DC compensation
    "areas": None,                 # a list of area names to keep (their mutual projections only); None: all 32
    "inter_area_delay_min_ms": 0.1,  # inter-area delays redrawn below this (the model: dt; the study's cutoff: 1.0)
    "d_min_ms": 0.1,               # intra-area delays redrawn below this (the model: dt)
    "bg_rate_hz": 10.0,            # rate of each external Poisson source
    "V0_mean_mV": -150.0, "V0_sd_mV": 50.0,   # the model's initial membrane potentials
}


def data_folder(path) -> Path:
    """The folder holding structure.npz: `path`, else the multi-area-model data set's folder
    ($RANVIER_MULTI_AREA_DATA, else multi-area-model/ in $RANVIER_DATA or ./data; docs/data.md)."""
    if path is None:
        if not datasets.present(DATA_SET):
            raise ConfigError(f"multi-area: {datasets.missing(DATA_SET)}; or set data = \"FOLDER\" to the folder "
                              f"that holds structure.npz")
        return datasets.folder(DATA_SET)
    folder = Path(path).expanduser()
    if not (folder / "structure.npz").is_file():
        raise ConfigError(f"multi-area: 'data' = {str(path)!r} has no structure.npz; give the folder of the "
                          f"model's derived data (`{datasets.dataset(DATA_SET).fetch_command}` makes it, docs/data.md)")
    return folder


def load_structure(path=None) -> dict:
    """structure.npz as plain arrays (rows: target population, columns: source, in `index` order)."""
    import numpy as np

    with np.load(data_folder(path) / "structure.npz", allow_pickle=False) as d:
        return {key: d[key] for key in d.files}


def _dc_compensation_pA(s: dict, rows, state: str, k_scale: float, tau_syn_ms: float, bg_rate_hz: float):
    """The mean input lost when in-degrees shrink by k_scale and weights grow by 1/sqrt(k_scale):
    (1 - sqrt(k)) * (sum_j K_ij w_ij nu_j + K_ext,i w_ext nu_ext) * tau_syn, with the full-scale rates nu_j
    (the model's add_DC_drive)."""
    import numpy as np

    if k_scale >= 1.0:
        return np.zeros(len(rows))
    W = s[f"W_{state}"]
    recurrent = (s["K"] * W) @ s["fullscale_rates"]
    external = s["K_ext"] * s["W_ext"] * bg_rate_hz
    return ((1.0 - math.sqrt(k_scale)) * 1e-3 * tau_syn_ms * (recurrent + external))[rows]


def multi_area(**overrides) -> Network:
    """The multi-area model at `scale` x `k_scale` in its ground or metastable state (module docstring)."""
    import numpy as np

    p = check_overrides("multi-area", MULTI_AREA_DEFAULTS, overrides)
    scale, k_scale = check_scales("multi-area", p)
    if p["state"] not in STATES:
        raise ConfigError(f"multi-area: 'state' must be one of {STATES}, got {p['state']!r}")
    for key in ("d_min_ms", "inter_area_delay_min_ms", "bg_rate_hz"):
        if not p[key] > 0:
            raise ConfigError(f"multi-area: '{key}' must be positive, got {p[key]!r}")
    s = load_structure(p["data"])
    index = [str(x) for x in s["index"]]
    all_areas = [str(a) for a in s["areas"]]
    areas = all_areas if p["areas"] is None else list(p["areas"])
    unknown = [a for a in areas if a not in all_areas]
    if unknown or not areas or len(set(areas)) != len(areas):
        raise ConfigError(f"multi-area: 'areas' must list distinct areas of the model, got {p['areas']!r}"
                          + (f" ({unknown} unknown; the areas: {all_areas})" if unknown else ""))
    keep = set(areas)
    # Populations in the model's order (areas as listed in the data), each area contiguous.
    rows = [i for i, name in enumerate(index) if name.split("-")[0] in keep]
    neuron = {"E_L_mV": -65.0, "V_th_mV": -50.0, "V_reset_mV": -65.0, "C_m_pF": 250.0, "tau_m_ms": 10.0,
              "tau_syn_ms": 0.5, "tau_arp_ms": 2.0}
    sqrt_k = math.sqrt(k_scale)
    dc = _dc_compensation_pA(s, rows, p["state"], k_scale, neuron["tau_syn_ms"], p["bg_rate_hz"])
    W, W_sd = s[f"W_{p['state']}"], s[f"W_sd_{p['state']}"]

    net = Network(name="multi-area", parameters=p)
    sizes = {}
    for r, i in enumerate(rows):
        name = index[i]
        area, pop = name.split("-")
        sizes[i] = max(1, int(s["N"][i] * scale))          # NEST's MAM truncates (int)
        net.add_population(Population(name, sizes[i], {**neuron, "I_e_pA": float(dc[r]),
                                                        "V0_mean_mV": p["V0_mean_mV"], "V0_sd_mV": p["V0_sd_mV"]},
                                      model="psc_exp", excitatory=pop.endswith("E"), area=area))
    for i in rows:
        target, t_area = index[i], index[i].split("-")[0]
        for j in rows:
            total = int(s["synapses"][i, j] * scale * k_scale)
            if total == 0:
                continue
            source, s_area = index[j], index[j].split("-")[0]
            mean = float(s["delay_mean"][i, j])
            inter = s_area != t_area
            low = p["inter_area_delay_min_ms"] if inter else p["d_min_ms"]
            origin = {"delay_offset_ms": "inter_area_delay_min_ms" if inter else "d_min_ms",
                      "delay_mean_ms": "distance / 3.5 mm/ms" if inter else
                      ("1.5 ms (E source)" if source.endswith("E") else "0.75 ms (I source)")}
            w = float(W[i, j]) / sqrt_k
            net.connect(Projection(source=source, target=target, total_synapses=total, weight=w,
                                   weight_sd=float(W_sd[i, j]) / sqrt_k, delay_offset_ms=low,
                                   delay_distribution="normal", delay_mean_ms=mean, delay_sd_ms=0.5 * mean,
                                   origin=origin))
        k_ext = float(s["K_ext"][i]) * k_scale
        if k_ext > 0:
            n = max(1, round(k_ext))      # K_ext is fractional: n trains whose total rate is K_ext * bg_rate_hz
            net.drive(PoissonDrive(target, n, p["bg_rate_hz"] * k_ext / n, weight=float(s["W_ext"][i]) / sqrt_k,
                                   origin={"n_synapses": f"K_ext of {target} x k_scale", "rate_hz": "bg_rate_hz"}))
    return net


def reference_rates(path=None, *, table: str = "fullscale_rates") -> dict:
    """Per-population rates shipped with the model: 'fullscale_rates' (the repository's fullscale_rates.json,
    the target of its downscaling) or 'M2E_pop_rates_ref' (a downscaled regression reference)."""
    s = load_structure(path)
    return {str(name): float(r) for name, r in zip(s["index"], s[table])}
