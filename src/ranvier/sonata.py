"""SONATA point-neuron networks: a simulation config (BMTK, NEST, PyNN write them) read into a
Ranvier network, natively (h5py and the standard library; no PyNN, no BMTK).

What is read:
- the config: `simulation_config.json` with its `network` (a circuit config), or one file with
  both (`config.json` with "network" and "simulation", or the sections inline); `manifest`
  variables ($BASE_DIR, ${X}, nested) expanded; paths relative to the file that names them;
- nodes: HDF5 populations (node_id, node_type_id, node_group_id/index, group columns) with
  their CSV type tables (space-separated); `model_type` "point_process"/"point_neuron" with
  `model_template` "nest:<model>" and `dynamics_params` (a JSON file in the components'
  `point_neuron_models_dir`, or a `dynamics_params` group per node), and "virtual" nodes
  (inputs: they fire the spike trains the config gives them);
- edges: source_node_id, target_node_id, edge_type_id, `syn_weight` (x `nsyns` when present,
  as BMTK's PointNet), `delay` per edge or per type, `model_template` static_synapse;
- node sets (a file or inline): attribute filters (population, node_id, node_type_id, any
  node or type column; a list of values means any of them), compound sets (a list of names),
  and BMTK's old plain list of node ids;
- inputs: `input_type` "spikes" (module "h5"/"sonata": the SONATA layout
  /spikes/<population>/{node_ids,timestamps} or the pre-1.0 /spikes/{gids,timestamps}; module
  "csv": columns timestamps, population, node_ids) onto virtual nodes;
- run: tstop, dt; output: spikes_file (written in the SONATA layout, per SONATA population,
  node ids as in the network, sorted by time), when `ranvier run` is given --out.

NEST models mapped (nest: prefix, parameters by NEST's names): iaf_psc_alpha -> iaf_psc_alpha,
iaf_psc_delta -> lifca (NEST's iaf_psc_delta), iaf_psc_exp -> psc_exp (two time constants),
iaf_cond_exp -> iaf_cond_exp. Anything else is refused by name before anything is built.

One Ranvier population per SONATA population and node type (named "<population>.<model_name
or pop_name or node_type_id>"), neurons in node-id order; parameters the type's, or per
neuron where nodes carry their own. Spike times are rounded up to the grid (NEST's precise
spike times arriving at a grid-based neuron: a spike in (t - h, t] acts at t); delays to the
nearest step (NEST's rounding).
"""
from __future__ import annotations

import csv
import json
import math
import numbers
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .errors import ConfigError

# NEST name -> Ranvier parameter name, per mapped model; "V_m" is the initial potential.
_ALPHA_KEYS = {"E_L": "E_L_mV", "V_th": "V_th_mV", "V_reset": "V_reset_mV", "C_m": "C_m_pF", "tau_m": "tau_m_ms",
               "t_ref": "tau_arp_ms", "I_e": "I_e_pA", "tau_syn_ex": "tau_syn_ex_ms", "tau_syn_in": "tau_syn_in_ms",
               "V_m": "V0_mean_mV"}
NEST_DEFAULTS = {   # NEST 3.10's, for the models whose Ranvier parameters are not NEST's
    "iaf_psc_delta": {"E_L": -70.0, "V_th": -55.0, "V_reset": -70.0, "C_m": 250.0, "tau_m": 10.0,
                      "t_ref": 2.0, "I_e": 0.0, "V_m": -70.0},
}
SUPPORTED_NEST_MODELS = ("iaf_psc_alpha", "iaf_psc_delta", "iaf_psc_exp", "iaf_cond_exp")
VIRTUAL = "virtual"
NEURON_TYPES = ("point_process", "point_neuron", "point_soma")


@dataclass
class SonataInfo:
    """What a network read from SONATA keeps beside its Ranvier form: for each Ranvier
    population, its SONATA population and node ids (the output's names), and which are virtual."""
    config: str
    populations: dict = field(default_factory=dict)      # ranvier name -> (sonata population, node ids)
    virtual: set = field(default_factory=set)            # ranvier names of virtual (input) populations
    tstop_ms: float = 0.0
    dt_ms: float = 0.1
    spikes_file: str = "spikes.h5"
    notes: list = field(default_factory=list)
    # membrane potential reports: (name, global ids in increasing order, interval ms, file name)
    reports: list = field(default_factory=list)


