"""A worker executes several runs at once (``run_worker.Worker``, ``--concurrency``),
in this process on PostgreSQL: the worker's polling thread and each run's thread hold
connections of their own, which SQLite's in-memory test database does not take (its
shared cache locks the schema). tests/scale runs the same through ``manage.py
run_worker`` processes, and kills one with runs in flight."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.db import connection
from django.tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from studio import services
from studio.management.commands import run_worker
from studio.models import Run, RunStatus
from tests.studio.conftest import make_session
from tests.support.live import (
    run_manager,  # noqa: F401  (an autouse fixture)
    slow_agent,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _postgresql_workers(run_manager: Any, worker_execution: None) -> None:  # noqa: F811
    if connection.vendor != "postgresql":
        pytest.skip("threads of their own on SQLite's in-memory test database lock it")


def task_status(run: Run) -> str:
    row = DBTaskResult.objects.get(args_kwargs__kwargs__run_id=str(run.pk))
    return str(row.status)


def a_worker(**options: Any) -> Any:
    defaults: dict[str, Any] = {
        "queue_names": ["default"],
        "interval": 0.05,
        "batch": True,  # stops once the queue is empty and its runs have ended
        "backend_name": "default",
        "startup_delay": False,
        "max_tasks": None,
        "worker_id": "test-worker",
        "excluded_queue_names": [],
    }
    return run_worker.Worker(**(defaults | options))


def _queued_slow_runs(owner: User, count: int) -> list[Run]:
    agent = slow_agent(owner, words=15)  # ~0.3 s a run
    return [services.start_run(make_session(owner, agent), f"run {i}") for i in range(count)]


def test_a_worker_executes_as_many_runs_at_once_as_its_concurrency(ada: User) -> None:
    queued = _queued_slow_runs(ada, 3)
    run_worker.serve(a_worker(concurrency=2))

    ended = sorted(Run.objects.filter(pk__in=[r.pk for r in queued]), key=lambda r: r.started_at)
    assert [run.status for run in ended] == [RunStatus.SUCCEEDED] * 3
    first, second, third = [(run.started_at, run.ended_at) for run in ended]
    assert second[0] < first[1]  # the first two at once
    assert third[0] >= min(first[1], second[1])  # never three
    assert {task_status(run) for run in ended} == {TaskResultStatus.SUCCESSFUL}


def test_a_worker_with_max_tasks_claims_no_more_than_that_however_many_at_once(
    ada: User,
) -> None:
    queued = _queued_slow_runs(ada, 3)
    run_worker.serve(a_worker(concurrency=4, max_tasks=2, batch=False))

    statuses = sorted(Run.objects.get(pk=run.pk).status for run in queued)
    assert statuses == sorted([RunStatus.SUCCEEDED, RunStatus.SUCCEEDED, RunStatus.QUEUED])


def test_run_worker_refuses_a_concurrency_below_one() -> None:
    with pytest.raises(CommandError, match="--concurrency: must be 1 or more"):
        call_command("run_worker", "--concurrency", "0", stdout=io.StringIO())
