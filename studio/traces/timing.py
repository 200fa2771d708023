"""Where a run's wall time went: queued, the model, tools, waiting on a person, and the
runner's own overhead.

Read from the run's spans (``agents_core.spans``): a model call's span (and its wait
for the model's rate limit), the time a tool
itself ran (``ran_from`` for ``ran_ms`` within its span, leaving out any wait for
approval), a wait for a person's span. Time when several of these happen at once
(parallel branches) counts once, for the first of ``human``, ``tools``, ``model``; what
no step covers is the runner's overhead (storing events, connecting MCP servers,
building the agent). The parts add up to the wall time.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Literal

from agents_core.spans import Span

Kind = Literal["human", "tools", "model"]
PRECEDENCE: tuple[Kind, ...] = ("human", "tools", "model")

Interval = tuple[datetime, datetime, Kind]


def wall_time(
    created_at: datetime, started_at: datetime | None, ended_at: datetime, spans: Iterable[Span]
) -> dict[str, float]:
    """The split of an ended run's wall time (``created_at`` to ``ended_at``), in ms:
    ``total_ms``, ``queued_ms``, ``model_ms``, ``tools_ms``, ``human_ms`` and
    ``overhead_ms``, which add up to ``total_ms``."""
    start = min(max(started_at or ended_at, created_at), ended_at)
    covered = _covered(_intervals(spans, ended_at), start, ended_at)
    busy = sum(covered.values(), timedelta())
    split = {
        "total_ms": ended_at - created_at,
        "queued_ms": start - created_at,
        "model_ms": covered["model"],
        "tools_ms": covered["tools"],
        "human_ms": covered["human"],
        "overhead_ms": max(timedelta(), ended_at - start - busy),
    }
    return {name: round(value / timedelta(milliseconds=1), 3) for name, value in split.items()}


def _intervals(spans: Iterable[Span], ended_at: datetime) -> list[Interval]:
    found: list[Interval] = []
    for span in spans:
        if span.kind in ("model", "wait"):  # a wait for a model's rate limit is its time
            found.append((span.start, span.end or ended_at, "model"))
        elif span.kind == "human":
            found.append((span.start, span.end or ended_at, "human"))
        elif span.kind == "tool" and "ran_from" in span.attributes:
            ran_from: datetime = span.attributes["ran_from"]
            found.append(
                (ran_from, ran_from + timedelta(milliseconds=span.attributes["ran_ms"]), "tools")
            )
    return found


def _covered(intervals: list[Interval], start: datetime, end: datetime) -> dict[Kind, timedelta]:
    """Time of [start, end] each kind covers, overlaps counted once for the kind that
    comes first in ``PRECEDENCE``: one sweep over the intervals' ends."""
    covered: dict[Kind, timedelta] = dict.fromkeys(PRECEDENCE, timedelta())
    edges: list[tuple[datetime, int, Kind]] = []
    for a, b, kind in intervals:
        a, b = max(a, start), min(b, end)
        if b > a:
            edges += [(a, 1, kind), (b, -1, kind)]
    edges.sort(key=lambda edge: edge[0])
    active: dict[Kind, int] = dict.fromkeys(PRECEDENCE, 0)
    at = start
    for moment, step, kind in edges:
        leading = next((k for k in PRECEDENCE if active[k]), None)
        if leading is not None:
            covered[leading] += moment - at
        at = moment
        active[kind] += step
    return covered
