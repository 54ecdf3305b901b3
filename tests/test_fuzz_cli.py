"""Bad input, systematically: hypothesis generates `ranvier run` invocations, valid and broken,
and requires of every one of them one of two outcomes.

Generated: a small run of a real model (dpsnn, plastic or not, artificial-cells, mam-benchmark:
a few hundred neurons, tens of ms) whose settings go into a TOML config file (the sections and
keys of examples/*.toml and ranvier.io.config: model, [parameters], [simulation]), into flags, or
both, with optional valid flags (--out new, nested, absolute, an empty folder, an earlier result
with --force; --record-state, --record-spikes-of, --record-weights, --checkpoint-every, --energy,
--no-barrier, --quiet); then none, one or two breakages: in the file, wrong types, zero,
negative, NaN, infinite, tiny and huge numbers, unknown keys and tables, a missing or unknown
model, broken TOML syntax, bytes that are not UTF-8, a folder, a missing path or 1 MiB instead of
the file; on the command line, each flag's broken values, unknown flags, a missing value, an
empty or extra positional, --set in every malformed form, two models, flags that need another,
and --out paths that are empty, too long, under a regular file, an existing folder without
--force, a folder of the user's with --force, the current folder, '/', a symbolic link.

Required of each case, run in a fresh working folder:
- exit 0 (every case with no breakage): the summary table on stdout (unless --quiet); with --out
  DIR, DIR holds every file of a run (config.toml that reads back to the same model,
  summary.json, environment.json, spikes.h5 with the spikes summary.json counts, timers.h5, the
  marker; state.h5 with --record-state, weights.h5 for plastic networks, checkpoints/ with
  --checkpoint-every); on stderr only the run's own lines: `ranvier: built ...`, notes, the
  progress lines, and `ranvier: warning:` (the CLI warns deliberately when --threads 2 is more
  than the cores); nothing else new in the folder;
- exit 2 (every case with a breakage): exactly one line on stderr, starting `ranvier: error:`,
  nothing on stdout, and the working folder exactly as it was: no output folder, no staging
  folder or lock file, no parent folder made;
- never a traceback, never another exit status, never more than CASE_SECONDS.

Cases call ranvier.cli.main in this process (milliseconds for a refusal, a fraction of a second
for a run); CHILD_CASES of them run again as `python -m ranvier` in a child
(test_child_process_agrees), to show that the in-process harness sees what a user sees: the same
status and the same error line. Deterministic: derandomize, no example database; IN_PROCESS_CASES
= 600 cases per run, counted by test_tally.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import h5py
import pytest
from conftest import subprocess_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ranvier import cli
from ranvier.bench import restore_cpus
from ranvier.io.output import MARKER, STAGING_SUFFIX
from ranvier.core.simulation import EXCHANGES

CASE_SECONDS = 30                 # one case, valid run included (they take well under a second)
IN_PROCESS_CASES = 600            # cases per CI run of test_every_case_is_a_run_or_one_line (>= 500)
CHILD_CASES = 12                  # of them, again as a child process
RUN_FILES = {MARKER, "config.toml", "environment.json", "spikes.h5", "summary.json", "timers.h5"}

OK, REFUSED = "exit 0", "exit 2"

# -- the valid runs: every model small ---------------------------------------------------------------
# model -> parameter -> its valid small values (the parameters that set the run's size)
SIZES = {
    "dpsnn": {"neurons": st.integers(200, 500), "synapses_per_neuron": st.integers(5, 40)},
    "artificial-cells": {"cells": st.integers(100, 500), "targets_per_cell": st.integers(1, 40)},
    "mam-benchmark": {"n_areas": st.integers(2, 3), "area_size": st.integers(50, 150), "K": st.integers(5, 20)},
}
# model -> other parameters with valid values (a --set or [parameters] line that changes the dynamics)
TUNING = {
    "dpsnn": {"theta_mV": st.sampled_from([18.0, 20.0, 22.5]), "initial": st.sampled_from(["reset", "uniform"]),
              "external_rate_exc_hz": st.sampled_from([2.0, 3.16676, 5]), "regime": st.sampled_from(["aw", "swa"]),
              "plasticity": st.sampled_from(["none", "stdp"])},       # stdp: weights.h5 too
    "artificial-cells": {"isi_min_ms": st.sampled_from([5.0, 10.0]), "delay_ms": st.sampled_from([1.0, 2.0])},
    "mam-benchmark": {"rate_hz": st.sampled_from([1.0, 2.5]), "frac_intra": st.sampled_from([0.3, 0.5])},
}
DURATIONS_MS = [10.0, 20.0, 30.0]
# [simulation] settings and their valid values for a single process (any model above)
SIMULATION = {
    "threads": st.sampled_from([1, 2]),
    "exchange": st.sampled_from([e for e in EXCHANGES if e != "two-tier"]),
    "placement": st.sampled_from(["round-robin", "block"]),
    "seed": st.integers(0, 2**63 - 1),
    "resolution_ms": st.sampled_from([0.1, 0.05]),
    "barrier": st.booleans(),
    "overlap": st.booleans(),
    "pace": st.just(False),
}
# the flag of each [simulation] setting and how its value is written there
FLAG_OF = {"duration_ms": "--duration-ms", "threads": "--threads", "exchange": "--exchange",
           "placement": "--placement", "seed": "--seed", "resolution_ms": "--resolution-ms"}


@dataclasses.dataclass
class Draft:
    """A case being generated: the run's settings, where they go, and what breaks it."""
    model: str
    parameters: dict
    simulation: dict
    in_file: bool                           # settings in a config file (else only flags)
    file_name: str = "run.toml"
    model_line: object = None               # the file's `model = ...` value (None: no such line)
    model_flag: bool = False                # --model MODEL with the file
    file_missing: bool = False              # the config file is not made
    file_only: set = dataclasses.field(default_factory=set)  # settings that stay in the file
    extra_flags: list = dataclasses.field(default_factory=list)
    out: str | None = None                  # --out
    force: bool = False
    quiet: bool = False
    files: list = dataclasses.field(default_factory=list)    # (path, kind, content) made first
    text_breaks: list = dataclasses.field(default_factory=list)
    broken: list = dataclasses.field(default_factory=list)   # what is broken, for messages
    outputs: set = dataclasses.field(default_factory=set)    # files beyond RUN_FILES an exit 0 writes


