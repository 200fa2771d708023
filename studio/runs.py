"""The run manager: executing queued runs in a server's event loop, and telling viewers.

``RunManager`` (one per process: ``manager``) executes the runs the API and websockets
queue as asyncio tasks in the ASGI server's loop (through ``studio.execution``),
publishes each event to the session's group once it is yielded, so once stored (in
batches; see ``studio.live``), along with what the run waits for, cancels through a
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
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.dispatch import receiver

from agents_core import events as core_events
from agents_core.approvals import ApprovalBroker, ApprovalDecision, ApprovalError
from agents_core.context import CancellationToken
from studio import live, recovery, services, worker
from studio.db import db_sync_to_async
from studio.errors import ConflictError
from studio.execution import execute_run
from studio.models import Run, Session

logger = logging.getLogger("studio.runs")

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
