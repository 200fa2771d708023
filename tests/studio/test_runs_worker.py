"""Worker execution (``STUDIO_RUN_EXECUTION=worker``) in one process: runs enqueued
through Django's tasks framework on the database backend, executed by the worker task,
stopped by a cancel recorded in the database, decided through the channel layer relay,
and not swept while their task waits for a worker. tests/scale runs the same with
separate processes on PostgreSQL and Redis."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.tasks import TaskResultStatus
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from studio import live, runs, services
from studio.errors import ConflictError
from studio.models import Event, Run, RunStatus, Session
from studio.runs import queue as worker
from studio.runs import recovery, tasks
from tests.studio.conftest import make_session
from tests.support.live import (
    eventually,
    new_session,
    run_manager,  # noqa: F401  (an autouse fixture)
    scripted_agent,
    slow_agent,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _worker(run_manager: Any, worker_execution: None) -> None:  # noqa: F811
    """Every test here runs with worker execution chosen."""


def task_of(run: Run) -> DBTaskResult | None:
    return DBTaskResult.objects.filter(
        task_path=worker.TASK_PATH, args_kwargs__kwargs__run_id=str(run.pk)
    ).first()


@sync_to_async
def start(session: Session, text: str = "go") -> Run:
    return services.start_run(session, text)


@sync_to_async
def stored(session: Session) -> list[dict[str, Any]]:
    rows = Event.objects.filter(session=session).order_by("seq")
    return list(rows.values_list("payload", flat=True))


def test_starting_a_run_enqueues_its_task_once_the_run_is_committed(ada: User) -> None:
    run = services.start_run(make_session(ada), "hello")
    queued = task_of(run)
    assert queued is not None and queued.status == TaskResultStatus.READY
    assert tasks.execute_queued_run.module_path == worker.TASK_PATH
    assert Run.objects.get(pk=run.pk).status == RunStatus.QUEUED


def test_a_queued_run_whose_task_waits_for_a_worker_is_not_abandoned(ada: User) -> None:
    waiting = services.start_run(make_session(ada), "one")
    lost = services.start_run(make_session(ada), "two")
    taken = services.start_run(make_session(ada), "three")
    DBTaskResult.objects.filter(args_kwargs__kwargs__run_id=str(lost.pk)).delete()
    later = timezone.now() + timedelta(seconds=3 * 30)
    # Taken by a worker that died before claiming the run, longer than a lease ago.
    DBTaskResult.objects.filter(args_kwargs__kwargs__run_id=str(taken.pk)).update(
        status=TaskResultStatus.RUNNING, started_at=later - timedelta(seconds=60)
    )
    assert set(recovery.abandoned_runs(runs.executor(), later)) == {lost.pk, taken.pk}
    assert recovery.interrupt(lost.pk, runs.executor(), now=later) is not None
    assert Run.objects.get(pk=waiting.pk).status == RunStatus.QUEUED


async def test_runs_executed_one_after_another_on_one_loop_leave_no_task_behind(
    ada: User,
) -> None:
    """A worker keeps one event loop for all its runs (``run_worker.serve``): whatever a
    run starts on it (its status watch, its decisions listener, its lease, its
    publisher) must end with it, or the worker would gather tasks run after run."""
    session = await new_session(ada)
    before = asyncio.all_tasks()

    async def only_those_before() -> bool:
        return asyncio.all_tasks() == before

    for text in ("one", "two", "three"):
        run = await start(session, text)
        assert await tasks.execute_queued_run.acall(run_id=str(run.pk)) == RunStatus.SUCCEEDED
        await eventually(only_those_before)


async def test_the_worker_task_executes_a_queued_run_to_its_end(ada: User) -> None:
    session = await new_session(ada)
    run = await start(session)
    assert await tasks.execute_queued_run.acall(run_id=str(run.pk)) == RunStatus.SUCCEEDED
    events = await stored(session)
    assert events[0]["type"] == "user_message"
    assert events[-1]["type"] == "agent_end"
    finished = await Run.objects.aget(pk=run.pk)
    assert (finished.owner_process, finished.lease_expires_at) == ("", None)
    # Ended already: running its task again changes nothing.
    assert await tasks.execute_queued_run.acall(run_id=str(run.pk)) == RunStatus.SUCCEEDED
    assert await stored(session) == events


async def test_a_cancel_recorded_in_the_database_stops_the_worker_run(ada: User) -> None:
    await sync_to_async(slow_agent)(ada)
    session = await new_session(ada, "slow")
    run = await start(session)
    executing = asyncio.create_task(tasks.execute(run.pk))
    await eventually(lambda: Run.objects.filter(pk=run.pk, status=RunStatus.RUNNING).aexists())
    await sync_to_async(services.cancel_run)(run)
    await asyncio.wait_for(executing, timeout=10)
    events = await stored(session)
    assert (events[-1]["type"], events[-1]["error"]["code"]) == ("error", "cancelled")
    cancelled = await Run.objects.aget(pk=run.pk)
    assert (cancelled.status, cancelled.owner_process) == (RunStatus.CANCELLED, "")


async def test_the_runs_a_worker_executes_at_once_have_their_statuses_read_together(
    ada: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each run's status is read to stop or hold it: with many runs in one worker, one
    query a poll for all of them, not one a run."""
    reads: list[set[object]] = []
    read = tasks._statuses_of

    def recorded(run_ids: list[Any]) -> dict[Any, str]:
        reads.append(set(run_ids))
        return read(run_ids)

    monkeypatch.setattr(tasks, "_statuses_of", recorded)
    await sync_to_async(slow_agent)(ada, words=40)  # ~0.8 s a run
    runs = [await start(await new_session(ada, "slow"), f"run {i}") for i in range(3)]
    await asyncio.gather(*(tasks.execute(run.pk) for run in runs))

    assert {run.pk for run in runs} in reads  # one read for the three at once
    assert [r.status async for r in Run.objects.filter(pk__in=[run.pk for run in runs])] == [
        RunStatus.SUCCEEDED
    ] * 3


