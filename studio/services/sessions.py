"""Sessions and their runs: start a session, start, pause, resume, cancel and watch
runs, resume an interrupted run from its last step, delete and export sessions. A
run's life past its start is ``studio.runs``'s; these are its front door for pages,
the API, the admin, websockets and commands."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils import timezone

from studio import files as stored_files
from studio import runs, wire
from studio.agents import llms, specs
from studio.errors import ConflictError, InvalidInputError, LimitError, Problem
from studio.live import Status
from studio.models import (
    ACTIVE_RUN_STATUSES,
    Agent,
    AgentVersion,
    IngestedTrace,
    Run,
    RunStatus,
    Session,
    SessionStatus,
)
from studio.runs import records

SESSION_FORMAT = "studio.session"
FORMAT_VERSION = 1
"""The version of the agent export format (``services.agents``); sessions' was too."""
SESSION_FORMAT_VERSION = 2
"""The version of the session export format: 2 adds ``files``, the bytes of the files
its messages attach (version 1 documents had the references only)."""


def start_session(
    owner: AbstractBaseUser,
    agent: Agent,
    *,
    title: str = "",
    version: AgentVersion | None = None,
    state: dict[str, Any] | None = None,
) -> Session:
    """A new session pinned to ``version`` of the agent (default: its current one),
    starting from ``state`` (default: empty), as an eval's case does."""
    if version is None:
        version = agent.current_version
    if version is None:
        raise ConflictError(f"agent {agent.name!r} has no version yet", code="agent_has_no_version")
    if version.agent_id != agent.pk:
        raise ConflictError(
            f"version {version.number} is not a version of agent {agent.name!r}",
            code="version_of_another_agent",
        )
    return Session.objects.create(
        owner_id=owner.pk, agent_version=version, title=title, state=dict(state or {})
    )


def start_run(session: Session, text: str, files: Sequence[UploadedFile[bytes]] = ()) -> Run:
    """Queue a run for ``text`` and any attached ``files`` (stored as the turn's first
    event) and hand it to the executor once committed: one active run per session at a
    time (``ConflictError``), at most ``STUDIO_MAX_CONCURRENT_RUNS_PER_USER`` per owner
    (``LimitError``). Files are checked (``studio.files``) and the session's models
    must take them (``InvalidInputError`` on ``files``) before anything is stored."""
    checked = stored_files.check_files(files)
    if checked:
        _check_models_take_files(session)
    with transaction.atomic():
        locked = _lock_for_a_new_run(session)
        parts = stored_files.store(locked.owner, checked)
        run = records.queue_run(locked, text, files=parts)
        locked.title = locked.title or _title_from(text)
        _submit(locked, run)
    session.refresh_from_db(fields=["status", "title", "updated_at", "last_seq"])
    return run


def resume_interrupted_run(run: Run) -> Run:
    """Queue a new run that goes on from interrupted ``run`` where its record ends (no
    user message: the agents read the record, recorded tool results included, so no
    call that answered runs again) and hand it to the executor once committed. Only the
    latest run of its session can be resumed, and only when it was ``interrupted``
    (``ConflictError`` ``run_not_interrupted``, ``run_superseded``); the checks of
    ``start_run`` apply too (``run_in_progress``, ``too_many_runs``)."""
    with transaction.atomic():
        locked = _lock_for_a_new_run(run.session)
        interrupted = Run.objects.select_for_update().get(pk=run.pk)
        if interrupted.status != RunStatus.INTERRUPTED:
            raise ConflictError(
                f"only an interrupted run can be resumed from its last step; this one is "
                f"{interrupted.status}",
                code="run_not_interrupted",
            )
        latest = locked.runs.order_by("-created_at").values_list("pk", flat=True).first()
        if latest != interrupted.pk:
            raise ConflictError(
                "a later run of this session exists; only the latest run can be resumed",
                code="run_superseded",
            )
        resumed = records.queue_resumed_run(locked, interrupted)
        _submit(locked, resumed)
    run.session.refresh_from_db(fields=["status", "updated_at"])
    return resumed


def _lock_for_a_new_run(session: Session) -> Session:
    """``session``, locked with its owner, once it may have a new run: it has an agent,
    no run in progress, and its owner is under the cap."""
    # Holding the owner's row serialises starts across their sessions, so two at
    # once cannot both pass the cap (on PostgreSQL; SQLite serialises writers).
    users = get_user_model()._default_manager.select_for_update()
    list(users.filter(pk=session.owner_id).values_list("pk", flat=True))
    locked = Session.objects.select_for_update().get(pk=session.pk)
    refuse_read_only(locked)
    refuse_ingested(locked.pk)
    if locked.agent_version_id is None:
        raise ConflictError("this session has no agent to run", code="session_has_no_agent")
    if locked.runs.filter(status__in=ACTIVE_RUN_STATUSES).exists():
        raise ConflictError(
            "this session already has a run in progress; wait for it or cancel it",
            code="run_in_progress",
        )
    _check_run_cap(locked.owner_id)
    return locked


def refuse_read_only(session: Session) -> None:
    """An imported session (``studio.bundles``) takes no new run and no fork: it is a
    record of a run made elsewhere, replayed (``services.replay_run``), never continued."""
    if session.read_only:
        raise ConflictError(
            "this session was imported from a run bundle and is read-only; replay its runs instead",
            code="session_read_only",
        )


