"""A run as a Neo Block (Result.to_neo): spike trains and recorded state in the layout PyNN's
get_data() gives, for the tools that read Neo (Elephant, Neo's file formats, viziphant).

    block = res.to_neo()                          # pip install "ranvier[neo]"
    seg = block.segments[0]                       # one Segment for the whole run
    seg.spiketrains                               # one SpikeTrain per neuron, population by population
    seg.analogsignals                             # per population: "v" and the model's second variable

Layout (PyNN's, with the populations of an Assembly in one Block):

- Block: name = the network's name; annotations simulator "ranvier", ranvier_version, dt (ms),
  duration_ms, seed, mpi_processes, threads, populations (names, in id order).
- One Segment, "segment000", covering [0, duration_ms).
- SpikeTrain per neuron of every chosen population, in global-id order: times in ms (the spike of
  step s at s * resolution_ms, as Result.spikes), t_start 0, t_stop = the simulated duration;
  annotations source_population (name), source_id (global id), source_index (index within the
  population), model.
- AnalogSignal per recorded variable per population holding recorded neurons (Simulation
  record_state): shape (samples, recorded neurons of the population, ascending global id),
  sampling_period = the recording interval (Simulation record_state_interval_ms, by default the
  resolution), t_start = that interval
  (sample k is the state at the end of step k + 1, as NEST's multimeter times it); annotations
  source_population, source_ids, model, description; array annotations channel_index (index
  within the population) and source_id (global id) per channel.
  "v" in mV: absolute for models with absolute potential parameters (E_L_mV: psc_exp,
  iaf_psc_alpha; the engine records V - E_L, E_L is added back per neuron, as PyNN and NEST give
  it); relative to rest for lifca (its parameters are; annotation v_reference says which). The
  second variable: lifca "c" (adaptation, dimensionless), psc_exp "I_syn" (pA), iaf_psc_alpha
  "I_syn_ex" (pA). Models without a membrane (sources, artificial cells) have no signals.
- block.groups: one neo.Group per chosen population holding its spike trains and signals.
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from ..core.neurons import NEURON_MODELS


def _import_neo():
    try:
        import neo
        import quantities as pq
    except ImportError:
        raise ConfigError('Result.to_neo needs the neo package: pip install "ranvier[neo]" '
                          '(or pip install "neo>=0.13")') from None
    return neo, pq


def _chosen(result, populations) -> list:
    pops = result.network.populations
    if populations is None:
        return list(pops)
    if isinstance(populations, str):
        populations = [populations]
    names = [p.name for p in pops]
    try:
        wanted = set(populations)
    except TypeError:
        raise ConfigError(f"to_neo: populations must be a list of population names, got {populations!r}") from None
    unknown = [w for w in populations if w not in names]
    if unknown:
        raise ConfigError(f"to_neo: no population {unknown[0]!r}; the populations are {names}")
    return [p for p in pops if p.name in wanted]        # in id order, each once


def _spikes(result):
    """(ids, times_ms) of the run, or a ConfigError that names the fix; None where none were recorded."""
    mode = getattr(result, "record_spikes", True)
    if mode == "counts":
        raise ConfigError('to_neo: this run kept only spike counts (record_spikes="counts"), no spike times; run '
                          'with record_spikes=True (spikes in memory) or stream_to=FOLDER (spikes streamed to '
                          'files) to get spike trains')
    if mode is False:
        return None
    spikes = result.spikes
    if spikes is None:
        error = getattr(result.recording, "error", None)
        raise ConfigError(f"to_neo: the spikes of this run are not available"
                          + (f" (the streamed spike files could not be written: {error})" if error else "")
                          + "; run again with room for them, or keep them in memory (no stream_to)")
    return spikes


def to_neo(result, populations=None):
    """The run as a neo.Block (see the module's docstring); None off rank 0. populations: names
    to restrict it to (default: every population). A run with record_spikes=False gives no spike
    trains (its signals only); one with record_spikes="counts" is refused."""
    if result.counters is None:                  # not rank 0: nothing was gathered here
        return None
    neo, pq = _import_neo()
    chosen = _chosen(result, populations)
    spikes = _spikes(result)
    from ..version import ranvier_version

    net = result.network
    h = result.resolution_ms
    block = neo.Block(name=net.name, description=f"Ranvier run of {net.name!r}, {result.duration_ms:g} ms",
                      simulator="ranvier", ranvier_version=ranvier_version(), dt=h, duration_ms=result.duration_ms,
                      seed=int(result.seed), mpi_processes=int(result.ranks), threads=int(result.threads),
                      populations=[p.name for p in chosen])
    seg = neo.Segment(name="segment000", description=f"{net.name}: [0, {result.duration_ms:g}) ms")
    block.segments.append(seg)
    seg.block = block
    t_stop = result.duration_ms * pq.ms

    if spikes is not None:
        ids = np.asarray(spikes[0], dtype=np.int64)
        order = np.argsort(ids, kind="stable")       # by id; each neuron's times stay in time order
        ids, times = ids[order], np.asarray(spikes[1], dtype=np.float64)[order]
    state = result.state
    ms = pq.ms
    all_trains, all_signals, groups = [], [], []
    for pop in chosen:
        trains, signals = [], []
        if spikes is not None:
            edges = np.searchsorted(ids, pop.first_id + np.arange(pop.size + 1), side="left")
            keep = getattr(result.recording, "keep", None)     # Simulation record_spikes_of: those neurons only
            local = range(pop.size) if keep is None else \
                (keep[(keep >= pop.first_id) & (keep < pop.first_id + pop.size)] - pop.first_id).tolist()
            for i in local:
                train = neo.SpikeTrain(times[edges[i]:edges[i + 1]].copy(), t_stop=t_stop, units=ms,
                                       t_start=0.0 * ms, source_population=pop.name,
                                       source_id=pop.first_id + i, source_index=i, model=pop.model)
                train.segment = seg
                trains.append(train)
        if state is not None:
            signals = _signals(neo, pq, result, pop, state)
            for s in signals:
                s.segment = seg
        all_trains += trains
        all_signals += signals
        group = neo.Group(name=pop.name, source_population=pop.name, model=pop.model, first_id=pop.first_id,
                          size=pop.size, excitatory=bool(pop.excitatory))
        group.spiketrains = _train_list(trains)
        group.analogsignals = signals
        group.block = block
        groups.append(group)
    # Whole lists at once: neo's append checks each object against every one already there (n^2).
    seg.spiketrains = _train_list(all_trains, parent=seg)
    seg.analogsignals = all_signals
    block.groups = groups
    return block


def _train_list(trains, parent=None):
    from neo.core.spiketrainlist import SpikeTrainList
    return SpikeTrainList(items=trains, parent=parent)


def _signals(neo, pq, result, pop, state) -> list:
    """The AnalogSignals of a population's recorded neurons: "v" and the model's second variable."""
    model = NEURON_MODELS[pop.model]
    if not model.has_potential:
        return []
    gids = np.asarray(state["ids"], dtype=np.int64)
    mine = (gids >= pop.first_id) & (gids < pop.first_id + pop.size)
    if not mine.any():
        return []
    gids = gids[mine]
    local = gids - pop.first_id
    h = state.get("interval_ms", result.resolution_ms)
    common = dict(t_start=h * pq.ms, sampling_period=h * pq.ms, source_population=pop.name, source_ids=gids,
                  model=pop.model, array_annotations={"channel_index": local, "source_id": gids})
    v = np.asarray(state["V"], dtype=np.float64)[mine]
    if "E_L_mV" in model.parameters:
        e_l = np.asarray(pop.neuron_values("E_L_mV", result.seed), dtype=np.float64)[local]
        v = v + e_l[:, None]
        reference = "absolute: the recorded V - E_L_mV with E_L_mV added back per neuron (as NEST and PyNN give V)"
    elif getattr(model, "nestml_file", None):
        reference = (f"as the NESTML model {pop.model} defines its state variable "
                     f"{next(iter(model.state_columns))} (absolute mV where its parameters are)")
    else:
        reference = (f"relative to the resting potential (E_L = 0): {pop.model}'s potential parameters are, "
                     f"so its recorded V is")
    signals = [neo.AnalogSignal(v.T, units="mV", name="v", description="membrane potential",
                                v_reference=reference, **common)]
    # the model's recordables (NeuronModel.recordables): c, and c_in and w where the model has them
    name, unit, what = model.recordables.get("c", ("c", "dimensionless",
                                                   f"the second state variable of {pop.model} (its model names "
                                                   f"no recordable 'c')"))
    c = np.asarray(state["c"], dtype=np.float64)[mine]
    signals.append(neo.AnalogSignal(c.T, units=unit, name=name, description=what, **common))
    c_in = np.asarray(state["c_in"], dtype=np.float64)[mine] if "c_in" in state else None
    if "c_in" in model.recordables and c_in is not None and not np.all(np.isnan(c_in)):
        name, unit, what = model.recordables["c_in"]
        signals.append(neo.AnalogSignal(c_in.T, units=unit, name=name, description=what, **common))
    w = np.asarray(state["w"], dtype=np.float64)[mine] if "w" in state else None
    if "w" in model.recordables and w is not None and not np.all(np.isnan(w)):
        name, unit, what = model.recordables["w"]
        signals.append(neo.AnalogSignal(w.T, units=unit, name=name, description=what, **common))
    for key in sorted((k for k in model.recordables if k.startswith("c") and k[1:].isdigit()), key=lambda k: int(k[1:])):
        values = np.asarray(state[key], dtype=np.float64)[mine] if key in state else None
        if values is not None and not np.all(np.isnan(values)):     # receptors 3, 4, ... (c3, c4, ...)
            name, unit, what = model.recordables[key]
            signals.append(neo.AnalogSignal(values.T, units=unit, name=name, description=what, **common))
    return signals
