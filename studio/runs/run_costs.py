"""What a run and a session cost, added up from what their model calls stored: a run's
as it ends (``records.end_run``), and its session's from its ended runs."""

from __future__ import annotations

import uuid

from agents_core import events as core_events
from agents_core.contracts import Cost
from studio import costs
from studio.models import Event, Run
from studio.rollups.queries import MODEL_CALL_TYPES


def run_cost(run: Run) -> costs.Total:
    """The sum of ``run``'s model calls' stored costs (compaction summaries included);
    incomplete when one of them has none (no usage reported, or no price for its
    model)."""
    rows = Event.objects.filter(
        session_id=run.session_id,
        seq__gt=run.start_seq or 0,
        invocation_id=run.invocation_id,
        type__in=MODEL_CALL_TYPES,
    ).values_list("type", "cost", "cost_currency", "usage", "payload__latency_ms")
    calls = [
        None if cost is None else Cost(amount=cost, currency=currency)
        for kind, cost, currency, usage, latency_ms in rows
        if kind == core_events.EventType.COMPACTION or usage is not None or latency_ms is not None
    ]
    return costs.total(calls if run.invocation_id else [])


def session_cost(session_id: uuid.UUID) -> costs.Total:
    """What a session's ended runs cost, all told (a fork's copies of its parent's runs
    cost it nothing: they were paid for once, in the parent)."""
    runs = Run.objects.filter(session_id=session_id, ended_at__isnull=False, copied_from=None)
    rows = runs.values_list("cost", "cost_currency", "cost_complete")
    return costs.total_of(
        costs.Total(amount, currency, complete) for amount, currency, complete in rows
    )
