"""The eval engine over real runs: every case repeat a session of the owner pinned to
the eval's agent version, turns sent one after another, at most ``concurrency`` case
sessions at once, scored from the stored events, cancelled mid-way, and resumed after
the server stopped."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from studio import evals, runs, services
from studio.models import ACTIVE_RUN_STATUSES, Run, RunStatus
from studio.models.evals import DatasetVersion, EvalCaseResult, EvalRun
from studio.runs import tasks
from tests.studio.conftest import client_for
from tests.support.eval_runs import active_case_runs, case, echo_agent, make_dataset, until_ended
from tests.support.live import eventually, run_manager  # noqa: F401  (an autouse fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def results_of(eval_run: EvalRun) -> list[EvalCaseResult]:
    return list(eval_run.results.select_related("session").order_by("case_index", "repeat"))


@sync_to_async
def start(owner: User, agent_name: str, dataset_name: str, **options: Any) -> EvalRun:
    agent = owner.agents.get(name=agent_name)
    dataset = owner.datasets.get(name=dataset_name)
    return evals.create_eval(owner, agent=agent, dataset=dataset, **options)


async def test_every_case_is_a_session_of_the_pinned_version_judged_from_its_events(
    ada: User, settings: Any
) -> None:
    settings.STUDIO_PARKED_SWEEP_S = 3600  # one sweep at start-up: the runs' ends drive it
    runs.executor().start()

    @sync_to_async
    def setup() -> Any:
        agent = echo_agent(ada)
        first = agent.current_version
        services.save_agent_spec(agent, {**first.spec, "instruction": "Echo, v2."})
        make_dataset(
            ada,
            "smoke",
            [
                case("hello", "hello there", expect="hello there"),
                case("wrong", "bye", expect="something else"),
                case("two turns", "first", "second", expect="You said: second"),
                case("stateful", "hi", state={"topic": "evals"}),
            ],
        )
        return first

    first = await setup()
    eval_run = await start(ada, "echo", "smoke", version=first)
    ended = await until_ended(eval_run.pk)
    assert ended.status == "succeeded"
    results = await sync_to_async(results_of)(ended)
    assert [r.status for r in results] == ["passed", "failed", "passed", "passed"]
    wrong = results[1]
    assert {v["evaluator"]: v["status"] for v in wrong.verdicts}["contains"] == "failed"
    assert wrong.score == 0.0 and results[0].score == 1.0
    for result in results:
        session = result.session
        assert session is not None and session.owner_id == ada.pk
        assert session.agent_version_id == first.pk  # pinned: not the current v2
        assert result.tokens > 0 and result.latency_s is not None and result.steps >= 1
    two_turns = await sync_to_async(lambda: list(results[2].session.runs.order_by("created_at")))()
    assert [run.message for run in two_turns] == ["first", "second"]
    assert results[2].turns_sent == 2
    assert results[3].session.state == {"topic": "evals"}
    summary = ended.summary
    assert summary["counts"]["passed"] == 3 and summary["counts"]["failed"] == 1
    assert summary["pass_rate"] == 0.75
    assert summary["done"] == summary["total"] == 4


async def test_repeats_and_concurrency_never_more_case_sessions_at_once(
    ada: User, settings: Any
) -> None:
    settings.STUDIO_PARKED_SWEEP_S = 3600  # one sweep at start-up: the runs' ends drive it
    runs.executor().start()
    await sync_to_async(echo_agent)(ada, latency_s=0.15)
    cases = [case(f"c{i}", f"m{i}", expect=f"m{i}") for i in range(4)]
    await sync_to_async(make_dataset)(ada, "wide", cases)
    eval_run = await start(ada, "echo", "wide", concurrency=2, repeats=3)
    seen = []
    while (await EvalRun.objects.aget(pk=eval_run.pk)).status == "running":
        seen.append(await sync_to_async(active_case_runs)(eval_run.pk))
        await asyncio.sleep(0.01)
    ended = await until_ended(eval_run.pk)
    assert max(seen) == 2  # it ran two at once, never three
    results = await sync_to_async(results_of)(ended)
    assert len(results) == 12 and {r.status for r in results} == {"passed"}
    assert len({r.session_id for r in results}) == 12  # every repeat a session of its own
    assert ended.summary["pass_at_k"] == {"k": 3, "value": 1.0}
    api = client_for(ada)
    other_k = await sync_to_async(api.get)(f"/api/evals/{eval_run.pk}/?k=2")
    assert other_k.json()["summary"]["pass_at_k"] == {"k": 2, "value": 1.0}
    too_big = await sync_to_async(api.get)(f"/api/evals/{eval_run.pk}/?k=11")
    assert too_big.status_code == 400
    assert [c["runs"] for c in ended.summary["per_case"]] == [3, 3, 3, 3]


async def test_a_run_that_fails_makes_its_case_an_error(ada: User) -> None:
    runs.executor().start()
    await sync_to_async(echo_agent)(ada, "mute", script=[])  # no answer: the model errors
    await sync_to_async(make_dataset)(ada, "one", [case("any", "hi", expect="hello")])
    eval_run = await start(ada, "mute", "one")
    ended = await until_ended(eval_run.pk)
    [result] = await sync_to_async(results_of)(ended)
    assert result.status == "error"
    assert "no more responses" in result.error_message
    # Its verdicts are kept (the answer checked, and missed), but an unfinished run's
    # output is no answer to judge: it gets no score (it had the mean of the verdicts').
    assert [v["score"] for v in result.verdicts if v["status"] != "skipped"] == [0.0]
    assert result.score is None
    assert ended.summary["pass_rate"] == 0.0 and ended.summary["counts"]["error"] == 1


async def test_cancelling_mid_run_cancels_the_active_runs_and_the_pending_cases(
    ada: User,
) -> None:
    runs.executor().start()
    await sync_to_async(echo_agent)(ada, latency_s=5.0)
    await sync_to_async(make_dataset)(ada, "slow", [case(f"c{i}", "hi") for i in range(3)])
    eval_run = await start(ada, "echo", "slow", concurrency=1)
    first = await eventually(
        lambda: Run.objects.filter(
            session__eval_results__eval_run=eval_run, status=RunStatus.RUNNING
        ).afirst()
    )
    cancelled = await sync_to_async(evals.cancel)(eval_run)
    assert cancelled.status == "cancelled"
    await eventually(lambda: Run.objects.filter(pk=first.pk, status=RunStatus.CANCELLED).aexists())
    results = await sync_to_async(results_of)(cancelled)
    assert [r.status for r in results] == ["cancelled"] * 3
    assert [r.session_id is not None for r in results] == [True, False, False]
    await evals.advance(eval_run.pk)  # nothing moves any more
    assert await Run.objects.filter(session__eval_results__eval_run=eval_run).acount() == 1
    assert cancelled.summary["counts"]["cancelled"] == 3


async def test_a_restart_mid_eval_resumes_the_interrupted_case_and_goes_on(
    ada: User, settings: Any
) -> None:
    executor = runs.executor()
    executor.start()
    await sync_to_async(echo_agent)(ada, latency_s=0.5)
    cases = [case("a", "one", expect="one"), case("b", "two", expect="two")]
    await sync_to_async(make_dataset)(ada, "restart", cases)
    eval_run = await start(ada, "echo", "restart", concurrency=1)
    running = await eventually(
        lambda: Run.objects.filter(
            session__eval_results__eval_run=eval_run, status=RunStatus.RUNNING
        ).afirst()
    )
    await executor.aclose()  # the server stops: its runs end interrupted, nobody advances
    interrupted = await Run.objects.aget(pk=running.pk)
    assert interrupted.status == RunStatus.INTERRUPTED
    assert (await EvalRun.objects.aget(pk=eval_run.pk)).status == "running"
    executor.start()  # a server starts again: its sweep picks the eval up
    ended = await until_ended(eval_run.pk)
    results = await sync_to_async(results_of)(ended)
    assert [r.status for r in results] == ["passed", "passed"]
    assert results[0].resumes == 1 and results[1].resumes == 0
    resumed = await Run.objects.filter(resumed_from=interrupted).acount()
    assert resumed == 1


async def test_advance_is_idempotent_and_a_finished_eval_stays_finished(ada: User) -> None:
    runs.executor().start()
    await sync_to_async(echo_agent)(ada)
    await sync_to_async(make_dataset)(ada, "tiny", [case("x", "x", expect="x")])
    eval_run = await start(ada, "echo", "tiny")
    ended = await until_ended(eval_run.pk)
    before = await sync_to_async(results_of)(ended)
    await asyncio.gather(*(evals.advance(eval_run.pk) for _ in range(3)))
    after = await sync_to_async(results_of)(await EvalRun.objects.aget(pk=eval_run.pk))
    assert [(r.status, r.ended_at, r.verdicts) for r in after] == [
        (r.status, r.ended_at, r.verdicts) for r in before
    ]
    assert await Run.objects.filter(session__eval_results__eval_run=eval_run).acount() == 1


@pytest.mark.usefixtures("worker_execution")
async def test_with_worker_execution_the_worker_that_ends_a_case_run_moves_the_eval_on(
    ada: User,
) -> None:
    """No server sweeps here: only the hook in the worker's execution advances it."""
    await sync_to_async(echo_agent)(ada)
    cases = [case("a", "one", "two", expect="two"), case("b", "three", expect="three")]
    await sync_to_async(make_dataset)(ada, "queued", cases)
    eval_run = await start(ada, "echo", "queued", concurrency=1)
    executed = 0
    while executed < 10:
        ready = DBTaskResult.objects.filter(status=TaskResultStatus.READY).order_by("enqueued_at")
        task = await ready.afirst()
        if task is None:
            break
        await DBTaskResult.objects.filter(pk=task.pk).aupdate(status=TaskResultStatus.SUCCESSFUL)
        await tasks.execute_queued_run.acall(run_id=task.args_kwargs["kwargs"]["run_id"])
        executed += 1
    ended = await EvalRun.objects.aget(pk=eval_run.pk)
    assert ended.status == "succeeded" and executed == 3  # two turns, then the next case
    results = await sync_to_async(results_of)(ended)
    assert [r.status for r in results] == ["passed", "passed"]


