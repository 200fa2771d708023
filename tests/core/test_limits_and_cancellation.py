"""Fail-safe limits and cancellation: a run always ends with one clear terminal event,
and what it stored stays a valid conversation."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from contextlib import aclosing

import pytest

from agents_core import (
    CancellationToken,
    Event,
    EventType,
    InMemorySessionService,
    LlmAgent,
    RetryPolicy,
    RunConfig,
    ScriptedModel,
    Usage,
    function_tool,
)
from agents_core._step_loop import CUT_OFF
from agents_core.exceptions import ModelServerError
from agents_core.history import build_history
from agents_core.ledger import error_code
from agents_core.llm.resilience import BreakerRegistry
from agents_core.testing import ScriptedResponse, ScriptedToolCall, reply, tool_call
from tests.core.run_helpers import (
    SESSION,
    USER,
    HangingModel,
    assert_valid_history,
    complete,
    make_runner,
    run_turn,
    stored_events,
)


@function_tool
def ping() -> str:
    return "pong"


async def assert_ended_by_limit(
    events: Sequence[Event], sessions: InMemorySessionService, limit: str, *, cut_off: int = 0
) -> None:
    """One terminal ``limit_exceeded`` error naming ``limit``, last both yielded and stored,
    after the errors of the ``cut_off`` model calls it cut off."""
    errors = [e for e in events if e.type is EventType.ERROR]
    assert errors[-1] is events[-1]
    assert [e.error.code for e in errors[:-1] if e.error] == [CUT_OFF] * cut_off
    error = events[-1].error
    assert error is not None
    assert (error.code, error.limit, error.terminal) == ("limit_exceeded", limit, True)
    stored = await stored_events(sessions)
    assert stored[-1].id == events[-1].id
    assert [e.id for e in stored] == [e.id for e in complete(events)]


# Limits.


async def test_max_steps_ends_the_run_when_another_step_would_start(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([tool_call("ping"), reply("done")])
    agent = LlmAgent("agent", model=model, tools=[ping])
    runner = make_runner(agent, sessions, breakers, run_config=RunConfig(max_steps=1))

    events = await run_turn(runner)

    await assert_ended_by_limit(events, sessions, "max_steps")
    assert len(model.requests) == 1


async def test_max_model_calls_ends_the_run_before_the_next_call(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([tool_call("ping"), reply("done")])
    agent = LlmAgent("agent", model=model, tools=[ping])
    runner = make_runner(agent, sessions, breakers, run_config=RunConfig(max_model_calls=1))

    events = await run_turn(runner)

    await assert_ended_by_limit(events, sessions, "max_model_calls")
    assert len(model.requests) == 1
    assert [r.output for e in events for r in e.tool_results] == ["pong"]


async def test_retries_count_against_max_model_calls(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([ModelServerError("503"), ModelServerError("503"), reply("done")])
    config = RunConfig(max_model_calls=2, retry=RetryPolicy(initial_backoff_s=0, max_backoff_s=0))
    runner = make_runner(LlmAgent("agent", model=model), sessions, breakers, run_config=config)

    events = await run_turn(runner)

    await assert_ended_by_limit(events, sessions, "max_model_calls")
    assert len(model.requests) == 2


async def test_max_tool_calls_refuses_a_round_that_would_exceed_it_before_any_tool_runs(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    ran: list[str] = []

    @function_tool
    def work(label: str) -> str:
        ran.append(label)
        return label

    three = ScriptedResponse(
        tool_calls=[ScriptedToolCall(name="work", args={"label": str(i)}) for i in range(3)]
    )
    agent = LlmAgent("agent", model=ScriptedModel([three, reply("done")]), tools=[work])
    runner = make_runner(agent, sessions, breakers, run_config=RunConfig(max_tool_calls=2))

    events = await run_turn(runner)

    await assert_ended_by_limit(events, sessions, "max_tool_calls")
    assert ran == []
    # Each refused call is answered once, as one that did not run, before the error.
    responses = [e for e in events if e.type is EventType.TOOL_RESPONSE]
    assert [e.type for e in events[-4:]] == [EventType.TOOL_RESPONSE] * 3 + [EventType.ERROR]
    results = [r for e in responses for r in e.tool_results]
    assert [r.call_id for r in results] == [c.id for c in events[2].tool_calls]
    assert all(r.is_error and error_code(r.output) == "not_run" for r in results)
    assert "the run failed (limit_exceeded) before this call ran" in results[0].output


async def test_max_wall_time_cuts_off_a_model_call_that_never_returns(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = HangingModel()
    config = RunConfig(max_wall_time_s=0.05)
    runner = make_runner(LlmAgent("agent", model=model), sessions, breakers, run_config=config)

    events = await run_turn(runner)

    await assert_ended_by_limit(events, sessions, "max_wall_time_s", cut_off=1)
    assert model.cancelled.is_set()


async def test_max_wall_time_cuts_off_a_tool_that_never_returns(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    @function_tool(timeout_s=None)
    async def forever() -> str:
        await asyncio.Event().wait()
        return "never"

    agent = LlmAgent("agent", model=ScriptedModel([tool_call("forever")]), tools=[forever])
    config = RunConfig(max_wall_time_s=0.05)
    runner = make_runner(agent, sessions, breakers, run_config=config)

    events = await run_turn(runner)

    await assert_ended_by_limit(events, sessions, "max_wall_time_s")
    # The call had started: its one response says it may or may not have taken effect.
    (response,) = [e for e in events if e.type is EventType.TOOL_RESPONSE]
    (result,) = response.tool_results
    assert error_code(result.output) == "cancelled"
    assert "the run failed (limit_exceeded) while this call ran" in result.output
    assert events[-2] is response


async def test_max_tokens_ends_the_run_once_usage_passes_it(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    expensive = ScriptedResponse(text="a long answer", usage=Usage(input_tokens=8, output_tokens=5))
    agent = LlmAgent("agent", model=ScriptedModel([expensive]))
    runner = make_runner(agent, sessions, breakers, run_config=RunConfig(max_tokens=10))

    events = await run_turn(runner)

    await assert_ended_by_limit(events, sessions, "max_tokens")
    assert events[-1].error is not None
    assert "13 > 10" in events[-1].error.message


async def test_max_tokens_refuses_a_call_that_could_overshoot_before_making_it(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    step = ScriptedResponse(tool_calls=[ScriptedToolCall(name="ping", args={})])
    costly = step.model_copy(update={"usage": Usage(input_tokens=40, output_tokens=10)})
    model = ScriptedModel([costly], loop=True, max_answer_tokens=80)
    agent = LlmAgent("agent", model=model, tools=[ping])
    runner = make_runner(agent, sessions, breakers, run_config=RunConfig(max_tokens=150))

    events = await run_turn(runner)

    await assert_ended_by_limit(events, sessions, "max_tokens")
    # The first call fits (a prompt of some 30 plus 80 for its answer); after it 50 are
    # used, and the second could take 50 + its prompt + 80 > 150: refused, never sent.
    assert len(model.requests) == 1
    error = events[-1].error
    assert error is not None and "50 used" in error.message and "up to 80" in error.message
    used = sum(e.usage.total_tokens for e in events if e.usage is not None and not e.partial)
    assert used == 50 <= 150


async def test_an_agents_max_iterations_ends_a_run_that_never_reaches_an_answer(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([tool_call("ping")], loop=True)
    agent = LlmAgent("agent", model=model, tools=[ping], max_iterations=3)

    events = await run_turn(make_runner(agent, sessions, breakers))

    await assert_ended_by_limit(events, sessions, "max_iterations")
    assert len(model.requests) == 3
    assert sum(1 for e in events if e.type is EventType.TOOL_RESPONSE) == 3


async def test_max_transfers_ends_agents_handing_the_turn_back_and_forth(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    def hand_to(name: str) -> ScriptedModel:
        return ScriptedModel([tool_call("transfer_to_agent", agent_name=name)], loop=True)

    helper = LlmAgent("helper", model=hand_to("desk"))
    desk = LlmAgent("desk", model=hand_to("helper"), sub_agents=[helper])
    runner = make_runner(desk, sessions, breakers, run_config=RunConfig(max_transfers=3))

    events = await run_turn(runner)

    await assert_ended_by_limit(events, sessions, "max_transfers")
    starts = [e.author for e in events if e.type is EventType.AGENT_START]
    assert starts == ["desk", "helper", "desk", "helper"]


# Cancellation through a CancellationToken.


async def cancel_when(
    entered: asyncio.Event, runner_turn: asyncio.Task[list[Event]], token: CancellationToken
) -> list[Event]:
    await entered.wait()
    token.cancel("user pressed stop")
    return await runner_turn


def assert_ended_by_cancellation(events: Sequence[Event], *, cut_off: int = 0) -> None:
    """Ended by the user's cancel, after the errors of the ``cut_off`` model calls it cut."""
    error = events[-1].error
    assert error is not None
    assert (error.code, error.message) == ("cancelled", "user pressed stop")
    errors = [e.error.code for e in events[:-1] if e.type is EventType.ERROR and e.error]
    assert errors == [CUT_OFF] * cut_off


