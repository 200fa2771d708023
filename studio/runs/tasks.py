"""The worker's side of worker execution: the Django task that executes a queued run.

``execute_queued_run`` is enqueued by ``queue.QueuedExecutor`` once a run is committed,
and executed by ``manage.py run_worker``, several at once per process (``--concurrency``),
all on one event loop kept for the process (``run_worker.serve``), with the code that executes runs
inline (``execute``), which must leave no task of its own behind: it claims the
run, stores each event, then publishes it through the Redis channel layer, so viewers
on every server see it, and renews the run's lease. A cancel, a pause or a resume is
recorded in the database wherever it is asked; the worker reads the status of every run
it executes every ``POLL_S``, in one query (``StatusWatch``), and stops, holds or lets
go of each. Decisions arrive through ``relay``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import threading
import uuid
from typing import ClassVar

from django.tasks import task

from studio.db import db_sync_to_async
from studio.models import ACTIVE_RUN_STATUSES, Run, RunStatus
from studio.runs import relay
from studio.runs.published import Execution, execute_and_publish

logger = logging.getLogger("studio.worker")

POLL_S = 0.2
"""How often a worker reads the status of the runs it executes, to stop one that was
cancelled (or interrupted) elsewhere, and to pause or resume it."""

_executing: dict[asyncio.Task[None], asyncio.AbstractEventLoop] = {}
_executing_lock = threading.Lock()


@task()
async def execute_queued_run(run_id: str) -> str:
    """Execute queued run ``run_id`` to its end, publishing its events to its viewers.
    A run cancelled or ended meanwhile is left as it is. Returns the run's status (the
    task's result), or ``deleted``."""
    run = uuid.UUID(run_id)
    await execute(run)
    status = (await db_sync_to_async(_statuses_of)([run])).get(run, "deleted")
    logger.info("run %s: %s", run_id, status)
    return status


async def execute(run_id: uuid.UUID) -> None:
    """Execute run ``run_id`` as a server would, while watching its status for a
    cancel and listening for the decisions servers relay to it."""
    execution = Execution(run_id)
    current = asyncio.current_task()
    if current is None:
        raise RuntimeError("execute() runs as a task")
    watch = StatusWatch.of_loop()
    watch.add(run_id, execution)
    decisions = relay.DecisionListener(run_id, execution.broker, execution.show_calls)
    listening = asyncio.create_task(decisions.listen(), name=f"relay-{run_id}")
    with _executing_lock:
        _executing[current] = asyncio.get_running_loop()
    try:
        await execute_and_publish(execution)
    finally:
        with _executing_lock:
            _executing.pop(current, None)
        watch.discard(run_id)
        await asyncio.gather(decisions.stop(listening), return_exceptions=True)


def interrupt_executing() -> None:
    """Stop the runs this process executes, from any thread (a signal handler): each
    ends ``interrupted``, as when a server stops."""
    with _executing_lock:
        executing = list(_executing.items())
    for running, loop in executing:
        with contextlib.suppress(RuntimeError):  # its loop closed meanwhile
            loop.call_soon_threadsafe(running.cancel)


class StatusWatch:
    """Reads the status of every run this process executes on one loop, in one query
    every ``POLL_S``, and stops a run the database says ended elsewhere (cancelled,
    interrupted) or holds it while it says the run is paused. A worker executes many
    runs at once: a read per run made its status reads grow with them. Its task runs
    while it has runs to watch."""

    _of_loop: ClassVar[dict[asyncio.AbstractEventLoop, StatusWatch]] = {}

    def __init__(self) -> None:
        self._runs: dict[uuid.UUID, Execution] = {}
        self._task: asyncio.Task[None] | None = None

    @classmethod
    def of_loop(cls) -> StatusWatch:
        loop = asyncio.get_running_loop()
        for gone in [known for known in cls._of_loop if known.is_closed()]:
            del cls._of_loop[gone]
        return cls._of_loop.setdefault(loop, cls())

    def add(self, run_id: uuid.UUID, execution: Execution) -> None:
        self._runs[run_id] = execution
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._poll(), name="run-status-watch", context=contextvars.Context()
            )

    def discard(self, run_id: uuid.UUID) -> None:
        self._runs.pop(run_id, None)

    async def _poll(self) -> None:
        while self._runs:
            await asyncio.sleep(POLL_S)
            if not (watched := list(self._runs)):
                return
            try:
                statuses = await db_sync_to_async(_statuses_of)(watched)
            except Exception:  # the database hiccupped: the runs themselves will tell
                logger.warning("could not read the status of %d runs", len(watched), exc_info=True)
                continue
            for run_id in watched:
                if (execution := self._runs.get(run_id)) is not None:
                    self._follow(run_id, execution, statuses.get(run_id))

    def _follow(self, run_id: uuid.UUID, execution: Execution, status: str | None) -> None:
        if status is not None and status not in ACTIVE_RUN_STATUSES:
            why = "cancelled by request" if status == RunStatus.CANCELLED else "stopped elsewhere"
            execution.token.cancel(why)
            self.discard(run_id)
        elif status in (RunStatus.PAUSED, RunStatus.RUNNING):
            execution.hold(status == RunStatus.PAUSED)


def _statuses_of(run_ids: list[uuid.UUID]) -> dict[uuid.UUID, str]:
    return dict(Run.objects.filter(pk__in=run_ids).values_list("pk", "status"))
