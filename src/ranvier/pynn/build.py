"""The pyNN.ranvier session's description as one Ranvier network: populations with their
native parameters and initial values, projections as explicit synapses, current sources.
Rank 0's description is the one built, on every rank (PyNN's unseeded RNGs differ by rank)."""
from __future__ import annotations

import numpy as np
from pyNN import errors

from ranvier.core.neurons import NEURON_MODELS, SpikeTrain


def _native_values(pop) -> dict:
    out = {}
    for name, value in pop._parameters.items():
        if hasattr(value, "evaluate"):
            value = value.evaluate(simplify=True)
        if isinstance(value, np.ndarray) and value.dtype != object:
            value = value.astype(float)
            if value.size and np.all(value == value.flat[0]):
                value = float(value.flat[0])
        out[name] = value
    return out


def spike_trains(value, size) -> list:
    """A SpikeSourceArray's native spike_times_ms as one float array per cell."""
    cells = list(value) if isinstance(value, np.ndarray) and value.dtype == object else [value] * size
    return [np.asarray(getattr(seq, "value", seq), dtype=float).ravel() for seq in cells]


def _spike_times(value, size, dt, given=None, first=0):
    """Per cell: its times rounded up to the grid, > 0, each step once (Ranvier's spike_train);
    `given` (gid -> step -> the time given) learns the times the steps stand for."""
    trains = []
    for k, t in enumerate(spike_trains(value, size)):
        steps = np.ceil(t / dt - 1e-9)
        if given is not None:
            given.setdefault(first + k, {}).update({int(s): float(x) for s, x in zip(steps, t) if s >= 1})
        steps = np.unique(steps)
        trains.append((steps[steps >= 1] * dt).tolist())
    return trains


def ranvier_params(state, p) -> dict:
    """A PyNN population's native parameters as its Ranvier population takes them."""
    native = _native_values(p)
    if p.celltype.ranvier_model == SpikeTrain.name:
        return {"spike_times_ms": _spike_times(native["spike_times_ms"], p.size, state.dt, state.given_times,
                                               int(p.first_id))}
    if getattr(p.celltype, "native", False):     # native_cell_type: the model's own parameters
        if "V_m" in p._initial:                  # initialize(V_m=...) replaces the drawn start
            defaults = p.celltype.default_parameters
            native = {k: v for k, v in native.items()
                      if not (k in ("V0_mean_mV", "V0_sd_mV") and np.all(np.asarray(v) == defaults[k]))}
        return _refractory_on_grid(native, state.dt)
    # Parameters a cell type fixes (IF_facets_hardware1's capacitance, as pyNN.nest's extra_parameters).
    native = {**getattr(p.celltype, "extra_parameters", {}), **native}
    # Native potentials are absolute, as PyNN's (IF_curr_delta's lifca takes its relative to rest).
    params = NEURON_MODELS[p.celltype.ranvier_model].from_absolute(_array_parameters(p, native))
    # State variables the model takes as parameters (HH_cond_exp's gates, Izhikevich's u): PyNN's
    # initial values, per cell where the model's parameter varies per neuron.
    model = NEURON_MODELS[p.celltype.ranvier_model]
    for variable, name in getattr(p.celltype, "initial_parameters", {}).items():
        values = p._initial.get(variable)
        default = float(p.celltype.default_initial_values[variable])
        values = np.full(p.size, default) if values is None else np.where(np.isnan(values), default, values)
        if np.any(values != values[0]) and model.parameters[name].per_neuron:
            params[name] = np.asarray(values, dtype=float)
            continue
        if np.any(values != values[0]):
            raise errors.InvalidParameterValueError(
                f"{type(p.celltype).__name__}: initial '{variable}' must be the same for every cell of a population "
                f"(Ranvier's {p.celltype.ranvier_model} takes one '{name}'); got {values.min():g} to "
                f"{values.max():g}: initialize each population with one value")
        params[name] = float(values[0])
    return _refractory_on_grid(params, state.dt)