async def test_cancelling_while_the_model_is_called_ends_the_run_with_a_cancelled_event(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = HangingModel()
    runner = make_runner(LlmAgent("agent", model=model), sessions, breakers)
    token = CancellationToken()
    turn = asyncio.create_task(run_turn(runner, cancel_token=token))

    events = await cancel_when(model.entered, turn, token)

    assert_ended_by_cancellation(events, cut_off=1)
    assert [e.type for e in events] == [
        EventType.USER_MESSAGE,
        EventType.AGENT_START,
        EventType.ERROR,  # the model call, cut off: on its span, not fatal of itself
        EventType.ERROR,
    ]
    assert events[2].span_id and events[2].parent_span_id == events[1].span_id
    assert model.cancelled.is_set()
    assert [e.id for e in await stored_events(sessions)] == [e.id for e in events]


async def test_cancelling_while_a_tool_runs_answers_it_as_cancelled(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    running, stopped = asyncio.Event(), asyncio.Event()

    @function_tool
    async def slow() -> str:
        running.set()
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()
        return "never"

    agent = LlmAgent("agent", model=ScriptedModel([tool_call("slow", "s1")]), tools=[slow])
    runner = make_runner(agent, sessions, breakers)
    token = CancellationToken()
    turn = asyncio.create_task(run_turn(runner, cancel_token=token))

    events = await cancel_when(running, turn, token)

    assert_ended_by_cancellation(events)
    assert stopped.is_set()
    stored = await stored_events(sessions)
    assert [e.type for e in stored] == [
        EventType.USER_MESSAGE,
        EventType.AGENT_START,
        EventType.AGENT_MESSAGE,
        EventType.TOOL_STARTED,
        EventType.TOOL_RESPONSE,
        EventType.ERROR,
    ]
    assert [c.id for c in stored[2].tool_calls] == ["s1"]
    (result,) = stored[4].tool_results
    assert (result.call_id, result.is_error) == ("s1", True)
    assert result.output == (
        "cancelled: the run was cancelled (user pressed stop) while this call ran; "
        "it may or may not have taken effect."
    )
    assert [e.seq for e in stored] == [1, 2, 3, 4, 5, 6]
    assert_valid_history(
        build_history(stored, agent_name="agent", branch="agent", tool_result_max_chars=100)
    )


async def test_a_turn_after_a_cancelled_tool_call_sees_it_cancelled(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    running = asyncio.Event()

    @function_tool
    async def slow() -> str:
        running.set()
        await asyncio.Event().wait()
        return "never"

    first = LlmAgent("agent", model=ScriptedModel([tool_call("slow", "s1")]), tools=[slow])
    token = CancellationToken()
    turn = asyncio.create_task(
        run_turn(make_runner(first, sessions, breakers), "start", cancel_token=token)
    )
    await cancel_when(running, turn, token)
    model = ScriptedModel([reply("I was interrupted.")])
    second = LlmAgent("agent", model=model, tools=[slow])

    events = complete(await run_turn(make_runner(second, sessions, breakers), "and now?"))

    assert events[-2].text == "I was interrupted."
    messages = model.requests[0].messages
    assert_valid_history(messages)
    assert [(m.role, m.text, m.tool_call_id) for m in messages] == [
        ("user", "start", None),
        ("assistant", "", None),
        (
            "tool",
            "cancelled: the run was cancelled (user pressed stop) while this call ran; "
            "it may or may not have taken effect.",
            "s1",
        ),
        ("user", "and now?", None),
    ]


async def test_a_token_cancelled_before_the_turn_stores_only_the_message_and_the_cancellation(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([reply("never")])
    runner = make_runner(LlmAgent("agent", model=model), sessions, breakers)
    token = CancellationToken()
    token.cancel("user pressed stop")

    events = await run_turn(runner, cancel_token=token)

    assert [e.type for e in events] == [EventType.USER_MESSAGE, EventType.ERROR]
    assert_ended_by_cancellation(events)
    assert model.requests == []


async def test_cancelling_after_the_run_finished_adds_nothing(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    runner = make_runner(LlmAgent("agent", model=ScriptedModel([reply("hi")])), sessions, breakers)
    token = CancellationToken()
    events: list[Event] = []
    async for event in runner.astream(
        user_id=USER, session_id=SESSION, message="hello", cancel_token=token
    ):
        events.append(event)
        if event.type is EventType.AGENT_END:
            token.cancel()

    assert events[-1].type is EventType.AGENT_END
    assert not any(e.type is EventType.ERROR for e in await stored_events(sessions))


# Cancelling the task that consumes the stream.


@pytest.mark.parametrize("hang_in", ["model", "tool"])
async def test_cancelling_the_consuming_task_leaves_no_task_running(
    sessions: InMemorySessionService, breakers: BreakerRegistry, hang_in: str
) -> None:
    tool_running = asyncio.Event()

    @function_tool(timeout_s=None)
    async def slow() -> str:
        tool_running.set()
        await asyncio.Event().wait()
        return "never"

    hanging = HangingModel()
    model = hanging if hang_in == "model" else ScriptedModel([tool_call("slow")])
    entered = hanging.entered if hang_in == "model" else tool_running
    runner = make_runner(LlmAgent("agent", model=model, tools=[slow]), sessions, breakers)
    baseline = asyncio.all_tasks()

    consumer = asyncio.create_task(run_turn(runner))
    await entered.wait()
    assert len(asyncio.all_tasks() - baseline) > 1  # the consumer and the run it drives
    consumer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await consumer

    assert asyncio.all_tasks() == baseline
    stored = await stored_events(sessions)
    assert not any(e.type is EventType.TOOL_RESPONSE for e in stored)


async def test_a_consumer_cancelled_between_events_closes_the_stream_and_leaves_no_task(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([reply("an answer nobody waits for")])
    runner = make_runner(LlmAgent("agent", model=model), sessions, breakers)
    busy = asyncio.Event()
    baseline = asyncio.all_tasks()

    async def consume() -> None:
        stream = runner.astream(user_id=USER, session_id=SESSION, message="hello")
        async with aclosing(stream):
            async for event in stream:
                if event.type is EventType.AGENT_START:
                    busy.set()
                    await asyncio.Event().wait()  # the consumer's own slow work

    consumer = asyncio.create_task(consume())
    await busy.wait()
    consumer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await consumer

    assert asyncio.all_tasks() == baseline
    stored = await stored_events(sessions)
    assert [e.type for e in stored] == [EventType.USER_MESSAGE, EventType.AGENT_START]
