"""The worker's side of worker execution: the Django task that executes a queued run.

``execute_queued_run`` is enqueued by ``queue.QueuedExecutor`` once a run is committed,
and executed by ``manage.py run_worker``, several at once per process (``--concurrency``),
all on one event loop kept for the process (``run_worker.serve``), with the code that executes runs
inline (``execute``), which must leave no task of its own behind: it claims the
run, stores each event, then publishes it through the Redis channel layer, so viewers
on every server see it, and renews the run's lease. A cancel, a pause or a resume is
recorded in the database wherever it is asked; the worker reads its run's status every
``POLL_S`` and stops, holds or lets go of the run. Decisions arrive through ``relay``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import uuid

from django.tasks import task

from studio.db import db_sync_to_async
from studio.models import ACTIVE_RUN_STATUSES, Run, RunStatus
from studio.runs import relay
from studio.runs.published import Execution, execute_and_publish

logger = logging.getLogger("studio.worker")

POLL_S = 0.2
"""How often a worker reads the status of the run it executes, to stop it when it was
cancelled (or interrupted) elsewhere, and to pause or resume it."""

_executing: dict[asyncio.Task[None], asyncio.AbstractEventLoop] = {}
_executing_lock = threading.Lock()


@task()
async def execute_queued_run(run_id: str) -> str:
    """Execute queued run ``run_id`` to its end, publishing its events to its viewers.
    A run cancelled or ended meanwhile is left as it is. Returns the run's status (the
    task's result), or ``deleted``."""
    await execute(uuid.UUID(run_id))
    status = await db_sync_to_async(_status_of)(uuid.UUID(run_id)) or "deleted"
    logger.info("run %s: %s", run_id, status)
    return status


async def execute(run_id: uuid.UUID) -> None:
    """Execute run ``run_id`` as a server would, while watching its status for a
    cancel and listening for the decisions servers relay to it."""
    execution = Execution(run_id)
    current = asyncio.current_task()
    if current is None:
        raise RuntimeError("execute() runs as a task")
    watching = asyncio.create_task(_watch(run_id, execution), name=f"watch-{run_id}")
    decisions = relay.DecisionListener(run_id, execution.broker)
    listening = asyncio.create_task(decisions.listen(), name=f"relay-{run_id}")
    with _executing_lock:
        _executing[current] = asyncio.get_running_loop()
    try:
        await execute_and_publish(execution)
    finally:
        with _executing_lock:
            _executing.pop(current, None)
        watching.cancel()
        await asyncio.gather(watching, decisions.stop(listening), return_exceptions=True)


def interrupt_executing() -> None:
    """Stop the runs this process executes, from any thread (a signal handler): each
    ends ``interrupted``, as when a server stops."""
    with _executing_lock:
        executing = list(_executing.items())
    for running, loop in executing:
        with contextlib.suppress(RuntimeError):  # its loop closed meanwhile
            loop.call_soon_threadsafe(running.cancel)


async def _watch(run_id: uuid.UUID, execution: Execution) -> None:
    """Stop the run once the database says it ended elsewhere (cancelled, interrupted);
    hold it while it says the run is paused."""
    while True:
        await asyncio.sleep(POLL_S)
        try:
            status = await db_sync_to_async(_status_of)(run_id)
        except Exception:  # the database hiccupped: the run itself will tell
            logger.warning("could not read the status of run %s", run_id, exc_info=True)
            continue
        if status is not None and status not in ACTIVE_RUN_STATUSES:
            why = "cancelled by request" if status == RunStatus.CANCELLED else "stopped elsewhere"
            execution.token.cancel(why)
            return
        if status in (RunStatus.PAUSED, RunStatus.RUNNING):
            execution.hold(status == RunStatus.PAUSED)


def _status_of(run_id: uuid.UUID) -> str | None:
    return Run.objects.filter(pk=run_id).values_list("status", flat=True).first()