def _array_parameters(p, native: dict) -> dict:
    """PyNN's ArrayParameter values (GIF_cond_exp's time constants), one per cell, as the one list
    the Ranvier population takes; refused where cells differ."""
    from pyNN import errors
    from pyNN.parameters import ArrayParameter
    out = dict(native)
    for key, value in native.items():
        cells = [value] if isinstance(value, ArrayParameter) else None
        if cells is None:
            arr = np.asarray(value, dtype=object) if isinstance(value, np.ndarray) else None
            if arr is None or arr.size == 0 or not isinstance(arr.flat[0], ArrayParameter):
                continue
            cells = list(arr.flat)
        first = np.asarray(cells[0].value, dtype=float)
        if any(not np.array_equal(np.asarray(c.value, dtype=float), first) for c in cells[1:]):
            raise errors.InvalidParameterValueError(
                f"{type(p.celltype).__name__} of population '{p.label}': '{key}' must be the same list for every cell "
                f"(Ranvier's {p.celltype.ranvier_model} takes one per population); give one population per list")
        out[key] = first.tolist()
    return out


def _refractory_on_grid(params: dict, dt: float) -> dict:
    """Refractory periods to the nearest step (NEST's rounding)."""
    if "tau_arp_ms" in params:
        params["tau_arp_ms"] = np.round(np.asarray(params["tau_arp_ms"], dtype=float) / dt) * dt
        if params["tau_arp_ms"].ndim == 0:
            params["tau_arp_ms"] = float(params["tau_arp_ms"])
    return params


def _initial_w(pop, params: dict) -> None:
    """PyNN's initial w (nA; the EIF cell types) as the model's w0_pA, per cell where given."""
    values = pop._initial.get("w")
    if values is None or "w0_pA" not in NEURON_MODELS[pop.celltype.ranvier_model].parameters:
        return
    default = float(pop.celltype.default_initial_values["w"])
    w = np.where(np.isnan(np.asarray(values, dtype=float)), default, np.asarray(values, dtype=float)) * 1000.0
    params["w0_pA"] = float(w[0]) if np.all(w == w[0]) else w          # nA -> pA


def _check_initial_state(pop) -> None:
    """Refuses an initial value of a variable other than v, w and the cell type's
    initial_parameters (gsyn_exc, gsyn_inh) that differs from the cell type's default: the engine
    starts those at 0, PyNN's defaults."""
    from pyNN import errors
    model = NEURON_MODELS[pop.celltype.ranvier_model]
    if getattr(pop.celltype, "native", False):
        for variable, values in pop._initial.items():
            if variable != "V_m" and np.any(np.asarray(values, dtype=float) != 0.0):
                raise errors.InvalidParameterValueError(
                    f"pyNN.ranvier: native cell type {pop.celltype.ranvier_model} of population '{pop.label}' starts "
                    f"'{variable}' as the model does; only V_m can be initialized")
        return
    for variable, values in pop._initial.items():
        default = pop.celltype.default_initial_values.get(variable)
        if variable == "v" or default is None or (variable == "w" and "w0_pA" in model.parameters) or \
                variable in getattr(pop.celltype, "initial_parameters", {}):
            continue
        given = np.asarray(values, dtype=float)
        bad = ~np.isnan(given) & (given != float(default))
        if bad.any():
            raise errors.InvalidParameterValueError(
                f"pyNN.ranvier: {type(pop.celltype).__name__} of population '{pop.label}' starts '{variable}' at "
                f"{float(default):g} (the engine's initial state); initialize({variable}=...) to "
                f"{float(given[bad][0]):g} is not available (only v, and w of the EIF cell types, are set per "
                f"cell)")


