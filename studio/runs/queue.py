"""Worker execution, the servers' side (``STUDIO_RUN_EXECUTION=worker``): starting a
run enqueues ``tasks.execute_queued_run`` through Django's tasks framework
(``django_tasks_db``: the queue is a table of the same database) once the run is
committed, and a ``manage.py run_worker`` process executes it (``tasks``). Servers
execute no run: they sweep (``recovery``), tell viewers of cancellations, and relay
approval decisions to the worker executing the run (``relay``). A queued run whose task
still waits for a free worker is not abandoned.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from agents_core.approvals import Reply
from studio.models import Run
from studio.runs import relay
from studio.runs.executor import RunExecutor
from studio.runs.tasks import execute_queued_run

TASK_PATH = execute_queued_run.module_path
"""The task that executes a queued run, as the queue table names it."""


class WorkerLost(Exception):
    """Recorded as the failure of a run's task whose worker died while executing it."""


class QueuedExecutor(RunExecutor):
    executes_in_servers = False

    def submit(self, run: Run) -> None:
        execute_queued_run.enqueue(run_id=str(run.pk))

    async def decide(self, run_id: uuid.UUID, session_key: str, decision: Reply) -> None:
        await relay.relay_decision(run_id, session_key, decision)

    def show_calls(self, run_id: uuid.UUID) -> None:
        self._track(relay.ask_to_show_calls(run_id), name=f"show-calls-{run_id}")

    def waiting_for_a_worker(self, run_ids: list[uuid.UUID], now: datetime) -> set[uuid.UUID]:
        """The queued runs among ``run_ids`` whose task waits for a free worker, or was
        taken by one less than a lease ago (which is about to claim the run)."""
        if not run_ids:
            return set()
        taken_since = now - timedelta(seconds=settings.STUDIO_RUN_LEASE_S)
        pending = Q(status=TaskResultStatus.READY) | Q(
            status=TaskResultStatus.RUNNING, started_at__gte=taken_since
        )
        tasks = DBTaskResult.objects.filter(
            pending,
            task_path=TASK_PATH,
            args_kwargs__kwargs__run_id__in=[str(run_id) for run_id in run_ids],
        )
        found = tasks.values_list("args_kwargs__kwargs__run_id", flat=True)
        return {uuid.UUID(run_id) for run_id in found}

    def lost(self, run_id: uuid.UUID) -> None:
        """Fail the run's task if it is still recorded as running: its worker died (the
        sweep found the run's lease expired), and nothing else would finish the row."""
        orphans = DBTaskResult.objects.filter(
            status=TaskResultStatus.RUNNING,
            task_path=TASK_PATH,
            args_kwargs__kwargs__run_id=str(run_id),
        )
        for row in orphans.select_for_update():
            row.set_failed(
                WorkerLost(f"the worker executing run {run_id} stopped; run interrupted")
            )
