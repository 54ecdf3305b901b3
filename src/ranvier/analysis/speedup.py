"""Speed-up and parallel efficiency: the one definition that `ranvier bench strong-scaling`,
`ranvier bench weak-scaling` (ranvier.bench.scaling) and `ranvier report` use, stated for users
in docs/measuring.md ("Speed-up and parallel efficiency").

- A configuration's cores are ranks x threads; the baseline is the configuration with the
  fewest cores of those compared.
- speedup = the baseline's median real-time factor / this configuration's (above 1: faster).
- parallel efficiency = speedup / (cores / baseline cores); in weak scaling the work grows with
  the cores, so the efficiency is the speedup itself (ideally 1).
- A configuration is oversubscribed when the threads of a node (its ranks on the node x threads)
  outnumber the node's cores. Its time measures how the threads share too few cores, not
  parallel work: no efficiency is given for it, nor for any configuration compared with an
  oversubscribed baseline (the row says "oversubscribed"); the speedup, a plain ratio of
  times, is still given.
"""
from __future__ import annotations

from dataclasses import dataclass

OVERSUBSCRIBED = "oversubscribed"


@dataclass(frozen=True)
class Scaling:
    speedup: float | None
    efficiency: float | None      # None: not a parallel efficiency (see `note`)
    note: str = ""                # "oversubscribed" where the efficiency is left out


def is_oversubscribed(ranks_on_node: int, threads: int, node_cores: int | None) -> bool:
    """More threads on a node than it has cores (unknown cores: not known to be)."""
    return bool(node_cores) and ranks_on_node * threads > node_cores


def scaling(rtf: float, cores: int, base_rtf: float, base_cores: int, weak: bool = False,
            oversubscribed: bool = False, base_oversubscribed: bool = False) -> Scaling:
    """Speed-up and parallel efficiency of a configuration (median real-time factor `rtf` on
    `cores`) against the baseline (`base_rtf` on `base_cores`)."""
    speedup = base_rtf / rtf if rtf > 0 else None
    if oversubscribed or base_oversubscribed:
        return Scaling(speedup, None, OVERSUBSCRIBED)
    if speedup is None:
        return Scaling(None, None)
    return Scaling(speedup, speedup if weak else speedup * base_cores / cores)


def definition(base: str = "the fewest cores", weak: bool = False) -> str:
    """The definition in words, for the tables' captions (`base` names the baseline)."""
    if weak:
        return (f"efficiency = real-time factor at {base} / real-time factor (medians; the work per core is "
                f"constant: ideally 1); none where oversubscribed")
    return (f"speedup = real-time factor at {base} / real-time factor (medians; above 1: faster), parallel "
            f"efficiency = speedup / (cores / cores at {base}), cores = ranks x threads; no efficiency where "
            f"oversubscribed (more threads than cores on a node)")
