"""Run latency percentiles (p50, p95): ``percentile_cont`` in PostgreSQL, a bounded read
of durations in Python elsewhere (SQLite has no ordered-set aggregates)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable
from datetime import date
from typing import Any

from django.db import connection
from django.db.models import Aggregate, F, FloatField, Func, QuerySet
from django.db.models.functions import Coalesce, TruncDate

FRACTIONS = (0.5, 0.95)
MAX_SAMPLES = 200_000
"""Durations read at most for the fallback: its memory and time stay bounded whatever the
range (past it the percentiles are those of the range's first ``MAX_SAMPLES`` runs)."""

Percentiles = tuple[float | None, float | None]


class _Seconds(Func):
    """A run's latency in seconds, from ``started_at`` to ``ended_at`` (PostgreSQL)."""

    template = "EXTRACT(EPOCH FROM (%(expressions)s))"
    output_field = FloatField()


class _SqliteSeconds(Func):
    """The same in SQLite, to the millisecond (``julianday`` is a float of days, exact to
    about 10 µs): floats from the database, no datetimes parsed in Python."""

    arg_joiner = ") - julianday("
    template = "(ROUND((julianday(%(expressions)s)) * 86400000.0) / 1000.0)"
    output_field = FloatField()


class _PercentileCont(Aggregate):
    function = "percentile_cont"
    template = "%(function)s(%(fraction)s) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = FloatField()

    def __init__(self, expression: Any, fraction: float) -> None:
        super().__init__(expression)
        self.extra["fraction"] = float(fraction)


def percentile_cont(values: list[float], fraction: float) -> float | None:
    """PostgreSQL's ``percentile_cont`` (linear interpolation) over ``values``."""
    if not values:
        return None
    ordered = sorted(values)
    position = fraction * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


RUN_AGENT = Coalesce(F("session__agent_version__agent_id"), F("session__ingested__agent_id"))
"""A run's agent: its version's, or for a run ingested over OTLP, its external agent."""


def by_day_and_agent(
    runs: QuerySet[Any],
) -> tuple[dict[date, Percentiles], dict[Hashable, Percentiles]]:
    """p50 and p95 latency in seconds of ``runs`` (ended, started) per day and per
    agent id (``RUN_AGENT``)."""
    timed = runs.filter(started_at__isnull=False, ended_at__isnull=False)
    if connection.vendor == "postgresql":
        return _in_database(timed, "day"), _in_database(timed, "agent")
    return _in_python(timed)


def _in_database(runs: QuerySet[Any], key: str) -> dict[Any, Percentiles]:
    seconds = _Seconds(F("ended_at") - F("started_at"))
    rows = (
        runs.annotate(day=TruncDate("created_at"), agent=RUN_AGENT)
        .values(key)
        .annotate(**{f"p{i}": _PercentileCont(seconds, f) for i, f in enumerate(FRACTIONS)})
        .order_by()
    )
    return {row[key]: (row["p0"], row["p1"]) for row in rows}


def _in_python(runs: QuerySet[Any]) -> tuple[dict[date, Percentiles], dict[Any, Percentiles]]:
    rows = (
        runs.annotate(
            day=TruncDate("created_at"),
            agent=RUN_AGENT,
            seconds=_SqliteSeconds(F("ended_at"), F("started_at")),
        )
        .order_by()
        .values_list("day", "agent", "seconds")[:MAX_SAMPLES]
    )
    days: dict[date, list[float]] = defaultdict(list)
    agents: dict[Any, list[float]] = defaultdict(list)
    for day, agent, seconds in rows:
        days[day].append(seconds)
        agents[agent].append(seconds)
    return _percentiles(days.items()), _percentiles(agents.items())


def _percentiles(groups: Iterable[tuple[Any, list[float]]]) -> dict[Any, Percentiles]:
    return {
        key: (percentile_cont(values, FRACTIONS[0]), percentile_cont(values, FRACTIONS[1]))
        for key, values in groups
    }
