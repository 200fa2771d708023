"""Crash recovery: runs whose executor died are ended interrupted, never left running.

The process executing a run renews a lease on it (``Run.lease_expires_at``) and clears
it when the run ends. A run whose lease expired, or a queued run nobody claimed within
a lease, is abandoned: ``interrupt`` ends it through ``records.end_run`` (which closes
the tool calls it left open, "in doubt" or "did not run", and stores its terminal
``interrupted`` event), and tells its executor it is lost (with worker execution, the
run's task, which its dead worker left recorded as running, is failed). Every server
sweeps at start-up and every half lease; worker processes do not.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import datetime, timedelta
from typing import Protocol

from django.conf import settings
from django.db import transaction
from django.db.models.functions import Coalesce
from django.utils import timezone

from studio.db import db_sync_to_async
from studio.live import publish, snapshot
from studio.models import Run, RunStatus
from studio.runs import parking, records
from studio.runs.records import Ended, Ending

logger = logging.getLogger("studio.runs")

WHY = "the server running this run stopped before it finished"


class Executor(Protocol):
    """What recovery asks of the executor (``executor.RunExecutor``)."""

    def executes(self, run_id: uuid.UUID) -> bool: ...
    def waiting_for_a_worker(self, run_ids: list[uuid.UUID], now: datetime) -> set[uuid.UUID]: ...
    def lost(self, run_id: uuid.UUID) -> None: ...


def interrupted() -> Ending:
    return Ending(RunStatus.INTERRUPTED, records.INTERRUPTED, WHY)


async def sweep_forever(executor: Executor) -> None:
    while True:
        try:
            await sweep(executor)
        except Exception:
            logger.exception("the recovery sweep failed")
        await asyncio.sleep(settings.STUDIO_RUN_LEASE_S / 2)


async def sweep(executor: Executor) -> list[Ended]:
    """End the runs whose executor died interrupted, and tell their viewers."""
    done = []
    for run_id in await db_sync_to_async(abandoned_runs)(executor):
        if executor.executes(run_id):
            continue  # ours and alive: its lease renewal was merely late
        ended = await db_sync_to_async(interrupt)(run_id, executor)
        if ended is None:
            continue
        session_pk = ended.run.session_id
        status = await db_sync_to_async(snapshot)(session_pk)
        await publish(session_pk, [(event, (event.seq or 1) - 1) for event in ended.events], status)
        done.append(ended)
    return done


def abandoned_runs(executor: Executor, now: datetime | None = None) -> list[uuid.UUID]:
    """Ids of runs whose executor is gone: lease expired, or queued and never claimed
    (though with worker execution, one still in the task queue merely waits)."""
    now = now or timezone.now()
    unclaimed_since = now - timedelta(seconds=settings.STUDIO_RUN_LEASE_S)
    expired = list(Run.objects.filter(lease_expires_at__lt=now).values_list("pk", flat=True))
    unclaimed = Run.objects.alias(queued=Coalesce("queued_at", "created_at")).filter(
        status=RunStatus.QUEUED, owner_process="", queued__lt=unclaimed_since
    )
    queued = list(unclaimed.values_list("pk", flat=True))
    return expired + sorted(set(queued) - executor.waiting_for_a_worker(queued, now))


def interrupt(
    run_id: uuid.UUID, executor: Executor, *, now: datetime | None = None
) -> Ended | None:
    """End abandoned run ``run_id`` interrupted; ``None`` if it is not abandoned (any
    more): it ended, or its executor renewed its lease meanwhile. An execution that
    died as it parked (``run_parked`` is its last event) is parked instead
    (``parking.park_if_parked``): its ``Ended`` appends nothing, its run is waiting
    (or queued again, when one of its calls was decided meanwhile)."""
    now = now or timezone.now()
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        if run is None or not _abandoned(run, now):
            return None
        if parking.park_if_parked(run):  # it was stopping on a person, not running
            ended: Ended | None = Ended(Run.objects.get(pk=run_id), [])
        else:
            ended = records.end_run(run_id, interrupted())
        executor.lost(run_id)
    return ended


def _abandoned(run: Run, now: datetime) -> bool:
    if run.lease_expires_at is not None:
        return run.lease_expires_at < now
    unclaimed_since = now - timedelta(seconds=settings.STUDIO_RUN_LEASE_S)
    unclaimed = run.status == RunStatus.QUEUED and not run.owner_process
    return unclaimed and (run.queued_at or run.created_at) < unclaimed_since
