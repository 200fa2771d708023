"""The approval inbox: every call waiting for a decision across one user's sessions,
read from the stored events (the run's ledger), so it is the same in either execution
mode and after a restart."""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User

from agents_core import events as core_events
from studio.ledger import ledger_of
from studio.models import AWAITING_RUN_STATUSES, Event, Run, Session, SessionStatus

MAX_PENDING = 500


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """One call waiting for its owner's decision."""

    session_id: uuid.UUID
    session_title: str
    run_id: uuid.UUID
    agent: str
    agent_version: int | None
    call_id: str
    tool: str
    args: dict[str, Any]
    args_hash: str
    args_schema: dict[str, Any] | None
    waiting_since: datetime


def pending_approvals(owner: User) -> list[PendingApproval]:
    """``owner``'s pending approvals, longest waiting first."""
    sessions = Session.objects.filter(
        owner=owner, status__in=(SessionStatus.WAITING, SessionStatus.PAUSED)
    ).select_related("agent_version__agent")
    pending: list[PendingApproval] = []
    for session in sessions[:MAX_PENDING]:
        pending.extend(_pending_in(session))
    pending.sort(key=lambda p: p.waiting_since)
    return pending


def pending_count(owner: User) -> int:
    return len(pending_approvals(owner))


def pending_payload(owner: User) -> dict[str, Any]:
    """The inbox as JSON-ready data, as ``GET /api/approvals/`` and the inbox socket
    send it."""
    results = []
    for item in pending_approvals(owner):
        row = asdict(item)
        row.update(
            session_id=str(item.session_id),
            run_id=str(item.run_id),
            session_url=f"/sessions/{item.session_id}/",
            waiting_since=item.waiting_since.isoformat(),
        )
        results.append(row)
    return {"count": len(results), "results": results}


def _pending_in(session: Session) -> list[PendingApproval]:
    run = (
        Run.objects.filter(session=session, status__in=AWAITING_RUN_STATUSES)
        .exclude(start_seq=None)
        .order_by("-created_at")
        .first()
    )
    if run is None:
        return []
    waiting = [call for call, verdict in ledger_of(run).approvals.items() if verdict is None]
    if not waiting:
        return []
    requests = Event.objects.filter(
        session=session, seq__gt=run.start_seq or 0, type=core_events.EventType.APPROVAL_REQUEST
    ).order_by("seq")
    version = session.agent_version
    found = []
    for payload, created_at in requests.values_list("payload", "created_at"):
        info = core_events.Event.model_validate(payload).approval
        if info is None or info.call_id not in waiting:
            continue
        found.append(
            PendingApproval(
                session_id=session.pk,
                session_title=session.title,
                run_id=run.pk,
                agent=version.agent.name if version else "",
                agent_version=version.number if version else None,
                call_id=info.call_id,
                tool=info.tool,
                args=info.args,
                args_hash=info.args_hash,
                args_schema=info.args_schema,
                waiting_since=created_at,
            )
        )
    return found
