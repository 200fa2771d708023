"""A run as the diff reads it from the database (``RunRecord``): its events are the
session's events after its ``start_seq`` that carry its invocation id (as its spans and
cost are read), after those of the runs it goes on from. Its figures cover the same
steps: those its row recorded when it ended; for a run that goes on from others (the
rest of an interrupted run, a fork gone on from its fork point), their sums over every
run of the chain, tokens and cost from the model calls' events (a fork's copies keep
theirs) and times while each run of the chain has them; while it runs, the sums of the
model calls stored so far."""

from __future__ import annotations

import dataclasses
import json

from django.db.models import TextField
from django.db.models.functions import Cast

from agents_core import events as core_events
from studio import costs
from studio.diffs.compare import RunFigures, RunRecord
from studio.models import Event, Run

MAX_EVENTS = 5_000
"""The events of a run compared, at most: a longer run is compared up to there."""


def run_record(run: Run) -> RunRecord:
    chain = _chain(run)
    events = _events(chain, limit=MAX_EVENTS + 1)
    truncated = len(events) > MAX_EVENTS
    events = events[:MAX_EVENTS]
    return RunRecord(events, _figures(chain, events), truncated=truncated)


def run_events(run: Run, *, limit: int) -> list[core_events.Event]:
    """``run``'s events, after those of the runs it goes on from (``resumed_from``: an
    interrupted run, or a fork's copy of the run it was forked in): one turn, whole."""
    return _events(_chain(run), limit=limit)


def _chain(run: Run) -> list[Run]:
    """``run`` and the runs it goes on from, the first first."""
    chain: list[Run] = []
    at: Run | None = run
    while at is not None and at not in chain:
        chain.insert(0, at)
        at = at.resumed_from
    return chain


def _events(chain: list[Run], *, limit: int) -> list[core_events.Event]:
    found: list[core_events.Event] = []
    for each in chain:
        found += _own_events(each, limit=limit - len(found))
    return found[:limit]


def _own_events(run: Run, *, limit: int) -> list[core_events.Event]:
    if run.start_seq is None or not run.invocation_id or limit <= 0:
        return []
    rows = (
        Event.objects.filter(
            session_id=run.session_id, seq__gt=run.start_seq, invocation_id=run.invocation_id
        )
        .order_by("seq")
        .annotate(text_payload=Cast("payload", TextField()))  # decoded once, below
        .values_list("text_payload", flat=True)[:limit]
    )
    return [core_events.Event.model_validate(json.loads(text)) for text in rows]


def _figures(chain: list[Run], events: list[core_events.Event]) -> RunFigures:
    run = chain[-1]
    if run.ended_at is None:
        return _used(events)
    if len(chain) > 1:  # it goes on from earlier runs, whose steps are shown too
        return dataclasses.replace(
            _used(events),
            wall_ms=_summed(chain, "total_ms"),
            model_ms=_summed(chain, "model_ms"),
            tools_ms=_summed(chain, "tools_ms"),
        )
    timing = run.timing or {}
    cost = costs.Total(run.cost, run.cost_currency or costs.DEFAULT_CURRENCY, run.cost_complete)
    return RunFigures(
        input_tokens=run.input_tokens,
        output_tokens=run.output_tokens,
        cost=cost,
        wall_ms=timing.get("total_ms", _ms(run)),
        model_ms=timing.get("model_ms"),
        tools_ms=timing.get("tools_ms"),
    )


def _used(events: list[core_events.Event]) -> RunFigures:
    """The tokens and cost of the model calls among ``events``."""
    calls = [event for event in events if costs.is_model_call(event)]
    return RunFigures(
        input_tokens=sum(event.usage.input_tokens for event in calls if event.usage),
        output_tokens=sum(event.usage.output_tokens for event in calls if event.usage),
        cost=costs.total(event.cost for event in calls),
    )


def _summed(chain: list[Run], name: str) -> float | None:
    """The sum of ``name`` in the chain's timings; ``None`` unless every run has it."""
    found = [(run.timing or {}).get(name) for run in chain]
    return None if None in found else sum(found)  # type: ignore[arg-type]


def _ms(run: Run) -> float | None:
    if run.ended_at is None:
        return None
    return (run.ended_at - run.created_at).total_seconds() * 1000