def refuse_ingested(session_pk: uuid.UUID) -> None:
    """A session ingested over OTLP (``services.ingest``) is the record of an agent that
    runs elsewhere, which Studio cannot reach: its runs take no new message, pause,
    resume, cancel, fork or replay. Reading it (timeline, waterfall, diff, bundle
    export) is all there is."""
    if IngestedTrace.objects.filter(session_id=session_pk).exists():
        raise ConflictError(
            "this run was sent over OTLP by an agent that runs elsewhere: Studio shows it, "
            "but cannot pause, resume, cancel, fork, replay or continue it",
            code="run_ingested",
        )


def _submit(session: Session, run: Run) -> None:
    """Record ``session`` (locked) as queued and hand ``run`` to the executor once the
    transaction commits."""
    session.status = SessionStatus.QUEUED
    session.updated_at = timezone.now()
    session.save(update_fields=["status", "title", "updated_at"])
    transaction.on_commit(lambda: runs.executor().submit(run))


def _check_run_cap(owner_id: int) -> None:
    cap: int = settings.STUDIO_MAX_CONCURRENT_RUNS_PER_USER
    # A run parked on a person holds no slot: it executes nowhere until decided; nor
    # does a run ingested over OTLP, which executes elsewhere.
    holding = ACTIVE_RUN_STATUSES - {RunStatus.WAITING}
    active = Run.objects.filter(
        session__owner_id=owner_id, status__in=holding, session__ingested__isnull=True
    )
    if active.count() >= cap:
        raise LimitError(
            f"you already have {cap} runs in progress, the most allowed; "
            "wait for one to finish or cancel one",
            code="too_many_runs",
        )


def _check_models_take_files(session: Session) -> None:
    """Every model of the session's agent tree must take images and files: each sees
    the user's message."""
    version = session.agent_version
    if version is None:
        return
    for agent, config in specs.agent_model_configs(version).items():
        if not llms.accepts_attachments(config):
            message = (
                f"model {config.name!r} (agent {agent!r}) does not accept images or files; "
                "pick a model that does (turn on its vision option) or send text only"
            )
            raise InvalidInputError("files", [Problem((), "model_takes_no_files", message)])


def _title_from(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 80 else f"{line[:79]}…"


def cancel_run(run: Run) -> Run:
    """Cancel a queued or running run; a finished run is a conflict. A run that never
    started ends here, with its cancelled event; a running one's executor hears of it
    once committed and ends it. An ingested run is refused (``run_ingested``)."""
    refuse_ingested(run.session_id)
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


def pause_run(run: Run) -> Run:
    """Pause a running run: it finishes the step it is in, then waits, announcing it
    with a ``run_paused`` event, until ``resume_run``. Its status is ``paused`` from
    now on. ``ConflictError`` ``run_not_running`` for a run that is not running."""
    return _hold(run, paused=True)


def resume_run(run: Run) -> Run:
    """Let a paused run go on; ``ConflictError`` ``run_not_paused`` for any other."""
    return _hold(run, paused=False)


def _hold(run: Run, *, paused: bool) -> Run:
    """Record a pause (or a resume) of ``run`` and, once committed, tell its executor."""
    refuse_ingested(run.session_id)
    needed, verb, code = (
        (RunStatus.RUNNING, "paused", "run_not_running")
        if paused
        else (RunStatus.PAUSED, "resumed", "run_not_paused")
    )
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        if locked.status != needed:
            raise ConflictError(
                f"only a {needed.value} run can be {verb}; this one is {locked.status}",
                code=code,
            )
        (records.request_pause if paused else records.request_resume)(locked)
        transaction.on_commit(lambda: _tell_executor(locked, paused=paused))
    run.refresh_from_db()
    return run


def _tell_executor(run: Run, *, paused: bool) -> None:
    executor = runs.executor()
    (executor.pause if paused else executor.resume)(run)


def pause_active_run(session: Session) -> Run:
    """Pause the session's running run (``run_not_running`` when it has none)."""
    return pause_run(_latest_run(session, "no run of this session is running"))


def resume_active_run(session: Session) -> Run:
    """Resume the session's paused run (``run_not_paused`` when it has none)."""
    return resume_run(_latest_run(session, "no run of this session is paused"))


def _latest_run(session: Session, none: str) -> Run:
    run = session.runs.filter(status__in=ACTIVE_RUN_STATUSES).order_by("-created_at").first()
    if run is None:
        raise ConflictError(none, code="no_active_run")
    return run


async def session_status(session_pk: uuid.UUID) -> Status:
    """What the session's latest run is doing, as its viewers are told."""
    return await runs.executor().status(session_pk)


def show_calls_in_flight(status: Status) -> None:
    """A viewer joined with ``status``: while the run waits for its model, its executor
    sends the calls in flight that showed themselves again (``runs.Execution``)."""
    if status.waiting_for == "model" and status.run is not None:
        runs.executor().show_calls(uuid.UUID(str(status.run["id"])))


def delete_session(session: Session) -> None:
    """Cancel its active runs (so their executors stop), then delete it with its events.
    An ingested session's runs execute nowhere here: there is nothing to stop."""
    with transaction.atomic():
        if not IngestedTrace.objects.filter(session_id=session.pk).exists():
            for run in session.runs.filter(status__in=ACTIVE_RUN_STATUSES):
                cancel_run(run)
        session.delete()


def export_session(session: Session) -> dict[str, Any]:
    """Everything needed to read a session elsewhere: its events (wire JSON), runs,
    the agent version it ran and the files its messages attach (``files``: each once,
    with its SHA-256, type, size and base64 bytes). Contains no secret: model configs
    appear by name."""
    version = session.agent_version
    events = [event.payload for event in session.events.order_by("seq")]
    return {
        "format": SESSION_FORMAT,
        "format_version": SESSION_FORMAT_VERSION,
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
        "events": events,
        "files": stored_files.exported(session.owner, events),
    }