@dataclasses.dataclass
class Case:
    argv: list
    files: list
    expect: str
    broken: list
    out: str | None
    outputs: set
    quiet: bool
    model: str

    def __str__(self):
        made = ", ".join(f"{p} ({k})" for p, k, _ in self.files)
        return f"ranvier {' '.join(map(repr, self.argv))}\n  files: {made}\n  broken: {self.broken}"


# -- breakages -------------------------------------------------------------------------------------
NOT_A_NUMBER = ["ten", True, [1, 2], {"a": 1}, "", "1e3"]
BAD_NUMBERS = {             # [simulation] key -> values that must be refused
    "duration_ms": [0, -10.0, math.nan, math.inf, -math.inf, 1e12, 1e300, 1.7e308, 10.05, *NOT_A_NUMBER],
    "resolution_ms": [0, -0.1, math.nan, math.inf, 0.3, 1e300, 1e-320, *NOT_A_NUMBER],
    "threads": [0, -1, 10**6, 2**62, 1.5, *NOT_A_NUMBER],
    "seed": [-1, 1.5, *NOT_A_NUMBER],
    "exchange": ["carrier-pigeon", "", 3, True, ["allgather"]],
    "placement": ["diagonal", "", 3, False],
    "barrier": [1, "yes", 0.0],
    "overlap": [1, "no", [True]],
    "pace": [0, "true"],
    "global_interval": [0, -3, 1.5, "x"],
    "tier_exchange": ["carrier-pigeon", 3],
    "initial_weights": [3, "", True],
    "record_weights": [-1, 1.5, "x", True],
    "weight_interval_ms": [0, -1.0, math.nan, "x"],
    "record_state": ["0,1", [1.5], [-1], 3, [True]],
    "record_state_interval_ms": [0, -0.1, math.nan, "x"],
    "record_spikes_of": ["0,1", [-1], 3, [0.5]],
}
BAD_SIZES = [0, -5, 1.5, math.nan, math.inf, "many", True, 2**40, 2**62, [100]]
DEGREES = {"synapses_per_neuron", "targets_per_cell", "K"}      # 0 is a valid degree: no synapses