# -- the configuration ------------------------------------------------------------------------
def _read_json(path: Path, what: str) -> dict:
    """A JSON file that holds one object (every SONATA JSON file does)."""
    try:
        with open(path) as f:
            data = json.load(f)
    except FileNotFoundError:
        raise ConfigError(f"SONATA {what} '{path}' does not exist") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"SONATA {what} '{path}' is not valid JSON: {e}") from None
    except OSError as e:
        raise ConfigError(f"SONATA {what} '{path}' cannot be read: {e.strerror or e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"SONATA {what} '{path}' is not a JSON object ({{\"name\": value, ...}}) but a "
                          f"{type(data).__name__}")
    return data


def _is_number(value) -> bool:
    """A JSON number that means one: not true/false, not NaN."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and not math.isnan(value)


def _positive_ms(value, where: str, name: str, example: str) -> float:
    """A time in ms that must be a finite positive number (a step, a duration, an interval)."""
    if not _is_number(value) or not 0 < value < math.inf:
        raise ConfigError(f"{where}: {name} = {json.dumps(value)} is not a positive number of ms; give one, "
                          f"e.g. {example}")
    return float(value)


def _check_run(cfg: dict, path: Path) -> None:
    """run.tstop and run.dt are positive times, refused here (before anything is built) where
    they are written, whatever reads them next."""
    run = cfg.get("run")
    if run is None:
        return
    where = f"SONATA config '{path}'"
    if not isinstance(run, dict):
        raise ConfigError(f"{where}: 'run' must be an object ({{\"tstop\": ..., \"dt\": ...}}), not "
                          f"{json.dumps(run)}")
    if "tstop" in run:
        _positive_ms(run["tstop"], where, "run.tstop", '"tstop": 1000.0 (the simulated time)')
    if "dt" in run:
        _positive_ms(run["dt"], where, "run.dt", '"dt": 0.1 (the time step)')


def _expand(value, manifest: dict, base: Path):
    """A config value with its manifest variables replaced; strings that then look like paths
    are made absolute against `base` (the folder of the file that holds them)."""
    if isinstance(value, dict):
        return {k: _expand(v, manifest, base) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, manifest, base) for v in value]
    if isinstance(value, str) and "$" in value:
        for _ in range(10):
            new = re.sub(r"\$\{?(\w+)\}?", lambda m: manifest.get("$" + m.group(1), m.group(0)), value)
            if new == value:
                break
            value = new
        if "$" in value:
            raise ConfigError(f"SONATA config: '{value}' names a manifest variable that is not defined")
        return str((base / value).resolve()) if not Path(value).is_absolute() else value
    return value


def _manifest(cfg: dict, base: Path) -> dict:
    raw = dict(cfg.get("manifest", {}))
    raw.setdefault("$BASE_DIR", str(base))
    raw.setdefault("$configdir", str(base))
    out = {}
    for _ in range(len(raw) + 1):                   # variables may name each other
        for k, v in raw.items():
            v = str(v)
            for name, val in out.items():
                v = v.replace("${" + name[1:] + "}", val).replace(name, val)
            if "$" not in v:
                out[k] = str((base / v).resolve()) if not Path(v).is_absolute() else v
    missing = sorted(set(raw) - set(out))
    if missing:
        raise ConfigError(f"SONATA config: manifest variable(s) {missing} cannot be resolved")
    return out


def _load_part(path: Path, what: str) -> dict:
    cfg = _read_json(path, what)
    _check_run(cfg, path)
    base = path.parent
    manifest = _manifest(cfg, base)
    out = {k: _expand(v, manifest, base) for k, v in cfg.items() if k != "manifest"}
    return out


def _is_path_key(key: str) -> bool:
    return key.endswith(("_file", "_dir")) or key in ("network", "simulation", "input_file", "output_dir")


def _absolute_paths(d, base: Path):
    """Relative file names (without manifest variables) made absolute against `base`."""
    if isinstance(d, dict):
        return {k: (str((base / v).resolve()) if _is_path_key(k) and isinstance(v, str) and not Path(v).is_absolute()
                    else _absolute_paths(v, base)) for k, v in d.items()}
    if isinstance(d, list):
        return [_absolute_paths(v, base) for v in d]
    return d


def read_config(path) -> dict:
    """The whole configuration: simulation settings and the circuit, paths absolute."""
    path = Path(path).resolve()
    top = _absolute_paths(_load_part(path, "config"), path.parent)
    if isinstance(top.get("simulation"), str):            # config.json: {"network": ..., "simulation": ...}
        sim_path = Path(top["simulation"])
        sim = _absolute_paths(_load_part(sim_path, "simulation config"), sim_path.parent)
        if "network" not in sim and isinstance(top.get("network"), str):
            sim["network"] = top["network"]
        top = {**{k: v for k, v in top.items() if k not in ("simulation",)}, **sim}
    if isinstance(top.get("network"), str):
        net_path = Path(top["network"])
        net = _absolute_paths(_load_part(net_path, "circuit config"), net_path.parent)
        for key in ("networks", "components"):
            top.setdefault(key, net.get(key, {}))
    if "networks" not in top and "network" not in top:
        # A simulation config that names no circuit: BMTK's layout puts config.json (naming
        # both) or circuit_config.json beside it.
        for sibling in ("circuit_config.json",):
            if (path.parent / sibling).is_file() and path.name != sibling:
                net_path = path.parent / sibling
                net = _absolute_paths(_load_part(net_path, "circuit config"), net_path.parent)
                for key in ("networks", "components"):
                    top.setdefault(key, net.get(key, {}))
                break
    if "networks" not in top:
        raise ConfigError(f"SONATA config '{path}': no 'networks' section, and no 'network' naming a circuit config")
    return top


# -- nodes -------------------------------------------------------------------------------------
def _read_types(path: str) -> dict:
    """A node or edge types CSV (space-separated, quoted fields allowed): type id -> row dict."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f, delimiter=" ", skipinitialspace=True))
    except FileNotFoundError:
        raise ConfigError(f"SONATA types file '{path}' does not exist") from None
    out = {}
    for row in rows:
        row = {k: v for k, v in row.items() if k is not None}
        key = "node_type_id" if "node_type_id" in row else "edge_type_id"
        if key not in row:
            raise ConfigError(f"SONATA types file '{path}': no node_type_id or edge_type_id column")
        out[int(row[key])] = row
    return out


def _h5(path: str):
    import h5py
    try:
        return h5py.File(path, "r")
    except FileNotFoundError:
        raise ConfigError(f"SONATA file '{path}' does not exist") from None
    except OSError as e:
        raise ConfigError(f"SONATA file '{path}' cannot be read as HDF5: {e}") from None


@dataclass
class NodePopulation:
    name: str
    node_ids: np.ndarray
    type_ids: np.ndarray
    types: dict                       # node_type_id -> CSV row
    columns: dict                     # per-node attributes (group columns), full length, or absent
    dynamics: dict                    # per-node dynamics_params, name -> array (group dynamics_params)


def _read_nodes(entry: dict) -> list[NodePopulation]:
    types = _read_types(entry["node_types_file"])
    pops = []
    with _h5(entry["nodes_file"]) as f:
        if "nodes" not in f:
            raise ConfigError(f"SONATA nodes file '{entry['nodes_file']}': no /nodes group")
        for name, g in f["nodes"].items():
            type_ids = g["node_type_id"][:].astype(np.int64)
            n = type_ids.size
            node_ids = g["node_id"][:].astype(np.int64) if "node_id" in g else np.arange(n)
            group_id = g["node_group_id"][:] if "node_group_id" in g else np.zeros(n, np.int64)
            group_index = g["node_group_index"][:] if "node_group_index" in g else np.arange(n)
            columns, dynamics = {}, {}
            for gid_name, grp in g.items():
                if not gid_name.isdigit():
                    continue
                mine = np.flatnonzero(group_id == int(gid_name))
                for col, ds in grp.items():
                    target = dynamics if col == "dynamics_params" else columns
                    items = ds.items() if col == "dynamics_params" else [(col, ds)]
                    for key, d in items:
                        if getattr(d, "ndim", 2) != 1:
                            continue
                        values = d[:]
                        if values.dtype.kind in "SO":
                            values = values.astype(str)
                        full = target.setdefault(key, np.full(n, np.nan if values.dtype.kind in "fiu" else "",
                                                              dtype=np.float64 if values.dtype.kind in "fiu" else object))
                        full[mine] = values[group_index[mine]]
            unknown = sorted(set(np.unique(type_ids).tolist()) - set(types))
            if unknown:
                raise ConfigError(f"SONATA nodes '{name}' ({entry['nodes_file']}): node_type_id {unknown[:5]} not in "
                                  f"{entry['node_types_file']}")
            order = np.argsort(node_ids, kind="stable")
            pops.append(NodePopulation(name, node_ids[order], type_ids[order], types,
                                       {k: v[order] for k, v in columns.items()},
                                       {k: v[order] for k, v in dynamics.items()}))
    return pops


def _attribute(pop: NodePopulation, key: str):
    """A node attribute over the population: its column, or its type's, or None."""
    if key == "node_id":
        return pop.node_ids
    if key == "population":
        return np.full(pop.node_ids.size, pop.name, dtype=object)
    if key == "node_type_id":
        return pop.type_ids
    if key in pop.columns:
        return pop.columns[key]
    if any(key in row for row in pop.types.values()):
        return np.array([pop.types[t].get(key, "") for t in pop.type_ids], dtype=object)
    return None


def _matches(values, wanted) -> np.ndarray:
    wanted = wanted if isinstance(wanted, list) else [wanted]
    out = np.zeros(len(values), dtype=bool)
    for w in wanted:
        if isinstance(w, (int, float)) and not isinstance(w, bool):
            try:
                out |= values.astype(np.float64) == float(w)
            except (TypeError, ValueError):
                out |= values.astype(str) == str(w)
        else:
            out |= values.astype(str) == str(w)
    return out


def select(node_sets: dict, name_or_set, pops: list[NodePopulation]) -> dict:
    """A node set's members: population name -> boolean mask over its nodes (node-id order)."""
    spec = node_sets.get(name_or_set) if isinstance(name_or_set, str) else name_or_set
    if spec is None:
        raise ConfigError(f"SONATA node set '{name_or_set}' is not defined; node sets: {sorted(node_sets)}")
    if isinstance(spec, list):
        if all(isinstance(x, str) for x in spec):            # compound: the union of named sets
            out = {p.name: np.zeros(p.node_ids.size, bool) for p in pops}
            for sub in spec:
                for k, m in select(node_sets, sub, pops).items():
                    out[k] |= m
            return out
        spec = {"node_id": spec}                             # BMTK's plain list of node ids
    out = {}
    for p in pops:
        mask = np.ones(p.node_ids.size, dtype=bool)
        for key, wanted in spec.items():
            values = _attribute(p, key)
            mask &= np.zeros(p.node_ids.size, bool) if values is None else _matches(values, wanted)
        out[p.name] = mask
    return out


# -- neuron parameters -------------------------------------------------------------------------
def _model_of(pop: NodePopulation, type_id: int, where: str) -> tuple[str, str | None]:
    row = pop.types[type_id]
    model_type = row.get("model_type", "").strip()
    if model_type == VIRTUAL:
        return VIRTUAL, None
    template = row.get("model_template", "").strip()
    if model_type not in NEURON_TYPES:
        raise ConfigError(f"{where}: model_type '{model_type}' is not a point neuron; Ranvier reads "
                          f"{list(NEURON_TYPES)} and 'virtual' nodes")
    if not template.startswith("nest:"):
        raise ConfigError(f"{where}: model_template '{template}' is not a NEST model (nest:<name>); supported: "
                          f"{['nest:' + m for m in SUPPORTED_NEST_MODELS]}")
    nest_name = template[len("nest:"):]
    if nest_name not in SUPPORTED_NEST_MODELS:
        raise ConfigError(f"{where}: model_template '{template}' is not supported; supported: "
                          f"{['nest:' + m for m in SUPPORTED_NEST_MODELS]}")
    return nest_name, row.get("dynamics_params", "").strip() or None


def _nest_keys(nest_name: str) -> dict | None:
    """NEST parameter name -> Ranvier's, for the models that take NEST's absolute parameters
    (None: iaf_psc_delta, whose lifca parameters are relative to rest)."""
    if nest_name in ("iaf_psc_alpha", "iaf_psc_exp"):
        return _ALPHA_KEYS
    if nest_name == "iaf_cond_exp":
        return {**{k: v for k, v in _ALPHA_KEYS.items() if k != "tau_m"}, "g_L": "g_L_nS", "E_ex": "E_ex_mV",
                "E_in": "E_in_mV"}
    return None


def _to_ranvier(nest_name: str, nest: dict, where: str) -> tuple[str, dict]:
    """(Ranvier model, its parameters) of a NEST model with parameters by NEST's names."""
    keys = _nest_keys(nest_name)
    if keys is None:                                          # iaf_psc_delta -> lifca, relative to rest
        q = {**NEST_DEFAULTS["iaf_psc_delta"], **nest}
        unknown = sorted(set(nest) - set(NEST_DEFAULTS["iaf_psc_delta"]))
        if unknown:
            raise ConfigError(f"{where}: nest:iaf_psc_delta parameter(s) {unknown} are not supported; "
                              f"supported: {sorted(NEST_DEFAULTS['iaf_psc_delta'])}")
        return "lifca", {"tau_m_ms": q["tau_m"], "theta_mV": q["V_th"] - q["E_L"], "reset_mV": q["V_reset"] - q["E_L"],
                         "tau_arp_ms": q["t_ref"], "dc_mV_per_ms": q["I_e"] / q["C_m"],
                         "initial_V_mV": q["V_m"] - q["E_L"]}
    unknown = sorted(set(nest) - set(keys))
    if unknown:
        raise ConfigError(f"{where}: nest:{nest_name} parameter(s) {unknown} are not supported; supported: "
                          f"{sorted(keys)}")
    params = {keys[k]: float(v) for k, v in nest.items()}
    if nest_name == "iaf_psc_exp":
        # NEST's defaults where the file leaves them out (psc_exp's own tau_syn_ms would stand in)
        params = {"tau_syn_ex_ms": 2.0, "tau_syn_in_ms": 2.0, **params}
    return {"iaf_psc_alpha": "iaf_psc_alpha", "iaf_psc_exp": "psc_exp", "iaf_cond_exp": "iaf_cond_exp"}[nest_name], params


def _dynamics_file(components: dict, name: str, where: str) -> dict:
    folder = components.get("point_neuron_models_dir")
    candidates = [Path(folder) / name] if folder else []
    for c in candidates:
        if c.is_file():
            return _read_json(c, "dynamics_params file")
    raise ConfigError(f"{where}: dynamics_params '{name}' not found"
                      + (f" in point_neuron_models_dir '{folder}'" if folder else
                         "; the circuit config's components name no point_neuron_models_dir"))


# -- spike inputs ------------------------------------------------------------------------------
def read_spikes(path: str, module: str = "h5") -> dict:
    """A spike file: population name (None for the pre-1.0 layout, which has none) -> (node
    ids, times in ms)."""
    if module == "csv" or str(path).endswith((".csv", ".txt")):
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f, delimiter=" ", skipinitialspace=True))
        out: dict = {}
        for r in rows:
            ids, ts = out.setdefault(r.get("population") or None, ([], []))
            ids.append(int(r.get("node_ids", r.get("gids", 0))))
            ts.append(float(r["timestamps"]))
        return {k: (np.asarray(i, np.int64), np.asarray(t, np.float64)) for k, (i, t) in out.items()}
    with _h5(path) as f:
        if "spikes" not in f:
            raise ConfigError(f"SONATA spike file '{path}': no /spikes group")
        g = f["spikes"]
        if "gids" in g and "timestamps" in g:                   # pre-1.0: /spikes/{gids,timestamps}
            return {None: (g["gids"][:].astype(np.int64), g["timestamps"][:].astype(np.float64))}
        out = {}
        for name, pop in g.items():
            if "node_ids" in pop and "timestamps" in pop:
                out[name] = (pop["node_ids"][:].astype(np.int64), pop["timestamps"][:].astype(np.float64))
        return out


def _on_grid(times: np.ndarray, dt: float) -> np.ndarray:
    """Spike times rounded up to the grid: a spike in (t - h, t] acts at t (NEST's precise spike
    times arriving at a grid-based neuron)."""
    steps = np.ceil(times / dt - 1e-9)
    return steps


# -- the network -------------------------------------------------------------------------------
def load(config_path, *, dt_ms: float | None = None):
    """(network, SonataInfo) of a SONATA simulation config; dt_ms replaces the config's dt."""
    from .network import Network, Population, Projection

    cfg = read_config(config_path)
    run = cfg.get("run", {})
    if "tstop" not in run:
        raise ConfigError(f"SONATA config '{config_path}': 'run' has no 'tstop'")
    dt = _positive_ms(dt_ms, "SONATA load", "dt_ms", "dt_ms=0.1") if dt_ms is not None else float(run.get("dt", 0.1))
    info = SonataInfo(config=str(Path(config_path).resolve()), tstop_ms=float(run["tstop"]), dt_ms=dt,
                      spikes_file=Path(cfg.get("output", {}).get("spikes_file", "spikes.h5")).name)
    components = cfg.get("components", {})
    networks = cfg["networks"]
    pops: list[NodePopulation] = []
    for entry in networks.get("nodes", []):
        if entry.get("enabled", True) is False:
            continue
        pops.extend(_read_nodes(entry))
    if not pops:
        raise ConfigError(f"SONATA config '{config_path}': no node populations")
    by_name = {p.name: p for p in pops}
    node_sets = cfg.get("node_sets", {})
    if isinstance(cfg.get("node_sets_file"), str):
        node_sets = {**_read_json(Path(cfg["node_sets_file"]), "node sets file"), **node_sets}

    # spike trains of virtual nodes, from the inputs
    trains: dict = {}                                        # (population, node id) -> times
    clamps: list = []                                        # (where, input, members): after the populations
    for name, inp in cfg.get("inputs", {}).items():
        where = f"SONATA input '{name}'"
        if inp.get("enabled", True) is False:
            continue
        kind = inp.get("input_type")
        if kind not in ("spikes", "current_clamp"):
            raise ConfigError(f"{where}: input_type '{kind}' is not supported yet (Ranvier reads 'spikes' and "
                              f"'current_clamp' inputs)")
        members = select(node_sets, inp.get("node_set"), pops) if inp.get("node_set") is not None else \
            {p.name: np.ones(p.node_ids.size, bool) for p in pops}
        if kind == "current_clamp":
            clamps.append((where, inp, members))
            continue
        spikes = read_spikes(inp["input_file"], inp.get("module", "h5"))
        for pop_name, mask in members.items():
            if not mask.any():
                continue
            ids, ts = spikes.get(pop_name, spikes.get(None, (np.zeros(0, np.int64), np.zeros(0))))
            wanted = set(by_name[pop_name].node_ids[mask].tolist())
            order = np.argsort(ids, kind="stable")
            ids, ts = ids[order], ts[order]
            bounds = np.flatnonzero(np.diff(ids)) + 1
            for chunk_ids, chunk_ts in zip(np.split(ids, bounds), np.split(ts, bounds)):
                if chunk_ids.size and int(chunk_ids[0]) in wanted:
                    trains.setdefault((pop_name, int(chunk_ids[0])), []).append(chunk_ts)

    net = Network(name=Path(config_path).stem, parameters={"config": info.config})
    ranvier_of: dict = {}                                   # sonata population -> (node id -> (ranvier pop, local))
    dropped_early = doubled = 0
    copies: dict = {}                                       # virtual population -> its copies (see below)
    stop_steps = math.ceil(info.tstop_ms / dt - 1e-9)
    for p in pops:
        lookup = {}
        for type_id in np.unique(p.type_ids):
            where = f"SONATA nodes '{p.name}', node_type_id {type_id}"
            model, dyn_name = _model_of(p, int(type_id), where)
            mine = np.flatnonzero(p.type_ids == type_id)
            row = p.types[int(type_id)]
            label = next((row[k] for k in ("model_name", "pop_name") if row.get(k, "").strip()), str(type_id))
            label = re.sub(r"[^\w.-]", "_", label)
            rname = f"{p.name}.{label}" if f"{p.name}.{label}" not in net_names(net) else f"{p.name}.{type_id}"
            excitatory = row.get("ei", "e").strip() != "i"
            extra = []
            if model == VIRTUAL:
                # A node may fire twice in one step (a coarse dt): its k-th spike of a step goes to
                # the k-th copy of the population, with the same edges, so that no spike is lost.
                layers: list = []
                for x, nid in enumerate(p.node_ids[mine]):
                    t = np.concatenate(trains.get((p.name, int(nid)), [np.zeros(0)]))
                    steps = _on_grid(t, dt)
                    dropped_early += int(np.count_nonzero(steps < 1))
                    steps = np.sort(steps[(steps >= 1) & (steps <= stop_steps)])
                    occurrence = np.arange(steps.size) - np.searchsorted(steps, steps)   # 0 for a step's first spike
                    for k in range(int(occurrence.max(initial=-1)) + 1):
                        if k == len(layers):
                            layers.append([[] for _ in range(mine.size)])
                        layers[k][x] = (steps[occurrence == k] * dt).tolist()
                    doubled += int(np.count_nonzero(occurrence > 0))
                layers = layers or [[[] for _ in range(mine.size)]]
                pop = Population(rname, int(mine.size), params={"spike_times_ms": layers[0]}, model="spike_train",
                                 excitatory=excitatory)
                info.virtual.add(rname)
                for k, layer in enumerate(layers[1:], start=2):
                    copy = Population(f"{rname}#{k}", int(mine.size), params={"spike_times_ms": layer},
                                      model="spike_train", excitatory=excitatory)
                    extra.append(copy)
                    info.virtual.add(copy.name)
                    info.populations[copy.name] = (p.name, p.node_ids[mine].copy())
                    copies.setdefault(rname, []).append(copy.name)
            else:
                nest = dict(_dynamics_file(components, dyn_name, where)) if dyn_name else {}
                rmodel, params = _to_ranvier(model, nest, where)
                initial = params.pop("initial_V_mV", None)
                initial = "reset" if initial is None else np.full(mine.size, float(initial))
                for key, values in p.dynamics.items():           # per-node dynamics_params
                    v = values[mine].astype(np.float64)
                    if np.all(np.isnan(v)):
                        continue
                    keys = _nest_keys(model)
                    if keys is None or key not in keys:
                        raise ConfigError(f"{where}: per-node dynamics_params '{key}' is not supported for "
                                          f"nest:{model}")
                    rkey = keys[key]
                    from .neurons import NEURON_MODELS
                    default = params.get(rkey, NEURON_MODELS[rmodel].parameters[rkey].default)
                    params[rkey] = np.where(np.isnan(v), default, v)
                pop = Population(rname, int(mine.size), params=params, model=rmodel, excitatory=excitatory,
                                 initial=initial)
            for q in [pop, *extra]:
                net.add_population(q)
            info.populations[rname] = (p.name, p.node_ids[mine].copy())
            for local, nid in enumerate(p.node_ids[mine].tolist()):
                lookup[nid] = (rname, local)
        ranvier_of[p.name] = lookup
    if dropped_early:
        info.notes.append(f"{dropped_early} input spike(s) at or before 0 ms dropped (a neuron fires after the start)")
    if doubled:
        info.notes.append(f"{doubled} input spike(s) fell in the same {dt:g} ms step as another spike of the same "
                          f"node: they fire from a copy of its population (same edges), none is lost")

    # reports: the membrane potential of a node set's neurons (others are refused by name)
    for name, rep in cfg.get("reports", {}).items():
        where = f"SONATA report '{name}'"
        if rep.get("enabled", True) is False:
            continue
        variable = rep.get("variable_name", "V_m")
        if variable not in ("V_m", "v"):
            raise ConfigError(f"{where}: variable_name '{variable}' is not supported (V_m only)")
        members = select(node_sets, rep.get("cells"), pops) if rep.get("cells") is not None else \
            {p.name: np.ones(p.node_ids.size, bool) for p in pops}
        gids = []
        for pop_name, mask in members.items():
            chosen = set(by_name[pop_name].node_ids[mask].tolist())
            for rname, (sonata_pop, node_ids) in info.populations.items():
                if sonata_pop != pop_name or rname in info.virtual:
                    continue
                first = net.population(rname).first_id
                gids += [first + k for k, nid in enumerate(node_ids.tolist()) if nid in chosen]
        interval = float(rep.get("dt", dt))
        file_name = Path(rep.get("file_name", f"{name}.h5")).name
        if gids:
            info.reports.append((name, sorted(gids), interval, file_name))

    # current clamps (IClamp): amp (pA) from delay for duration (ms), on the node set's neurons
    for where, inp, members in clamps:
        try:
            amp, delay, duration = float(inp["amp"]), float(inp["delay"]), float(inp["duration"])
        except KeyError as e:
            raise ConfigError(f"{where}: a current clamp needs 'amp' (pA), 'delay' and 'duration' (ms); "
                              f"'{e.args[0]}' is missing") from None
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: 'amp', 'delay' and 'duration' must be numbers (one clamp per input)") from None
        from .devices import StepCurrent
        for pop_name, mask in members.items():
            chosen = set(by_name[pop_name].node_ids[mask].tolist())
            for rname, (sonata_pop, node_ids) in info.populations.items():
                if sonata_pop != pop_name or rname in info.virtual:
                    continue
                local = [k for k, nid in enumerate(node_ids.tolist()) if nid in chosen]
                if local:
                    net.inject(StepCurrent(rname, [delay, delay + duration], [amp, 0.0], neurons=local))

    # edges: one projection per (ranvier source population, ranvier target population)
    for entry in networks.get("edges", []):
        if entry.get("enabled", True) is False:
            continue
        types = _read_types(entry["edge_types_file"])
        with _h5(entry["edges_file"]) as f:
            if "edges" not in f:
                raise ConfigError(f"SONATA edges file '{entry['edges_file']}': no /edges group")
            for ename, g in f["edges"].items():
                where = f"SONATA edges '{ename}' ({entry['edges_file']})"
                src_pop = _attr_str(g["source_node_id"].attrs.get("node_population"))
                trg_pop = _attr_str(g["target_node_id"].attrs.get("node_population"))
                for side, name in (("source", src_pop), ("target", trg_pop)):
                    if name not in ranvier_of:
                        raise ConfigError(f"{where}: {side} node population '{name}' is not among the nodes "
                                          f"({sorted(ranvier_of)})")
                src, trg = g["source_node_id"][:].astype(np.int64), g["target_node_id"][:].astype(np.int64)
                type_ids = g["edge_type_id"][:].astype(np.int64)
                m = src.size
                group_id = g["edge_group_id"][:] if "edge_group_id" in g else np.zeros(m, np.int64)
                group_index = g["edge_group_index"][:] if "edge_group_index" in g else np.arange(m)
                cols = {}
                for gname, grp in g.items():
                    if not gname.isdigit():
                        continue
                    mine = np.flatnonzero(group_id == int(gname))
                    for col in ("syn_weight", "delay", "nsyns", "weight"):
                        if col in grp:
                            full = cols.setdefault(col, np.full(m, np.nan))
                            full[mine] = grp[col][:][group_index[mine]]
                unknown = sorted(set(np.unique(type_ids).tolist()) - set(types))
                if unknown:
                    raise ConfigError(f"{where}: edge_type_id {unknown[:5]} not in {entry['edge_types_file']}")
                weight = _edge_values(cols, types, type_ids, ("syn_weight", "weight"), where, "syn_weight")
                nsyns = _edge_values(cols, types, type_ids, ("nsyns",), where, None, default=1.0)
                delay = _edge_values(cols, types, type_ids, ("delay",), where, "delay")
                for t in np.unique(type_ids):
                    template = types[int(t)].get("model_template", "static_synapse").strip()
                    if template not in ("static_synapse", "nest:static_synapse", ""):
                        raise ConfigError(f"{where}: edge type {t}: model_template '{template}' is not supported "
                                          f"(static_synapse only)")
                weight = weight * nsyns
                steps = np.rint(delay / dt)
                if np.any(steps < 1):
                    bad = float(delay[steps < 1][0])
                    raise ConfigError(f"{where}: delay {bad:g} ms is under one step of {dt:g} ms")
                src_map, trg_map = ranvier_of[src_pop], ranvier_of[trg_pop]
                try:
                    s_loc = [src_map[x] for x in src.tolist()]
                    t_loc = [trg_map[x] for x in trg.tolist()]
                except KeyError as e:
                    raise ConfigError(f"{where}: node id {e.args[0]} is not in its node population") from None
                s_name = np.array([a for a, _ in s_loc], dtype=object)
                t_name = np.array([a for a, _ in t_loc], dtype=object)
                s_idx = np.array([b for _, b in s_loc], dtype=np.int64)
                t_idx = np.array([b for _, b in t_loc], dtype=np.int64)
                pairs = sorted(set(zip(s_name.tolist(), t_name.tolist())))
                for a, b in pairs:
                    sel = np.flatnonzero((s_name == a) & (t_name == b))
                    if b in info.virtual:
                        continue                     # input into a virtual node does nothing
                    for source in [a, *copies.get(a, [])]:
                        net.connect(Projection(source=source, target=b, sources=s_idx[sel].tolist(),
                                               targets=t_idx[sel].tolist(), weight=weight[sel].tolist(),
                                               delay_ms=(steps[sel] * dt).tolist()))
    return net, info


def net_names(net) -> set:
    return {p.name for p in net.populations}


def _attr_str(v) -> str | None:
    if isinstance(v, bytes):
        return v.decode()
    return None if v is None else str(v)


def _edge_values(cols, types, type_ids, keys, where, required, default=None) -> np.ndarray:
    """An edge attribute: per edge where the group has it, else its type's column."""
    out = np.full(type_ids.size, np.nan)
    for k in keys:
        if k in cols:
            out = np.where(np.isnan(out), cols[k], out)
    for t in np.unique(type_ids):
        mine = (type_ids == t) & np.isnan(out)
        if not mine.any():
            continue
        row = types[int(t)]
        value = next((row[k] for k in keys if row.get(k, "").strip() not in ("", "NULL", "None")), None)
        if value is None:
            if default is None:
                raise ConfigError(f"{where}: edge type {t} has no '{required}' (per edge or in the edge types file)")
            value = default
        out[mine] = float(value)
    return out


def network(config: str | None = None, dt_ms: float | None = None, **unknown):
    """A SONATA network as `ranvier run simulation_config.json` builds it (model "sonata",
    parameters config and dt_ms)."""
    if unknown:
        raise ConfigError(f"model 'sonata': unknown parameter(s) {sorted(unknown)}; it takes 'config' (the SONATA "
                          f"simulation config) and 'dt_ms'")
    if not config:
        raise ConfigError("model 'sonata': give 'config', the path of a SONATA simulation config "
                          "(ranvier run path/to/simulation_config.json)")
    net, info = load(config, dt_ms=dt_ms)
    net.sonata = info
    return net


# -- output ------------------------------------------------------------------------------------
def write_spikes(path, ids: np.ndarray, times_ms: np.ndarray, net, info: SonataInfo) -> dict:
    """A SONATA spike file of the network's non-virtual nodes: /spikes/<SONATA population>/
    {node_ids, timestamps}, sorted by time (then node id). Returns spikes per population."""
    import h5py

    from .recording import SONATA_SORTING

    per_pop: dict = {}
    for p in net.populations:
        if p.name in info.virtual:
            continue
        sonata_pop, node_ids = info.populations[p.name]
        mine = (ids >= p.first_id) & (ids < p.first_id + p.size)
        per_pop.setdefault(sonata_pop, []).append((node_ids[ids[mine] - p.first_id], times_ms[mine]))
    counts = {}
    sorting = h5py.enum_dtype(SONATA_SORTING, basetype="i1")
    with h5py.File(path, "w") as f:
        g = f.create_group("spikes")
        g.attrs["sorting"] = "by_time"
        for name, parts in per_pop.items():
            nid = np.concatenate([a for a, _ in parts]).astype(np.uint64)
            ts = np.concatenate([b for _, b in parts])
            order = np.lexsort((nid, ts))
            grp = g.create_group(name)
            grp.attrs.create("sorting", SONATA_SORTING["by_time"], dtype=sorting)
            grp.create_dataset("node_ids", data=nid[order])
            grp.create_dataset("timestamps", data=ts[order]).attrs["units"] = "ms"
            counts[name] = int(nid.size)
    return counts


def native_info(net) -> SonataInfo:
    """The SONATA names of a network not read from SONATA: each population its own, node ids
    population-local (the layout of Ranvier's spikes.h5)."""
    info = SonataInfo(config="")
    info.populations = {p.name: (p.name, np.arange(p.size)) for p in net.populations}
    return info


def write_report(path, state: dict, net, info: SonataInfo, seed: int) -> None:
    """A SONATA membrane potential report (one compartment per point neuron): per SONATA
    population /report/<population>/data [time, node] (mV, absolute) and mapping/{node_ids,
    element_ids, element_pos, index_pointers, time [start, stop, step]}."""
    import h5py

    ids = np.asarray(state["ids"], dtype=np.int64)
    v = np.asarray(state["V"], dtype=np.float64)          # [neuron, sample], relative to rest
    interval = float(state["interval_ms"])
    groups: dict = {}
    for p in net.populations:
        mine = np.flatnonzero((ids >= p.first_id) & (ids < p.first_id + p.size))
        if not mine.size:
            continue
        local = ids[mine] - p.first_id
        absolute = v[mine]
        if "E_L_mV" in p.params:                              # the engine holds V - E_L
            absolute = absolute + _rest(p, seed)[local][:, None]
        sonata_pop, node_ids = info.populations[p.name]
        groups.setdefault(sonata_pop, []).append((node_ids[local], absolute))
    with h5py.File(path, "w") as f:
        for name, parts in groups.items():
            nid = np.concatenate([a for a, _ in parts])
            data = np.concatenate([b for _, b in parts], axis=0)
            order = np.argsort(nid, kind="stable")
            nid, data = nid[order], data[order]
            g = f.create_group(f"report/{name}")
            ds = g.create_dataset("data", data=data.T.astype(np.float32))
            ds.attrs["units"] = "mV"
            m = g.create_group("mapping")
            m.create_dataset("node_ids", data=nid.astype(np.uint64))
            m.create_dataset("element_ids", data=np.zeros(nid.size, np.uint32))
            m.create_dataset("element_pos", data=np.full(nid.size, 0.5, np.float32))
            m.create_dataset("index_pointers", data=np.arange(nid.size + 1, dtype=np.uint64))
            t = m.create_dataset("time", data=np.array([interval, interval * (data.shape[1] + 1), interval]))
            t.attrs["units"] = "ms"


def _rest(pop, seed: int) -> np.ndarray:
    from .neurons import NEURON_MODELS
    return np.asarray(NEURON_MODELS[pop.model].neuron_values(pop, "E_L_mV", seed), dtype=np.float64)


def compare_spikes(ours: dict, reference: dict, *, tstop_ms: float, window_ms: float = 1.0) -> dict:
    """Agreement of two spike sets (population -> (node ids, times)); the reference may be the
    pre-1.0 layout (key None). Per-neuron rates' correlation, total rates, and the fraction of
    reference spikes with a spike of the same node within window_ms."""
    def merged(d):
        ids = np.concatenate([v[0] for v in d.values()]) if d else np.zeros(0, np.int64)
        ts = np.concatenate([v[1] for v in d.values()]) if d else np.zeros(0)
        return ids.astype(np.int64), ts
    a_ids, a_ts = merged(ours)
    b_ids, b_ts = merged(reference)
    n = int(max(a_ids.max(initial=-1), b_ids.max(initial=-1))) + 1
    ra = np.bincount(a_ids, minlength=n) / (tstop_ms / 1000.0)
    rb = np.bincount(b_ids, minlength=n) / (tstop_ms / 1000.0)
    matched = 0
    for nid in np.unique(b_ids):
        mine = np.sort(a_ts[a_ids == nid])
        theirs = b_ts[b_ids == nid]
        if mine.size == 0:
            continue
        k = np.clip(np.searchsorted(mine, theirs), 1, mine.size) - 1
        k2 = np.clip(k + 1, 0, mine.size - 1)
        d = np.minimum(np.abs(mine[k] - theirs), np.abs(mine[k2] - theirs))
        matched += int(np.count_nonzero(d <= window_ms))
    corr = float(np.corrcoef(ra, rb)[0, 1]) if ra.std() > 0 and rb.std() > 0 else float("nan")
    return {"spikes": int(a_ids.size), "reference_spikes": int(b_ids.size),
            "rate_correlation": corr, "matched_within_window": matched,
            "matched_fraction": matched / b_ids.size if b_ids.size else float("nan"), "window_ms": window_ms,
            "rates_hz": ra, "reference_rates_hz": rb}