def describe(state) -> dict:
    """A plain description (numbers, lists and arrays) of the session's network."""
    pops = []
    for p in state.populations:
        model = p.celltype.ranvier_model
        params = ranvier_params(state, p)
        membrane = NEURON_MODELS[model].has_potential
        nestml = getattr(p.celltype, "nestml_model", None) is not None
        if nestml:
            _check_nestml_initial(p)
            membrane = False
        else:
            _check_initial_state(p)
            _initial_w(p, params)
        if getattr(p.celltype, "native", False):   # V_m as the model takes it, or the model's own start
            initial = p._initial.get("V_m")
            membrane = False
        elif nestml:                               # its potential as initialize() gave it, or its own start
            initial = _nestml_initial_potential(p)
        else:
            initial = p._initial.get("v") if membrane else None
        if initial is None and membrane:
            initial = np.full(p.size, float(p.celltype.default_initial_values["v"]))
        if membrane:                                  # PyNN's v is absolute; as the model takes it
            initial = NEURON_MODELS[model].initial_from_absolute(initial, _native_values(p), p.size)
        pops.append({"label": p.label, "size": p.size, "model": model, "params": params,
                     "initial": None if initial is None else np.asarray(initial, float),
                     "excitatory": True, "receptors": _receptor_numbers(p.celltype)})
    projs = []
    for j, pr in enumerate(state.projections):
        if pr.native is not None:
            projs.append({"pynn": j, "native": dict(pr.native), "plastic": None,
                          "pre": state.populations.index(pr.pre), "post": state.populations.index(pr.post),
                          "receptor": pr.receptor_type})
            continue
        pre = np.array([c.presynaptic_index for c in pr.connections], dtype=np.int64)
        post = np.array([c.postsynaptic_index for c in pr.connections], dtype=np.int64)
        w = np.array([c.weight for c in pr.connections], dtype=float)
        d = np.array([c.delay for c in pr.connections], dtype=float)
        pre_pop, pre_index = _roots(state, pr.pre, pre)
        post_pop, post_index = _roots(state, pr.post, post)
        pairs = sorted(set(zip(pre_pop.tolist(), post_pop.tolist())))
        plastic = _plastic(state, pops, pr, post_pop, post_index, len(pairs))
        # one description per (pre, post) population pair: an Assembly spans several
        for a, b in pairs:
            at = np.flatnonzero((pre_pop == a) & (post_pop == b))
            projs.append({"pynn": j, "plastic": plastic, "pre": a, "post": b,
                          "pre_index": pre_index[at], "post_index": post_index[at],
                          "weight": w[at], "delay": d[at], "receptor": pr.receptor_type})
    return {"populations": pops, "projections": projs}


def _receptor_numbers(celltype) -> dict | None:
    """A cell type's receptors by name -> their number 1..R (rv.Projection's receptor): a
    PointNeuron's, a NESTML cell type's spike ports where it has several; None for the cell types
    whose receptor types are 'excitatory' and 'inhibitory' (the weight's sign chooses)."""
    return getattr(celltype, "receptor_numbers", None)


def _receptor_weights(pr: dict, post: dict, weight, scale: float):
    """(weight in the model's unit, receptor or None): PyNN's |w| with the sign of its receptor
    type for the cell types of two receptor types; a PointNeuron's weight as given (its sign its
    own: current-based inhibitory receptors take negative weights) and its receptor's number."""
    if post["receptors"] is not None:
        return np.asarray(weight, dtype=float) * scale, post["receptors"][pr["receptor"]]
    w = np.abs(weight) * scale
    return (-w if pr["receptor"] == "inhibitory" else w), None


def _nestml_starts(p, s, shape):
    """Where the state variable `s` of a NESTML cell type starts in each cell (its state block's
    number, or the parameter it names: V_m = E_L), or None for an expression."""
    native = _native_values(p)
    if s.initial in native:
        return np.broadcast_to(np.asarray(native[s.initial], dtype=float), shape)
    try:
        return np.full(shape, float(s.initial))
    except ValueError:
        return None


def _nestml_initial_potential(p):
    """The first state variable's (the potential's) start per cell where initialize() sets it
    elsewhere than the model's own start for some cell, else None (the model's start)."""
    s = p.celltype.nestml_model.generated.state[0]
    given = p._initial.get(s.name)
    if given is None:
        return None
    given = np.broadcast_to(np.asarray(given, dtype=float), (p.size,))
    starts = _nestml_starts(p, s, given.shape)
    if starts is None:
        if np.isnan(given).any():
            raise NotImplementedError(
                f"pyNN.ranvier: NESTML model {p.celltype.nestml_model.name} starts {s.name} from an expression "
                f"({s.initial}); initialize({s.name}=...) every cell of population '{p.label}' or none")
        return given.copy()
    if not (~np.isnan(given) & (given != starts)).any():
        return None
    return np.where(np.isnan(given), starts, given)


def _check_nestml_initial(p) -> None:
    """A NESTML model starts from its state block's initial values (V_m = E_L) but for its first
    state variable (its potential: _nestml_initial_potential): PyNN's initial values of the
    others (initialize(), or the cell type's defaults) must be those, or the run would not be the
    script's; refused otherwise, naming the variable and the value to give."""
    model = p.celltype.nestml_model
    for s in model.generated.state[1:]:
        given = p._initial.get(s.name)
        if given is None:
            continue
        given = np.asarray(given, dtype=float)
        starts = _nestml_starts(p, s, given.shape)
        if starts is None:
            continue                                   # an expression: the model's own value
        differ = np.flatnonzero(~np.isnan(given) & (given != starts))
        if differ.size:
            k = int(differ[0])
            raise NotImplementedError(
                f"pyNN.ranvier: NESTML model {model.name} starts {s.name} from its state block's initial value "
                f"({s.initial} = {starts[k]:g} for cell {k}), not from PyNN's {given[k]:g}; initialize({s.name}=...) "
                f"to that value (pyNN.ranvier cannot start it elsewhere yet)")