def _break_simulation_value(draw, d):
    overridden = {"barrier" if flag == "--no-barrier" else flag[2:].replace("-", "_") for flag in d.extra_flags
                  if isinstance(flag, str) and flag.startswith("--")}     # a flag would replace the value
    key = draw(st.sampled_from(sorted(set(BAD_NUMBERS) - overridden)))
    value = draw(st.sampled_from(BAD_NUMBERS[key]))
    d.in_file = True
    d.simulation[key] = value
    d.file_only.add(key)          # "1e3" is a bad duration in TOML, a good one as --duration-ms
    return f"[simulation] {key} = {value!r}"


def _break_size(draw, d):
    key = draw(st.sampled_from(sorted(SIZES[d.model])))
    value = draw(st.sampled_from(BAD_SIZES))
    if key in DEGREES and value == 0:
        value = -2
    d.in_file = True
    d.parameters[key] = value
    return f"[parameters] {key} = {value!r}"


def _break_parameter_type(draw, d):
    key = draw(st.sampled_from(sorted(TUNING[d.model])))
    value = draw(st.sampled_from([math.nan, math.inf, -math.inf, [1.0], {"x": 1}, "x" if key != "initial" else 3]))
    d.in_file = True
    d.parameters[key] = value
    return f"[parameters] {key} = {value!r}"


def _unknown_key(draw, d):
    where = draw(st.sampled_from(["top", "simulation", "parameters", "table"]))
    name = draw(st.sampled_from(["durration_ms", "nuerons", "Threads", "seed ", "x"]))
    d.in_file = True
    if where == "simulation":
        d.simulation[name] = 1
    elif where == "parameters":
        d.parameters[name] = 1
    else:
        d.text_breaks.append(f"{name.strip()}x = 1\n" if where == "top" else f"[{name.strip()}x]\na = 1\n")
    return f"unknown key {name!r} ({where})"


def _bad_model(draw, d):
    value = draw(st.sampled_from(["", "nope", "DPSNN", " dpsnn", 5, True, ["dpsnn"], "sonata", "missing"]))
    if value == "missing" and d.model == "dpsnn":
        value = "dpsnn-grid"
    d.in_file, d.model_flag = True, False
    d.model_line = None if value == "missing" else value     # missing: dpsnn, with another model's parameters
    return f"model = {value!r}"


def _broken_syntax(draw, d):
    d.in_file = True
    d.text_breaks.append(draw(st.sampled_from([
        "model = dpsnn = 3\n", "[simulation\n", "neurons = \n", 'name = "unterminated\n', "= 5\n",
        "[parameters]\n[parameters]\n", "a = 1\na = 2\n", "key: 1\n", "x = [1, 2\n", "x = 1 2\n",
        "x = \x00\n", "[[simulation]]\n"])))
    return f"TOML syntax {d.text_breaks[-1]!r}"


def _not_utf8(draw, d):
    d.in_file = True
    d.text_breaks.append(draw(st.sampled_from([b"# \xff\xfe\n", b"x = \"\xc3\x28\"\n", b"\x80\n",
                                               b"# \xed\xa0\x80\n"])))
    return f"bytes that are not UTF-8 {d.text_breaks[-1]!r}"


def _not_a_file(draw, d):
    kind = draw(st.sampled_from(["directory", "missing", "too large", "missing model-like"]))
    d.in_file = True
    if kind == "directory":
        d.file_name = draw(st.sampled_from(["confdir.toml", "confdir/"]))
        d.files.append((d.file_name.rstrip("/"), "dir", None))
    elif kind == "missing":
        d.file_name = draw(st.sampled_from(["missing.toml", "sub/missing.toml", "./nope"]))
    elif kind == "too large":
        d.text_breaks.append("#" * (1 << 20) + "\n")
    else:                       # a bare word that is neither a model nor a file
        d.file_name = "dpsn"
    d.file_missing = kind in ("missing", "missing model-like")
    return f"config file: {kind} ({d.file_name})"


