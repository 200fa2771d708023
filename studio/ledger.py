"""The ledger of a run's open calls, read from its stored events.

``agents_core.ledger.CallLedger`` knows a turn's open tool calls and pending approvals;
this module reads one for a run from the database and answers, from it, every question
about what the run waits on: the live status (``waiting_for``: a person's approval or
answer, a tool, the model's rate limit, a retry of the model, or else the model),
recovery (which tool calls were left unanswered when its executor died, and whether
each may have taken effect) and approval decisions (does this call wait for one?).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Literal

from django.db.models import Q

from agents_core import events as core_events
from agents_core.approvals import Asks
from agents_core.ledger import TRACKED_TYPES, CallLedger
from studio.models import AWAITING_RUN_STATUSES, Event, Run, RunStatus

__all__ = [
    "TRACKED_TYPES",
    "CallLedger",
    "WaitingFor",
    "ledger_of",
    "run_awaiting",
    "tracked_events_of",
    "waiting_for",
]

WaitingFor = (
    Literal["model", "tool", "approval", "answer", "paused", "rate_limit", "retry", "elsewhere"]
    | None
)
"""``retry``: a model call is tried again after a failure (``model_retry``); ``elsewhere``:
an ingested run's agent runs outside Studio (``studio.live.status``)."""


def waiting_for(ledger: CallLedger, run_status: str | None) -> WaitingFor:
    """What a run in ``run_status`` with ``ledger`` waits on: only a running run waits,
    and a paused one waits to be resumed (once its current step is done)."""
    if run_status == RunStatus.PAUSED:
        return "paused"
    if run_status not in (RunStatus.RUNNING, RunStatus.WAITING):  # waiting: parked on a person
        return None
    if ledger.waits_for_approval:
        return "approval"
    if ledger.waits_for_answer:
        return "answer"
    if ledger.open_waits:
        return "rate_limit"
    if ledger.retrying:
        return "retry"
    return "tool" if ledger.open_calls else "model"


def ledger_of(run: Run) -> CallLedger:
    """The ledger of ``run``, read from its stored events (empty before it started)."""
    if run.start_seq is None:
        return CallLedger()
    return CallLedger().observe_all(_tracked_events(run.session_id, run.start_seq))


def _tracked_events(session_pk: uuid.UUID, after_seq: int) -> Iterator[core_events.Event]:
    rows = Event.objects.filter(session_id=session_pk, seq__gt=after_seq, type__in=TRACKED_TYPES)
    for payload in rows.order_by("seq").values_list("payload", flat=True).iterator():
        yield core_events.Event.model_validate(payload)


EVENTS_CHUNK = 100
"""Runs whose events one query of ``tracked_events_of`` reads (one condition each: kept
well inside SQLite's expression depth)."""


def tracked_events_of(
    runs: list[Run],
) -> dict[uuid.UUID, list[tuple[core_events.Event, datetime]]]:
    """The ledger's events of each of ``runs`` (those of its session after its start),
    in order, by session, each with when it was stored: ``_tracked_events`` for many
    runs at once, a query for each ``EVENTS_CHUNK`` of them."""
    found: dict[uuid.UUID, list[tuple[core_events.Event, datetime]]] = {}
    for first in range(0, len(runs), EVENTS_CHUNK):
        after = Q()
        for run in runs[first : first + EVENTS_CHUNK]:
            after |= Q(session_id=run.session_id, seq__gt=run.start_seq)
        rows = Event.objects.filter(after, type__in=TRACKED_TYPES).order_by("session_id", "seq")
        for session_pk, payload, created_at in rows.values_list(
            "session_id", "payload", "created_at"
        ):
            found.setdefault(session_pk, []).append(
                (core_events.Event.model_validate(payload), created_at)
            )
    return found


def run_awaiting(session_pk: uuid.UUID, call_id: str, asks: Asks = "approval") -> uuid.UUID | None:
    """The session's running run, if its call ``call_id`` waits for ``asks`` (approval,
    or an answer to its question) according to its stored events (asked, not yet
    answered)."""
    run = (
        Run.objects.filter(session_id=session_pk, status__in=AWAITING_RUN_STATUSES)
        .exclude(start_seq=None)
        .order_by("-created_at")
        .first()
    )
    if run is None:
        return None
    ledger = ledger_of(run)
    waits = ledger.awaits_answer if asks == "answer" else ledger.awaits_approval
    if not waits(call_id):
        return None
    return run.pk