CAREFUL_SCRIPT = [
    {"text": "checking", "tool_calls": [{"name": "calculator", "args": {"expression": "6 * 7"}}]},
    {"text": "the answer is 42"},
]


async def parked(run: Run, executing: asyncio.Task[None]) -> Run:
    """The worker's execution of ``run``, parked on a person: it let go of the run."""
    await asyncio.wait_for(executing, timeout=10)
    waiting = await Run.objects.aget(pk=run.pk)
    assert (waiting.status, waiting.owner_process, waiting.lease_expires_at) == (
        RunStatus.WAITING,
        "",
        None,
    )
    return waiting


async def test_a_worker_run_parks_on_a_person_and_a_decision_queues_it_again(ada: User) -> None:
    tools = [{"name": "calculator", "requires_approval": True}]
    await sync_to_async(scripted_agent)(ada, "careful", CAREFUL_SCRIPT, tools=tools)
    session = await new_session(ada, "careful")
    run = await start(session)
    first = await parked(run, asyncio.create_task(tasks.execute(run.pk)))
    assert first.started_at is not None
    approval = await approval_requested(session)

    def body(**changes: Any) -> live.ApprovalBody:
        fields = {"call_id": approval["call_id"], "args_hash": approval["args_hash"]}
        return live.ApprovalBody(**{**fields, "decision": "approve", **changes})

    refusals = [
        (body(args_hash="0" * 64), "approval_stale"),
        (body(call_id="x"), "approval_not_pending"),
    ]
    for refused, code in refusals:
        with pytest.raises(ConflictError) as caught:
            await services.decide_approval(session, refused, user=ada, via="api")
        assert caught.value.code == code

    await DBTaskResult.objects.all().adelete()
    await services.decide_approval(session, body(), user=ada, via="api")
    # Queued again, with a task for a worker: the rest runs wherever a worker is free.
    assert (await Run.objects.aget(pk=run.pk)).status == RunStatus.QUEUED
    assert await sync_to_async(task_of)(run) is not None
    await tasks.execute(run.pk)
    events = await stored(session)
    [decided] = [e for e in events if e["type"] == "approval_decision"]
    assert (decided["approval"]["decision"], decided["approval"]["decided_by"]) == (
        "approve",
        "ada",
    )
    assert [e["type"] for e in events].count("approval_request") == 1
    assert [e["type"] for e in events].count("run_parked") == 1
    finished = await Run.objects.aget(pk=run.pk)
    assert finished.status == RunStatus.SUCCEEDED
    assert finished.started_at == first.started_at  # one run, started once
    with pytest.raises(ConflictError):
        await services.decide_approval(session, body(decision="deny"), user=ada, via="api")