BAD_FLAG_VALUES = {
    "--duration-ms": ["", "ten", "0", "-5", "nan", "inf", "1e400", "1e308", "1e12", "10.05", "0x10", "10ms"],
    "--threads": ["", "0", "-1", "1.5", "two", "1000000", "99999999999999999999999"],
    "--seed": ["", "-1", str(2**64), "abc", "1e3", "1.0"],
    "--neurons": ["", "0", "-5", "1.5", str(2**40), "many"],
    "--resolution-ms": ["", "0", "-0.1", "nan", "inf", "0.3", "1e-9", "1e300", "5e-324", "x"],
    "--exchange": ["", "carrier-pigeon", "ALLGATHER"],
    "--placement": ["", "diagonal"],
    "--model": ["", "nope", "DPSNN", "sonata"],
    "--energy": ["", "solar"],
    "--baseline-s": ["", "-1", "nan", "inf", "x"],
    "--global-interval": ["0", "-2", "x"],
    "--tier-exchange": ["two-tier", "x"],
    "--record-weights": ["0", "-1", "x"],
    "--weight-interval-ms": ["0", "-1", "nan", "x"],
    "--record-state": ["", "a", "5-1", "-3", "1,,2", "1000000", "0-999999999999"],
    "--record-state-interval-ms": ["0", "-1", "x", "0.03"],
    "--record-spikes-of": ["", "x", "3-1", "1000000"],
    "--checkpoint-every": ["", "10", "0ms", "-5ms", "nans", "1e400ms"],
    "--checkpoint-keep": ["0", "-1", "x"],
    "--initial-weights": ["missing.h5", "", "."],
    "--resume": ["missing", "", "."],
    "--mpi-fit": ["missing.json", "", "."],
    "--power-trace": ["missing.csv", "", "."],
    "--power-model": ["", "static=x", "bogus", "static=-5"],
    "--clock-offset-s": ["x", ""],
}


# the flags in groups, each group one breakage of BREAKAGES, so that every flag comes up often
FLAG_GROUPS = [["--duration-ms", "--threads", "--seed", "--neurons", "--resolution-ms"],
               ["--exchange", "--placement", "--model", "--energy", "--tier-exchange", "--global-interval"],
               ["--record-weights", "--weight-interval-ms", "--record-state", "--record-state-interval-ms",
                "--record-spikes-of", "--checkpoint-every", "--checkpoint-keep"],
               ["--initial-weights", "--resume", "--mpi-fit", "--power-trace", "--power-model", "--clock-offset-s",
                "--baseline-s"]]
assert sorted(sum(FLAG_GROUPS, [])) == sorted(BAD_FLAG_VALUES)


def _bad_flag_value(flags):
    def breakage(draw, d):
        flag = draw(st.sampled_from(flags))
        value = draw(st.sampled_from(BAD_FLAG_VALUES[flag]))
        d.extra_flags += [flag, value]
        return f"{flag} {value!r}"
    return breakage


def _bad_set(draw, d):
    value = draw(st.sampled_from([
        "neurons", "=5", "nuerons=300", "theta_mV=high", "neurons=-5", "neurons=[1,2]", "neurons={a=1}",
        "neurons=", "theta_mV=nan", "theta_mV=inf", "neurons=1e3", "neurons=true", " = ", "tau_x=3",
        "neurons=99999999999999999999"]))
    if d.model != "dpsnn" and value.startswith("theta_mV"):
        value = "isi_min_ms=nan" if d.model == "artificial-cells" else "rate_hz=nan"
    d.extra_flags += ["--set", value]
    return f"--set {value!r}"


def _bad_words(draw, d):
    words = draw(st.sampled_from([
        ["--nerons", "300"], ["--dur", "10"], ["-x"], ["--duration-ms"], ["--threads"], ["--out"], ["--set"],
        ["--quiet=1"], ["extra"], ["--force=yes"], ["--", "x"], ["--neurons", "300", "--neurons"],
        ["--help-me"], [""], ["--model", ""]]))
    d.extra_flags.append(words)           # a list: goes last, so a missing value stays missing
    return f"words {words!r}"


