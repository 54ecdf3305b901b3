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
  as BMTK's PointNet), `delay` per edge or per type; the edge type's `model_template`
  static_synapse, "nest:<synapse model>" (stdp_synapse and its nearest-neighbour variants,
  stdp_triplet_synapse, stdp_pl_synapse_hom, vogels_sprekeler_synapse, tsodyks_synapse,
  quantal_stp_synapse, bernoulli_synapse: core.synapses.from_nest) or "nestml:<file>" (a NESTML
  synapse model), with `dynamics_params` (a JSON file in `synaptic_models_dir`: the model's
  parameters by NEST's or the NESTML file's names); a neuron type's tau_minus and
  tau_minus_triplet (NEST's, of the neuron) set its population's STDP traces;
- node sets (a file or inline): attribute filters (population, node_id, node_type_id, any
  node or type column; a list of values means any of them), compound sets (a list of names),
  and BMTK's old plain list of node ids;
- inputs: `input_type` "spikes" (module "h5"/"sonata": the SONATA layout
  /spikes/<population>/{node_ids,timestamps} or the pre-1.0 /spikes/{gids,timestamps}; module
  "csv": columns timestamps, population, node_ids) onto virtual nodes;
- run: tstop, dt; output: spikes_file (written in the SONATA layout, per SONATA population,
  node ids as in the network, sorted by time), when `ranvier run` is given --out.

NEST models mapped (nest: prefix, parameters by NEST's names): iaf_psc_delta -> lifca (NEST's
iaf_psc_delta), and every Ranvier model whose class names its NEST model and maps NEST's
parameter names onto its own (NeuronModel.nest_parameters: iaf_psc_alpha, iaf_psc_exp ->
psc_exp with two time constants, iaf_cond_exp, iaf_cond_alpha, iaf_cond_exp_sfa_rr,
aeif_cond_exp, aeif_cond_alpha, hh_cond_exp_traub, izhikevich, gif_cond_exp). Anything else is
refused by name before anything is built.

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
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ConfigError
from ..core.neurons import NEURON_MODELS, SpikeTrain
from ..core.synapses import from_nest

NEST_DEFAULTS = {   # NEST 3.10's, for the models whose Ranvier parameters are not NEST's
    "iaf_psc_delta": {"E_L": -70.0, "V_th": -55.0, "V_reset": -70.0, "C_m": 250.0, "tau_m": 10.0,
                      "t_ref": 2.0, "I_e": 0.0, "V_m": -70.0},
}
# The NEST models read: iaf_psc_delta (lifca, its parameters relative to rest), and every model
# whose class maps NEST's parameter names onto its own (NeuronModel.nest_parameters).
SUPPORTED_NEST_MODELS = ("iaf_psc_delta", *sorted(m.nest_model for m in NEURON_MODELS.values()
                                                  if m.nest_model and m.nest_parameters))
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


def _object(value, where: str) -> dict:
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a JSON object ({{\"name\": value, ...}}), not {json.dumps(value)}")
    return value


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
    raw = dict(_object(cfg.get("manifest", {}), "SONATA config 'manifest'"))
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
    """A node or edge types CSV (space-separated, quoted fields allowed): type id -> row dict.
    A row with fields missing or extra is refused by line: its values would shift columns."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f, delimiter=" ", skipinitialspace=True)
            rows = [(reader.line_num, row) for row in reader]
            header = reader.fieldnames or []
    except FileNotFoundError:
        raise ConfigError(f"SONATA types file '{path}' does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"SONATA types file '{path}' cannot be read as CSV: {e}") from None
    key = "node_type_id" if "node_type_id" in header else "edge_type_id"
    if key not in header:
        raise ConfigError(f"SONATA types file '{path}': no node_type_id or edge_type_id column (the columns are "
                          f"separated by spaces); its header: {header}")
    out = {}
    for line, row in rows:
        extra = [v for v in row.pop(None, []) if v.strip()]        # fields past the header's
        if extra or None in row.values():
            fields = sum(v is not None for v in row.values()) + len(extra)
            raise ConfigError(f"SONATA types file '{path}', line {line}: {fields} field(s), the header has "
                              f"{len(header)}; give one value per column (NULL where there is none)")
        try:
            type_id = int(row[key])
        except ValueError:
            raise ConfigError(f"SONATA types file '{path}', line {line}: {key} {row[key]!r} is not an "
                              f"integer") from None
        if type_id in out:
            raise ConfigError(f"SONATA types file '{path}', line {line}: {key} {type_id} is there twice; "
                              f"give each type one row")
        out[type_id] = row
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
    file: str = ""                    # the nodes file


def _dataset(g, name: str, where: str, per: str, default=None) -> np.ndarray:
    """A one-dimensional dataset of a nodes or edges population; `default` where it may be left out."""
    import h5py
    d = g.get(name)
    if d is None and default is not None:
        return default
    if not isinstance(d, h5py.Dataset) or d.ndim != 1:
        raise ConfigError(f"{where}: no {name} dataset (one value per {per})")
    return d[:]


def _population_group(g, where: str) -> None:
    import h5py
    if not isinstance(g, h5py.Group):
        raise ConfigError(f"{where}: '{g.name}' is a dataset, not a population's group")


def _same_length(where: str, columns: dict, per: str) -> None:
    if len({c.size for c in columns.values()}) > 1:
        raise ConfigError(f"{where}: its columns differ in length ("
                          + ", ".join(f"{k} {c.size}" for k, c in columns.items()) + f"); each holds one value per {per}")


def _group_columns(g, where: str, prefix: str, group_id: np.ndarray, group_index: np.ndarray,
                   names=None) -> dict:
    """The per-row attributes of a nodes or edges population, from its groups (a row's value is
    /<population>/<its group id>/<column>[its group index]): name -> (values over every row,
    which rows have one). Per-node dynamics_params keep their prefix ('dynamics_params/I_e');
    `names` the columns wanted (None: every one)."""
    import h5py
    n = group_id.size
    out: dict = {}
    for gname, grp in g.items():
        if not gname.isdigit() or not isinstance(grp, h5py.Group):
            continue
        datasets = list(grp.items())
        if isinstance(grp.get("dynamics_params"), h5py.Group):
            datasets += [(f"dynamics_params/{k}", d) for k, d in grp["dynamics_params"].items()]
        mine = np.flatnonzero(group_id == int(gname))
        rows = group_index[mine].astype(np.int64)
        for key, d in datasets:
            if not isinstance(d, h5py.Dataset) or d.ndim != 1 or (names is not None and key not in names):
                continue
            if rows.size and (rows.max() >= d.shape[0] or rows.min() < 0):
                bad = int(rows.max()) if rows.max() >= d.shape[0] else int(rows.min())
                raise ConfigError(f"{where}: {prefix}_group_index {bad} is past the {d.shape[0]} row(s) of group "
                                  f"{gname}'s '{key}'")
            values = d[:]
            numeric = values.dtype.kind in "fiub"
            if not numeric:
                values = values.astype(str)
            full, given = out.setdefault(key, (np.full(n, np.nan) if numeric else np.full(n, "", dtype=object),
                                               np.zeros(n, bool)))
            if numeric != (full.dtype.kind == "f"):
                raise ConfigError(f"{where}: column '{key}' holds numbers in one group and text in another")
            full[mine] = values[rows]
            given[mine] = True
    return out


def _read_nodes(entry: dict) -> list[NodePopulation]:
    """The node populations of one nodes file. Refused: node ids that are not unique, columns
    of different lengths, group indices past their group, per-node dynamics_params that are
    not numbers."""
    types = _read_types(entry["node_types_file"])
    pops = []
    with _h5(entry["nodes_file"]) as f:
        if "nodes" not in f:
            raise ConfigError(f"SONATA nodes file '{entry['nodes_file']}': no /nodes group")
        for name, g in f["nodes"].items():
            where = f"SONATA nodes file '{entry['nodes_file']}', population '{name}'"
            _population_group(g, where)
            type_ids = _dataset(g, "node_type_id", where, "node").astype(np.int64)
            n = type_ids.size
            node_ids = _dataset(g, "node_id", where, "node", np.arange(n)).astype(np.int64)
            group_id = _dataset(g, "node_group_id", where, "node", np.zeros(n, np.int64))
            group_index = _dataset(g, "node_group_index", where, "node", np.arange(n))
            _same_length(where, {"node_type_id": type_ids, "node_id": node_ids, "node_group_id": group_id,
                                 "node_group_index": group_index}, "node")
            unique, counts = np.unique(node_ids, return_counts=True)
            if np.any(counts > 1):
                first = int(np.flatnonzero(counts > 1)[0])
                raise ConfigError(f"{where}: node id {int(unique[first])} appears {int(counts[first])} times "
                                  f"({int(np.count_nonzero(counts > 1))} node id(s) repeated); node ids must be "
                                  f"unique within a population")
            columns, dynamics = {}, {}
            for key, (values, given) in _group_columns(g, where, "node", group_id, group_index).items():
                if not key.startswith("dynamics_params/"):
                    columns[key] = values
                    continue
                key = key[len("dynamics_params/"):]
                bad = given if values.dtype == object else given & np.isnan(values)
                if bad.any():
                    first = int(np.flatnonzero(bad)[0])
                    shown = repr(values[first]) if values.dtype == object else "NaN"
                    raise ConfigError(f"{where}: per-node dynamics_params '{key}' holds {shown} (node id "
                                      f"{int(node_ids[first])}), not a number")
                dynamics[key] = values
            unknown = sorted(set(np.unique(type_ids).tolist()) - set(types))
            if unknown:
                raise ConfigError(f"{where}: node_type_id {unknown[:5]} not in {entry['node_types_file']}")
            order = np.argsort(node_ids, kind="stable")
            pops.append(NodePopulation(name, node_ids[order], type_ids[order], types,
                                       {k: v[order] for k, v in columns.items()},
                                       {k: v[order] for k, v in dynamics.items()}, entry["nodes_file"]))
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


def _set_label(name_or_set) -> str:
    if name_or_set is None:
        return "its node set (none given: every node)"
    return f"node set '{name_or_set}'" if isinstance(name_or_set, str) else f"node set {json.dumps(name_or_set)}"


def _attribute_names(pops: list[NodePopulation]) -> list:
    names = {"population", "node_id", "node_type_id"}
    for p in pops:
        names |= set(p.columns) | {k for row in p.types.values() for k in row}
    return sorted(names)


def select(node_sets: dict, name_or_set, pops: list[NodePopulation], _within: tuple = ()) -> dict:
    """A node set's members: population name -> boolean mask over its nodes (node-id order).
    A population or an attribute that no node has is refused: it would select nothing, and
    every input or report of the set would be lost in silence."""
    label = "SONATA " + _set_label(name_or_set)
    spec = node_sets.get(name_or_set) if isinstance(name_or_set, str) else name_or_set
    if spec is None and name_or_set in {p.name for p in pops}:
        spec = {"population": name_or_set}     # a population's name stands for all its nodes (bmtk's use)
    if spec is None:
        raise ConfigError(f"SONATA node set '{name_or_set}' is not defined; node sets: {sorted(node_sets)}, "
                          f"node populations: {sorted(p.name for p in pops)}")
    if isinstance(name_or_set, str) and name_or_set in _within:
        raise ConfigError(f"{label} names itself ({' -> '.join([*_within, name_or_set])}); a compound node set "
                          f"lists other node sets")
    if isinstance(spec, list):
        if all(isinstance(x, str) for x in spec):            # compound: the union of named sets
            out = {p.name: np.zeros(p.node_ids.size, bool) for p in pops}
            for sub in spec:
                for k, m in select(node_sets, sub, pops, (*_within, name_or_set)).items():
                    out[k] |= m
            return out
        spec = {"node_id": spec}                             # BMTK's plain list of node ids
    if not isinstance(spec, dict):
        raise ConfigError(f"{label}" + (f" is {json.dumps(spec)}" if isinstance(name_or_set, str) else "")
                          + ": give an object of node attributes ({\"population\": ...}), a list of node set names "
                          "or a list of node ids")
    names = sorted(p.name for p in pops)
    if "population" in spec:
        for wanted in spec["population"] if isinstance(spec["population"], list) else [spec["population"]]:
            if str(wanted) not in names:
                raise ConfigError(f"{label}: population '{wanted}' does not exist; node populations: {names}")
    out = {}
    for key, wanted in spec.items():
        if all(_attribute(p, key) is None for p in pops):
            raise ConfigError(f"{label}: no node has attribute '{key}'; node and node type attributes: "
                              f"{_attribute_names(pops)}")
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
    dynamics = _dynamics_name(row)
    if template.startswith(NESTML):
        return template, dynamics
    if not template.startswith("nest:"):
        raise ConfigError(f"{where}: model_template '{template}' is not a NEST model (nest:<name>) or a NESTML "
                          f"file (nestml:<path>); supported: {['nest:' + m for m in SUPPORTED_NEST_MODELS]}")
    nest_name = template[len("nest:"):]
    if nest_name not in SUPPORTED_NEST_MODELS:
        raise ConfigError(f"{where}: model_template '{template}' is not supported; supported: "
                          f"{['nest:' + m for m in SUPPORTED_NEST_MODELS]}")
    return nest_name, dynamics


def _nest_keys(nest_name: str) -> dict | None:
    """NEST parameter name -> Ranvier's, for the models that take NEST's absolute parameters
    (NeuronModel.nest_parameters; None: iaf_psc_delta, whose lifca parameters are relative to rest)."""
    if nest_name == "iaf_psc_delta":
        return None
    return NEURON_MODELS[_ranvier_model(nest_name)].nest_parameters


def _ranvier_model(nest_name: str) -> str:
    """The Ranvier model of a NEST model (NeuronModel.nest_model)."""
    return next(name for name, m in NEURON_MODELS.items()
                if m.nest_model == nest_name and (m.nest_parameters or nest_name == "iaf_psc_delta"))


def _to_ranvier(nest_name: str, nest: dict, where: str) -> tuple[str, dict]:
    """(Ranvier model, its parameters) of a NEST model with parameters by NEST's names."""
    keys = _nest_keys(nest_name)
    if keys is None:                                          # iaf_psc_delta -> lifca, relative to rest
        q = {**NEST_DEFAULTS["iaf_psc_delta"], **nest}
        unknown = sorted(set(nest) - set(NEST_DEFAULTS["iaf_psc_delta"]))
        if unknown:
            raise ConfigError(f"{where}: nest:iaf_psc_delta parameter(s) {unknown} are not supported; "
                              f"supported: {sorted(NEST_DEFAULTS['iaf_psc_delta'])}")
        if q["C_m"] <= 0:                                     # I_e / C_m below
            raise ConfigError(f"{where}: nest:iaf_psc_delta C_m = {q['C_m']:g} pF is not positive")
        return _ranvier_model(nest_name), {"tau_m_ms": q["tau_m"], "theta_mV": q["V_th"] - q["E_L"], "reset_mV": q["V_reset"] - q["E_L"],
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
    return _ranvier_model(nest_name), params


NESTML = "nestml:"       # model_template "nestml:<file>": a NESTML model (docs/nestml.md)


def _nestml_file(template: str, components: dict, folder_key: str, where: str) -> Path:
    """The NESTML file a model_template "nestml:<file>" names: beside the dynamics files
    (components' point_neuron_models_dir or synaptic_models_dir) or as given."""
    name = template[len(NESTML):]
    folder = components.get(folder_key)
    candidates = ([Path(folder) / name] if isinstance(folder, str) else []) + [Path(name)]
    path = next((c for c in candidates if c.is_file()), None)
    if path is None:
        raise ConfigError(f"{where}: model_template '{template}': no such NESTML file (looked for "
                          f"{', '.join(repr(str(c)) for c in candidates)})")
    return path


def _nestml_population(template: str, dynamics: dict, per_node: dict, components: dict, where: str):
    """(model class, parameters) of a node type whose model_template names a NESTML file,
    generated and compiled by ranvier.nestml; parameters by the model's own names. Per-node
    dynamics_params must be one value per type: a generated model's parameters are its
    population's."""
    from .. import nestml
    path = _nestml_file(template, components, "point_neuron_models_dir", where)
    params = dict(dynamics)
    for key, values in per_node.items():
        v = values[~np.isnan(values)]
        if v.size and np.any(v != v[0]):
            raise ConfigError(f"{where}: per-node dynamics_params '{key}' varies within the node type, and a NESTML "
                              f"model's parameters are its population's: give each value its own node type")
        if v.size:
            params[key] = float(v[0])
    return nestml.neuron_model(path), params


def _dynamics_file(components: dict, name: str, where: str, folder_key: str = "point_neuron_models_dir") -> dict:
    folder = components.get(folder_key)
    if folder is not None and not isinstance(folder, str):
        raise ConfigError(f"SONATA config: components.{folder_key} must be a folder's path, not "
                          f"{json.dumps(folder)}")
    candidates = [Path(folder) / name] if folder else []
    for c in candidates:
        if c.is_file():
            params = _read_json(c, "dynamics_params file")
            for key, value in params.items():
                if not _is_number(value):
                    raise ConfigError(f"{where}: dynamics_params file '{c}': {json.dumps({key: value})[1:-1]} is not "
                                      f"a number; give the parameter in NEST's unit (e.g. ms, mV, pF)")
            return params
    raise ConfigError(f"{where}: dynamics_params '{name}' not found"
                      + (f" in {folder_key} '{folder}'" if folder else
                         f"; the circuit config's components name no {folder_key}"))


# -- spike inputs ------------------------------------------------------------------------------
def read_spikes(path: str, module: str = "h5") -> dict:
    """A spike file: population name (None for the pre-1.0 layout, which has none) -> (node
    ids, times in ms). Refused: node ids and times of different lengths, NaN times."""
    import h5py

    if module == "csv" or str(path).endswith((".csv", ".txt")):
        out = _read_csv_spikes(path)
    else:
        with _h5(path) as f:
            if not isinstance(f.get("spikes"), h5py.Group):
                raise ConfigError(f"SONATA spike file '{path}': no /spikes group")
            g = f["spikes"]
            out = {}
            if "gids" in g and "timestamps" in g:                   # pre-1.0: /spikes/{gids,timestamps}
                out[None] = (g["gids"][:], g["timestamps"][:])
            else:
                for name, pop in g.items():
                    if isinstance(pop, h5py.Group) and "node_ids" in pop and "timestamps" in pop:
                        out[name] = (pop["node_ids"][:], pop["timestamps"][:])
    for name, (ids, ts) in out.items():
        where = f"SONATA spike file '{path}'" + (f", population '{name}'" if name is not None else "")
        if ids.shape != ts.shape or ids.ndim != 1:
            raise ConfigError(f"{where}: {ids.size} node_ids but {ts.size} timestamps; each spike needs one of each")
        whole = ids.dtype.kind in "iu" or (ids.dtype.kind == "f" and bool(np.all(np.mod(ids, 1) == 0)))
        if not whole or ts.dtype.kind not in "fiu":
            raise ConfigError(f"{where}: node_ids must be integers and timestamps numbers (ms), not "
                              f"{ids.dtype} and {ts.dtype}")
        nan = np.isnan(ts.astype(np.float64))
        if nan.any():
            raise ConfigError(f"{where}: {int(nan.sum())} spike time(s) are NaN (the first of node id "
                              f"{int(ids[nan][0])}); give every spike a time in ms")
    return {k: (ids.astype(np.int64), ts.astype(np.float64)) for k, (ids, ts) in out.items()}


def _read_csv_spikes(path: str) -> dict:
    """BMTK's CSV spikes: space-separated columns timestamps, population (optional), node_ids."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f, delimiter=" ", skipinitialspace=True)
            missing = [c for c in ("timestamps", "node_ids") if c not in (reader.fieldnames or [])]
            if missing:
                raise ConfigError(f"SONATA spike file '{path}': no '{missing[0]}' column (CSV spikes have the "
                                  f"columns timestamps, population, node_ids, space-separated); its columns: "
                                  f"{reader.fieldnames or []}")
            out: dict = {}
            for r in reader:
                try:
                    node, time = int(r["node_ids"]), float(r["timestamps"])
                except (TypeError, ValueError):
                    raise ConfigError(f"SONATA spike file '{path}', line {reader.line_num}: node_ids "
                                      f"{r['node_ids']!r} and timestamps {r['timestamps']!r} must be an integer and "
                                      f"a number (ms)") from None
                ids, ts = out.setdefault(r.get("population") or None, ([], []))
                ids.append(node)
                ts.append(time)
    except FileNotFoundError:
        raise ConfigError(f"SONATA spike file '{path}' does not exist") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"SONATA spike file '{path}' cannot be read as CSV: {e}") from None
    return {k: (np.asarray(i, np.int64), np.asarray(t, np.float64)) for k, (i, t) in out.items()}


def _on_grid(times: np.ndarray, dt: float) -> np.ndarray:
    """Spike times rounded up to the grid: a spike in (t - h, t] acts at t (NEST's precise spike
    times arriving at a grid-based neuron)."""
    steps = np.ceil(times / dt - 1e-9)
    return steps


def _entries(networks: dict, kind: str, files: tuple) -> list:
    """The enabled entries of networks.nodes or networks.edges, each naming its files."""
    entries = networks.get(kind, [])
    if not isinstance(entries, list):
        raise ConfigError(f"SONATA circuit config: networks.{kind} must be a list of {{{', '.join(files)}}} "
                          f"objects, not {json.dumps(entries)}")
    out = []
    for i, entry in enumerate(entries):
        _object(entry, f"SONATA circuit config: networks.{kind}[{i}]")
        if entry.get("enabled", True) is False:
            continue
        for key in files:
            if not isinstance(entry.get(key), str):
                raise ConfigError(f"SONATA circuit config: networks.{kind}[{i}] has no '{key}' (the path of its "
                                  f"{key.replace('_file', '').replace('_', ' ')} file)")
        out.append(entry)
    return out


def _members(node_sets: dict, node_set, pops: list[NodePopulation]) -> dict:
    """The nodes an input or report names: its node set's, or every node where it names none."""
    if node_set is None:
        return {p.name: np.ones(p.node_ids.size, bool) for p in pops}
    return select(node_sets, node_set, pops)


def _virtual(pop: NodePopulation) -> np.ndarray:
    """Which nodes of the population are virtual (inputs)."""
    kinds = [t for t, row in pop.types.items() if (row.get("model_type") or "").strip() == VIRTUAL]
    return np.isin(pop.type_ids, kinds)


def _id_range(node_ids: np.ndarray) -> str:
    """A population's (unique) node ids in a few words: '0..19', or '12 ids in 3..40'."""
    if not node_ids.size:
        return "none"
    lo, hi = int(node_ids.min()), int(node_ids.max())
    return f"{lo}..{hi}" if hi - lo + 1 == node_ids.size else f"{node_ids.size} ids in {lo}..{hi}"


def _add_trains(where: str, path: str, spikes: dict, members: dict, by_name: dict, trains: dict) -> None:
    """An input's spikes of its node set's nodes, added to trains ((population, node id) ->
    [times]). Refused, not dropped: a file with no spikes of the node set's populations, spikes of
    node ids the population does not have (another circuit's file, or ids shifted by one: a run
    on part of its input would look right and be wrong), spikes of nodes that are not virtual
    (only virtual nodes fire input spikes)."""
    chosen = {k: m for k, m in members.items() if m.any()}
    if None in spikes:          # the pre-1.0 layout names no population: its ids are the node set's
        ids = spikes[None][0]
        outside = ~np.isin(ids, np.concatenate([by_name[k].node_ids for k in chosen]))
        if outside.any():
            raise ConfigError(f"{where}: {int(outside.sum())} spike(s) of node ids that none of the node set's "
                              f"populations {sorted(chosen)} has (e.g. node id {int(ids[outside][0])}): the spike "
                              f"file '{path}' is not this circuit's; give the node ids of its virtual nodes")
        per_pop = {k: spikes[None] for k in chosen}
    else:
        per_pop = {k: spikes[k] for k in chosen if k in spikes}
        if not per_pop:
            raise ConfigError(f"{where}: the spike file '{path}' has no spikes of population "
                              f"{' or '.join(repr(k) for k in sorted(chosen))} (its populations: {sorted(spikes)}); "
                              f"name the populations of the node set in /spikes/<population>")
        for k, (ids, _) in per_pop.items():
            outside = ~np.isin(ids, by_name[k].node_ids)
            if outside.any():
                raise ConfigError(f"{where}: {int(outside.sum())} spike(s) of node ids that population '{k}' does "
                                  f"not have (e.g. node id {int(ids[outside][0])}; its node ids: "
                                  f"{_id_range(by_name[k].node_ids)}): the spike file '{path}' is not this "
                                  f"circuit's; give the node ids of its virtual nodes")
    for k, (ids, ts) in per_pop.items():
        pop = by_name[k]
        take = np.isin(ids, pop.node_ids[chosen[k]])
        lost = take & ~np.isin(ids, pop.node_ids[_virtual(pop)])
        if lost.any():
            raise ConfigError(f"{where}: {int(lost.sum())} spike(s) for nodes of population '{k}' that are not "
                              f"virtual (e.g. node id {int(ids[lost][0])}): spike inputs drive virtual nodes only; "
                              f"leave the other nodes out of its node_set")
        ids, ts = ids[take], ts[take]
        order = np.argsort(ids, kind="stable")
        ids, ts = ids[order], ts[order]
        bounds = np.flatnonzero(np.diff(ids)) + 1
        for chunk_ids, chunk_ts in zip(np.split(ids, bounds), np.split(ts, bounds)):
            if chunk_ids.size:
                trains.setdefault((k, int(chunk_ids[0])), []).append(chunk_ts)


# -- the network -------------------------------------------------------------------------------
def load(config_path, *, dt_ms: float | None = None):
    """(network, SonataInfo) of a SONATA simulation config; dt_ms replaces the config's dt."""
    from ..core.network import Network

    cfg = read_config(config_path)
    run = cfg.get("run", {})
    if "tstop" not in run:
        raise ConfigError(f"SONATA config '{config_path}': 'run' has no 'tstop'")
    dt = _positive_ms(dt_ms, "SONATA load", "dt_ms", "dt_ms=0.1") if dt_ms is not None else float(run.get("dt", 0.1))
    info = SonataInfo(config=str(Path(config_path).resolve()), tstop_ms=float(run["tstop"]), dt_ms=dt,
                      spikes_file=Path(_object(cfg.get("output", {}), "SONATA config 'output'")
                                       .get("spikes_file", "spikes.h5")).name)
    components = _object(cfg.get("components", {}), "SONATA config 'components'")
    networks = _object(cfg["networks"], "SONATA config 'networks'")
    pops: list[NodePopulation] = []
    for entry in _entries(networks, "nodes", ("nodes_file", "node_types_file")):
        pops.extend(_read_nodes(entry))
    if not pops:
        raise ConfigError(f"SONATA config '{config_path}': no node populations")
    by_name: dict = {}
    for p in pops:
        if p.name in by_name:           # node ids, edges and inputs could not tell them apart
            raise ConfigError(f"SONATA nodes population '{p.name}' is read twice: from '{by_name[p.name].file}' and "
                              f"from '{p.file}'; a population lives in one nodes file (list each file once)")
        by_name[p.name] = p
    node_sets = _object(cfg.get("node_sets", {}), "SONATA config 'node_sets'")
    if isinstance(cfg.get("node_sets_file"), str):
        node_sets = {**_read_json(Path(cfg["node_sets_file"]), "node sets file"), **node_sets}

    trains, clamps = _input_trains(cfg, node_sets, pops, by_name)
    net = Network(name=Path(config_path).stem, parameters={"config": info.config})
    ranvier_of, copies = _add_node_populations(net, pops, trains, components, info)
    _add_reports(net, cfg, node_sets, pops, by_name, info)
    _add_current_clamps(net, clamps, by_name, info)
    _add_edges(net, networks, ranvier_of, by_name, copies, components, info)
    return net, info


def _input_trains(cfg, node_sets, pops, by_name):
    """The spike trains of virtual nodes from the config's spike inputs, {(population, node id):
    [times]}, and its current clamps [(where, input, members)], built once the populations are."""
    trains: dict = {}                                        # (population, node id) -> times
    clamps: list = []                                        # (where, input, members): after the populations
    for name, inp in _object(cfg.get("inputs", {}), "SONATA config 'inputs'").items():
        where = f"SONATA input '{name}'"
        _object(inp, where)
        if inp.get("enabled", True) is False:
            continue
        kind = inp.get("input_type")
        if kind not in ("spikes", "current_clamp"):
            raise ConfigError(f"{where}: input_type '{kind}' is not supported yet (Ranvier reads 'spikes' and "
                              f"'current_clamp' inputs)")
        members = _members(node_sets, inp.get("node_set"), pops)
        if not any(m.any() for m in members.values()):
            raise ConfigError(f"{where}: {_set_label(inp.get('node_set'))} selects no node, so the input would "
                              f"drive nothing")
        if kind == "current_clamp":
            clamps.append((where, inp, members))
            continue
        if not isinstance(inp.get("input_file"), str):
            raise ConfigError(f"{where}: no 'input_file' (the spike file, SONATA layout or CSV)")
        _add_trains(where, inp["input_file"], read_spikes(inp["input_file"], inp.get("module", "h5")), members,
                    by_name, trains)

    return trains, clamps


def _add_node_populations(net, pops, trains, components, info):
    """One Ranvier population per (node population, node type), virtual ones as spike trains
    (with copies where a node fires twice in a step). Returns {node population: {node id:
    (Ranvier population, local index)}} and {virtual population: its copies}."""
    from ..core.network import Population

    dt = info.dt_ms
    ranvier_of: dict = {}                                   # sonata population -> (node id -> (ranvier pop, local))
    dropped_early = dropped_late = doubled = 0
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
                    dropped_late += int(np.count_nonzero(steps > stop_steps))
                    steps = np.sort(steps[(steps >= 1) & (steps <= stop_steps)])
                    occurrence = np.arange(steps.size) - np.searchsorted(steps, steps)   # 0 for a step's first spike
                    for k in range(int(occurrence.max(initial=-1)) + 1):
                        if k == len(layers):
                            layers.append([[] for _ in range(mine.size)])
                        layers[k][x] = (steps[occurrence == k] * dt).tolist()
                    doubled += int(np.count_nonzero(occurrence > 0))
                layers = layers or [[[] for _ in range(mine.size)]]
                pop = Population(rname, int(mine.size), params={"spike_times_ms": layers[0]}, model=SpikeTrain.name,
                                 excitatory=excitatory)
                info.virtual.add(rname)
                for k, layer in enumerate(layers[1:], start=2):
                    copy = Population(f"{rname}#{k}", int(mine.size), params={"spike_times_ms": layer},
                                      model=SpikeTrain.name, excitatory=excitatory)
                    extra.append(copy)
                    info.virtual.add(copy.name)
                    info.populations[copy.name] = (p.name, p.node_ids[mine].copy())
                    copies.setdefault(rname, []).append(copy.name)
            elif model.startswith(NESTML):
                dynamics = dict(_dynamics_file(components, dyn_name, where)) if dyn_name else {}
                per_node = {k: values[mine].astype(np.float64) for k, values in p.dynamics.items()}
                cls, params = _nestml_population(model, dynamics, per_node, components, where)
                pop = Population(rname, int(mine.size), params=params, model=cls, excitatory=excitatory)
            else:
                nest = dict(_dynamics_file(components, dyn_name, where)) if dyn_name else {}
                # NEST keeps the post-synaptic STDP traces' time constants on the neuron
                traces = {f"{k}_ms": float(nest.pop(k)) for k in ("tau_minus", "tau_minus_triplet") if k in nest}
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
                    default = params.get(rkey, NEURON_MODELS[rmodel].parameters[rkey].default)
                    values = np.where(np.isnan(v), default, v)
                    # one value for every node of the type: the population's (models whose
                    # parameter cannot vary per neuron take it so)
                    params[rkey] = float(values[0]) if values.size and np.all(values == values[0]) else values
                pop = Population(rname, int(mine.size), params=params, model=rmodel, excitatory=excitatory,
                                 initial=initial, **traces)
            for q in [pop, *extra]:
                net.add_population(q)
            info.populations[rname] = (p.name, p.node_ids[mine].copy())
            for local, nid in enumerate(p.node_ids[mine].tolist()):
                lookup[nid] = (rname, local)
        ranvier_of[p.name] = lookup
    if dropped_early:
        info.notes.append(f"{dropped_early} input spike(s) at or before 0 ms dropped (a neuron fires after the start)")
    if dropped_late:
        info.notes.append(f"{dropped_late} input spike(s) after tstop ({info.tstop_ms:g} ms) dropped (a longer "
                          f"--duration-ms does not fire them)")
    if doubled:
        info.notes.append(f"{doubled} input spike(s) fell in the same {dt:g} ms step as another spike of the same "
                          f"node: they fire from a copy of its population (same edges), none is lost")

    return ranvier_of, copies


def _add_reports(net, cfg, node_sets, pops, by_name, info) -> None:
    """Reports: the membrane potential of a node set's neurons (others are refused by name)."""
    dt = info.dt_ms
    for name, rep in _object(cfg.get("reports", {}), "SONATA config 'reports'").items():
        where = f"SONATA report '{name}'"
        if _object(rep, where).get("enabled", True) is False:
            continue
        variable = rep.get("variable_name", "V_m")
        if variable not in ("V_m", "v"):
            raise ConfigError(f"{where}: variable_name '{variable}' is not supported (V_m only)")
        members = _members(node_sets, rep.get("cells"), pops)
        gids = []
        for pop_name, mask in members.items():
            chosen = set(by_name[pop_name].node_ids[mask].tolist())
            for rname, (sonata_pop, node_ids) in info.populations.items():
                if sonata_pop != pop_name or rname in info.virtual:
                    continue
                first = net.population(rname).first_id
                gids += [first + k for k, nid in enumerate(node_ids.tolist()) if nid in chosen]
        interval = _positive_ms(rep.get("dt", dt), where, "dt", '"dt": 0.1 (the sampling interval)')
        if not isinstance(rep.get("file_name", ""), str):
            raise ConfigError(f"{where}: file_name must be a file name, not {json.dumps(rep['file_name'])}")
        file_name = Path(rep.get("file_name", f"{name}.h5")).name
        if not gids:       # a report asked for and never written
            raise ConfigError(f"{where}: its cells ({_set_label(rep.get('cells'))}) select no neuron (virtual "
                              f"nodes have no membrane potential)")
        info.reports.append((name, sorted(gids), interval, file_name))



def _add_current_clamps(net, clamps, by_name, info) -> None:
    """Current clamps (IClamp): amp (pA) from delay for duration (ms), on the node set's neurons."""
    for where, inp, members in clamps:
        try:
            amp, delay, duration = float(inp["amp"]), float(inp["delay"]), float(inp["duration"])
        except KeyError as e:
            raise ConfigError(f"{where}: a current clamp needs 'amp' (pA), 'delay' and 'duration' (ms); "
                              f"'{e.args[0]}' is missing") from None
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: 'amp', 'delay' and 'duration' must be numbers (one clamp per input)") from None
        from ..core.devices import StepCurrent
        clamped = 0
        for pop_name, mask in members.items():
            chosen = set(by_name[pop_name].node_ids[mask].tolist())
            for rname, (sonata_pop, node_ids) in info.populations.items():
                if sonata_pop != pop_name or rname in info.virtual:
                    continue
                local = [k for k, nid in enumerate(node_ids.tolist()) if nid in chosen]
                if local:
                    net.inject(StepCurrent(rname, [delay, delay + duration], [amp, 0.0], neurons=local))
                    clamped += len(local)
        if not clamped:
            raise ConfigError(f"{where}: {_set_label(inp.get('node_set'))} selects no neuron to clamp (virtual "
                              f"nodes take no current)")



def _dynamics_name(row: dict) -> str | None:
    """A node or edge type's dynamics_params file name; None where it names none (NULL: the
    model's defaults)."""
    name = row.get("dynamics_params", "").strip()
    return name if name not in ("", "NULL", "None") else None


def _edge_synapse(row: dict, components: dict, where: str):
    """The synapse kind of an edge type (None: static) from its model_template (static_synapse,
    nest:<synapse model> or nestml:<file>) and dynamics_params (a JSON file in the components'
    synaptic_models_dir: the model's parameters by its own names)."""
    template = row.get("model_template", "").strip() or "static_synapse"
    dyn_name = _dynamics_name(row)
    params = dict(_dynamics_file(components, dyn_name, where, "synaptic_models_dir")) if dyn_name else {}
    if "receptor_type" in params:
        raise ConfigError(f"{where}: dynamics_params '{dyn_name}': receptor_type (a receptor port of a "
                          f"multisynapse target) is not supported; the edge's sign selects excitation or inhibition")
    if template.startswith(NESTML):
        from .. import nestml
        kind = nestml.synapse_model(_nestml_file(template, components, "synaptic_models_dir", where))
        try:
            synapse = kind(**params)
        except ConfigError as e:                  # an unknown parameter: say which edge type
            raise ConfigError(f"{where}: dynamics_params '{dyn_name}': {e}") from None
        synapse.validate(where)
        return synapse
    model = template[len("nest:"):] if template.startswith("nest:") else template
    return from_nest(model, params, f"{where}: model_template '{template}'")


def _add_edges(net, networks, ranvier_of, by_name, copies, components, info) -> None:
    """Edges: one projection per (Ranvier source population, Ranvier target population) and,
    for plastic synapses, per edge type (each type is one synapse kind with its parameters)."""
    from ..core.network import Projection

    dt = info.dt_ms
    onto_virtual = 0
    for entry in _entries(networks, "edges", ("edges_file", "edge_types_file")):
        types = _read_types(entry["edge_types_file"])
        with _h5(entry["edges_file"]) as f:
            if "edges" not in f:
                raise ConfigError(f"SONATA edges file '{entry['edges_file']}': no /edges group")
            for ename, g in f["edges"].items():
                where = f"SONATA edges file '{entry['edges_file']}', population '{ename}'"
                _population_group(g, where)
                src = _dataset(g, "source_node_id", where, "edge").astype(np.int64)
                trg = _dataset(g, "target_node_id", where, "edge").astype(np.int64)
                src_pop = _attr_str(g["source_node_id"].attrs.get("node_population"))
                trg_pop = _attr_str(g["target_node_id"].attrs.get("node_population"))
                for side, name in (("source", src_pop), ("target", trg_pop)):
                    if name is None:
                        raise ConfigError(f"{where}: {side}_node_id has no 'node_population' attribute (the node "
                                          f"population its ids are of; node populations: {sorted(ranvier_of)})")
                    if name not in ranvier_of:
                        raise ConfigError(f"{where}: {side} node population '{name}' is not among the nodes "
                                          f"({sorted(ranvier_of)})")
                type_ids = _dataset(g, "edge_type_id", where, "edge").astype(np.int64)
                m = src.size
                group_id = _dataset(g, "edge_group_id", where, "edge", np.zeros(m, np.int64))
                group_index = _dataset(g, "edge_group_index", where, "edge", np.arange(m))
                _same_length(where, {"source_node_id": src, "target_node_id": trg, "edge_type_id": type_ids,
                                     "edge_group_id": group_id, "edge_group_index": group_index}, "edge")
                cols = {}
                for col, (values, given) in _group_columns(g, where, "edge", group_id, group_index,
                                                           ("syn_weight", "delay", "nsyns", "weight")).items():
                    # NaN is no edge's value: refused, not taken as absent (the edge type's would stand in)
                    bad = given if values.dtype == object else given & ~np.isfinite(values)
                    if bad.any():
                        first = int(np.flatnonzero(bad)[0])
                        shown = f"{values[first]!r}, not a number" if values.dtype == object else \
                            ("NaN" if np.isnan(values[first]) else f"{values[first]:g}")
                        raise ConfigError(f"{where}: {col} of edge {first} is {shown} (group {int(group_id[first])}); "
                                          f"give every edge of the group a finite number")
                    cols[col] = values
                unknown = sorted(set(np.unique(type_ids).tolist()) - set(types))
                if unknown:
                    raise ConfigError(f"{where}: edge_type_id {unknown[:5]} not in {entry['edge_types_file']}")
                type_file = entry["edge_types_file"]
                weight = _edge_values(cols, types, type_ids, ("syn_weight", "weight"), where, type_file, "syn_weight")
                nsyns = _edge_values(cols, types, type_ids, ("nsyns",), where, type_file, None, default=1.0)
                delay = _edge_values(cols, types, type_ids, ("delay",), where, type_file, "delay")
                synapses = {int(t): _edge_synapse(types[int(t)], components, f"{where}: edge type {t}")
                            for t in np.unique(type_ids)}
                # static edges of every type share one projection (0); plastic ones are their type's
                plastic_types = [t for t, synapse in synapses.items() if synapse is not None]
                kind_of = np.where(np.isin(type_ids, plastic_types), type_ids + 1, 0)
                weight = weight * nsyns
                steps = np.rint(delay / dt)
                if np.any(steps < 1):
                    bad = float(delay[steps < 1][0])
                    raise ConfigError(f"{where}: delay {bad:g} ms is under one step of {dt:g} ms")
                src_map, trg_map = ranvier_of[src_pop], ranvier_of[trg_pop]
                for side, ids, pop_name in (("source", src, src_pop), ("target", trg, trg_pop)):
                    outside = ~np.isin(ids, by_name[pop_name].node_ids)
                    if outside.any():
                        raise ConfigError(f"{where}: {int(outside.sum())} edge(s) with a {side} node id that "
                                          f"population '{pop_name}' does not have (e.g. {int(ids[outside][0])}; its "
                                          f"node ids: {_id_range(by_name[pop_name].node_ids)})")
                s_loc = [src_map[x] for x in src.tolist()]
                t_loc = [trg_map[x] for x in trg.tolist()]
                s_name = np.array([a for a, _ in s_loc], dtype=object)
                t_name = np.array([a for a, _ in t_loc], dtype=object)
                s_idx = np.array([b for _, b in s_loc], dtype=np.int64)
                t_idx = np.array([b for _, b in t_loc], dtype=np.int64)
                groups = sorted(set(zip(s_name.tolist(), t_name.tolist(), kind_of.tolist())))
                for a, b, k in groups:
                    sel = np.flatnonzero((s_name == a) & (t_name == b) & (kind_of == k))
                    if b in info.virtual:            # input into a virtual node does nothing
                        onto_virtual += int(sel.size)
                        continue
                    synapse = None if k == 0 else synapses[k - 1]
                    for source in [a, *copies.get(a, [])]:
                        net.connect(Projection(source=source, target=b, sources=s_idx[sel].tolist(),
                                               targets=t_idx[sel].tolist(), weight=weight[sel].tolist(),
                                               delay_ms=(steps[sel] * dt).tolist(), synapse=synapse))
    if onto_virtual:
        info.notes.append(f"{onto_virtual} edge(s) onto virtual nodes dropped (a virtual node only fires its input "
                          f"spikes)")


def net_names(net) -> set:
    return {p.name for p in net.populations}


def _attr_str(v) -> str | None:
    if isinstance(v, bytes):
        return v.decode()
    return None if v is None else str(v)


def _edge_values(cols, types, type_ids, keys, where, type_file, required, default=None) -> np.ndarray:
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
        key = next((k for k in keys if row.get(k, "").strip() not in ("", "NULL", "None")), None)
        if key is None:
            if default is None:
                raise ConfigError(f"{where}: edge type {t} has no '{required}' (per edge or in the edge types file)")
            out[mine] = default
            continue
        try:
            value = float(row[key])
        except ValueError:
            raise ConfigError(f"{where}: edge type {t}: {key} {row[key]!r} in '{type_file}' is not a number") from None
        if not math.isfinite(value):
            raise ConfigError(f"{where}: edge type {t}: {key} is {'NaN' if math.isnan(value) else value} in "
                              f"'{type_file}'; give a finite number (or NULL and the value per edge)")
        out[mine] = value
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

    from ..core.recording import SONATA_SORTING

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
