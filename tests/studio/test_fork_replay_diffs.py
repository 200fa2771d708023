"""Issue 24's diff acceptance on real runs: the diff of a run with its exact replay is
empty; a fork at a tool result with one edit, gone on live, differs from its original
in exactly the steps from that result on (the earlier ones are the same)."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from agents_core.replay import by_branch, comparable
from studio import live, runs, services
from studio.models import Event, Run, Session
from studio.services.diffs import compare_runs
from studio.services.forks import Edit, continue_fork, fork_session
from tests.studio.conftest import make_session
from tests.support.live import (
    ENDED,
    eventually,
    run_manager,  # noqa: F401  (an autouse fixture)
    scripted_agent,
)

pytestmark = pytest.mark.django_db(transaction=True)

SCRIPT = [
    {"text": "", "tool_calls": [{"name": "calculator", "args": {"expression": "2 + 3"}}]},
    {"text": "The answer is {last_tool_result}."},
]


@pytest.fixture(autouse=True)
async def executing() -> None:
    """Runs execute on this test's loop, as in a server (``run_manager`` stops them)."""
    runs.executor().start()


async def ended(run: Run) -> Run:
    async def done() -> Run | None:
        found = await Run.objects.aget(pk=run.pk)
        return found if found.status in ENDED else None

    return await eventually(done)


async def latest(session: Session) -> Run:
    async def found() -> Run | None:
        return await Run.objects.filter(session=session).order_by("-created_at").afirst()

    return await ended(await eventually(found))


async def original(ada: User) -> tuple[Session, Run]:
    agent = await sync_to_async(scripted_agent)(
        ada, "adder", SCRIPT, tools=[{"name": "calculator"}]
    )
    session = await sync_to_async(make_session)(ada, agent)
    run = await ended(await sync_to_async(services.start_run)(session, "what is 2 + 3?"))
    assert run.status == "succeeded"
    return session, run


def statuses(diff: Any) -> list[tuple[str, str]]:
    return [(row.status, row.step.kind) for row in diff.rows]


async def test_a_run_and_its_exact_replay_do_not_differ(ada: User) -> None:
    _, run = await original(ada)
    replay = await ended(await sync_to_async(services.replay_run)(run))
    assert replay.status == "succeeded" and replay.replay_of_id == run.pk
    diff = await sync_to_async(compare_runs)(run, replay)
    assert diff.identical, statuses(diff)
    assert diff.answer_a == diff.answer_b == "The answer is 5."


async def test_a_fork_with_one_edited_tool_result_differs_from_there_on_only(ada: User) -> None:
    session, run = await original(ada)
    rows = [r async for r in session.events.order_by("seq").values_list("seq", "type")]
    [result_seq] = [seq for seq, kind in rows if kind == "tool_response"]
    fork = await sync_to_async(fork_session)(session, result_seq, edit=Edit("7"))
    await sync_to_async(continue_fork)(fork)
    went_on = await latest(fork)
    assert went_on.status == "succeeded"

    diff = await sync_to_async(compare_runs)(run, went_on)
    steps = statuses(diff)
    changed_at = next(i for i, (status, _) in enumerate(steps) if status != "same")
    assert all(status == "same" for status, _ in steps[:changed_at])
    assert steps[changed_at][1] == "tool_call"  # the edited result is its call's step
    assert all(status != "same" for status, _ in steps[changed_at:])
    assert (diff.answer_a, diff.answer_b) == ("The answer is 5.", "The answer is 7.")
    # Its figures cover the steps shown, the copied ones too: the same two model calls,
    # on prompts and answers of the same length as the original's.
    figures = {figure.name: (figure.a, figure.b) for figure in diff.figures}
    assert figures["model_calls"] == (2, 2)
    a_in, b_in = figures["input_tokens"]
    assert a_in > 0 and b_in == a_in
    assert figures["output_tokens"][1] == figures["output_tokens"][0] > 0
    went_on_alone = went_on.timing["total_ms"]
    assert figures["wall_ms"][1] > went_on_alone  # the copy's time to the fork point too


async def test_a_run_that_parked_on_a_person_replays_to_the_same_steps(ada: User) -> None:
    tools = [{"name": "calculator", "requires_approval": True}]
    agent = await sync_to_async(scripted_agent)(ada, "careful", SCRIPT, tools=tools)
    session = await sync_to_async(make_session)(ada, agent)
    run = await sync_to_async(services.start_run)(session, "what is 2 + 3?")

    async def parked() -> Run | None:
        return await Run.objects.filter(pk=run.pk, status="waiting").afirst()

    await eventually(parked)
    [request] = [
        p
        async for p in session.events.filter(type="approval_request").values_list(
            "payload", flat=True
        )
    ]
    body = live.ApprovalBody(
        call_id=request["approval"]["call_id"],
        args_hash=request["approval"]["args_hash"],
        decision="approve",
    )
    await services.decide_approval(session, body, user=ada, via="api")
    run = await ended(run)
    assert run.status == "succeeded"

    replay = await ended(await sync_to_async(services.replay_run)(run))
    assert replay.status == "succeeded"
    diff = await sync_to_async(compare_runs)(run, replay)
    assert diff.identical, statuses(diff)
    rows = [
        [e.to_core() async for e in Event.objects.filter(session_id=s).order_by("seq")]
        for s in (run.session_id, replay.session_id)
    ]
    original_turn = [e for e in rows[0] if e.invocation_id == run.invocation_id]
    replayed_turn = [e for e in rows[1] if e.invocation_id == replay.invocation_id]
    assert any(e.type == "run_parked" for e in original_turn)
    assert by_branch(comparable(replayed_turn)) == by_branch(comparable(original_turn))
