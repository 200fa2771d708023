"""Studio's use cases. Views, admin actions and commands call these, never the ORM
directly for anything that spans rows, a transaction or the core."""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.dispatch import Signal
from django.utils import timezone

from agents_core import events as core_events
from agents_core import exceptions as core_exceptions
from agents_core.llm import ChatMessage, LlmRequest
from studio import agent_specs
from studio.errors import ConflictError, InvalidInputError, LimitError, Problem
from studio.llms import build_llm
from studio.models import (
    ACTIVE_RUN_STATUSES,
    Agent,
    AgentVersion,
    ModelConfig,
    Run,
    RunStatus,
    Session,
    SessionStatus,
    spec_hash,
)
from studio.session_service import append_event_sync

AGENT_FORMAT = "studio.agent"
SESSION_FORMAT = "studio.session"
FORMAT_VERSION = 1

run_queued = Signal()
"""Sent (after commit) with ``run`` when a run is queued; the run manager listens, to
execute it."""

run_cancelled = Signal()
"""Sent (after commit) with ``run`` when a run is cancelled; the run manager listens,
to stop the task executing it."""


# Agents and versions


def create_agent(
    owner: AbstractBaseUser, *, name: str, spec: Any, description: str = "", note: str = ""
) -> Agent:
    """A new agent with its first version."""
    parsed = agent_specs.validate(owner, spec, agent_name=name)
    try:
        with transaction.atomic():
            agent = Agent.objects.create(owner_id=owner.pk, name=name, description=description)
            _add_version(agent, agent_specs.normalize(parsed), note)
    except IntegrityError:
        raise _name_taken(name) from None
    return agent


def update_agent(
    agent: Agent,
    *,
    name: str | None = None,
    description: str | None = None,
    spec: Any = None,
    note: str = "",
) -> Agent:
    """Rename, redescribe, and (when ``spec`` differs from the current one) add a version."""
    with transaction.atomic():
        if name is not None:
            agent.name = name
        if description is not None:
            agent.description = description
        try:
            with transaction.atomic():
                agent.save(update_fields=["name", "description", "updated_at"])
        except IntegrityError:
            raise _name_taken(agent.name) from None
        if spec is not None:
            save_agent_spec(agent, spec, note=note)
    return agent


def save_agent_spec(agent: Agent, spec: Any, *, note: str = "") -> tuple[AgentVersion, bool]:
    """Store ``spec`` as the agent's next version, unless it equals the current one.
    Returns the current version and whether it was created."""
    normalized = agent_specs.normalize(
        agent_specs.validate(agent.owner, spec, agent_name=agent.name)
    )
    with transaction.atomic():
        locked = Agent.objects.select_for_update().get(pk=agent.pk)
        current = locked.current_version
        if current is not None and current.content_hash == spec_hash(normalized):
            return current, False
        version = _add_version(locked, normalized, note)
    agent.current_version = version
    return version, True


def delete_agent(agent: Agent) -> None:
    """Delete an agent no other agent references, with its versions and sessions
    (cancelling their active runs first)."""
    users = agent_specs.agents_referencing(agent.owner, agent.name)
    if users:
        raise ConflictError(
            f"agent {agent.name!r} is referenced by: {', '.join(users)}; change those first",
            code="agent_in_use",
        )
    with transaction.atomic():
        for session in Session.objects.filter(agent_version__agent=agent):
            delete_session(session)
        agent.delete()


def _add_version(agent: Agent, spec: dict[str, Any], note: str) -> AgentVersion:
    latest = agent.versions.aggregate(latest=Max("number"))["latest"] or 0
    version = AgentVersion.objects.create(agent=agent, number=latest + 1, spec=spec, note=note)
    agent.current_version = version
    agent.save(update_fields=["current_version", "updated_at"])
    return version


def _name_taken(name: str) -> InvalidInputError:
    return InvalidInputError(
        "name", [Problem((), "unique", f"you already have an agent named {name!r}")]
    )


def export_agent(agent: Agent) -> dict[str, Any]:
    """A portable JSON document of the agent's current definition. It names models and
    other agents by name only: nothing secret, nothing of anyone else's."""
    return {
        "format": AGENT_FORMAT,
        "format_version": FORMAT_VERSION,
        "name": agent.name,
        "description": agent.description,
        "spec": agent.spec,
        "exported_at": timezone.now().isoformat(),
    }


