"""Executing one run: the only caller of ``Runner``.

``execute_run`` claims a queued run for this process, builds its pinned agent version
with the owner's models (and connects the MCP servers it names), runs one turn through
``DjangoSessionService`` (which stores each complete event, seq assigned, before the
runner yields it), renews the run's lease while it runs and records the outcome. A run
that stops on an unexpected error (its database went away mid-run, say) still ends with
a stored terminal ``internal_error`` event, the store retried while the database is away.

Who calls it: ``studio.runs`` (the run manager, which also publishes what it yields),
the worker task (``studio.tasks``) through the manager's ``execute_and_publish``, and
``manage.py run_agent``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction

from agents_core import config as core_config
from agents_core import events as core_events
from agents_core import exceptions as core_exceptions
from agents_core.agents.base import BaseAgent
from agents_core.approvals import ApprovalBroker
from agents_core.context import CancellationToken
from agents_core.contracts import Usage
from agents_core.runner import CANCELLED, Runner
from studio import agent_specs, mcp, recovery, services
from studio.db import db_sync_to_async
from studio.errors import ConflictError
from studio.models import DEFAULT_APP_NAME, Run, RunStatus, Session
from studio.session_service import DjangoSessionService, append_event_sync

logger = logging.getLogger("studio.execution")

PROCESS_ID = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
"""Who owns the runs this process executes (``Run.owner_process``)."""

INTERNAL_ERROR = "internal_error"
DATABASE_GONE = (OperationalError, InterfaceError)
"""What the database raises while it is unreachable."""
END_RETRY_S = 60.0
"""How long a run keeps trying to record how it ended while the database is away."""

EventSink = Callable[[core_events.Event], Awaitable[None]]
RunSink = Callable[[Run], Awaitable[None]]


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
    run: Run,
    *,
    on_event: EventSink | None = None,
    on_claimed: RunSink | None = None,
    cancel_token: CancellationToken | None = None,
    approvals: ApprovalBroker | None = None,
) -> Run:
    """Run ``run`` (which must be queued) to its end; every event, partial ones
    included, goes to ``on_event`` after it is stored. Returns the finished run.

    The run is claimed first, and its lease held from then on, so it is nobody's only
    for a moment (``studio.recovery``); then the MCP servers its agents name connect,
    staying connected for the whole run, and its agent is built."""
    token = cancel_token or CancellationToken()
    await db_sync_to_async(_claim)(run)
    lease = asyncio.create_task(_keep_lease(run, token), name=f"lease-{run.pk}")
    outcome = _Outcome(usage=Usage())
    prepared: _Prepared | None = None
    try:
        if on_claimed is not None:
            await on_claimed(run)
        servers = await db_sync_to_async(mcp.servers_for_run)(run)
        async with mcp.open_tools(servers) as mcp_tools:
            prepared = await db_sync_to_async(_prepare)(run, mcp_tools)
            if prepared is not None:
                await _stream(run, prepared, token, approvals, outcome, on_event)
    except asyncio.CancelledError:
        await db_sync_to_async(recovery.interrupt)(run.pk, force=True)
        raise
    except Exception as exc:
        await _end_on_error(run, outcome, exc, on_event)
        raise
    finally:
        lease.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await lease
    if prepared is None:
        return await Run.objects.aget(pk=run.pk)
    status = _status_of(outcome.error)
    return await _retrying(f"record how run {run.pk} ended", _finish, run, outcome, *status)


async def _stream(
    run: Run,
    prepared: _Prepared,
    token: CancellationToken,
    approvals: ApprovalBroker | None,
    outcome: _Outcome,
    on_event: EventSink | None,
) -> None:
    runner = Runner(
        prepared.agent,
        session_service=DjangoSessionService(),
        app_name=DEFAULT_APP_NAME,
        run_config=prepared.run_config,
        approvals=approvals,
    )
    stream = runner.astream(
        user_id=prepared.user_id,
        session_id=prepared.session_key,
        message=run.message,
        cancel_token=token,
    )
    async with contextlib.aclosing(stream) as events:
        async for event in events:
            await _observe(run, event, outcome)
            if on_event is not None:
                await on_event(event)


async def _keep_lease(run: Run, token: CancellationToken) -> None:
    """Renew the run's lease while it executes; once the lease is lost (the run was
    cancelled or interrupted elsewhere), stop the run."""
    lease_s = settings.STUDIO_RUN_LEASE_S
    while True:
        await asyncio.sleep(lease_s / 3)
        try:
            mine = await db_sync_to_async(services.renew_lease)(
                run, owner=PROCESS_ID, lease_s=lease_s
            )
        except Exception:  # a database hiccup: the lease has two more chances
            logger.warning("could not renew the lease of run %s", run.pk, exc_info=True)
            continue
        if not mine:
            token.cancel("the run was stopped elsewhere")
            return


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


async def _end_on_error(
    run: Run, outcome: _Outcome, exc: Exception, on_event: EventSink | None
) -> None:
    """End ``run``, which stopped on ``exc`` (the database went away, say), with a stored
    terminal error event that viewers get, retrying while the database is away. Should
    it stay away past ``END_RETRY_S``, the lease sweep closes the run instead."""
    message = f"the run stopped on an internal error ({type(exc).__name__})"
    try:
        stored = await _retrying(f"end run {run.pk}", _fail, run, outcome.usage, message)
    except DATABASE_GONE:
        logger.error("run %s: the database stayed away; the lease sweep will end it", run.pk)
        return
    if stored is not None and on_event is not None:
        try:
            await on_event(stored)
        except Exception:  # the sink itself may be what failed; the event is stored
            logger.warning("run %s: could not pass on its error event", run.pk, exc_info=True)


@db_sync_to_async
def _fail(run: Run, usage: Usage, message: str) -> core_events.Event | None:
    """Store a terminal ``internal_error`` event and mark ``run`` failed, in one
    transaction (so retrying after a lost commit never stores it twice); ``None`` when
    the run already ended (cancelled, or interrupted by a sweep): that record stands."""
    with transaction.atomic():
        locked = (
            Run.objects.select_for_update(of=("self",))
            .select_related("session__agent_version__agent")
            .get(pk=run.pk)
        )
        if not locked.is_active:
            return None
        error = services.terminal_error(
            locked.session, INTERNAL_ERROR, message, invocation_id=run.invocation_id or None
        )
        stored = append_event_sync(locked.session.key, error)
        run.invocation_id = run.invocation_id or stored.invocation_id
        run.input_tokens, run.output_tokens = usage.input_tokens, usage.output_tokens
        services.finish_run(run, RunStatus.FAILED, code=INTERNAL_ERROR, message=message)
    return stored


async def _retrying[**P, R](
    what: str, call: Callable[P, Awaitable[R]], *args: P.args, **kwargs: P.kwargs
) -> R:
    """``call``, tried again with growing pauses while the database is unreachable, for
    at most ``END_RETRY_S``; then its error propagates."""
    loop = asyncio.get_running_loop()
    give_up_at = loop.time() + END_RETRY_S
    pause = 0.05
    while True:
        try:
            return await call(*args, **kwargs)
        except DATABASE_GONE:
            if loop.time() + pause > give_up_at:
                raise
            logger.warning("could not %s; trying again in %.2fs", what, pause, exc_info=True)
        await asyncio.sleep(pause)
        pause = min(pause * 2, 1.0)


def _claim(run: Run) -> None:
    """Claim queued ``run`` for this process (``ConflictError`` when it is not queued)."""
    version_id = Session.objects.filter(pk=run.session_id).values_list(
        "agent_version_id", flat=True
    )
    if version_id.first() is None:
        raise ConflictError(f"run {run.pk} has no agent to run", code="run_not_queued")
    if not services.claim_run(run, owner=PROCESS_ID, lease_s=settings.STUDIO_RUN_LEASE_S):
        status = Run.objects.filter(pk=run.pk).values_list("status", flat=True).first()
        raise ConflictError(f"run {run.pk} is {status}, not queued", code="run_not_queued")


def _prepare(run: Run, mcp_tools: mcp.OpenedTools) -> _Prepared | None:
    """Build claimed ``run``'s agent; a version that no longer builds fails the run with
    an error event, and ``None`` is returned."""
    session = Session.objects.select_related("owner", "agent_version__agent").get(pk=run.session_id)
    version = session.agent_version
    try:
        if version is None:
            raise core_exceptions.SpecError("the session's agent version was deleted")
        agent, run_config = agent_specs.build(version, mcp_tools=mcp.connected_tools(mcp_tools))
    except core_exceptions.AgentsCoreError as exc:
        error = services.terminal_error(session, exc.code, str(exc))
        stored = append_event_sync(session.key, error)
        run.invocation_id = stored.invocation_id
        services.finish_run(run, RunStatus.FAILED, code=exc.code, message=str(exc))
        return None
    return _Prepared(agent, run_config, session.owner.get_username(), session.key)
