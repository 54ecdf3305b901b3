"""Checkpoints: save a running simulation, resume it on any decomposition.

    sim.save("ckpt")                                   # collective; rank 0 writes the folder
    sim = ranvier.Simulation.resume("ckpt", threads=2, exchange="alltoallv")
    ranvier run CONFIG --out DIR --checkpoint-every 10s
    ranvier run --resume DIR

A checkpoint is a folder written whole or not at all (beside it, then renamed), holding what
the seed cannot rebuild (cpp/core/checkpoint.cpp): every neuron's state and input rows, the
spikes in flight, plastic weights and their traces, the targets' spike histories, the current
sources' amplitudes; on the Python side the spikes recorded so far, the rate counts and the
counters. Everything is keyed by global ids and steps, so the checkpoint does not depend on
the ranks, threads, placement or exchange that wrote it: a resumed run gives the spikes and
weights of the uninterrupted one on any of them. The static network is rebuilt from the seed
and compared with the checkpoint's digest.

Files: checkpoint.json (what it is, for which network; sizes and SHA-256 of the other files,
and in its field sha256 the SHA-256 of its own other fields), state.npz (the engine's
columns), network.pickle (the network, so that a resume needs only the folder: read back with
Ranvier's network classes alone, so that a pickle from elsewhere cannot run code),
recording.npz (rank 0's recorded spikes, counts and rate bins); `ranvier run` adds config.toml and lists the
spike segments beside the checkpoints.

Refused, in one line naming the checkpoint, the file and the reason, before anything is built: a
folder that is not a complete checkpoint (a file missing, truncated or changed, checkpoint.json
included), one of another checkpoint format, one written by another Ranvier version (a
checkpoint resumes only in the Ranvier version that wrote it: another may integrate or draw
differently, and the resumed run would not be the uninterrupted one), one of another network or
seed (for a network given to resume), a network.pickle that names anything but Ranvier's
network classes and NumPy's arrays (unpickled, it could run code). After the build: a network whose synapses differ from the
checkpoint's (the digest). A folder of checkpoints whose newest is refused resumes the one
before, and says which it skipped and why in one line on stderr.

The resumed run's spikes, rates, counters and duration cover the whole run; its timings
(simulate_seconds, the phases, cycle statistics, deadlines, imbalance) and state traces cover
the part after the resume. Its counters are checked as any run's (Result.check_conservation),
the part before the checkpoint included.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ..errors import ConfigError
from .leftovers import STAGING_SUFFIX, recover_checkpoints, replace_folder
from .output import sync_folder

FORMAT = "ranvier-checkpoint"
FORMAT_VERSION = 3                  # 2: checkpoint.json covered by its own digest (field sha256); 3: plastic efficacies in flight
META = "checkpoint.json"
META_DIGEST = "sha256"              # checkpoint.json's field: meta_digest() of every other field
FILES = ("state.npz", "network.pickle", "recording.npz")
# What network.pickle may name: the classes that describe a network (every model's, SONATA's and
# pyNN.ranvier's networks are made of them) and NumPy's arrays and scalars. Anything else (a
# function, os.system, a class of another module) could run code when unpickled: refused.
NETWORK_MODULES = ("ranvier.core.network", "ranvier.core.devices", "ranvier.core.plasticity", "ranvier.core.synapses.stdp",
                   "ranvier.core.synapses.stdp_power_law", "ranvier.core.synapses.stdp_triplet",
                   "ranvier.core.synapses.tsodyks", "ranvier.core.synapses.bernoulli",
                   "ranvier.core.synapses.quantal_stp",
                   "ranvier.core.random", "ranvier.core.grid")
NUMPY_GLOBALS = {(m, name) for m in ("numpy.core.multiarray", "numpy._core.multiarray")
                 for name in ("_reconstruct", "scalar")} | {("numpy", "ndarray"), ("numpy", "dtype")}
PREFIX = "step-"                    # checkpoints of a run: <folder>/step-<12 digits>
# Counters that add up over a run; the others describe the present (events_pending).
NOT_CUMULATIVE = ("events_pending", "spikes_unsent")


# -- writing ----------------------------------------------------------------------------------
def network_digest(network) -> str:
    """SHA-256 of the network's description (populations, parameters, projections, drives), fed
    field by field: the same for equal networks in any process (a pickle is not: it depends on
    which equal strings happen to be one object)."""
    digest = hashlib.sha256()
    _feed(network, digest, set())
    return digest.hexdigest()


def _feed(obj, digest, seen: set) -> None:
    import dataclasses

    put = digest.update
    if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
        put(f"{type(obj).__name__}:{obj!r};".encode())
    elif isinstance(obj, np.ndarray):
        put(f"ndarray:{obj.dtype.str}:{obj.shape};".encode())
        put(np.ascontiguousarray(obj).tobytes())
    elif isinstance(obj, np.generic):
        put(f"{obj.dtype.str}:{obj.item()!r};".encode())
    elif isinstance(obj, dict):
        put(f"dict:{len(obj)}{{".encode())
        for key in sorted(obj, key=repr):
            _feed(key, digest, seen)
            _feed(obj[key], digest, seen)
        put(b"}")
    elif isinstance(obj, (list, tuple)):
        put(f"{type(obj).__name__}:{len(obj)}[".encode())
        for item in obj:
            _feed(item, digest, seen)
        put(b"]")
    elif isinstance(obj, (set, frozenset)):
        _feed(sorted(obj, key=repr), digest, seen)
    elif id(obj) in seen:                       # a cycle: named, not followed
        put(f"<{type(obj).__name__}>;".encode())
    else:
        seen.add(id(obj))
        put(f"{type(obj).__module__}.{type(obj).__qualname__}(".encode())
        if dataclasses.is_dataclass(obj):
            fields = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
        elif hasattr(obj, "__dict__"):
            fields = vars(obj)
        else:
            fields = {"repr": repr(obj)}
        _feed(fields, digest, seen)
        put(b")")


def save(sim, path, *, keep_spikes: bool = True, extra_files: dict | None = None, cli: dict | None = None,
         spike_segments: bool = False) -> Path | None:
    """Writes a checkpoint of `sim` at its current step to the folder `path` (a collective call;
    rank 0 writes). An existing checkpoint at `path` is replaced; anything else is refused.
    extra_files: {name: bytes} written with it (`ranvier run`: config.toml); cli: `ranvier run`'s
    settings for --resume (its --out). spike_segments (`ranvier run`, spikes streamed to files):
    the spikes recorded since the last checkpoint go into a segment file beside the checkpoints
    (spikes-<first>-<end>.npz), which this and later checkpoints list, instead of every spike so
    far into each checkpoint: saving costs the same at the end of a long run as at its start.
    Returns the path on rank 0, None elsewhere."""
    from ..version import ranvier_version

    if sim.steps_done % sim.steps_per_cycle:     # the same on every rank: refused before any collective
        raise ConfigError(f"a checkpoint is taken at the end of a communication interval ({sim.cycle_ms:g} ms); "
                          f"this simulation stands at t = {sim.steps_done * sim.resolution_ms:g} ms, inside one: "
                          f"run to a multiple of {sim.cycle_ms:g} ms before saving")
    state = sim.engine_state()
    digest = sim.synapse_digest()
    parts = sim.comm.gather(state)
    counters = sim.comm.gather(sim.local_counters())
    if sim.rank != 0:
        sim.comm.barrier()
        return None
    path = Path(path)
    error = None
    try:
        columns = _merge(parts)
        totals = {k: int(sum(c[k] for c in counters)) + int(sim.counters_before.get(k, 0)) for k in counters[0]}
        segments = None
        if spike_segments and _streamed(sim.recording):
            segments = _write_segments(sim.recording, path.parent)
        files = {"state.npz": _npz(columns),
                 "network.pickle": pickle.dumps(sim.network, protocol=4),
                 "recording.npz": _npz(_recording_columns(sim, keep_spikes and segments is None)),
                 **(extra_files or {})}
        meta = {
            "format": FORMAT, "format_version": FORMAT_VERSION, "ranvier_version": ranvier_version(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "network": {"name": sim.network.name, "neurons": sim.network.size,
                        "description_sha256": network_digest(sim.network), "synapse_digest": str(digest)},
            "seed": sim.seed, "resolution_ms": sim.resolution_ms,
            "step": int(sim.steps_done), "time_ms": sim.steps_done * sim.resolution_ms,
            "drive_steps": int(sim.drive_steps),
            "counters": totals,
            **_counted(sim),
            "written_by": {"ranks": sim.size, "threads": sim.threads, "exchange": sim.exchange,
                           "placement": sim.placement, "overlap": sim.overlap},
            "files": {name: {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
                      for name, data in files.items()},
            **({"cli": cli} if cli is not None else {}),
            **({"spike_segments": segments} if segments is not None else {}),
        }
        _write_folder(path, files, meta)
    except OSError as e:
        error = e
    finally:
        sim.comm.barrier()
    if error is not None:
        raise error
    return path


def _counted(sim) -> dict:
    """What Result.check_conservation needs to know of the run up to now, resumes included: the
    most ranks any part ran on (each rank delivers a spike at most once), and whether the
    recording counted every spike (record_spikes=False counts none)."""
    before = sim.resumed_from or {}
    return {"counted_on_ranks": max(sim.size, int(before.get("counted_on_ranks", 0))),
            "every_spike_recorded": bool(sim.record_spikes) and bool(before.get("every_spike_recorded", True))}


def _merge(parts: list[dict]) -> dict:
    """Every rank's columns joined; spikes in flight once each."""
    names = sorted({k for p in parts for k in p})
    out = {}
    for name in names:
        arrays = [np.asarray(p[name]) for p in parts if name in p]
        out[name] = np.concatenate(arrays) if arrays else np.zeros(0)
    for name in ("engine.cycle", "engine.steps_per_cycle", "engine.drive_steps"):
        out[name] = out[name][:1]
    pairs = np.unique(np.stack([out["pending.step"], out["pending.gid"]], axis=1), axis=0) \
        if out["pending.gid"].size else np.zeros((0, 2), np.int64)
    out["pending.step"], out["pending.gid"] = pairs[:, 0].copy(), pairs[:, 1].copy()
    # Plastic synapses sorted by (source, delay, target), segments by (source, delay), once each:
    # every rank takes up its own with one merge (cpp/core/checkpoint.cpp). Each thread stores
    # its synapses nearly in that order, so a stable sort of one packed key is quick.
    for prefix in sorted({name.split(".")[0] for name in out if name.startswith("plastic")}):
        syn = [f"{prefix}.{k}" for k in ("source", "target", "delay", "weight")] + sorted(
            name for name in out if name.startswith(f"{prefix}.state"))     # the rule's state columns
        order = _synapse_order(out[f"{prefix}.source"], out[f"{prefix}.delay"], out[f"{prefix}.target"])
        for name in syn:
            out[name] = out[name][order]
        seg = [f"{prefix}.segment.{k}" for k in ("source", "delay", "last", "k_plus")]
        order = _synapse_order(out[seg[0]], out[seg[1]], np.zeros_like(out[seg[0]]))
        for name in seg:
            out[name] = out[name][order]
        src, dly = out[seg[0]], out[seg[1]]
        first = np.ones(src.size, dtype=bool)                     # one of each (source, delay)
        first[1:] = (src[1:] != src[:-1]) | (dly[1:] != dly[:-1])
        for name in seg:
            out[name] = out[name][first]
    return {name: _narrow(a) for name, a in out.items()}