def import_agent(owner: AbstractBaseUser, document: dict[str, Any]) -> Agent:
    """Create an agent from an ``export_agent`` document (already shape-checked)."""
    return create_agent(
        owner,
        name=document["name"],
        description=document.get("description", ""),
        spec=document["spec"],
        note="imported",
    )


# Sessions and runs


def start_session(owner: AbstractBaseUser, agent: Agent, *, title: str = "") -> Session:
    """A new session pinned to the agent's current version."""
    if agent.current_version is None:
        raise ConflictError(f"agent {agent.name!r} has no version yet", code="agent_has_no_version")
    return Session.objects.create(
        owner_id=owner.pk, agent_version=agent.current_version, title=title
    )


def start_run(session: Session, text: str) -> Run:
    """Queue a run for ``text``: one active run per session at a time (``ConflictError``),
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
        run = Run.objects.create(session=locked, message=text)
        locked.status = SessionStatus.QUEUED
        locked.title = locked.title or _title_from(text)
        locked.updated_at = timezone.now()
        locked.save(update_fields=["status", "title", "updated_at"])
        transaction.on_commit(lambda: run_queued.send(sender=Run, run=run))
    session.refresh_from_db(fields=["status", "title", "updated_at"])
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
    """Cancel a queued or running run; a finished run is a conflict.

    A running run's executor hears ``run_cancelled`` and ends it with a cancelled
    event; a run that never started gets that event here.
    """
    with transaction.atomic():
        locked = Run.objects.select_for_update().select_related("session").get(pk=run.pk)
        if not locked.is_active:
            raise ConflictError(f"the run already {locked.status}", code="run_finished")
        never_started = locked.status == RunStatus.QUEUED
        _finish(locked, RunStatus.CANCELLED, code="cancelled", message="cancelled by request")
        if never_started:
            event = terminal_error(locked.session, "cancelled", "cancelled by request")
            locked.invocation_id = append_event_sync(locked.session.key, event).invocation_id
            locked.save(update_fields=["invocation_id"])
        transaction.on_commit(lambda: run_cancelled.send(sender=Run, run=locked))
    run.refresh_from_db()
    return run


def cancel_active_run(session: Session) -> Run:
    """Cancel the session's queued or running run, if it has one."""
    run = session.runs.filter(status__in=ACTIVE_RUN_STATUSES).order_by("-created_at").first()
    if run is None:
        raise ConflictError("this session has no run in progress", code="no_active_run")
    return cancel_run(run)


def terminal_error(
    session: Session, code: str, message: str, *, invocation_id: str | None = None
) -> core_events.Event:
    """An unsaved terminal error event of ``session``, authored by its agent."""
    version = session.agent_version
    author = str(version.spec.get("name") or version.agent.name) if version else "studio"
    return core_events.Event(
        type=core_events.EventType.ERROR,
        invocation_id=invocation_id or core_events.new_id(),
        session_id=session.key,
        author=author,
        branch=author,
        error=core_events.ErrorInfo(code=code, message=message, failure="terminal"),
    )


def claim_run(run: Run, *, owner: str, lease_s: float) -> bool:
    """Mark queued ``run`` running in process ``owner``, holding a lease of ``lease_s``
    seconds; False when it is no longer queued (cancelled meanwhile)."""
    now = timezone.now()
    fields = {
        "status": RunStatus.RUNNING,
        "started_at": now,
        "owner_process": owner,
        "lease_expires_at": now + timedelta(seconds=lease_s),
    }
    with transaction.atomic():
        sessions = Session.objects.select_for_update().values_list("last_seq", flat=True)
        start_seq = sessions.get(pk=run.session_id)
        queued = Run.objects.filter(pk=run.pk, status=RunStatus.QUEUED)
        if not queued.update(**fields, start_seq=start_seq):
            return False
        Session.objects.filter(pk=run.session_id).update(status=SessionStatus.RUNNING)
    for name, value in {**fields, "start_seq": start_seq}.items():
        setattr(run, name, value)
    return True


