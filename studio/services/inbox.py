"""The approval inbox: every call waiting for a decision across one user's sessions,
and every question an agent asked them that waits for their answer, read from the
stored events (the run's ledger), so it is the same in either execution mode and after
a restart."""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from django.contrib.auth.models import User

from agents_core import events as core_events
from studio.ledger import CallLedger, tracked_events_of
from studio.models import AWAITING_RUN_STATUSES, Run, Session, SessionStatus

MAX_PENDING = 500


@dataclass(frozen=True, slots=True)
class _Pending:
    """What waits for a person in one of their sessions: a call of its run."""

    session_id: uuid.UUID
    session_title: str
    run_id: uuid.UUID
    agent: str
    agent_version: int | None
    call_id: str
    args_hash: str
    """What a decision or an answer sends back: it binds them to what was shown."""
    waiting_since: datetime
    expires_at: datetime | None
    """When the wait ends without a person (an approval's ``on_timeout`` decides it; a
    question's model reads that nobody answered); ``None``: it waits as long as it must."""


@dataclass(frozen=True, slots=True)
class PendingApproval(_Pending):
    """One call waiting for its owner's decision."""

    tool: str
    args: dict[str, Any]
    args_schema: dict[str, Any] | None
    on_timeout: str | None
    """What deciding for nobody at ``expires_at`` does: ``approve`` or ``deny``."""


@dataclass(frozen=True, slots=True)
class PendingQuestion(_Pending):
    """One question an agent asked its owner, waiting for the answer."""

    question: str


def pending_approvals(owner: User) -> list[PendingApproval]:
    """``owner``'s pending approvals, longest waiting first."""
    return pending(owner)[0]


def pending(owner: User) -> tuple[list[PendingApproval], list[PendingQuestion]]:
    """``owner``'s pending approvals and questions, each longest waiting first. Every
    page's navigation counts them, so it takes the same few queries however many
    sessions wait: the sessions, their newest awaiting runs, and those runs' tracked
    events (``ledger.tracked_events_of``)."""
    approvals: list[PendingApproval] = []
    questions: list[PendingQuestion] = []
    for session, run, events in _waiting(owner):
        calls, asked = _items_in(session, run, events)
        approvals.extend(calls)
        questions.extend(asked)
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


def _row(item: _Pending) -> dict[str, Any]:
    row = asdict(item)
    row.update(
        session_id=str(item.session_id),
        run_id=str(item.run_id),
        session_url=f"/sessions/{item.session_id}/",
        waiting_since=item.waiting_since.isoformat(),
        expires_at=item.expires_at.isoformat() if item.expires_at else None,
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


def _items_in(
    session: _Waiting, run: Run, events: list[tuple[core_events.Event, datetime]]
) -> tuple[list[PendingApproval], list[PendingQuestion]]:
    """The calls of ``run`` (``session``'s) that asked for approval and have none yet,
    and the questions it asked that have no answer yet, from its tracked ``events``."""
    ledger = CallLedger().observe_all(event for event, _ in events)
    about: dict[str, Any] = {
        "session_id": session.pk,
        "session_title": session.title,
        "run_id": run.pk,
        "agent": session.agent or "",
        "agent_version": session.version,
    }
    approvals: list[PendingApproval] = []
    questions: list[PendingQuestion] = []
    for event, created_at in events:
        asked, put = event.approval, event.question
        if event.type is _ASKS_APPROVAL and asked and ledger.awaits_approval(asked.call_id):
            approvals.append(
                PendingApproval(
                    **about,
                    **_wait(asked, created_at),
                    tool=asked.tool,
                    args=asked.args,
                    args_schema=asked.args_schema,
                    on_timeout=asked.on_timeout,
                )
            )
        elif event.type is _ASKS_USER and put and ledger.awaits_answer(put.call_id):
            questions.append(
                PendingQuestion(**about, **_wait(put, created_at), question=put.question)
            )
    return approvals, questions


def _wait(
    asked: core_events.ApprovalInfo | core_events.QuestionInfo, asked_at: datetime
) -> dict[str, Any]:
    """What an approval request and a question say alike of their wait: the call, the
    hash a reply sends back, since when, and until when (their time-out)."""
    timeout_s = asked.timeout_s
    return {
        "call_id": asked.call_id,
        "args_hash": asked.args_hash,
        "waiting_since": asked_at,
        "expires_at": None if timeout_s is None else asked_at + timedelta(seconds=timeout_s),
    }


_ASKS_APPROVAL = core_events.EventType.APPROVAL_REQUEST
_ASKS_USER = core_events.EventType.USER_QUESTION