def _synapse_order(source, delay, target) -> np.ndarray:
    """The stable order by (source, delay, target): one packed 64-bit key where the ids fit."""
    if source.size == 0:
        return np.zeros(0, dtype=np.int64)
    bits = max(1, int(max(source.max(), target.max())).bit_length())
    if 2 * bits + 16 <= 63 and delay.max() < 2**16:
        key = (source.astype(np.int64) << (bits + 16)) | (delay.astype(np.int64) << bits) | target.astype(np.int64)
        return np.argsort(key, kind="stable")
    return np.lexsort((target, delay, source))


def _narrow(a: np.ndarray) -> np.ndarray:
    """Integer columns in the smallest type that holds them (ids, delays, input rows): restore widens."""
    if a.dtype.kind not in "iu" or a.size == 0:
        return a
    lo, hi = int(a.min()), int(a.max())
    for t in (np.int8, np.int16, np.int32):
        if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max:
            return a.astype(t)
    return a


def _recording_columns(sim, keep_spikes: bool) -> dict:
    rec = sim.recording
    cols = {"rates": np.asarray(sim.rate_counts, dtype=np.int64)}
    if rec is None:
        return cols
    cols.update(counts=rec.counts, at_end=rec.at_end, kept=rec.kept,
                spikes_total=np.array([rec.spikes_total], np.int64))
    spikes = rec.spikes() if keep_spikes and not _counts_only(rec) else None
    if spikes is not None:
        cols["spike_ids"], cols["spike_steps"] = (np.asarray(a, dtype=np.int64) for a in spikes)
    return cols