def renew_lease(run: Run, *, owner: str, lease_s: float) -> bool:
    """Extend ``owner``'s lease on active ``run``; False once the run is no longer
    active or no longer ``owner``'s (cancelled, or interrupted by recovery)."""
    until = timezone.now() + timedelta(seconds=lease_s)
    mine = Run.objects.filter(pk=run.pk, owner_process=owner, status__in=ACTIVE_RUN_STATUSES)
    return bool(mine.update(lease_expires_at=until))


def finish_run(run: Run, status: RunStatus, *, code: str = "", message: str = "") -> Run:
    """Record how a run ended and release its lease (a cancellation or interruption
    recorded meanwhile stands)."""
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        locked.input_tokens, locked.output_tokens = run.input_tokens, run.output_tokens
        locked.invocation_id = run.invocation_id or locked.invocation_id
        locked.owner_process, locked.lease_expires_at = "", None
        if not locked.is_active:
            kept = ["input_tokens", "output_tokens", "invocation_id"]
            locked.save(update_fields=[*kept, "owner_process", "lease_expires_at"])
            return locked
        _finish(locked, status, code=code, message=message)
    return locked


def _finish(run: Run, status: RunStatus, *, code: str, message: str) -> None:
    run.status = status
    run.ended_at = timezone.now()
    run.error_code, run.error_message = code, message
    run.save()
    Session.objects.filter(pk=run.session_id).update(status=status, updated_at=run.ended_at)


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
        "runs": [_run_summary(run) for run in session.runs.order_by("created_at")],
        "events": [event.payload for event in session.events.order_by("seq")],
    }


def _run_summary(run: Run) -> dict[str, Any]:
    return {
        "id": str(run.id),
        "invocation_id": run.invocation_id,
        "status": run.status,
        "message": run.message,
        "created_at": run.created_at.isoformat(),
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "ended_at": run.ended_at.isoformat() if run.ended_at else None,
        "input_tokens": run.input_tokens,
        "output_tokens": run.output_tokens,
        "cost": str(run.cost) if run.cost is not None else None,
        "error_code": run.error_code,
        "error_message": run.error_message,
    }


# Model configs


def delete_model_config(config: ModelConfig) -> None:
    """Delete a model config no agent's current spec names."""
    users = agent_specs.agents_using_model(config.owner, config.name)
    if users:
        raise ConflictError(
            f"model {config.name!r} is used by: {', '.join(users)}; change those agents first",
            code="model_in_use",
        )
    config.delete()


@dataclass(frozen=True, slots=True)
class ConnectionCheck:
    ok: bool
    detail: str
    latency_ms: float | None = None


_KEY_LIKE = re.compile(r"\b(?:sk|pk|rk|key|api)[-_][-_A-Za-z0-9*.]{6,}", re.IGNORECASE)


async def check_model_connection(config: ModelConfig) -> ConnectionCheck:
    """Send one tiny request to the config's endpoint. Never raises, never echoes the key."""
    if config.provider == ModelConfig.Provider.SCRIPTED:
        return ConnectionCheck(ok=True, detail="scripted models run offline")
    timeout = settings.MODEL_TEST_TIMEOUT_S
    request = LlmRequest(messages=[ChatMessage(role="user", text="Reply with: ok")])
    started = time.monotonic()
    try:
        llm = build_llm(config, timeout_s=timeout)
        async with asyncio.timeout(timeout):
            async for response in llm.astream(request):
                if not response.partial:
                    break
    except TimeoutError:
        return ConnectionCheck(ok=False, detail=f"no answer within {timeout:g}s")
    except core_exceptions.AgentsCoreError as exc:
        return ConnectionCheck(ok=False, detail=_scrub(f"{exc.code}: {exc.message}", config))
    except Exception as exc:  # a misconfigured client must report, not crash the view
        return ConnectionCheck(ok=False, detail=_scrub(f"{type(exc).__name__}: {exc}", config))
    elapsed = (time.monotonic() - started) * 1000
    return ConnectionCheck(ok=True, detail="the endpoint answered", latency_ms=round(elapsed, 1))


def _scrub(text: str, config: ModelConfig) -> str:
    """Provider errors sometimes quote the key they were sent; never pass that on."""
    key = config.api_key()
    if key:
        text = text.replace(key, "[redacted]")
    return _KEY_LIKE.sub("[redacted]", text)[:500]