def _bad_out(draw, d):
    kind = draw(st.sampled_from(["empty", "blank", "too long", "under a file", "non-empty folder",
                                 "user folder with --force", "current folder", "parent folder", "symlink",
                                 "long component deep", "root"]))
    d.force = False
    if kind == "empty":
        d.out = ""
    elif kind == "blank":
        d.out = "   "
    elif kind == "too long":
        d.out = "o" * 300
    elif kind == "long component deep":
        d.out = "a/b/" + "o" * 300 + "/c"
    elif kind == "under a file":
        d.files.append(("afile", "file", b"mine\n"))
        d.out = draw(st.sampled_from(["afile/out", "afile/deeper/out"]))
    elif kind == "non-empty folder":
        d.files += [("results", "dir", None), ("results/keep.txt", "file", b"mine\n")]
        d.out = "results"
    elif kind == "user folder with --force":
        d.files += [("results", "dir", None), ("results/keep.txt", "file", b"mine\n")]
        d.out, d.force = "results", True
    elif kind == "current folder":
        d.out = draw(st.sampled_from([".", "./", "@ABS@"]))
    elif kind == "parent folder":
        d.out = ".."
    elif kind == "symlink":
        d.files += [("real", "dir", None), ("link", "symlink", "real")]
        d.out = "link"
    else:
        d.out = "/"
    return f"--out {d.out!r} ({kind})"


def _conflict(draw, d):
    kind = draw(st.sampled_from(["two models", "checkpoint without out", "spikes of without out",
                                 "resume with config", "weights"]))
    if kind == "two models":      # MODEL --model OTHER, or a file of MODEL with --model OTHER
        d.model_flag = False
        d.extra_flags += ["--model", next(m for m in sorted(SIZES) if m != d.model)]
    elif kind == "checkpoint without out":
        d.out = None
        d.extra_flags += ["--checkpoint-every", "5ms"]
    elif kind == "spikes of without out":
        d.out = None
        d.extra_flags += ["--record-spikes-of", "0-9"]
    elif kind == "resume with config":
        d.in_file = True
        d.files.append(("ckpt", "dir", None))
        d.extra_flags += ["--resume", "ckpt"]
    else:                         # weights of a network without plastic projections
        d.parameters.pop("plasticity", None)
        d.extra_flags += ["--record-weights", "3"]
    return kind


BREAKAGES = [_break_simulation_value, _break_size, _break_parameter_type, _unknown_key, _bad_model,
             _broken_syntax, _not_utf8, _not_a_file, *map(_bad_flag_value, FLAG_GROUPS), _bad_set, _bad_words,
             _bad_out, _conflict]


# -- rendering ------------------------------------------------------------------------------------
def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(value)


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)     # "seed " is not seed


def _flag_value(value) -> str:
    return repr(value) if isinstance(value, float) else str(value)