def _plastic(state, pops, pr, post_pop, post_index, pairs: int) -> dict | None:
    """A projection's plasticity for the engine: None for static synapses; the STDP parameters
    (one set per projection), the Tsodyks-Markram ones or the stochastic synapses' p per
    connection."""
    kind = type(pr.synapse_type).__name__
    if kind == "StaticSynapse" or not pairs:          # no connection: nothing to build
        return None
    if pairs > 1:
        raise NotImplementedError(f"pyNN.ranvier: a {kind} projection between Assemblies of several "
                                       f"populations; connect their populations one by one")
    if kind == "TsodyksMarkramSynapse":
        return _tsodyks(state, pops, pr, state.populations[post_pop[0]], post_index)
    if kind == "SimpleStochasticSynapse":
        return {"kind": "bernoulli", "p_transmit": np.array([c.p_transmit for c in pr.connections], dtype=float)}
    if kind == "MultiQuantalSynapse":
        # a0 = 1 and u0 = 0.5 unless Projection.initialize set them: NEST's a and u, which pyNN.nest
        # leaves unset
        defaults = {"a0": 1.0, "u0": 0.5}
        out = {name: np.array([getattr(c, name, defaults.get(name)) for c in pr.connections], dtype=float)
               for name in ("U", "n", "tau_rec_ms", "tau_fac_ms", "a0", "u0")}
        return {**out, "kind": "quantal"}

    def one(name):
        values = np.array([getattr(c, name) for c in pr.connections], dtype=float)
        if values.size and np.any(values != values[0]):
            raise NotImplementedError(f"pyNN.ranvier: STDP parameter {name} differs between the connections "
                                      f"of one projection; Ranvier's are the projection's")
        return float(values[0]) if values.size else 0.0
    kind_of_model = getattr(pr.synapse_type, "ranvier_nestml_kind", None)
    if kind_of_model is not None:                     # a NESTML model's: its parameters by name
        names = [n for n in pr.synapse_type.default_parameters if n not in ("weight", "delay")]
        return {"kind": "nestml", "synapse": kind_of_model(**{n: one(n) for n in names})}
    if type(pr.synapse_type.timing_dependence).__name__ == "Vogels2011Rule":
        return {"kind": "vogels", "tau_ms": one("tau_ms"), "eta": one("eta"), "alpha": one("alpha"),
                "w_max": one("w_max")}
    return {"tau_plus_ms": one("tau_plus_ms"), "lambda_": one("lambda_"), "alpha": one("alpha"),
            "w_max": one("w_max"), "tau_minus_ms": one("tau_minus_ms"),
            "mu": getattr(pr.synapse_type.weight_dependence, "mu", None) or (one("mu_plus"), one("mu_minus"))}


def _roots(state, obj, index):
    """Indices within a Population, PopulationView or Assembly -> (the index in state.populations
    of each one's root population, its index there)."""
    index = np.asarray(index, dtype=np.int64)
    if hasattr(obj, "populations"):                      # an Assembly: its parts one after the other
        pop = np.zeros(index.size, np.int64)
        within = np.zeros(index.size, np.int64)
        offsets = np.cumsum([0] + [p.size for p in obj.populations])
        part = np.searchsorted(offsets, index, side="right") - 1
        for k, p in enumerate(obj.populations):
            at = part == k
            pop[at], within[at] = _roots(state, p, index[at] - offsets[k])
        return pop, within
    root = obj.grandparent if hasattr(obj, "grandparent") else obj
    return np.full(index.size, state.populations.index(root), np.int64), _parent_index(obj, index)


