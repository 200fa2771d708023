"""Runs parked on a person: a run whose calls wait on a decision holds no executor.

When every call a run can make waits on a person, its execution stores ``run_parked``
and stops (``agents_core.approvals.RunParked``); ``park`` records the run ``waiting``:
no lease, no owner, nothing held in any process, in either execution mode, and nothing
a restart can interrupt. ``wakes_at`` is when its first call times out.

It goes on when a call is decided: ``services.approvals`` stores the decision and
``wake`` queues the run again; its next execution resumes it from the record under the
same invocation, the stored decisions handed to its broker first (``decisions``). A
time-out is a decision too: every server's sweep (``expire_due``, beside recovery)
stores it, once (``ApprovalDecision`` allows one per call, under the run's lock), and
wakes the run; it fires exactly once whichever servers sweep and however often they
restart. A decision stored while the execution was still parking is found by ``park``
itself, which then queues the run at once instead of letting it wait.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Max, Q
from django.utils import timezone

from agents_core import approvals as core_approvals
from agents_core import events as core_events
from agents_core.contracts import Usage
from agents_core.resume import undecided_requests
from studio.db import db_sync_to_async
from studio.models import ApprovalDecision, Event, Run, RunStatus, Session, SessionStatus
from studio.models.approvals import DecisionChannel
from studio.runs import records
from studio.runs.records import Ending

logger = logging.getLogger("studio.runs")

_RECORD_TYPES = (
    core_events.EventType.APPROVAL_REQUEST,
    core_events.EventType.APPROVAL_DECISION,
    core_events.EventType.TOOL_RESPONSE,
)


def park(run_id: uuid.UUID, usage: Usage) -> bool:
    """Record that run ``run_id``'s execution stopped on a person (``run_parked`` is
    stored) and let go of it. True when it must execute again at once: one of its
    calls was decided (or timed out) meanwhile, and it is queued again."""
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        if run is None:
            return False
        if not run.is_active:  # cancelled by request while it parked: end it so
            records.end_run(run_id, Ending(RunStatus(run.status), "", ""), usage=usage)
            return False
        run.input_tokens, run.output_tokens = usage.input_tokens, usage.output_tokens
        run.owner_process, run.lease_expires_at = "", None
        now = timezone.now()
        waiting = open_requests(run)
        decided = ApprovalDecision.objects.filter(
            run=run, call_id__in=[asked.call_id for asked, _ in waiting]
        ).exists()
        if decided or _expire(run, waiting, now) or not waiting:
            _queue(run, now, submit=False)  # its execution hands it on once it let go
            return True
        run.status, run.wakes_at = RunStatus.WAITING, min(due for _, due in waiting)
        run.save(update_fields=[*_PARK_FIELDS, "status", "wakes_at"])
        Session.objects.filter(pk=run.session_id).update(status=SessionStatus.WAITING)
    return False


_PARK_FIELDS = ("input_tokens", "output_tokens", "owner_process", "lease_expires_at")


def wake(run: Run) -> None:
    """Queue waiting ``run`` (locked by the caller) to go on, and, once committed,
    hand it to the executor."""
    _queue(run, timezone.now())


def _queue(run: Run, now: datetime, *, submit: bool = True) -> None:
    from studio import runs  # the package's executor port, chosen at start-up

    run.status, run.wakes_at, run.queued_at = RunStatus.QUEUED, None, now
    run.save(update_fields=[*_PARK_FIELDS, "status", "wakes_at", "queued_at"])
    Session.objects.filter(pk=run.session_id).update(status=SessionStatus.QUEUED)
    if submit:
        transaction.on_commit(lambda: runs.executor().submit(run))


async def expire_forever() -> None:
    """Every ``STUDIO_PARKED_SWEEP_S``, decide the calls whose time is up (every server
    does; ``expire_due`` decides each once)."""
    while True:
        try:
            for run_id in await db_sync_to_async(expire_due)():
                logger.info("run %s: a call it waited on timed out; it goes on", run_id)
        except Exception:
            logger.exception("the parked runs' time-out sweep failed")
        await asyncio.sleep(settings.STUDIO_PARKED_SWEEP_S)


def expire_due(now: datetime | None = None) -> list[uuid.UUID]:
    """Decide, by their time-out, the calls of waiting runs whose time is up, and queue
    those runs again. Returns the runs woken."""
    now = now or timezone.now()
    due = Run.objects.filter(status=RunStatus.WAITING, wakes_at__lte=now)
    woken = []
    for run_id in due.values_list("pk", flat=True):
        with transaction.atomic():
            run = Run.objects.select_for_update().filter(pk=run_id).first()
            if run is None or run.status != RunStatus.WAITING:
                continue  # decided, cancelled or woken by another server meanwhile
            waiting = open_requests(run)
            if _expire(run, waiting, now) or not waiting:
                _queue(run, now)
                woken.append(run_id)
            else:  # its calls were asked again meanwhile: wait for the new ones
                run.wakes_at = min(due_at for _, due_at in waiting)
                run.save(update_fields=["wakes_at"])
    return woken


def _expire(
    run: Run, waiting: Sequence[tuple[core_events.ApprovalInfo, datetime]], now: datetime
) -> bool:
    """Store the time-out decision of each of ``waiting`` whose time is up (once: a
    call decided already keeps its decision). Whether any was due."""
    expired = [asked for asked, due in waiting if due <= now]
    for asked in expired:
        verdict = asked.on_timeout or "deny"
        outcome = asked.model_copy(
            update={
                "decision": verdict,
                "decided_by": "timeout",
                "reason": f"nobody decided within {asked.timeout_s or 0:g}s",
            }
        )
        records.record_fallback(run, outcome)
    return bool(expired)


def open_requests(run: Run) -> list[tuple[core_events.ApprovalInfo, datetime]]:
    """``run``'s approval requests nobody decided in its record, each with when it
    times out."""
    if run.start_seq is None:
        return []
    rows = Event.objects.filter(
        session_id=run.session_id,
        seq__gt=run.start_seq,
        invocation_id=run.invocation_id,
        type__in=_RECORD_TYPES,
    ).order_by("seq")
    events = [core_events.Event.model_validate(p) for p in rows.values_list("payload", flat=True)]
    waiting = []
    for asked in undecided_requests(events):
        info = asked.approval
        if info is not None:
            due = asked.created_at + timedelta(seconds=info.timeout_s or 0)
            waiting.append((info, due))
    return waiting


def decisions(run: Run) -> list[core_approvals.ApprovalDecision]:
    """The stored decisions on ``run``'s calls, as its broker takes them."""
    return [
        core_approvals.ApprovalDecision(
            call_id=row.call_id,
            args_hash=row.args_hash,
            decision=row.decision,
            edited_args=row.args_approved if row.edited else None,
            reason=row.reason,
            decided_by=_decided_by(row),
        )
        for row in ApprovalDecision.objects.filter(run=run).order_by("decided_at")
    ]