async def approval_requested(session: Session) -> dict[str, Any]:
    async def requested() -> list[dict[str, Any]]:
        return [e for e in await stored(session) if e["type"] == "approval_request"]

    approval: dict[str, Any] = (await eventually(requested))[0]["approval"]
    return approval


async def test_two_users_worker_runs_waiting_on_the_same_call_id_are_decided_apart(
    ada: User, bob: User
) -> None:
    """Call ids come from the model: the scripted one says the same id in every run."""
    tools = [{"name": "calculator", "requires_approval": True}]
    sessions = []
    for owner in (ada, bob):
        await sync_to_async(scripted_agent)(owner, "careful", CAREFUL_SCRIPT, tools=tools)
        sessions.append(await new_session(owner, "careful"))
    started = [await start(session) for session in sessions]
    for run in started:
        await parked(run, asyncio.create_task(tasks.execute(run.pk)))
    ada_approval, bob_approval = [await approval_requested(s) for s in sessions]
    assert ada_approval["call_id"] == bob_approval["call_id"]

    def body(approval: dict[str, Any], decision: str) -> live.ApprovalBody:
        return live.ApprovalBody(
            call_id=approval["call_id"], args_hash=approval["args_hash"], decision=decision
        )

    await services.decide_approval(sessions[1], body(bob_approval, "deny"), user=bob, via="api")
    await tasks.execute(started[1].pk)
    assert (await Run.objects.aget(pk=started[0].pk)).status == RunStatus.WAITING
    await services.decide_approval(sessions[0], body(ada_approval, "approve"), user=ada, via="api")
    await tasks.execute(started[0].pk)
    ended = [await Run.objects.aget(pk=run.pk) for run in started]
    assert [run.status for run in ended] == [RunStatus.SUCCEEDED, RunStatus.SUCCEEDED]
    verdicts = [
        next(e for e in await stored(s) if e["type"] == "approval_decision")["approval"]
        for s in sessions
    ]
    assert [(v["decision"], v["decided_by"]) for v in verdicts] == [
        ("approve", "ada"),
        ("deny", "bob"),
    ]


async def test_an_answer_sent_to_the_manager_is_relayed_to_the_worker_run(ada: User) -> None:
    script = [
        {"tool_calls": [{"name": "ask_user", "args": {"question": "Which city?"}}]},
        {"text": "Booked for {last_tool_result}."},
    ]
    await sync_to_async(scripted_agent)(ada, "booker", script, tools=[{"name": "ask_user"}])
    session = await new_session(ada, "booker")
    run = await start(session)
    executing = asyncio.create_task(tasks.execute(run.pk))

    async def asked() -> list[dict[str, Any]]:
        return [e for e in await stored(session) if e["type"] == "user_question"]

    question = (await eventually(asked))[0]["question"]
    fields = {"call_id": question["call_id"], "args_hash": question["args_hash"]}
    decision = live.ApprovalBody(**fields, decision="approve")
    with pytest.raises(ConflictError) as caught:  # a decision is no answer, there too
        await services.decide_approval(session, decision, user=ada, via="api")
    assert caught.value.code == "approval_not_pending"

    await services.answer_question(
        session, live.AnswerBody(**fields, text="Porto"), answered_by="ada"
    )
    await asyncio.wait_for(executing, timeout=10)
    events = await stored(session)
    assert events[-2]["parts"][0]["text"] == "Booked for Porto."
    assert (await Run.objects.aget(pk=run.pk)).status == RunStatus.SUCCEEDED