def _tsodyks(state, pops, pr, root, post_index) -> dict:
    """A TsodyksMarkramSynapse projection's parameters per connection: U, tau_rec_ms, tau_fac_ms,
    and tau_psc_ms, the target cell's tau_syn_E or tau_syn_I by receptor type (pyNN.nest's)."""
    which = {"excitatory": "tau_syn_E", "inhibitory": "tau_syn_I"}[pr.receptor_type]
    name = root.celltype.translations.get(which, {}).get("translated_name")
    if name is None:
        raise NotImplementedError(f"pyNN.ranvier: TsodyksMarkramSynapse takes tau_psc from the target's "
                                  f"{which}; {type(root.celltype).__name__} has none")
    tau = pops[state.populations.index(root)]["params"][name]
    tau = np.broadcast_to(np.asarray(tau, dtype=float), (root.size,))
    out = {name: np.array([getattr(c, name) for c in pr.connections], dtype=float)
           for name in ("U", "tau_rec_ms", "tau_fac_ms")}
    out["tau_psc_ms"] = tau[post_index]
    out["kind"] = "tsodyks"
    return out


def _tsodyks_groups(q: dict):
    """The connections of a TsodyksMarkramSynapse projection grouped by their parameters (Ranvier's
    are a projection's): [(rv.TsodyksMarkram, indices of the connections)]."""
    import ranvier as rv
    rows = np.stack([q["U"], q["tau_psc_ms"], q["tau_rec_ms"], q["tau_fac_ms"]], axis=1)
    values, group = np.unique(rows, axis=0, return_inverse=True)
    return [(rv.TsodyksMarkram(U=float(U), tau_psc_ms=float(tp), tau_rec_ms=float(tr), tau_fac_ms=float(tf)),
             np.flatnonzero(group.ravel() == g)) for g, (U, tp, tr, tf) in enumerate(values)]


def _bernoulli_groups(q: dict):
    """The connections of a SimpleStochasticSynapse projection grouped by p (Ranvier's is a
    projection's): [(rv.Bernoulli, indices of the connections)]."""
    import ranvier as rv
    values, group = np.unique(q["p_transmit"], return_inverse=True)
    return [(rv.Bernoulli(p_transmit=float(p)), np.flatnonzero(group.ravel() == g)) for g, p in enumerate(values)]


def _quantal_groups(q: dict):
    """The connections of a MultiQuantalSynapse projection grouped by their parameters (Ranvier's
    are a projection's): [(rv.QuantalSTP, indices of the connections)]."""
    import ranvier as rv
    rows = np.stack([q["U"], q["n"], q["tau_rec_ms"], q["tau_fac_ms"], q["a0"], q["u0"]], axis=1)
    values, group = np.unique(rows, axis=0, return_inverse=True)
    return [(rv.QuantalSTP(U=float(U), n=int(n), tau_rec_ms=float(tr), tau_fac_ms=float(tf), a0=int(a), u0=float(u)),
             np.flatnonzero(group.ravel() == g)) for g, (U, n, tr, tf, a, u) in enumerate(values)]


def _parent_index(obj, index):
    """Indices within a PopulationView -> indices within its root population."""
    while hasattr(obj, "parent"):
        index = np.arange(obj.parent.size)[obj.mask][index]
        obj = obj.parent
    return index


