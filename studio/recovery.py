"""Crash recovery: runs whose server died are marked interrupted, never left running.

The process executing a run renews a lease on it (``Run.lease_expires_at``) and clears
it when it records the outcome. A run whose lease expired, or a queued run nobody
claimed within a lease, is abandoned: ``interrupt`` appends, in one transaction,

- a ``tool_response`` error for every tool call of the run that never got one: "in
  doubt" when the call may have started (it may or may not have taken effect), "did
  not run" when it was still waiting for an approval or was denied. Nothing is ever
  run again automatically;
- a terminal ``error`` event with code ``interrupted``;

and marks the run ``interrupted`` (with worker execution, also the run's task, which
its dead worker left recorded as running). Every server sweeps at start-up and every
half lease (worker processes do not: ``studio.worker``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agents_core import events as core_events
from studio import services, worker
from studio.live import TRACKED_TYPES
from studio.models import Event, Run, RunStatus
from studio.session_service import append_event_sync

INTERRUPTED = "interrupted"
IN_DOUBT = (
    "in_doubt: the server running this call stopped before it answered; the call may or "
    "may not have taken effect, and it will not be run again automatically."
)
NOT_RUN = "interrupted: the server stopped before this call was approved; it did not run."


@dataclass(frozen=True, slots=True)
class Interrupted:
    """What ``interrupt`` did: the run as recorded and the events it appended."""

    run: Run
    events: list[core_events.Event]


def abandoned_runs(now: datetime | None = None) -> list[uuid.UUID]:
    """Ids of runs whose executor is gone: lease expired, or queued and never claimed
    (though with worker execution, one still in the task queue merely waits)."""
    now = now or timezone.now()
    unclaimed_since = now - timedelta(seconds=settings.STUDIO_RUN_LEASE_S)
    expired = list(Run.objects.filter(lease_expires_at__lt=now).values_list("pk", flat=True))
    unclaimed = Run.objects.filter(
        status=RunStatus.QUEUED, owner_process="", created_at__lt=unclaimed_since
    )
    queued = list(unclaimed.values_list("pk", flat=True))
    return expired + sorted(set(queued) - worker.waiting_for_a_worker(queued, now))


def interrupt(
    run_id: uuid.UUID, *, now: datetime | None = None, force: bool = False
) -> Interrupted | None:
    """Close an abandoned run (see the module docstring); ``None`` if it is not abandoned
    (any more). ``force`` closes it regardless: its own executor is stopping."""
    now = now or timezone.now()
    with transaction.atomic():
        run = (
            Run.objects.select_for_update(of=("self",))  # PostgreSQL: not the nullable joins
            .select_related("session__agent_version__agent")
            .filter(pk=run_id)
            .first()
        )
        if run is None or not (force or _abandoned(run, now)):
            return None
        session = run.session
        was_active = run.is_active
        markers, in_doubt = _unanswered_calls(run)
        appended = [append_event_sync(session.key, event) for event in markers]
        if was_active:
            error = services.terminal_error(
                session, INTERRUPTED, _why(in_doubt), invocation_id=run.invocation_id or None
            )
            appended.append(append_event_sync(session.key, error))
        run.invocation_id = run.invocation_id or (appended[-1].invocation_id if appended else "")
        finished = services.finish_run(
            run, RunStatus.INTERRUPTED, code=INTERRUPTED, message=_why(in_doubt)
        )
        if not force:  # its worker died: nothing else will close the task's row
            worker.fail_orphaned_task(run_id)
    return Interrupted(finished, appended)


def _abandoned(run: Run, now: datetime) -> bool:
    if run.lease_expires_at is not None:
        return run.lease_expires_at < now
    unclaimed_since = now - timedelta(seconds=settings.STUDIO_RUN_LEASE_S)
    unclaimed = run.status == RunStatus.QUEUED and not run.owner_process
    return unclaimed and run.created_at < unclaimed_since


def _why(in_doubt: list[str]) -> str:
    why = "the server running this run stopped before it finished"
    if in_doubt:
        why += (
            f"; {len(in_doubt)} tool call(s) may or may not have taken effect and will not "
            f"be run again automatically: {', '.join(in_doubt)}"
        )
    return why


@dataclass(slots=True)
class _Calls:
    """The run's tool calls, in order, and what became of them."""

    made: dict[str, dict[str, Any]] = field(default_factory=dict)
    answered: set[str] = field(default_factory=set)
    approvals: dict[str, str | None] = field(default_factory=dict)

    def observe(self, wire: dict[str, Any]) -> None:
        parts = wire.get("parts", [])
        match wire["type"]:
            case core_events.EventType.AGENT_MESSAGE:
                for part in parts:
                    if part.get("kind") == "tool_call":
                        self.made[part["call_id"]] = {**part, "wire": wire}
            case core_events.EventType.TOOL_RESPONSE:
                self.answered |= {p["call_id"] for p in parts if p.get("kind") == "tool_response"}
            case core_events.EventType.APPROVAL_REQUEST | core_events.EventType.APPROVAL_DECISION:
                approval = wire["approval"]
                self.approvals[approval["call_id"]] = approval.get("decision")


def _unanswered_calls(run: Run) -> tuple[list[core_events.Event], list[str]]:
    """A tool_response marker for each call of ``run`` left unanswered, and the names
    of those in doubt."""
    if run.start_seq is None:
        return [], []
    calls = _Calls()
    rows = Event.objects.filter(
        session_id=run.session_id, seq__gt=run.start_seq, type__in=TRACKED_TYPES
    ).order_by("seq")
    for payload in rows.values_list("payload", flat=True).iterator():
        calls.observe(payload)
    markers, in_doubt = [], []
    for call_id, call in calls.made.items():
        if call_id in calls.answered:
            continue
        waited = call_id in calls.approvals and calls.approvals[call_id] != "approve"
        if not waited:
            in_doubt.append(f"{call['name']} ({call_id})")
        markers.append(_marker(run, call, NOT_RUN if waited else IN_DOUBT))
    return markers, in_doubt


def _marker(run: Run, call: dict[str, Any], text: str) -> core_events.Event:
    wire = call["wire"]
    return core_events.Event(
        type=core_events.EventType.TOOL_RESPONSE,
        invocation_id=wire["invocation_id"],
        session_id=run.session.key,
        author=wire["author"],
        branch=wire.get("branch"),
        parts=[
            core_events.ToolResponsePart(
                call_id=call["call_id"], name=call["name"], result=text, is_error=True
            )
        ],
    )
