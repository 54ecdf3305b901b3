"""What every command's parser shares: `Parser` (argparse whose errors are one line, raised as
UsageError so that cli.main() decides who prints) and the argument types, each a one-line
message that names the flag's rule.
"""
from __future__ import annotations

import argparse

from ..io import config as cfgmod
from ..errors import ConfigError


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    """argparse that reports errors as one line (raised, so main() decides who prints)."""

    def error(self, message):
        raise UsageError(f"{message} (see '{self.prog} --help')")

    def parse_args(self, args=None, namespace=None):
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:         # name the subcommand whose help lists the valid flags
            words = [getattr(parsed, name, None) for name in ("command", "bench_command")]
            where = " ".join([self.prog, *(word for word in words if word)])
            raise UsageError(f"unrecognized arguments: {' '.join(extra)} (see '{where} --help')")
        return parsed


# -- argument types: one-line messages that name the flag's rule ---------------------------
def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value < 2**64:
        raise argparse.ArgumentTypeError(f"must be an integer in [0, 2^64), got {text!r}")
    return value


def simulated_time_ms(text: str) -> float:
    """A simulated duration with its unit: '10s', '500ms', '2.5 s' -> milliseconds."""
    import math
    import re

    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*(ms|s)\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(f"must be a simulated time with its unit, such as 10s or 500ms, got {text!r}")
    value = float(match.group(1)) * (1000.0 if match.group(2) == "s" else 1.0)
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a positive simulated time such as 10s or 500ms, got {text!r}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}") from None
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (value >= 0 and value < float("inf")):
        raise argparse.ArgumentTypeError(f"expected zero or a positive number, got {text!r}")
    return value


def positive_int_list(text: str) -> list[int]:
    """'1,2,4' -> [1, 2, 4], each once, in the order given."""
    values = []
    for item in text.split(","):
        try:
            values.append(positive_int(item.strip()))
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(f"must be a comma-separated list of positive integers "
                                             f"such as 1,2,4, got {text!r}") from None
    return list(dict.fromkeys(values))


def name_list(text: str) -> list[str]:
    names = [item.strip() for item in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"must be a comma-separated list of names, got {text!r}")
    return names


def assignment(text: str):
    try:
        return cfgmod.parse_assignment(text)
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


MAX_LISTED_IDS = 10**6      # neurons one --record-state or --record-spikes-of lists (each costs memory)


def id_list(text: str) -> list[int]:
    """'0,5,10-19' -> [0, 5, 10, ..., 19]: global neuron ids, ranges inclusive, each once, sorted;
    at most MAX_LISTED_IDS of them, counted before any is listed (0-999999999999 would fill the memory)."""
    ranges = []
    for item in text.split(","):
        first, dash, last = item.strip().partition("-")
        try:
            lo = int(first)
            hi = int(last) if dash else lo
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be neuron ids and ranges such as 0,5,10-19, got {text!r}") from None
        if lo < 0 or hi < lo:
            raise argparse.ArgumentTypeError(f"must be neuron ids >= 0 and ranges low-high, got {item.strip()!r}")
        ranges.append((lo, hi))
    count = sum(hi - lo + 1 for lo, hi in ranges)
    if count > MAX_LISTED_IDS:
        raise argparse.ArgumentTypeError(f"lists {count:,} neuron ids, more than the {MAX_LISTED_IDS:,} a run "
                                         f"records by id; give fewer, got {text!r:.60}")
    return sorted({g for lo, hi in ranges for g in range(lo, hi + 1)})
