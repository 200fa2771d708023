"""Executing a queued run: the only caller of ``Runner``.

``execute_run`` builds the pinned agent version, runs one turn through
``DjangoSessionService`` and records the outcome on the ``Run``. The live-runs work
schedules it as a task and publishes its events; ``manage.py run_agent`` awaits it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from agents_core import config as core_config
from agents_core import events as core_events
from agents_core import exceptions as core_exceptions
from agents_core.agents.base import BaseAgent
from agents_core.context import CancellationToken
from agents_core.contracts import Usage
from agents_core.runner import CANCELLED, Runner
from studio import agent_specs, services
from studio.db import db_sync_to_async
from studio.errors import ConflictError
from studio.models import DEFAULT_APP_NAME, Run, RunStatus
from studio.session_service import DjangoSessionService, append_event_sync

EventSink = Callable[[core_events.Event], Awaitable[None]]


@dataclass(slots=True)
class _Prepared:
    agent: BaseAgent
    run_config: core_config.RunConfig
    user_id: str
    session_key: str


@dataclass(slots=True)
class _Outcome:
    usage: Usage
    error: core_events.ErrorInfo | None = None


async def execute_run(
    run: Run, *, on_event: EventSink | None = None, cancel_token: CancellationToken | None = None
) -> Run:
    """Run ``run`` (which must be queued) to its end; every event, partial ones
    included, goes to ``on_event`` after it is stored. Returns the finished run."""
    prepared = await db_sync_to_async(_prepare)(run)
    if prepared is None:
        return await Run.objects.aget(pk=run.pk)
    runner = Runner(
        prepared.agent,
        session_service=DjangoSessionService(),
        app_name=DEFAULT_APP_NAME,
        run_config=prepared.run_config,
    )
    outcome = _Outcome(usage=Usage())
    try:
        stream = runner.astream(
            user_id=prepared.user_id,
            session_id=prepared.session_key,
            message=run.message,
            cancel_token=cancel_token,
        )
        async for event in stream:
            await _observe(run, event, outcome)
            if on_event is not None:
                await on_event(event)
    except asyncio.CancelledError:
        await _finish(run, outcome, RunStatus.INTERRUPTED, "interrupted", "the run was stopped")
        raise
    except Exception as exc:
        await _finish(run, outcome, RunStatus.FAILED, "internal_error", type(exc).__name__)
        raise
    return await _finish(run, outcome, *_status_of(outcome.error))


async def _observe(run: Run, event: core_events.Event, outcome: _Outcome) -> None:
    if not run.invocation_id:
        run.invocation_id = event.invocation_id
        await Run.objects.filter(pk=run.pk).aupdate(invocation_id=event.invocation_id)
    if event.partial:
        return
    if event.usage is not None:
        outcome.usage = outcome.usage + event.usage
    if event.is_terminal_error:
        outcome.error = event.error


def _status_of(error: core_events.ErrorInfo | None) -> tuple[RunStatus, str, str]:
    if error is None:
        return RunStatus.SUCCEEDED, "", ""
    status = RunStatus.CANCELLED if error.code == CANCELLED else RunStatus.FAILED
    return status, error.code, error.message


async def _finish(run: Run, outcome: _Outcome, status: RunStatus, code: str, message: str) -> Run:
    run.input_tokens = outcome.usage.input_tokens
    run.output_tokens = outcome.usage.output_tokens
    return await db_sync_to_async(services.finish_run)(run, status, code=code, message=message)


def _prepare(run: Run) -> _Prepared | None:
    """Mark the run running and build its agent; a version that no longer builds
    fails the run with an error event, and ``None`` is returned."""
    run = Run.objects.select_related("session__owner", "session__agent_version__agent").get(
        pk=run.pk
    )
    session, version = run.session, run.session.agent_version
    if run.status != RunStatus.QUEUED or version is None:
        raise ConflictError(f"run {run.pk} is {run.status}, not queued", code="run_not_queued")
    try:
        agent, run_config = agent_specs.build(version)
    except core_exceptions.AgentsCoreError as exc:
        error = core_events.ErrorInfo(code=exc.code, message=str(exc), failure="terminal")
        event = core_events.Event(
            type=core_events.EventType.ERROR,
            invocation_id=core_events.new_id(),
            session_id=session.key,
            author=str(version.spec.get("name") or version.agent.name),
            error=error,
        )
        stored = append_event_sync(session.key, event)
        run.invocation_id = stored.invocation_id
        services.finish_run(run, RunStatus.FAILED, code=exc.code, message=str(exc))
        return None
    services.mark_running(run)
    return _Prepared(agent, run_config, session.owner.get_username(), session.key)
