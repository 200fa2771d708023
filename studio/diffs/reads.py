"""A run as the diff reads it from the database (``RunRecord``): its events are the
session's events after its ``start_seq`` that carry its invocation id (as its spans and
cost are read), and its figures are those its row recorded when it ended, or, while it
runs, the sums of the model calls stored so far."""

from __future__ import annotations

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
    events = run_events(run, limit=MAX_EVENTS + 1)
    truncated = len(events) > MAX_EVENTS
    events = events[:MAX_EVENTS]
    return RunRecord(events, _figures(run, events), truncated=truncated)


def run_events(run: Run, *, limit: int) -> list[core_events.Event]:
    """``run``'s events, after those of the runs it goes on from (``resumed_from``: an
    interrupted run, or a fork's copy of the run it was forked in): one turn, whole."""
    chain: list[Run] = []
    at: Run | None = run
    while at is not None and at not in chain:
        chain.insert(0, at)
        at = at.resumed_from
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


def _figures(run: Run, events: list[core_events.Event]) -> RunFigures:
    timing = run.timing or {}
    if run.ended_at is not None:
        cost = costs.Total(run.cost, run.cost_currency or costs.DEFAULT_CURRENCY, run.cost_complete)
        return RunFigures(
            input_tokens=run.input_tokens,
            output_tokens=run.output_tokens,
            cost=cost,
            wall_ms=timing.get("total_ms", _ms(run)),
            model_ms=timing.get("model_ms"),
            tools_ms=timing.get("tools_ms"),
        )
    calls = [event for event in events if costs.is_model_call(event)]
    return RunFigures(
        input_tokens=sum(event.usage.input_tokens for event in calls if event.usage),
        output_tokens=sum(event.usage.output_tokens for event in calls if event.usage),
        cost=costs.total(event.cost for event in calls),
    )


def _ms(run: Run) -> float | None:
    if run.ended_at is None:
        return None
    return (run.ended_at - run.created_at).total_seconds() * 1000