@st.composite
def cases(draw) -> Case:
    first = draw(st.sampled_from([None] * 6 + BREAKAGES))    # a fifth or more are valid runs
    model = draw(st.sampled_from(sorted(SIZES)))
    sizes = {k: draw(s) for k, s in SIZES[model].items()}
    tuning = {k: draw(TUNING[model][k]) for k in draw(st.lists(st.sampled_from(sorted(TUNING[model])),
                                                                 max_size=2, unique=True))}
    simulation = {"duration_ms": draw(st.sampled_from(DURATIONS_MS))}
    for key in draw(st.lists(st.sampled_from(sorted(SIMULATION)), max_size=4, unique=True)):
        simulation[key] = draw(SIMULATION[key])
    if model == "mam-benchmark" and simulation.get("overlap"):
        simulation["resolution_ms"] = 0.05     # overlap needs an even minimum delay: 0.1 ms in 2 steps
    d = Draft(model=model, parameters={**sizes, **tuning}, simulation=simulation, in_file=draw(st.booleans()))
    # with a file, the model is named there, or by --model (the file then omits it), or omitted (dpsnn)
    d.model_flag = draw(st.booleans())
    d.model_line = None if d.model_flag or (model == "dpsnn" and draw(st.booleans())) else model
    d.quiet = draw(st.booleans())
    d.file_name = draw(st.sampled_from(["run.toml", "configs/run.toml", "runconf"]))   # runconf: a file all the same
    # optional valid flags and outputs
    out_kind = draw(st.sampled_from(["none", "new", "nested", "absolute", "empty folder", "replace"]))
    if out_kind == "new":
        d.out = "out"
    elif out_kind == "nested":
        d.out = "a/b/out"
    elif out_kind == "absolute":
        d.out = "@ABS@/out"
    elif out_kind == "empty folder":
        d.files.append(("out", "dir", None))
        d.out = "out"
    elif out_kind == "replace":
        d.files += [("out", "dir", None), (f"out/{MARKER}", "file", b"{}\n"), ("out/spikes.h5", "file", b"old")]
        d.out, d.force = "out", True
    if draw(st.booleans()):       # spikes of some neurons only: written to spikes.h5, so with --out
        flag = draw(st.sampled_from(["--record-state", "--record-spikes-of"] if d.out else ["--record-state"]))
        d.extra_flags += [flag, draw(st.sampled_from(["0", "0,5,10-19", "3-4"]))]
        if flag == "--record-state" and d.out is not None:
            d.outputs.add("state.h5")
    if d.parameters.get("plasticity") == "stdp" and d.out is not None:
        d.outputs.add("weights.h5")
        if draw(st.booleans()):
            d.extra_flags += ["--record-weights", "2", "--weight-interval-ms", "5"]
    if d.out is not None and draw(st.integers(0, 9)) == 0:
        d.extra_flags += ["--checkpoint-every", "10ms", "--checkpoint-keep", "1"]
        d.outputs.add("checkpoints")
    if draw(st.integers(0, 3)) == 0:
        d.extra_flags += ["--energy", draw(st.sampled_from(["none", "auto"]))]
    if draw(st.integers(0, 3)) == 0:
        d.extra_flags.append("--no-barrier")

    # none, one or two breakages: the first drawn first, where hypothesis draws most evenly
    for breakage in (first, draw(st.sampled_from([None, None, None, *BREAKAGES])) if first else None):
        if breakage is not None:
            d.broken.append(breakage(draw, d))
    return _render(draw, d)


def _render(draw, d: Draft) -> Case:
    """The files and the command line of a draft."""
    argv = ["run"]
    flags = []
    if d.in_file:
        lines = []
        if d.model_line is not None:
            lines.append(f"model = {_toml_value(d.model_line)}")
        if d.model_flag:
            flags += ["--model", d.model]
        # which settings go to the file, which to flags: every one in the file unless drawn for flags
        movable = sorted(set(FLAG_OF) & set(d.simulation) - d.file_only)
        on_flags = set(draw(st.lists(st.sampled_from(movable), unique=True))) if movable else set()
        lines.append("\n[parameters]")
        lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in d.parameters.items()]
        lines.append("\n[simulation]")
        lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in d.simulation.items() if k not in on_flags]
        flags += [x for k in on_flags for x in (FLAG_OF[k], _flag_value(d.simulation[k]))]
        text = ("\n".join(lines) + "\n").encode()
        for extra in d.text_breaks:
            extra = extra if isinstance(extra, bytes) else extra.encode()
            at = draw(st.sampled_from(["start", "end"]))
            text = extra + text if at == "start" else text + extra
        if not d.file_missing and not any(p == d.file_name.rstrip("/") for p, _, _ in d.files):
            d.files.append((d.file_name, "file", text))
        argv.append(d.file_name)
    else:
        how = draw(st.sampled_from(["positional", "--model"]))
        argv += [d.model] if how == "positional" else ["--model", d.model]
        for k, v in d.parameters.items():
            set_later = any(str(f).startswith("neurons=") for f in d.extra_flags)    # --neurons would win
            if k == "neurons" and not set_later and draw(st.booleans()):
                flags += ["--neurons", str(v)]
            else:
                flags += ["--set", f"{k}={_toml_value(v)}"]
        for k, v in d.simulation.items():
            flags += [FLAG_OF[k], _flag_value(v)] if k in FLAG_OF else _switch(k, v)
    last = []
    for item in d.extra_flags:
        (last if isinstance(item, list) else flags).append(item)
    last = [w for words in last for w in words]
    if d.out is not None:
        flags += ["--out", d.out]
    if d.force:
        flags.append("--force")
    if d.quiet:
        flags.append("--quiet")
    expect = REFUSED if d.broken else OK
    return Case(argv=[*argv, *flags, *last], files=d.files, expect=expect, broken=d.broken, out=d.out,
                outputs=d.outputs, quiet=d.quiet, model=d.model)


