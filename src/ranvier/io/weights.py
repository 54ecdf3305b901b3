"""Plastic weights in and out: the SONATA edge file, starting from saved weights, the weight
recorder, and the distribution summaries of a run (docs/plasticity.md, "Weights in and out").

The file (weights.h5) holds one SONATA edge population per plastic projection,
/edges/<source>_to_<target> (with _<index> appended where several join the same populations):
source_node_id and target_node_id (population-local ids; attribute node_population),
edge_type_id (0), edge_group_id (0), edge_group_index, and the group 0 with syn_weight (float64,
the target's input unit) and delay (ms). The synapses are in a canonical order: by (source,
target, delay), and multapses with equal (source, target, delay) in the order the engine drew
them, which is the same for any decomposition (all synapses onto a target are drawn on one
thread, in a fixed order). A weight recorder's samples go to /weight_trace in the same file.
Simulation.save_weights (save below) writes it from Python, whole or not at all.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError

HISTOGRAM_BINS = 40


def edge_population_names(network) -> dict[int, str]:
    """The edge population name of each plastic projection (its index in network.projections)."""
    names, seen = {}, {}
    for j, pr in enumerate(network.projections):
        if pr.synapse is None:
            continue
        base = f"{pr.source}_to_{pr.target}"
        seen[base] = seen.get(base, 0) + 1
        names[j] = base if seen[base] == 1 else f"{base}_{seen[base] - 1}"
    return names


def local_weights(sim, j: int):
    """Projection j's synapses on this rank, in the engine's storage order."""
    src, tgt, w, d = sim.local_plastic_synapses(j)
    return np.asarray(src, np.int64), np.asarray(tgt, np.int64), np.asarray(d, np.int64), np.asarray(w, np.float64)


def lexicographic_order(*keys) -> np.ndarray:
    """The permutation that sorts by the integer arrays `keys`, most significant first, ties in
    the order given: np.lexsort(keys[::-1]) (a stable sort), found as a stable argsort of one
    combined key where all fit in 63 bits (twice as fast for synapses; 30 times for a chunk's
    spikes, whose threads' and ranks' parts are sorted runs)."""
    if keys[0].size == 0:
        return np.zeros(0, np.int64)
    lows = [int(a.min()) for a in keys]
    spans = [int(a.max()) - low + 1 for a, low in zip(keys, lows)]
    if math.prod(spans) >= 2**63:
        return np.lexsort(keys[::-1])
    key = keys[0] - lows[0]
    for a, low, span in zip(keys[1:], lows[1:], spans[1:]):
        key = key * span + (a - low)
    return np.argsort(key, kind="stable")


def canonical_order(source, target, delay_steps) -> np.ndarray:
    """By (source, target, delay); ties (multapses) in the order given (storage order)."""
    return lexicographic_order(source, target, delay_steps)


def gather_plastic(sim) -> dict | None:
    """Every plastic projection's synapses, gathered on rank 0 in canonical order:
    {j: (source gid, target gid, delay steps, weight)}. A collective call; None off rank 0."""
    out = {}
    for j in edge_population_names(sim.network):
        parts = sim.comm.gather(local_weights(sim, j))
        if sim.rank == 0:
            joined = [np.concatenate([p[i] for p in parts]) for i in range(4)]
            order = canonical_order(*joined[:3])
            out[j] = tuple(a[order] for a in joined)
    return out if sim.rank == 0 else None


def write_weights(path, sim, gathered: dict, traces: dict | None = None) -> None:
    """weights.h5 from gather_plastic's arrays (and Result.weight_traces), whole or not at all:
    written into a hidden file beside `path`, flushed to the disk, then renamed onto it (an
    earlier file stays as it was if the write fails)."""
    import os
    import tempfile
    from pathlib import Path

    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".ranvier-tmp", dir=path.parent)
    os.close(fd)
    try:
        _write_weights_file(tmp, sim, gathered, traces)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, 0o644)                  # mkstemp makes it private
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _write_weights_file(path, sim, gathered: dict, traces: dict | None) -> None:
    import h5py
    net, h = sim.network, sim.resolution_ms
    names = edge_population_names(net)
    with h5py.File(path, "w") as f:
        edges = f.create_group("edges")
        for j, (src, tgt, d, w) in gathered.items():
            pr = net.projections[j]
            s_pop, t_pop = net.population(pr.source), net.population(pr.target)
            g = edges.create_group(names[j])
            ds = g.create_dataset("source_node_id", data=(src - s_pop.first_id).astype(np.uint64))
            ds.attrs["node_population"] = pr.source
            dt = g.create_dataset("target_node_id", data=(tgt - t_pop.first_id).astype(np.uint64))
            dt.attrs["node_population"] = pr.target
            g.create_dataset("edge_type_id", data=np.zeros(src.size, np.int64))
            g.create_dataset("edge_group_id", data=np.zeros(src.size, np.int64))
            g.create_dataset("edge_group_index", data=np.arange(src.size, dtype=np.int64))
            group = g.create_group("0")
            group.create_dataset("syn_weight", data=w)
            group.create_dataset("delay", data=d * h)
            g.attrs["synapse"] = repr(pr.synapse)
        for name, one in (traces or {}).items():       # /weight_trace/<edge population>
            t = f.require_group("weight_trace").create_group(name)
            for key, value in one.items():
                t.create_dataset(key, data=value)


def save(sim, path):
    """Simulation.save_weights: every plastic projection's weights now and the weight recorders'
    samples so far, gathered on rank 0, which writes `path`. A collective call; a failed write
    raises OutputError on every rank. Returns the path on rank 0, None elsewhere."""
    from pathlib import Path

    from .output import OutputError
    if not edge_population_names(sim.network):          # the same answer on every rank
        raise ConfigError("save_weights: the network has no plastic projection (static weights are the seed's: "
                          "read them with Simulation.connections)")
    gathered = gather_plastic(sim)
    error = None
    if sim.rank == 0:
        try:
            write_weights(path, sim, gathered, {s.name: s.trace() for s in sim.weight_samplers})
        except OSError as e:
            error = f"save_weights: cannot write {path}: {e.strerror or e}"
    error = sim.comm.bcast(error)
    if error is not None:
        raise OutputError(error)
    return Path(path) if sim.rank == 0 else None


def read_weights(path) -> dict:
    """{edge population name: (source local id, target local id, delay ms, weight)}."""
    import h5py
    try:
        with h5py.File(path, "r") as f:
            if "edges" not in f:
                raise ConfigError(f"initial_weights: {path} holds no /edges group; give a weights.h5 that a "
                                  f"run wrote (ranvier run --out DIR)")
            return {name: (g["source_node_id"][()].astype(np.int64), g["target_node_id"][()].astype(np.int64),
                           g["0/delay"][()], g["0/syn_weight"][()]) for name, g in f["edges"].items()}
    except OSError as e:
        raise ConfigError(f"initial_weights: cannot read {path}: {e}") from None


def check_file(path, network) -> None:
    """Before the build: the file exists, is a weights.h5, and names this network's plastic
    projections (the synapses themselves are checked after the build, by apply_initial_weights)."""
    import h5py
    names = set(edge_population_names(network).values())
    if not names:
        raise ConfigError(f"initial_weights: the network has no plastic projection to start from {path}")
    try:
        with h5py.File(path, "r") as f:
            held = set(f["edges"]) if "edges" in f else None
    except OSError as e:
        raise ConfigError(f"initial_weights: cannot read {path}: {e}") from None
    if held is None:
        raise ConfigError(f"initial_weights: {path} holds no /edges group; give a weights.h5 that a run wrote "
                          f"(ranvier run --out DIR)")
    if held != names:
        missing, extra = sorted(names - held), sorted(held - names)
        raise ConfigError(f"initial_weights: {path} does not fit the network's plastic projections: "
                          + (f"missing {missing}" if missing else "") + ("; " if missing and extra else "")
                          + (f"not in the network {extra}" if extra else ""))


def agree(comm, error: str | None) -> None:
    """A collective check: raises the first rank's error on every rank (ConfigError), so that
    no rank goes on alone into the next collective call while another has stopped."""
    errors = comm.gather(error)
    first = next((e for e in errors if e is not None), None) if errors is not None else None
    first = comm.bcast(first)
    if first is not None:
        raise ConfigError(first)


def apply_initial_weights(sim, path) -> None:
    """Sets every plastic projection's weights from a weights.h5 (each rank its own synapses),
    after checking that the file describes this network's synapses exactly. Every rank reads the
    file itself (nothing of it passes through rank 0) and keeps the synapses onto its own
    targets; a mismatch on any rank stops every rank with the same error."""
    net, h = sim.network, sim.resolution_ms
    data, error = None, None
    try:
        data = read_weights(path)
    except ConfigError as e:
        error = str(e)
    except KeyError as e:
        error = f"initial_weights: {path} lacks a dataset of the SONATA edge layout ({e}); give a weights.h5 " \
                f"that a run wrote (ranvier run --out DIR)"
    agree(sim.comm, error)
    names = edge_population_names(net)
    missing = sorted(set(names.values()) - set(data))
    extra = sorted(set(data) - set(names.values()))
    if missing or extra:
        raise ConfigError(f"initial_weights: {path} does not fit the network's plastic projections: "
                          + (f"missing {missing}" if missing else "") + ("; " if missing and extra else "")
                          + (f"not in the network {extra}" if extra else ""))
    updates = []
    for j, name in names.items():
        pr = net.projections[j]
        s_first, t_first = net.population(pr.source).first_id, net.population(pr.target).first_id
        f_src, f_tgt, f_delay, f_w = data[name]
        f_src, f_tgt, f_delay = f_src + s_first, f_tgt + t_first, np.rint(f_delay / h).astype(np.int64)
        src, tgt, d, _ = local_weights(sim, j)
        total = sum(sim.comm.gather(src.size) or [0])
        total = sim.comm.bcast(total if sim.rank == 0 else None)
        error = None
        if total != f_src.size:
            error = (f"initial_weights: projection {pr.source}->{pr.target} ('{name}') has {total:,} synapses, "
                     f"{path} {f_src.size:,}; the file belongs to another network (seed, sizes or rules)")
        else:
            mine = np.isin(f_tgt, np.unique(tgt))           # the file's synapses onto this rank's targets
            order = canonical_order(src, tgt, d)
            fs, ft, fd, fw = f_src[mine], f_tgt[mine], f_delay[mine], f_w[mine]
            ls, lt, ld = src[order], tgt[order], d[order]
            n = min(fs.size, ls.size)
            bad = np.flatnonzero((fs[:n] != ls[:n]) | (ft[:n] != lt[:n]) | (fd[:n] != ld[:n]))
            if bad.size:
                k = bad[0]
                error = (f"initial_weights: projection {pr.source}->{pr.target} ('{name}'): the file's synapse "
                         f"{fs[k] - s_first}->{ft[k] - t_first} ({fd[k] * h:g} ms) stands where the network has "
                         f"{ls[k] - s_first}->{lt[k] - t_first} ({ld[k] * h:g} ms); the file belongs to another "
                         f"network (seed, sizes or rules)")
            elif fs.size != ls.size:
                t = int((lt[n] if ls.size > n else ft[n]) - t_first)
                error = (f"initial_weights: projection {pr.source}->{pr.target} ('{name}'): target {t} has "
                         f"{np.count_nonzero(lt == t + t_first)} synapses in the network, "
                         f"{np.count_nonzero(ft == t + t_first)} in {path}; the file belongs to another network "
                         f"(seed, sizes or rules)")
            else:
                w = np.empty(src.size, np.float64)
                w[order] = fw
                updates.append((j, w))
        agree(sim.comm, error)
    for j, w in updates:          # only once every projection fits, on every rank
        sim.set_plastic_weights(j, w)


def distribution(sim, j: int) -> dict | None:
    """Projection j's weight distribution now, reduced over ranks: count, mean, sd, min, max and
    a histogram (HISTOGRAM_BINS bins over [0, w_max], or [0, 10 x initial max] for the power law,
    whose weights have no bound). A collective call; None off rank 0."""
    pr = sim.network.projections[j]
    _, _, _, w = local_weights(sim, j)
    if hasattr(pr.synapse, "w_max"):           # STDP: [0, w_max] (or [w_max, 0] for inhibitory)
        low, high = sorted((0.0, float(pr.synapse.w_max)))
    else:                                      # the power law has no bound
        from ..core.spec import plastic_weight_bound
        low, high = 0.0, plastic_weight_bound(pr)
    counts, edges = np.histogram(np.clip(w, low, high), bins=HISTOGRAM_BINS, range=(low, high))
    parts = sim.comm.gather((w.size, float(w.sum()), float((w * w).sum()),
                             float(w.min()) if w.size else np.inf, float(w.max()) if w.size else -np.inf, counts))
    if sim.rank != 0:
        return None
    n = sum(p[0] for p in parts)
    total, squares = sum(p[1] for p in parts), sum(p[2] for p in parts)
    mean = total / n if n else 0.0
    return {"projection": f"{pr.source}->{pr.target}", "synapses": int(n), "mean": mean,
            "sd": float(np.sqrt(max(0.0, squares / n - mean * mean))) if n else 0.0,
            "min": min(p[3] for p in parts), "max": max(p[4] for p in parts),
            "histogram": [int(c) for c in np.sum([p[5] for p in parts], axis=0)],
            "histogram_range": [float(low), float(high)]}


def distributions(sim) -> dict | None:
    """distribution() of every plastic projection, by edge population name."""
    out = {name: distribution(sim, j) for j, name in edge_population_names(sim.network).items()}
    return out if sim.rank == 0 else None


@dataclass(kw_only=True)
class WeightRecorder:
    """Samples the weights of chosen synapses of the plastic projection `source` -> `target`
    every interval_ms (at whole multiples of it, from the start of the simulation).

    synapses: a number N: N target neurons spread evenly over the target population, on each
    the first synapse in (source, target, delay) order (the same synapses for any
    decomposition); or a list of (source id, target id) pairs, population-local, each the first
    such synapse. index: the projection's place in network.projections, where several join the
    same populations. The samples are Result.weight_trace (rank 0) and /weight_trace in weights.h5."""
    source: str
    target: str
    synapses: object = 10
    interval_ms: float = 100.0
    index: int | None = None


def samplers_of(sim, record_weights) -> list:
    """record_weights (a WeightRecorder, or a list of them) resolved for this simulation."""
    recorders = record_weights if isinstance(record_weights, (list, tuple)) else [record_weights]
    samplers = [WeightSampler(sim, r) for r in recorders]
    seen = {}
    for s in samplers:                   # one record per projection: Result.weight_traces and the file name it
        if s.name in seen:
            pr = sim.network.projections[s.j]
            raise ConfigError(f"record_weights: two recorders on projection {pr.source}->{pr.target} ('{s.name}'); "
                              f"give one WeightRecorder with all its synapses")
        seen[s.name] = s
    return samplers


class WeightSampler:
    """A WeightRecorder resolved for one simulation: the projection, and on each rank the places
    (in the engine's storage order) of its chosen synapses."""

    def __init__(self, sim, rec: WeightRecorder):
        if not isinstance(rec, WeightRecorder):
            raise ConfigError(f"record_weights must be a ranvier.WeightRecorder, got {rec!r:.80}")
        self.j = sim.projection_index(rec.source, rec.target, rec.index)
        self.name = edge_population_names(sim.network).get(self.j, f"{rec.source}_to_{rec.target}")
        net, h = sim.network, sim.resolution_ms
        pr = net.projections[self.j]
        if pr.synapse is None:
            raise ConfigError(f"record_weights: projection {pr.source}->{pr.target} is static; its weights never "
                              f"change (read them with Simulation.weights)")
        if not (isinstance(rec.interval_ms, (int, float)) and rec.interval_ms > 0):
            raise ConfigError(f"record_weights: interval_ms must be a positive number of ms, got {rec.interval_ms!r}")
        self.interval_steps = round(rec.interval_ms / h)
        if self.interval_steps < 1 or abs(self.interval_steps * h - rec.interval_ms) > 1e-9 * rec.interval_ms:
            raise ConfigError(f"record_weights: interval_ms = {rec.interval_ms} is not a whole number of steps of "
                              f"{h} ms")
        s_pop, t_pop = net.population(pr.source), net.population(pr.target)
        if isinstance(rec.synapses, (int, np.integer)) and not isinstance(rec.synapses, bool):
            if rec.synapses < 1:
                raise ConfigError(f"record_weights: synapses must be at least 1, got {rec.synapses}")
            n = min(int(rec.synapses), t_pop.size)
            wanted = [(None, t_pop.first_id + (k * t_pop.size) // n) for k in range(n)]
        else:
            try:
                wanted = [(s_pop.first_id + int(s), t_pop.first_id + int(t)) for s, t in rec.synapses]
            except (TypeError, ValueError):
                raise ConfigError("record_weights: synapses must be a number or a list of (source id, target id) "
                                  "pairs, population-local") from None
            if not wanted:
                raise ConfigError("record_weights: synapses is an empty list; give at least one (source id, "
                                  "target id) pair, or a number of synapses")
        src, tgt, d, _ = local_weights(sim, self.j)
        # only the synapses onto the chosen targets (a few in-degrees), in canonical order: the
        # first synapse of each (source, target), and of each target
        near = np.flatnonzero(np.isin(tgt, np.unique([t for _, t in wanted])))
        first_of = {}
        for place in near[canonical_order(src[near], tgt[near], d[near])]:
            key_pair, key_target = (int(src[place]), int(tgt[place])), (None, int(tgt[place]))
            first_of.setdefault(key_pair, int(place))
            first_of.setdefault(key_target, int(place))
        local = [(k, first_of[w]) for k, w in enumerate(wanted) if w in first_of]
        self.slots = np.array([k for k, _ in local], dtype=np.int64)          # which chosen synapse
        self.places = np.array([p for _, p in local], dtype=np.int64)         # where it is stored here
        self.count = len(wanted)
        found = sim.comm.gather(self.slots)
        error = None
        if sim.rank == 0:
            have = np.zeros(self.count, bool)
            for f in found:
                have[f] = True
            if not have.all():
                s, t = wanted[int(np.flatnonzero(~have)[0])]
                what = (f"synapse {s - s_pop.first_id}->{t - t_pop.first_id}" if s is not None
                        else f"a synapse onto {t - t_pop.first_id}")
                error = f"record_weights: projection {pr.source}->{pr.target} has no {what}"
        error = sim.comm.bcast(error)
        if error:
            raise ConfigError(error)
        desc = sim.comm.gather((self.slots, src[self.places] if self.places.size else np.zeros(0, np.int64),
                                tgt[self.places] if self.places.size else np.zeros(0, np.int64),
                                d[self.places] if self.places.size else np.zeros(0, np.int64)))
        self.source = self.target = self.delay_ms = None
        if sim.rank == 0:
            slot = np.concatenate([p[0] for p in desc])
            inv = np.argsort(slot)
            self.source = np.concatenate([p[1] for p in desc])[inv] - s_pop.first_id
            self.target = np.concatenate([p[2] for p in desc])[inv] - t_pop.first_id
            self.delay_ms = np.concatenate([p[3] for p in desc])[inv] * h
        self.times_ms: list[float] = []
        self.samples: list[np.ndarray] = []

    def due(self, steps_done: int) -> bool:
        return steps_done % self.interval_steps == 0

    def sample(self, sim, steps_done: int) -> None:
        """A collective call: every rank reads its chosen synapses; rank 0 keeps the column."""
        values = sim.plastic_weights_at(self.j, self.places) if self.places.size else np.zeros(0)
        parts = sim.comm.gather((self.slots, np.asarray(values)))
        if sim.rank == 0:
            column = np.empty(self.count)
            for slots, v in parts:
                column[slots] = v
            self.times_ms.append(steps_done * sim.resolution_ms)
            self.samples.append(column)

    def trace(self) -> dict:
        """times_ms, source, target (population-local), delay_ms, weights [synapse, sample]."""
        return {"times_ms": np.array(self.times_ms), "source": self.source, "target": self.target,
                "delay_ms": self.delay_ms,
                "weights": np.stack(self.samples, axis=1) if self.samples else np.zeros((self.count, 0))}