def _streamed(rec) -> bool:
    from ..core.recording import FileRecording
    return isinstance(rec, FileRecording) and rec.error is None and not rec.closed


SEGMENT = "spikes-"                 # spike segments of a run: <folder>/spikes-<first>-<end>.npz


def _segment_range(path: Path) -> tuple[int, int] | None:
    try:
        first, end = path.stem[len(SEGMENT):].split("-")
        return int(first), int(end)
    except ValueError:
        return None


def _write_segments(rec, folder: Path) -> list[dict]:
    """The streamed spikes as a chain of segment files from 0 to those recorded now: the existing
    ones that fit, and one more for the rest. Segments that do not fit (left by a run resumed
    from an earlier checkpoint) are removed. Returns the chain, as the checkpoint lists it."""
    folder.mkdir(parents=True, exist_ok=True)
    ids_path, steps_path = rec.folder / rec.RAW["ids"], rec.folder / rec.RAW["steps"]
    for f in rec._raw.values():
        f.flush()
    count = ids_path.stat().st_size // 8
    found = sorted((r, p) for p in folder.glob(f"{SEGMENT}*.npz") if (r := _segment_range(p)) is not None)
    chain, end = [], 0
    for (first, last), p in found:
        if first == end and last <= count:
            chain.append(p)
            end = last
        else:
            p.unlink(missing_ok=True)
    if count > end:
        ids = np.memmap(ids_path, dtype=np.int64, mode="r", offset=end * 8, shape=(count - end,))
        steps = np.memmap(steps_path, dtype=np.int64, mode="r", offset=end * 8, shape=(count - end,))
        p = folder / f"{SEGMENT}{end:012d}-{count:012d}.npz"
        tmp = folder / f".{p.name}{STAGING_SUFFIX}"
        try:
            _write_synced(tmp, _npz({"ids": _narrow(np.asarray(ids)), "steps": _narrow(np.asarray(steps))}))
            os.replace(tmp, p)
        except BaseException:          # a full disk: no half-written segment stays
            tmp.unlink(missing_ok=True)
            raise
        finally:
            del ids, steps
        chain.append(p)
    return [{"name": p.name, "bytes": p.stat().st_size, "sha256": _sha256(p)} for p in chain]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def _counts_only(rec) -> bool:
    from ..core.recording import CountRecording
    return isinstance(rec, CountRecording)


