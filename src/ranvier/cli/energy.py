"""`ranvier energy DIR --power-trace CSV`: the energy of a finished run from an external power
trace, stored in the run archive's summary.json (ranvier.runtime.energy does the arithmetic)."""
from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import ConfigError


def add_parser(commands, exchanges=None) -> None:
    energy = commands.add_parser(
        "energy", allow_abbrev=False, help="energy of a finished run from an external power trace",
        description="Apply a power trace recorded by an external meter (CSV of time and watts) to a run "
                    "archive written by 'ranvier run --out DIR': the energy is integrated over the run's "
                    "simulation phase, above its baseline, and stored in DIR/summary.json.")
    energy.add_argument("run_dir", metavar="DIR", help="a run archive (ranvier run --out DIR)")
    energy.add_argument("--power-trace", required=True, metavar="CSV", help="time and watts, as from a wall meter")
    energy.add_argument("--clock-offset-s", type=float, metavar="EPOCH",
                        help="the trace's time 0 in epoch seconds, when its times are relative")


def command(args) -> int:
    """Recomputes a run's energy from an external power trace and updates its summary.json."""
    from ..runtime import energy
    from ..io.output import write_summary

    path = Path(args.run_dir) / "summary.json"
    try:
        summary = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ConfigError(f"'{args.run_dir}' is not a run archive with a readable summary.json "
                          f"(write one with ranvier run --out DIR): {e}") from None
    marks = (summary.get("energy") or {}).get("marks") or {}
    if "simulation_start" not in marks or "simulation_end" not in marks:
        raise ConfigError(f"{path} records no simulation start and end times; rerun with this version of ranvier")
    meter = energy.select_meter(power_trace=args.power_trace, clock_offset_s=args.clock_offset_s)
    meter.load()                      # a bad file: one line naming the file, the line and the fix
    summary["energy"] = energy.report_from_marks(meter, marks, summary["synaptic_events"])
    tmp = path.with_suffix(".json.tmp")
    write_summary(tmp, summary)
    os.replace(tmp, path)
    for key, value in energy.format_lines(summary["energy"]):
        print(f"{key:<22}{value}")
    print(f"updated {path}")
    return 0 if summary["energy"]["available"] else 1
