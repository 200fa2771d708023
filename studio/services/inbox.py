"""The approval inbox: every call waiting for a decision across one user's sessions,
and every question an agent asked them that waits for their answer, read from the
stored events (the run's ledger), so it is the same in either execution mode and after
a restart."""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, NamedTuple

from django.contrib.auth.models import User

from agents_core import events as core_events
from studio.ledger import CallLedger, tracked_events_of
from studio.models import AWAITING_RUN_STATUSES, Run, Session, SessionStatus

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


@dataclass(frozen=True, slots=True)
class PendingQuestion:
    """One question an agent asked its owner, waiting for the answer."""

    session_id: uuid.UUID
    session_title: str
    run_id: uuid.UUID
    agent: str
    agent_version: int | None
    call_id: str
    question: str
    waiting_since: datetime


def pending_approvals(owner: User) -> list[PendingApproval]:
    """``owner``'s pending approvals, longest waiting first. Every page's navigation
    counts them, so it takes the same few queries however many sessions wait: the
    sessions, their newest awaiting runs, and those runs' tracked events
    (``ledger.tracked_events_of``)."""
    return pending(owner)[0]


def pending(owner: User) -> tuple[list[PendingApproval], list[PendingQuestion]]:
    """``owner``'s pending approvals and questions, each longest waiting first, from
    one read of the sessions that wait."""
    approvals: list[PendingApproval] = []
    questions: list[PendingQuestion] = []
    for session, run, events in _waiting(owner):
        ledger = CallLedger().observe_all(event for event, _ in events)
        approvals.extend(_pending_in(session, run, events, ledger))
        questions.extend(_questions_in(session, run, events, ledger))
    approvals.sort(key=lambda p: p.waiting_since)
    questions.sort(key=lambda q: q.waiting_since)
    return approvals, questions


def _waiting(
    owner: User,
) -> list[tuple[_Waiting, Run, list[tuple[core_events.Event, datetime]]]]:
    """Each session of ``owner`` that waits on a person, with its newest awaiting run
    and that run's tracked events."""
    rows = Session.objects.filter(
        owner=owner, status__in=(SessionStatus.WAITING, SessionStatus.PAUSED)
    ).values_list("pk", "title", "agent_version__number", "agent_version__agent__name")
    # The four columns it shows, not the rows: on most pages nothing waits, and setting
    # up a result of the sessions' and their versions' every column was most of the
    # badge's cost (~0.79 ms of a page's CPU on PostgreSQL; ~0.53 ms now).
    sessions = {row[0]: _Waiting(*row) for row in rows[:MAX_PENDING]}
    runs = _awaiting_runs(list(sessions))
    events = tracked_events_of(list(runs.values()))
    return [(sessions[pk], run, events.get(pk, [])) for pk, run in runs.items()]


def pending_count(owner: User) -> int:
    """What waits for ``owner``, as the navigation's badge counts it: the calls waiting
    for a decision and the questions waiting for an answer, both listed in the inbox."""
    approvals, questions = pending(owner)
    return len(approvals) + len(questions)


def pending_payload(owner: User) -> dict[str, Any]:
    """The inbox as JSON-ready data, as ``GET /api/approvals/`` and the inbox socket
    send it."""
    approvals, questions = pending(owner)
    results = [_row(item) for item in approvals]
    return {"count": len(results), "results": results, "questions": [_row(q) for q in questions]}


def _row(item: PendingApproval | PendingQuestion) -> dict[str, Any]:
    row = asdict(item)
    row.update(
        session_id=str(item.session_id),
        run_id=str(item.run_id),
        session_url=f"/sessions/{item.session_id}/",
        waiting_since=item.waiting_since.isoformat(),
    )
    return row


def _awaiting_runs(sessions: list[uuid.UUID]) -> dict[uuid.UUID, Run]:
    """Each session's newest run that awaits a person and has started."""
    if not sessions:
        return {}
    rows = Run.objects.filter(session_id__in=sessions, status__in=AWAITING_RUN_STATUSES)
    newest: dict[uuid.UUID, Run] = {}
    for run in rows.exclude(start_seq=None).order_by("-created_at"):
        newest.setdefault(run.session_id, run)
    return newest


class _Waiting(NamedTuple):
    """What the inbox shows of a session that waits on its owner."""

    pk: uuid.UUID
    title: str
    version: int | None
    agent: str | None


def _pending_in(
    session: _Waiting,
    run: Run,
    events: list[tuple[core_events.Event, datetime]],
    ledger: CallLedger,
) -> list[PendingApproval]:
    """The calls of ``run`` (``session``'s) that asked for approval and have none yet,
    from its tracked ``events`` (``ledger`` has observed them)."""
    waiting = {call for call, verdict in ledger.approvals.items() if verdict is None}
    if not waiting:
        return []
    found = []
    for event, created_at in events:
        info = event.approval
        if event.type is not core_events.EventType.APPROVAL_REQUEST or info is None:
            continue
        if info.call_id not in waiting:
            continue
        found.append(
            PendingApproval(
                session_id=session.pk,
                session_title=session.title,
                run_id=run.pk,
                agent=session.agent or "",
                agent_version=session.version,
                call_id=info.call_id,
                tool=info.tool,
                args=info.args,
                args_hash=info.args_hash,
                args_schema=info.args_schema,
                waiting_since=created_at,
            )
        )
    return found


def _questions_in(
    session: _Waiting,
    run: Run,
    events: list[tuple[core_events.Event, datetime]],
    ledger: CallLedger,
) -> list[PendingQuestion]:
    """The questions ``run`` (``session``'s) asked that have no answer yet."""
    found = []
    for event, created_at in events:
        info = event.question
        if event.type is not core_events.EventType.USER_QUESTION or info is None:
            continue
        if not ledger.awaits_answer(info.call_id):
            continue
        found.append(
            PendingQuestion(
                session_id=session.pk,
                session_title=session.title,
                run_id=run.pk,
                agent=session.agent or "",
                agent_version=session.version,
                call_id=info.call_id,
                question=info.question,
                waiting_since=created_at,
            )
        )
    return found