async def test_a_case_that_cannot_be_read_is_an_error_and_the_eval_still_ends(ada: User) -> None:
    runs.executor().start()
    await sync_to_async(echo_agent)(ada)
    await sync_to_async(make_dataset)(ada, "odd", [case("x", "x", expect="x")])
    eval_run = await start(ada, "echo", "odd")
    # What the evaluators read is broken behind the engine's back (a bad stored spec).
    await EvalRun.objects.filter(pk=eval_run.pk).aupdate(evaluators=[{"kind": "nope"}])
    ended = await until_ended(eval_run.pk)
    [result] = await sync_to_async(results_of)(ended)
    assert result.status == "error"
    assert result.error_message.startswith("the case could not be judged: ValidationError")


async def test_an_eval_whose_cases_cannot_be_read_fails_and_stops_its_cases(ada: User) -> None:
    await sync_to_async(echo_agent)(ada)
    dataset = await sync_to_async(make_dataset)(
        ada, "broken", [case(f"c{i}", "x") for i in range(2)]
    )
    eval_run = await start(ada, "echo", "broken", concurrency=1)
    # Rows written behind the contract's back (a dataset version is never edited).
    await DatasetVersion.objects.filter(dataset=dataset).aupdate(cases=[{"name": "bad"}] * 2)
    await evals.advance(eval_run.pk)
    failed = await EvalRun.objects.aget(pk=eval_run.pk)
    assert failed.status == "failed" and "cannot read" in failed.error_message
    results = await sync_to_async(results_of)(failed)
    assert [r.status for r in results] == ["cancelled", "cancelled"]
    assert not await Run.objects.filter(
        session__eval_results__eval_run=eval_run, status__in=ACTIVE_RUN_STATUSES
    ).aexists()