def build_network(state):
    import ranvier as rv
    from ranvier.runtime.parallel import make_comm

    comm = make_comm()
    # Rank 0's description and recording, on every rank (PyNN's unseeded RNGs differ by rank).
    record = sorted({int(i) for r in state.recorders for v, ids in r.recorded.items()
                     if v.name != "spikes" for i in ids})
    spiking = sorted({int(i) for r in state.recorders for v, ids in r.recorded.items()
                      if v.name == "spikes" for i in ids})
    desc, record, spiking = comm.bcast((describe(state), record, spiking) if comm.rank == 0 else None)
    state.recorded_spike_ids = spiking
    desc["currents"] = [(source, list(ids)) for source, ids in state.currents]
    net = rv.Network(name="pyNN")
    names = []
    for k, p in enumerate(desc["populations"]):
        # a PyNN label may hold what a Ranvier population name cannot ("L2/3E": the HDF5 group of
        # spikes.h5): the name is Ranvier's own, PyNN keeps its label
        label = str(p["label"]).replace("/", "_").replace("\0", "") if p["label"] else ""
        name = f"{k}:{label}" if label else str(k)
        names.append(name)
        kw = {"initial": p["initial"]} if p["initial"] is not None else {}
        net.add_population(rv.Population(name, p["size"], params=p["params"], model=p["model"], **kw))
    state.plastic = []                         # (PyNN projection index, Ranvier projection index)
    state.native_index = {}                    # PyNN projection index -> Ranvier projection index
    for pr in desc["projections"]:
        # nA -> pA, uS -> nS; IF_curr_delta (lifca): 1000 w mV, as pyNN.nest gives iaf_psc_delta
        scale = NEURON_MODELS[desc["populations"][pr["post"]]["model"]].pynn_weight_scale
        if "native" in pr:
            q = pr["native"]
            w, receptor = _receptor_weights(pr, desc["populations"][pr["post"]], q["weight"], scale)
            extra = {"autapses": True} if q.get("autapses") else {}
            state.native_index[pr["pynn"]] = len(net.projections)
            net.connect(rv.Projection(source=names[pr["pre"]], target=names[pr["post"]], weight=float(w),
                                      receptor=receptor,
                                      delay_ms=max(round(q["delay"] / state.dt), 1) * state.dt,
                                      **{q["rule"]: q["value"]}, **extra))
            continue
        if not len(pr["weight"]):
            continue
        if pr["plastic"] is not None and pr["plastic"].get("kind") == "nestml":
            scale = 1.0        # NEST's units, as pyNN.nest gives its native and NESTML synapse types
        w, receptor = _receptor_weights(pr, desc["populations"][pr["post"]], pr["weight"], scale)
        delay = np.maximum(np.rint(pr["delay"] / state.dt), 1) * state.dt
        synapse = None
        if pr["plastic"] is not None and pr["plastic"].get("kind") in ("tsodyks", "bernoulli", "quantal"):
            # one Ranvier projection per set of parameters: Ranvier's are a projection's
            groups = {"tsodyks": _tsodyks_groups, "bernoulli": _bernoulli_groups,
                      "quantal": _quantal_groups}[pr["plastic"]["kind"]]
            for synapse, at in groups(pr["plastic"]):
                net.connect(rv.Projection(source=names[pr["pre"]], target=names[pr["post"]],
                                          sources=pr["pre_index"][at].tolist(), targets=pr["post_index"][at].tolist(),
                                          weight=w[at].tolist(), delay_ms=delay[at].tolist(), synapse=synapse,
                                          receptor=receptor))
            continue
        if pr["plastic"] is not None and pr["plastic"].get("kind") == "vogels":
            q = pr["plastic"]
            sign = -1.0 if pr["receptor"] == "inhibitory" else 1.0
            synapse = rv.VogelsSprekeler(tau_ms=q["tau_ms"], eta=q["eta"] * scale, alpha=q["alpha"],
                                         w_max=sign * q["w_max"] * scale)
            state.plastic.append((pr["pynn"], len(net.projections)))
        elif pr["plastic"] is not None and pr["plastic"].get("kind") == "nestml":
            synapse = pr["plastic"]["synapse"]
            state.plastic.append((pr["pynn"], len(net.projections)))
        elif pr["plastic"] is not None:
            q = pr["plastic"]
            sign = -1.0 if pr["receptor"] == "inhibitory" else 1.0
            synapse = rv.STDP(tau_plus_ms=q["tau_plus_ms"], lambda_=q["lambda_"], alpha=q["alpha"],
                              mu_plus=q["mu"][0], mu_minus=q["mu"][1], w_max=sign * q["w_max"] * scale)
            target = net.population(names[pr["post"]])
            target.tau_minus_ms = q["tau_minus_ms"]
            state.plastic.append((pr["pynn"], len(net.projections)))
        net.connect(rv.Projection(source=names[pr["pre"]], target=names[pr["post"]], sources=pr["pre_index"].tolist(),
                                  targets=pr["post_index"].tolist(), weight=w.tolist(), delay_ms=delay.tolist(),
                                  synapse=synapse, receptor=receptor))
    firsts = np.array([p.first_id for p in net.populations])
    state.current_index = {}                   # PyNN source -> [(its Ranvier source's index, target, neurons)]
    for source, ids in desc["currents"]:
        ids = np.asarray(ids, dtype=np.int64)
        owner = np.searchsorted(firsts, ids, side="right") - 1
        for k in np.unique(owner):
            pop = net.populations[k]
            neurons = (ids[owner == k] - pop.first_id).tolist()
            for s in source.ranvier_sources(pop.name, neurons):
                state.current_index.setdefault(id(source), []).append((len(net.currents), pop.name, neurons))
                net.inject(s)
    state.population_names = names
    return net, record
