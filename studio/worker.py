"""Worker execution (``STUDIO_RUN_EXECUTION=worker``): runs execute in ``manage.py
run_worker`` processes instead of the servers that queued them.

The queue is the ``Run`` table itself. A worker polls for queued runs and hands each to
its ``RunManager`` (``studio.runs``), the same code that executes runs inline:
``claim_run`` moves a run from queued to running in one conditional update, so when
several workers see the same run exactly one executes it. Events are stored first,
then published through the Redis channel layer, so viewers on every server see them.

The worker renews the lease on each run it executes and sweeps for abandoned runs at
start-up and every half lease, like a server; a killed worker's runs are marked
interrupted by the next sweep of any worker or server.

Cancellation goes through the database: ``cancel_run`` records the run cancelled
wherever it is asked, and the worker, polling the runs it owns, stops the ones
recorded as no longer active (cancelled, or interrupted by a sweep) within a poll.

Approvals are not relayed to workers: a decision reaches only the process it was
sent to, so in worker mode a run that waits for an approval waits until it is
cancelled or its limits end it. Use inline execution for agents with approvals.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid

from studio.db import db_sync_to_async
from studio.models import ACTIVE_RUN_STATUSES, Run, RunStatus
from studio.runs import PROCESS_ID, manager

logger = logging.getLogger("studio.worker")

POLL_S = 0.2
"""How often a worker looks for queued runs and for cancellations of its runs."""


def queued_runs() -> list[uuid.UUID]:
    """Queued runs nobody claimed yet, oldest first."""
    rows = Run.objects.filter(status=RunStatus.QUEUED, owner_process="").order_by("created_at")
    return list(rows.values_list("pk", flat=True)[:100])


def stopped_runs() -> list[tuple[uuid.UUID, uuid.UUID]]:
    """(run, session) of the runs this process executes that were stopped elsewhere:
    ``finish_run`` clears ``owner_process``, ``cancel_run`` and recovery do not."""
    rows = Run.objects.filter(owner_process=PROCESS_ID).exclude(status__in=ACTIVE_RUN_STATUSES)
    return list(rows.values_list("pk", "session_id"))


async def poll_once() -> None:
    """Start the queued runs and stop the cancelled ones."""
    for run_id in await db_sync_to_async(queued_runs)():
        manager.submit(run_id)
    for run_id, session_pk in await db_sync_to_async(stopped_runs)():
        manager.cancel(run_id, session_pk)


async def serve(stop: asyncio.Event, *, poll_s: float = POLL_S) -> None:
    """Execute runs until ``stop`` is set; the runs still executing then end interrupted."""
    manager.ensure_started()
    logger.info("worker %s polling every %ss", PROCESS_ID, poll_s)
    try:
        while not stop.is_set():
            try:
                await poll_once()
            except Exception:  # the database went away: keep polling until it is back
                logger.warning("the worker could not poll for runs", exc_info=True)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=poll_s)
    finally:
        await manager.aclose()
