"""What every benchmark script shares: the JSON line it prints, its command line, and
small statistics helpers.

A script prints one JSON object per measurement on stdout (and nothing else there):
``name``, ``value``, ``unit``, ``target`` (a readable goal, or ``null`` when the issue
sets none), ``met`` (``true``/``false``, ``null`` without a target) and ``details``.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import statistics
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Measurement:
    name: str
    value: float
    unit: str
    target: str | None = None
    met: bool | None = None
    details: dict[str, Any] = field(default_factory=dict)


def emit(measurement: Measurement) -> None:
    print(json.dumps(asdict(measurement)), flush=True)


def log(message: str) -> None:
    """Progress for the person running the bench; stdout is kept for results."""
    print(message, file=sys.stderr, flush=True)


def parser(description: str | None) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(description=(description or "").strip().splitlines()[0])


def mean(values: Sequence[float]) -> float:
    return statistics.fmean(values)


def percentile(values: Sequence[float], pct: float) -> float:
    """The nearest-rank percentile: a value that was actually observed."""
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def peak_rss_mib() -> float:
    """This process's peak resident set size so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rounded(value: float, digits: int = 1) -> float:
    return round(value, digits)