def _npz(columns: dict) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **columns)
    return buffer.getvalue()


def _write_folder(path: Path, files: dict, meta: dict) -> None:
    """All files into a hidden sibling, flushed, then one rename: whole or not at all. An existing
    checkpoint at `path` is replaced, a damaged one too (a run resumed past it saves its step
    again); any other folder is refused."""
    if path.exists() and not (path.is_dir() and ((path / META).is_file() or all((path / f).is_file() for f in FILES))):
        raise OSError(f"'{path}' exists and is not a checkpoint")
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = json.loads(json.dumps(meta))         # as it will be read back (tuples as lists, ...)
    meta[META_DIGEST] = meta_digest(meta)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=STAGING_SUFFIX, dir=path.parent))
    try:
        for name, data in files.items():
            _write_synced(tmp / name, data)
        _write_synced(tmp / META, (json.dumps(meta, indent=1) + "\n").encode())
        os.chmod(tmp, 0o755)
        # an existing checkpoint at path: never a moment with neither (leftovers.replace_folder)
        replace_folder(tmp, path, holder_prefix=f".{path.name}.old.")
        sync_folder(path.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def meta_digest(meta: dict) -> str:
    """SHA-256 of checkpoint.json's fields but its digest, as canonical JSON (sorted keys, no
    spaces): the same for the dict written and the one read back."""
    body = {k: v for k, v in meta.items() if k != META_DIGEST}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


# -- reading ----------------------------------------------------------------------------------
class Checkpoint:
    """A checkpoint folder, checked (read_meta): complete, unchanged, of this format and Ranvier
    version. Files are read on demand."""

    def __init__(self, path):
        self.path = Path(path)
        self.meta = read_meta(self.path)

    @property
    def step(self) -> int:
        return int(self.meta["step"])

    def network(self):
        return load_network(self.path / "network.pickle", f"checkpoint '{self.path}'")

    def columns(self, name: str) -> dict:
        with np.load(self.path / name) as z:
            return {k: z[k] for k in z.files}


class _NetworkUnpickler(pickle.Unpickler):
    """Unpickles Ranvier's network classes and NumPy's arrays, nothing else (see NETWORK_MODULES)."""

    def __init__(self, stream, where: str):
        super().__init__(stream)
        self.where = where

    def find_class(self, module, name):
        if (module, name) in NUMPY_GLOBALS:
            return super().find_class(module, name)
        if module in NETWORK_MODULES:
            import importlib
            found = getattr(importlib.import_module(module), name, None)
            if isinstance(found, type) and found.__module__ in NETWORK_MODULES:   # defined or re-exported there
                return found
        raise ConfigError(f"{self.where}: network.pickle names {module}.{name}, which is not one of Ranvier's network "
                          f"classes: refused, since unpickling it could run code; give the network to resume "
                          f"(Simulation.resume(path, network=...)) or resume a checkpoint Ranvier wrote")


def load_network(path: Path, where: str):
    """network.pickle read back with Ranvier's network classes alone (_NetworkUnpickler)."""
    from ..core.network import Network

    try:
        with open(path, "rb") as stream:
            network = _NetworkUnpickler(stream, where).load()
    except ConfigError:
        raise
    except Exception as e:          # digests matched, yet not a pickle of a network (a crafted one)
        raise ConfigError(f"{where}: network.pickle could not be read ({e.__class__.__name__}: {e}); give the "
                          f"network to resume (Simulation.resume(path, network=...))") from None
    if not isinstance(network, Network):
        raise ConfigError(f"{where}: network.pickle holds a {type(network).__name__}, not a ranvier.Network")
    return network


class Refused(ConfigError):
    """A checkpoint that cannot be resumed. The message names the checkpoint; `reason` says why
    without it (the note on a skipped checkpoint)."""

    def __init__(self, path: Path, predicate: str, reason: str):
        super().__init__(f"checkpoint '{path}' {predicate}")
        self.path, self.reason = path, reason


def read_meta(path: Path) -> dict:
    """checkpoint.json, checked: a Ranvier checkpoint of this format and version, its own digest
    and every file it lists present with its size and hash; else one line (Refused)."""
    from ..version import ranvier_version

    def refuse(predicate: str, reason: str):
        raise Refused(path, predicate, reason)

    if not path.is_dir():
        raise ConfigError(f"checkpoint '{path}': no such folder; give a folder written by Simulation.save or "
                          f"--checkpoint-every")
    try:
        meta = json.loads((path / META).read_text())
    except FileNotFoundError:
        refuse(f"is incomplete or not a checkpoint: {META} is missing", f"{META} is missing")
    except (OSError, ValueError, UnicodeDecodeError) as e:
        refuse(f"is damaged: {META} is unreadable ({e.__class__.__name__})",
               f"{META} is unreadable ({e.__class__.__name__})")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        refuse(f"is damaged or foreign: {META} is not a Ranvier checkpoint's", f"{META} is not a Ranvier checkpoint's")
    written_by = meta.get("ranvier_version")
    if meta.get("format_version") != FORMAT_VERSION:
        refuse(f"was written by Ranvier {written_by} in checkpoint format {meta.get('format_version')}; this "
               f"Ranvier ({ranvier_version()}) reads format {FORMAT_VERSION}: resume it with the version that wrote it",
               f"{META} is of checkpoint format {meta.get('format_version')}, not {FORMAT_VERSION}")
    if meta.get(META_DIGEST) != meta_digest(meta):
        refuse(f"is damaged: {META} does not match its digest (its field {META_DIGEST}): it was edited or damaged "
               f"after it was written", f"{META} does not match its digest (edited or damaged)")
    if written_by != ranvier_version():
        refuse(f"was written by Ranvier {written_by}; this is Ranvier {ranvier_version()}, and a checkpoint resumes only "
               f"in the Ranvier version that wrote it (another may integrate or draw differently): resume it with "
               f"Ranvier {written_by} (pip install 'ranvier=={written_by}'), or start the run again with this one",
               f"written by Ranvier {written_by}, not by this Ranvier ({ranvier_version()})")
    listed = meta.get("files", {}) if isinstance(meta.get("files"), dict) else {}
    for name in sorted(set(FILES) | set(listed)):
        info = listed.get(name)
        if info is None or not _plain_name(name) or not (path / name).is_file():
            refuse(f"is incomplete: {name} is missing", f"{name} is missing")
        _check_file(refuse, path / name, name, info)
    for info in meta.get("spike_segments", []):      # beside the checkpoint, shared with the run's others
        name = info["name"]
        f = path.parent / str(name)
        if not (_plain_name(name) and name.startswith(SEGMENT)) or not f.is_file():
            refuse(f"is incomplete: its spike segment {f} is missing", f"its spike segment {f} is missing")
        _check_file(refuse, f, name, info)
    return meta


def _plain_name(name) -> bool:
    """A file name that stays in its folder (a crafted checkpoint could list '../x')."""
    return isinstance(name, str) and name not in ("", ".", "..") and Path(name).name == name


def _check_file(refuse, f: Path, name: str, info: dict) -> None:
    size = f.stat().st_size
    if size != info["bytes"]:
        refuse(f"is truncated or damaged: {name} has {size} bytes, {info['bytes']} were written",
               f"{name} has {size} bytes, {info['bytes']} were written (truncated or damaged)")
    if _sha256(f) != info["sha256"]:
        refuse(f"is damaged: {name} does not match the SHA-256 written with it",
               f"{name} does not match the SHA-256 written with it")


def _candidates(folder: Path) -> list[tuple[int, Path]]:
    """The checkpoint folders of a run (<folder>/step-<step>), with their steps."""
    found = []
    for p in folder.glob(f"{PREFIX}*"):
        digits = p.name[len(PREFIX):]
        if digits.isdigit() and p.is_dir():
            found.append((int(digits), p))
    return found


def _newest_readable(candidates: list[tuple[int, Path]], where: str) -> Path:
    """The newest candidate that read_meta accepts; each newer one is named with its reason in a
    note on stderr. None accepted: one line with the newest's reason."""
    skipped = []
    for _, p in sorted(candidates, reverse=True):
        try:
            read_meta(p)
        except Refused as e:
            skipped.append(e)
            continue
        for e in skipped:
            _note(f"skipped checkpoint '{e.path}': {e.reason}; resuming '{p}'")
        return p
    if skipped:
        raise ConfigError(f"{where}: no complete checkpoint there; the newest, {skipped[0]}")
    raise ConfigError(f"{where}: no complete checkpoint there (folders {PREFIX}<step> with {META})")


def _note(message: str) -> None:
    """One line on stderr, from the first rank only (the others read the same folders)."""
    from ..runtime.parallel import launcher_rank
    if launcher_rank() == 0:
        print(f"ranvier: note: {message}", file=sys.stderr, flush=True)


def newest(folder) -> Path:
    """The newest complete checkpoint in a run's checkpoint folder (or the folder itself if it is
    one); a damaged newer one is skipped with a note that says why."""
    folder = Path(folder)
    if (folder / META).is_file():
        return folder
    return _newest_readable(_candidates(folder), f"'{folder}'")


def find_for_resume(where) -> Path:
    """`ranvier run --resume WHERE`: a checkpoint, a folder of them, or a run's --out folder (its
    checkpoints are in DIR/checkpoints once it ended, in DIR.checkpoints while it ran): the newest
    complete checkpoint among them (a damaged newer one skipped with a note)."""
    where = Path(where)
    if (where / META).is_file():
        read_meta(where)
        return where
    folders = [f for f in (where, where / "checkpoints", Path(str(where).rstrip("/") + ".checkpoints")) if f.is_dir()]
    candidates = [c for folder in folders for c in _candidates(folder)]
    if not candidates:
        raise ConfigError(f"--resume '{where}': no complete checkpoint there (looked in "
                          f"{', '.join(str(f) for f in folders) or 'a folder that does not exist'}); runs write them "
                          f"with --checkpoint-every")
    return _newest_readable(candidates, f"--resume '{where}'")


def prune(folder, keep: int) -> None:
    """Removes all but the newest `keep` complete checkpoints of a run, and leftovers of unfinished ones."""
    folder = Path(folder)
    complete = sorted(p for p in folder.glob(f"{PREFIX}*") if p.is_dir() and (p / META).is_file())
    for old in complete[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    recover_checkpoints(folder)


def carry_over(finished, running) -> None:
    """A finished run resumed into its own folder: its checkpoints (DIR/checkpoints) join the
    resumed run's (DIR.checkpoints), so that replacing DIR at the end does not lose them."""
    finished, running = Path(finished), Path(running)
    if not finished.is_dir():
        return
    running.mkdir(exist_ok=True)
    for item in [*finished.glob(f"{PREFIX}*"), *finished.glob(f"{SEGMENT}*.npz")]:
        if not (running / item.name).exists():
            os.replace(item, running / item.name)


def move_into(folder, destination) -> None:
    """A run's checkpoint folder moved into its published results (nothing if it has none)."""
    folder, destination = Path(folder), Path(destination)
    if folder.is_dir():
        prune(folder, len(list(folder.glob(f"{PREFIX}*"))) or 1)     # leftovers only
        os.replace(folder, destination)


def check_against(meta: dict, network, seed, resolution_ms) -> None:
    """Refuses, before the build, a checkpoint of another network, seed or resolution."""
    where = "the checkpoint"
    if seed is not None and seed != meta["seed"]:
        raise ConfigError(f"{where} is of seed {meta['seed']}, not {seed}: resume with seed={meta['seed']} (or "
                          f"leave the seed out)")
    if resolution_ms is not None and float(resolution_ms) != float(meta["resolution_ms"]):
        raise ConfigError(f"{where} was written at resolution {meta['resolution_ms']} ms, not {resolution_ms} ms")
    if network is not None:
        saved = meta["network"]
        if network.name != saved["name"] or network.size != saved["neurons"]:
            raise ConfigError(f"{where} is of another network: '{saved['name']}' with {saved['neurons']:,} neurons, "
                              f"not '{network.name}' with {network.size:,}")
        if network_digest(network) != saved["description_sha256"]:
            raise ConfigError(f"{where} is of another network: '{network.name}' with other parameters, "
                              f"projections or drives than the one saved; resume without a network to use the saved one")


def restore(sim, ck: Checkpoint) -> None:
    """Takes up the checkpoint in a freshly built simulation (a collective call)."""
    meta = ck.meta
    step = ck.step
    digest = sim.synapse_digest()
    if str(digest) != meta["network"]["synapse_digest"]:
        raise ConfigError(f"checkpoint '{ck.path}' is of another network: the synapses built from seed "
                          f"{meta['seed']} differ from the saved ones (another connectivity, or a Ranvier "
                          f"that draws them differently)")
    if step % sim.steps_per_cycle:
        raise ConfigError(f"checkpoint '{ck.path}' was taken at step {step}, inside this run's communication "
                          f"interval of {sim.steps_per_cycle} steps ({sim.cycle_ms:g} ms); resume with the "
                          f"overlap setting it was written with ({meta['written_by']['overlap']})")
    if sim.global_interval > 1 and (step // sim.steps_per_cycle) % sim.global_interval:
        raise ConfigError(f"checkpoint '{ck.path}' was taken at step {step}, inside a two-tier window of "
                          f"{sim.global_interval} cycles; resume with another exchange or global_interval")
    if int(meta["drive_steps"]) != sim.drive_steps:
        raise ConfigError(f"checkpoint '{ck.path}' drew the drive in windows of {meta['drive_steps']} steps, "
                          f"this simulation in {sim.drive_steps}")
    columns = ck.columns("state.npz")
    ints = {k: np.ascontiguousarray(v, dtype=np.int64) for k, v in columns.items() if v.dtype.kind in "iu"}
    reals = {k: np.ascontiguousarray(v, dtype=np.float64) for k, v in columns.items() if v.dtype.kind == "f"}
    try:
        sim.restore_engine_state(ints, reals, step)
    except ValueError as e:
        raise ConfigError(f"checkpoint '{ck.path}': {e}") from None
    sim.steps_done = step
    sim.counters_before = {k: v for k, v in meta["counters"].items() if k not in NOT_CUMULATIVE}
    # scheduled again on restore: the events that were pending at the checkpoint
    sim.counters_before["events_scheduled"] -= int(meta["counters"]["events_pending"])
    sim.resumed_from = {"checkpoint": str(ck.path), "step": step, "time_ms": step * sim.resolution_ms,
                        "written_by": meta["written_by"], "counted_on_ranks": int(meta["counted_on_ranks"]),
                        "every_spike_recorded": bool(meta["every_spike_recorded"])}
    if sim.rank == 0:
        _restore_recording(sim, ck.columns("recording.npz"))
        if "spike_segments" in meta and sim.recording is not None and not _counts_only(sim.recording):
            empty = np.zeros((sim.size, 0, len(sim.recording.phases)))
            for info in meta["spike_segments"]:          # one at a time: memory stays flat
                with np.load(ck.path.parent / info["name"]) as z:
                    sim.recording._add(z["ids"].astype(np.int64), z["steps"].astype(np.int64), empty)


def _restore_recording(sim, cols: dict) -> None:
    rates = cols["rates"]
    sim.restore_rate_counts(rates)
    if "counts" not in cols:
        return
    rec = sim.recording = sim.new_recording()
    rec.counts[:] = cols["counts"]
    rec.at_end[:] = cols["at_end"]
    rec.kept[:] = cols["kept"]
    rec.spikes_total = int(cols["spikes_total"][0])
    if "spike_ids" in cols and not _counts_only(rec):
        empty = np.zeros((sim.size, 0, len(rec.phases)))
        rec._add(cols["spike_ids"], cols["spike_steps"], empty)