def _decided_by(row: ApprovalDecision) -> str:
    if row.channel == DecisionChannel.TIMEOUT:
        return "timeout"
    return row.decided_by_name or row.channel


def answers_this_turn(run: Run) -> dict[str, int]:
    """How many model answers each agent gave in ``run``'s turn so far (answers that
    did not match an output schema included), by agent name: where a model that
    plays a script goes on when the turn is built again."""
    last_user = (
        Event.objects.filter(
            session_id=run.session_id, type=core_events.EventType.USER_MESSAGE
        ).aggregate(seq=Max("seq"))["seq"]
        or 0
    )
    answers = Event.objects.filter(session_id=run.session_id, seq__gt=last_user).filter(
        Q(type=core_events.EventType.AGENT_MESSAGE)
        | Q(type=core_events.EventType.ERROR, payload__error__code="output_invalid")
    )
    counted = answers.values("author").annotate(n=Count("pk")).values_list("author", "n")
    return dict(counted)


def parked_before(run: Run) -> bool:
    """Whether ``run`` parked before: its execution goes on from the record."""
    return Event.objects.filter(
        session_id=run.session_id,
        seq__gt=run.start_seq or 0,
        invocation_id=run.invocation_id,
        type=core_events.EventType.RUN_PARKED,
    ).exists()


def park_if_parked(run: Run) -> bool:
    """Park abandoned ``run`` (locked by the caller) when the last event its execution
    stored is its ``run_parked``: the execution died between storing it and ``park``
    recording the run waiting, and a person's decision, not recovery, settles it.
    Its usage is its model calls' in the record. When one of its calls was decided (or
    timed out) meanwhile, it is queued again and, once committed, handed to the
    executor: its own execution is gone. Whether it was parked."""
    last = (
        Event.objects.filter(session_id=run.session_id, seq__gt=run.start_seq or 0)
        .order_by("-seq")
        .values_list("type", "invocation_id")
        .first()
    )
    if last != (core_events.EventType.RUN_PARKED, run.invocation_id):
        return False
    usage = Usage()
    rows = Event.objects.filter(
        session_id=run.session_id,
        seq__gt=run.start_seq or 0,
        invocation_id=run.invocation_id,
        usage__isnull=False,
    )
    for counted in rows.values_list("usage", flat=True):
        usage = usage + Usage.model_validate(counted)
    if park(run.pk, usage):
        wake(Run.objects.get(pk=run.pk))
    return True