def _switch(key, value) -> list:
    """[simulation] booleans as flags: only the non-default one has a flag."""
    if key == "barrier":
        return [] if value else ["--no-barrier"]
    if key in ("overlap", "pace"):
        return [f"--{key}"] if value else []
    return []


# -- running a case -------------------------------------------------------------------------------
class CaseTimeout(BaseException):
    """Raised by the alarm in a case that runs too long; not an Exception, so main() lets it through."""


def _snapshot(root: Path) -> dict:
    """Every path under root: its kind and, for files, its bytes."""
    seen = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                seen[rel] = ("link", os.readlink(p))
            elif p.is_dir():
                seen[rel] = ("dir", None)
            else:
                seen[rel] = ("file", p.stat().st_size)
    return seen


def _make_files(root: Path, files) -> None:
    for rel, kind, content in files:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if kind == "dir":
            p.mkdir(exist_ok=True)
        elif kind == "symlink":
            p.symlink_to(content)
        else:
            p.write_bytes(content)


def _argv_in(root: Path, argv) -> list:
    return [a.replace("@ABS@", str(root)) if isinstance(a, str) else a for a in argv]


def run_in_process(case: Case, root: Path, capfd):
    """cli.main(argv) in `root` as the current folder: (status, stdout, stderr)."""
    argv = _argv_in(root, case.argv)
    old = os.getcwd()
    capfd.readouterr()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, CASE_SECONDS)
    os.chdir(root)
    try:
        try:
            status = cli.main(argv)
        except SystemExit as e:          # --help, or an exit the CLI did not mean
            status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        os.chdir(old)
    captured = capfd.readouterr()
    return status, captured.out, captured.err


def _alarm(signum, frame):
    raise CaseTimeout(f"the case ran longer than {CASE_SECONDS} s")


def run_in_child(case: Case, root: Path):
    done = subprocess.run([sys.executable, "-m", "ranvier", *_argv_in(root, case.argv)], cwd=root,
                          env=subprocess_env(), capture_output=True, text=True, timeout=CASE_SECONDS * 4,
                          preexec_fn=restore_cpus, check=False)
    return done.returncode, done.stdout, done.stderr


RUN_LINE_PREFIXES = ("ranvier: built ", "ranvier: note: ", "ranvier: warning: ", "ranvier: checkpoint at ", "[")


