"""Sessions and their runs: start a session, start, cancel and watch runs, delete and
export sessions. A run's life past its start is ``studio.runs``'s; these are its
front door for pages, the API, the admin, websockets and commands."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from studio import runs, wire
from studio.errors import ConflictError, LimitError
from studio.live import Status
from studio.models import ACTIVE_RUN_STATUSES, Agent, Run, Session, SessionStatus
from studio.runs import records

SESSION_FORMAT = "studio.session"
FORMAT_VERSION = 1
"""The version of the export formats (sessions, and agents: ``services.agents``)."""


def start_session(owner: AbstractBaseUser, agent: Agent, *, title: str = "") -> Session:
    """A new session pinned to the agent's current version."""
    if agent.current_version is None:
        raise ConflictError(f"agent {agent.name!r} has no version yet", code="agent_has_no_version")
    return Session.objects.create(
        owner_id=owner.pk, agent_version=agent.current_version, title=title
    )


def start_run(session: Session, text: str) -> Run:
    """Queue a run for ``text`` (stored as the turn's first event) and hand it to the
    executor once committed: one active run per session at a time (``ConflictError``),
    at most ``STUDIO_MAX_CONCURRENT_RUNS_PER_USER`` per owner (``LimitError``)."""
    with transaction.atomic():
        # Holding the owner's row serialises starts across their sessions, so two at
        # once cannot both pass the cap (on PostgreSQL; SQLite serialises writers).
        users = get_user_model()._default_manager.select_for_update()
        list(users.filter(pk=session.owner_id).values_list("pk", flat=True))
        locked = Session.objects.select_for_update().get(pk=session.pk)
        if locked.agent_version_id is None:
            raise ConflictError("this session has no agent to run", code="session_has_no_agent")
        if locked.runs.filter(status__in=ACTIVE_RUN_STATUSES).exists():
            raise ConflictError(
                "this session already has a run in progress; wait for it or cancel it",
                code="run_in_progress",
            )
        _check_run_cap(locked.owner_id)
        run = records.queue_run(locked, text)
        locked.status = SessionStatus.QUEUED
        locked.title = locked.title or _title_from(text)
        locked.updated_at = timezone.now()
        locked.save(update_fields=["status", "title", "updated_at"])
        transaction.on_commit(lambda: runs.executor().submit(run))
    session.refresh_from_db(fields=["status", "title", "updated_at", "last_seq"])
    return run


def _check_run_cap(owner_id: int) -> None:
    cap: int = settings.STUDIO_MAX_CONCURRENT_RUNS_PER_USER
    active = Run.objects.filter(session__owner_id=owner_id, status__in=ACTIVE_RUN_STATUSES)
    if active.count() >= cap:
        raise LimitError(
            f"you already have {cap} runs in progress, the most allowed; "
            "wait for one to finish or cancel one",
            code="too_many_runs",
        )


def _title_from(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 80 else f"{line[:79]}…"


def cancel_run(run: Run) -> Run:
    """Cancel a queued or running run; a finished run is a conflict. A run that never
    started ends here, with its cancelled event; a running one's executor hears of it
    once committed and ends it."""
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        if not locked.is_active:
            raise ConflictError(f"the run already {locked.status}", code="run_finished")
        records.request_cancel(locked)
        transaction.on_commit(lambda: runs.executor().cancel(locked))
    run.refresh_from_db()
    return run


def cancel_active_run(session: Session) -> Run:
    """Cancel the session's queued or running run, if it has one."""
    run = session.runs.filter(status__in=ACTIVE_RUN_STATUSES).order_by("-created_at").first()
    if run is None:
        raise ConflictError("this session has no run in progress", code="no_active_run")
    return cancel_run(run)


async def session_status(session_pk: uuid.UUID) -> Status:
    """What the session's latest run is doing, as its viewers are told."""
    return await runs.executor().status(session_pk)


def delete_session(session: Session) -> None:
    """Cancel its active runs (so their executors stop), then delete it with its events."""
    with transaction.atomic():
        for run in session.runs.filter(status__in=ACTIVE_RUN_STATUSES):
            cancel_run(run)
        session.delete()


def export_session(session: Session) -> dict[str, Any]:
    """Everything needed to read a session elsewhere: its events (wire JSON), runs
    and the agent version it ran. Contains no secret: model configs appear by name."""
    version = session.agent_version
    return {
        "format": SESSION_FORMAT,
        "format_version": FORMAT_VERSION,
        "session": {
            "id": str(session.id),
            "title": session.title,
            "status": session.status,
            "state": session.state,
            "created_at": session.created_at.isoformat(),
            "updated_at": session.updated_at.isoformat(),
        },
        "agent": None
        if version is None
        else {
            "id": str(version.agent_id),
            "name": version.agent.name,
            "version": {
                "number": version.number,
                "spec": version.spec,
                "content_hash": version.content_hash,
                "note": version.note,
                "created_at": version.created_at.isoformat(),
            },
        },
        "runs": [wire.run_payload(run) for run in session.runs.order_by("created_at")],
        "events": [event.payload for event in session.events.order_by("seq")],
    }
