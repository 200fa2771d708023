"""Executing runs: the run manager, and the only caller of ``Runner``.

``execute_run`` claims a queued run for this process, builds its pinned agent version
with the owner's models, runs one turn through ``DjangoSessionService`` (which stores
each complete event, seq assigned, before the runner yields it), renews the run's
lease while it runs and records the outcome. ``manage.py run_agent`` awaits it. A run
that stops on an unexpected error (its database went away mid-run, say) still ends with
a stored terminal ``internal_error`` event, the store retried while the database is away.

``RunManager`` (one per process: ``manager``) executes the runs the API and websockets
queue as asyncio tasks in the ASGI server's loop, publishes each event to the session's
group once it is yielded, so once stored (in batches; see ``studio.live``), along
with what the run waits for, cancels through a
``CancellationToken``, delivers approval decisions through one ``ApprovalBroker``, and
sweeps for runs whose server died (``studio.recovery``). Runs outlive the sockets that
watch them. ``studio.asgi`` starts it with the server. With worker execution
(``STUDIO_RUN_EXECUTION=worker``, ``studio.worker``) it hands each queued run to Django's
tasks framework instead, and relays approval decisions to the worker executing the run.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import functools
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.dispatch import receiver

from agents_core import config as core_config
from agents_core import events as core_events
from agents_core import exceptions as core_exceptions
from agents_core.agents.base import BaseAgent
from agents_core.approvals import ApprovalBroker, ApprovalDecision, ApprovalError
from agents_core.context import CancellationToken
from agents_core.contracts import Usage
from agents_core.runner import CANCELLED, Runner
from studio import agent_specs, live, mcp, recovery, services, worker
from studio.db import db_sync_to_async
from studio.errors import ConflictError
from studio.models import DEFAULT_APP_NAME, Run, RunStatus, Session
from studio.session_service import DjangoSessionService, append_event_sync

logger = logging.getLogger("studio.runs")

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


# The run manager


@dataclass(slots=True)
class Execution:
    """A run this process executes, and what its viewers were last told."""

    run_id: uuid.UUID
    run: Run | None = None
    token: CancellationToken = field(default_factory=CancellationToken)
    tracker: live.WaitingTracker = field(default_factory=live.WaitingTracker)
    last_seq: int = 0
    published: tuple[Any, ...] | None = None
    """The key of the last status handed to the publisher."""

    def status(self, run: Run) -> live.Status:
        waiting = self.tracker.waiting_for(run.status)
        return live.Status(live.run_json(run), waiting, self.last_seq)

    def status_key(self, run: Run) -> tuple[Any, ...]:
        """``status(run).key`` without rendering the run: checked on every event."""
        waiting = self.tracker.waiting_for(run.status)
        return (str(run.pk), run.status, run.invocation_id, waiting)


async def execute_and_publish(
    execution: Execution, approvals: ApprovalBroker, *, on_stopped: Callable[[], object]
) -> None:
    """Execute ``execution``'s run, publishing each event and status change to the
    session's group; ``on_stopped`` is called once the run stopped, before its final
    status is published. How the manager and the worker task execute runs."""
    try:
        run = execution.run = await Run.objects.aget(pk=execution.run_id)
    except Run.DoesNotExist:  # deleted before it started
        on_stopped()
        return
    publisher = live.Publisher(run.session_id)
    try:
        await execute_run(
            run,
            on_event=lambda event: _on_event(execution, publisher, run, event),
            on_claimed=lambda claimed: _on_claimed(execution, publisher, claimed),
            cancel_token=execution.token,
            approvals=approvals,
        )
    except ConflictError as exc:  # cancelled (or otherwise ended) before it started
        logger.info("run %s did not start: %s", execution.run_id, exc.message)
    except Exception:
        logger.exception("run %s failed", execution.run_id)
    except asyncio.CancelledError:  # the process is stopping
        publisher.cancel()
        raise
    finally:
        on_stopped()
    final = await db_sync_to_async(live.snapshot)(run.session_id)
    publisher.status(lambda: final)
    await publisher.aclose()


async def _on_claimed(execution: Execution, publisher: live.Publisher, run: Run) -> None:
    execution.last_seq = run.start_seq or 0
    _status_changed(execution, publisher, run)


async def _on_event(
    execution: Execution, publisher: live.Publisher, run: Run, event: core_events.Event
) -> None:
    if event.partial:
        publisher.event(event, execution.last_seq)
        return
    execution.last_seq = event.seq or execution.last_seq
    if event.type in live.TRACKED_TYPES:
        execution.tracker.observe(event.to_wire())
    publisher.event(event, execution.last_seq - 1)
    _status_changed(execution, publisher, run)


def _status_changed(execution: Execution, publisher: live.Publisher, run: Run) -> None:
    key = execution.status_key(run)
    if key != execution.published:
        execution.published = key
        publisher.status(lambda: execution.status(run))


class RunManager:
    """Executes queued runs as tasks of one event loop; see the module docstring.

    ``submit`` and ``cancel`` may be called from any thread (they are signal receivers,
    and services run in worker threads); everything else runs on the manager's loop.
    With worker execution (``studio.worker``) a server's manager executes no run: it
    sweeps, tells viewers of cancellations and relays approval decisions.
    """

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._executions: dict[uuid.UUID, Execution] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self.broker = ApprovalBroker()

    def ensure_started(self) -> None:
        """Bind to the running loop and start the recovery sweeps (once per loop)."""
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return
        self._loop, self._executions, self._tasks = loop, {}, set()
        self.broker = ApprovalBroker()
        self._track(self._recover_forever(), name="run-recovery")

    async def aclose(self) -> None:
        """Stop every task (runs still executing end interrupted) and unbind."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._loop = None

    def submit(self, run_id: uuid.UUID) -> None:
        self._call_soon(self._spawn, run_id)

    def cancel(self, run_id: uuid.UUID, session_pk: uuid.UUID) -> None:
        self._call_soon(self._cancel, run_id, session_pk)

    def _call_soon(self, callback: Callable[..., None], *args: Any) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(callback, *args, context=contextvars.Context())

    def _track(self, coroutine: Coroutine[Any, Any, None], *, name: str) -> None:
        # A fresh context: a run must not inherit the request (or the sync worker
        # thread's asgiref state) that happened to queue it.
        loop = asyncio.get_running_loop()
        task = loop.create_task(coroutine, name=name, context=contextvars.Context())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _spawn(self, run_id: uuid.UUID) -> None:
        if run_id not in self._executions:
            self._executions[run_id] = execution = Execution(run_id)
            stopped = functools.partial(self._executions.pop, run_id, None)
            run = execute_and_publish(execution, self.broker, on_stopped=stopped)
            self._track(run, name=f"run-{run_id}")

    def _cancel(self, run_id: uuid.UUID, session_pk: uuid.UUID) -> None:
        execution = self._executions.get(run_id)
        if execution is not None:
            execution.token.cancel("cancelled by request")
        else:
            self._track(self._publish_stored_status(session_pk), name=f"status-{run_id}")

    async def _publish_stored_status(self, session_pk: uuid.UUID) -> None:
        status = await db_sync_to_async(live.snapshot)(session_pk)
        await live.publish(session_pk, status=status)

    async def status(self, session_pk: uuid.UUID) -> live.Status:
        """The session's status: from memory while this process runs its run."""
        for execution in self._executions.values():
            run = execution.run
            if run is not None and run.session_id == session_pk and run.is_active:
                return execution.status(run)
        return await db_sync_to_async(live.snapshot)(session_pk)

    # Approvals

    async def adecide(self, session: Session, body: live.ApprovalBody, *, decided_by: str) -> None:
        """Deliver a decision on one of ``session``'s pending approvals: to this process's
        broker, or (worker execution) to the worker executing the run. ``ConflictError``
        ``approval_not_pending`` when no such call waits for one."""
        if settings.STUDIO_RUN_EXECUTION == "worker":
            await worker.relay_decision(session, _decision(body, decided_by))
        else:
            self.decide(session, body, decided_by=decided_by)

    def decide(self, session: Session, body: live.ApprovalBody, *, decided_by: str) -> None:
        """``adecide`` with inline execution, on the manager's loop."""
        deliver(self.broker, session.key, _decision(body, decided_by))

    def decide_threadsafe(
        self, session: Session, body: live.ApprovalBody, *, decided_by: str
    ) -> None:
        """``adecide`` from a thread other than the manager's loop (a sync view)."""
        if settings.STUDIO_RUN_EXECUTION == "worker":
            async_to_sync(worker.relay_decision)(session, _decision(body, decided_by))
            return
        loop = self._loop
        if loop is None or loop.is_closed():
            raise ConflictError("no call is waiting for approval", code="approval_not_pending")
        done: concurrent.futures.Future[None] = concurrent.futures.Future()

        def deliver() -> None:
            try:
                self.decide(session, body, decided_by=decided_by)
            except Exception as exc:
                done.set_exception(exc)
            else:
                done.set_result(None)

        loop.call_soon_threadsafe(deliver)
        done.result(timeout=10)

    # Recovery

    async def _recover_forever(self) -> None:
        while True:
            try:
                await self.recover()
            except Exception:
                logger.exception("the recovery sweep failed")
            await asyncio.sleep(settings.STUDIO_RUN_LEASE_S / 2)

    async def recover(self) -> list[recovery.Interrupted]:
        """Mark the runs whose executor died interrupted, and tell their viewers."""
        done = []
        for run_id in await db_sync_to_async(recovery.abandoned_runs)():
            if run_id in self._executions:
                continue  # ours and alive: its lease renewal was merely late
            result = await db_sync_to_async(recovery.interrupt)(run_id)
            if result is None:
                continue
            session_pk = result.run.session_id
            status = await db_sync_to_async(live.snapshot)(session_pk)
            stored = [(event, (event.seq or 1) - 1) for event in result.events]
            await live.publish(session_pk, stored, status)
            done.append(result)
        return done


def _decision(body: live.ApprovalBody, decided_by: str) -> ApprovalDecision:
    return ApprovalDecision(**body.model_dump(), decided_by=decided_by)


def deliver(broker: ApprovalBroker, session_key: str, decision: ApprovalDecision) -> None:
    """Hand ``decision`` to the call of session ``session_key`` waiting in ``broker``."""
    try:
        broker.decide(decision, session_id=session_key)
    except ApprovalError as exc:
        raise ConflictError(exc.message, code="approval_not_pending") from None


manager = RunManager()


@receiver(services.run_queued, dispatch_uid="studio.runs.run_queued")
def _execute_queued_run(sender: object, run: Run, **kwargs: object) -> None:
    if settings.STUDIO_RUN_EXECUTION == "worker":
        # A `manage.py run_worker` process executes it (studio.tasks imports this module).
        from studio.tasks import execute_queued_run

        execute_queued_run.enqueue(run_id=str(run.pk))
    else:
        manager.submit(run.pk)


@receiver(services.run_cancelled, dispatch_uid="studio.runs.run_cancelled")
def _stop_cancelled_run(sender: object, run: Run, **kwargs: object) -> None:
    manager.cancel(run.pk, run.session_id)