def check(case: Case, root: Path, before: dict, status, stdout: str, stderr: str) -> None:
    """The property: exit 0 and a complete run, or exit 2 and one line; nothing else."""
    def where(what):
        return f"{what}\n{case}\nstatus {status}\nstderr: {stderr[-2000:]}\nstdout: {stdout[-300:]}"
    assert "Traceback" not in stdout + stderr, where("a traceback")
    assert status in (0, 2), where(f"exit status {status}")
    after = _snapshot(root)
    leftovers = [p for p in after if STAGING_SUFFIX in p or p.endswith(".ranvier-lock")]
    assert not leftovers, where(f"left behind: {leftovers}")
    if status == 2:
        assert case.expect == REFUSED, where("a valid run was refused")
        lines = stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("ranvier: error: "), where("not one error line")
        assert stdout == "", where("a refusal printed on stdout")
        assert after == before, where(f"a refusal changed the folder: {sorted(set(after) ^ set(before))}")
        return
    assert case.expect == OK, where("bad input was accepted")
    for line in stderr.splitlines():
        assert line.startswith(RUN_LINE_PREFIXES) or not line.strip(), where(f"stderr line {line!r}")
    if not case.quiet:
        assert "real-time factor" in stdout and "peak RSS per rank" in stdout, where("no summary table")
    if case.out is None:
        assert after == before, where(f"a run without --out wrote {sorted(set(after) ^ set(before))}")
        return
    out = Path(case.out.replace("@ABS@", str(root)))
    out = out if out.is_absolute() else root / out
    names = {p.name for p in out.iterdir()}
    assert names == RUN_FILES | case.outputs, where(f"{out} holds {sorted(names)}")
    config = tomllib.loads((out / "config.toml").read_text())
    assert config["model"] == case.model, where(f"config.toml names model {config['model']!r}")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["duration_ms"] > 0, where("summary.json: no duration")
    json.loads((out / "environment.json").read_text())
    with h5py.File(out / "spikes.h5", "r") as f:
        written = sum(g["node_ids"].shape[0] for g in f["spikes"].values())
    kept_all = "--record-spikes-of" not in case.argv
    assert written == summary["spikes_total"] if kept_all else written <= summary["spikes_total"], \
        where(f"spikes.h5 holds {written} spikes, summary.json counts {summary['spikes_total']}")
    out_rel = str(out.relative_to(root))
    new = {p for p in set(after) - set(before) if not (p == out_rel or p.startswith(out_rel + "/"))}
    assert all(out_rel.startswith(p + "/") for p in new), where(f"written beside the output: {sorted(new)}")


def one_case(case: Case, runner):
    root = Path(tempfile.mkdtemp(prefix="fuzz-"))
    try:
        _make_files(root, case.files)
        before = _snapshot(root)
        t0 = time.perf_counter()
        status, stdout, stderr = runner(case, root)
        TALLY["seconds"] += time.perf_counter() - t0
        check(case, root, before, status, stdout, stderr)
        for shown in {os.path.realpath(root), str(root)}:     # messages name the folder of the case
            stderr = stderr.replace(shown, "<root>")
        return status, stderr
    finally:
        _remove(root)


def _remove(root: Path) -> None:
    import shutil
    for dirpath, dirnames, _ in os.walk(root):
        for name in dirnames:
            try:
                os.chmod(Path(dirpath) / name, 0o755)
            except OSError:
                pass
    shutil.rmtree(root, ignore_errors=True)


TALLY = {"cases": 0, "exit 0": 0, "exit 2": 0, "child": 0, "seconds": 0.0}
COMMON = dict(derandomize=True, database=None, deadline=None, print_blob=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                     HealthCheck.data_too_large])


@settings(max_examples=IN_PROCESS_CASES, **COMMON)
@given(case=cases())
def test_every_case_is_a_run_or_one_line(case, capfd):
    status, _ = one_case(case, lambda c, root: run_in_process(c, root, capfd))
    TALLY["cases"] += 1
    TALLY[f"exit {status}"] += 1


@settings(max_examples=CHILD_CASES, **COMMON)
@given(case=cases())
def test_child_process_agrees(case, capfd):
    """The same case in this process and as `python -m ranvier`: the same status and stderr line."""
    status, stderr = one_case(case, lambda c, root: run_in_process(c, root, capfd))
    child_status, child_stderr = one_case(case, run_in_child)
    TALLY["child"] += 1
    assert child_status == status, f"{case}\nin process {status}: {stderr}\nchild {child_status}: {child_stderr}"
    if status == 2:
        assert child_stderr == stderr, f"{case}\nin process: {stderr}\nchild: {child_stderr}"


def test_tally():
    """At least 500 cases ran (when the fuzz test ran in this session), a fifth of them valid runs."""
    if TALLY["cases"] == 0:
        pytest.skip("test_every_case_is_a_run_or_one_line did not run in this session")
    print(f"\n{TALLY['cases']} cases in process ({TALLY['exit 0']} runs, {TALLY['exit 2']} refusals), "
          f"{TALLY['child']} also as a child, {TALLY['seconds']:.1f} s in the CLI")
    assert TALLY["cases"] >= 500
    assert TALLY["exit 0"] >= 0.2 * TALLY["cases"]
