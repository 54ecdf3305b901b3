"""A progress bar for Simulation.run(progress=...): simulated time, real-time factor, ETA.

On a terminal it redraws one line; elsewhere (a log file, CI) it prints a plain line
every 10 % so logs stay readable.
"""
from __future__ import annotations

import math
import sys


def format_duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "--:--"
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class ProgressBar:
    """Callable as progress(done_ms, total_ms, wall_s)."""

    def __init__(self, stream=None, width: int = 24, steps: int = 10):
        self.stream = stream if stream is not None else sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.width = width
        self.steps = steps              # plain lines per run when not on a terminal
        self.reported = 0               # plain lines printed so far
        self.drawn = False

    def line(self, done_ms: float, total_ms: float, wall_s: float) -> str:
        fraction = min(1.0, done_ms / total_ms) if total_ms > 0 else 1.0
        simulated_s = done_ms * 1e-3
        rtf = wall_s / simulated_s if simulated_s > 0 else math.inf
        eta = rtf * (total_ms - done_ms) * 1e-3
        filled = int(fraction * self.width)
        bar = "#" * filled + "-" * (self.width - filled)
        return (f"[{bar}] {fraction * 100:3.0f}%  {simulated_s:.1f}/{total_ms * 1e-3:.1f} s simulated  "
                f"real-time factor {rtf:.2f}  ETA {format_duration(eta)}")

    def __call__(self, done_ms: float, total_ms: float, wall_s: float) -> None:
        text = self.line(done_ms, total_ms, wall_s)
        if self.tty:
            self.stream.write("\r" + text + "\x1b[K")
            self.drawn = True
        else:
            due = math.floor(done_ms / total_ms * self.steps + 1e-9) if total_ms > 0 else self.steps
            if due <= self.reported:
                return
            self.reported = due
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty and self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = False
