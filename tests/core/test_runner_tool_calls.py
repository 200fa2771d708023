"""One model response asking for several tools, and tools that fail: the round the
model gets back."""

from __future__ import annotations

import asyncio

import pytest

from agents_core import EventType, InMemorySessionService, LlmAgent, ScriptedModel, function_tool
from agents_core.llm.resilience import BreakerRegistry
from agents_core.testing import ScriptedResponse, ScriptedToolCall, reply, tool_call
from tests.core.run_helpers import complete, make_runner, run_turn


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


# Several tool calls in one response.


def three_calls() -> ScriptedResponse:
    return ScriptedResponse(
        tool_calls=[
            ScriptedToolCall(name="step", id=f"c{i}", args={"label": label})
            for i, label in enumerate(["first", "second", "third"], start=1)
        ]
    )


async def test_tool_calls_of_one_response_run_concurrently(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    # Each call waits until all three are running: run one by one, every call times out.
    barrier = asyncio.Barrier(3)

    @function_tool(timeout_s=10)
    async def step(label: str) -> str:
        await barrier.wait()
        return label

    model = ScriptedModel([three_calls(), reply("done")])
    runner = make_runner(LlmAgent("agent", model=model, tools=[step]), sessions, breakers)

    events = complete(await run_turn(runner))

    results = [r for e in events for r in e.tool_results]
    assert [(r.output, r.is_error) for r in results] == [
        ("first", False),
        ("second", False),
        ("third", False),
    ]


async def test_tool_responses_follow_call_order_not_completion_order(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    finished: list[str] = []
    others_done = asyncio.Event()

    @function_tool(timeout_s=10)  # run one at a time, "first" would wait forever
    async def step(label: str) -> str:
        if label == "first":
            await others_done.wait()
        finished.append(label)
        if len(finished) == 2:
            others_done.set()
        return f"{label} done"

    model = ScriptedModel([three_calls(), reply("all done")])
    runner = make_runner(LlmAgent("agent", model=model, tools=[step]), sessions, breakers)

    events = complete(await run_turn(runner))

    assert finished[-1] == "first"
    responses = [e for e in events if e.type is EventType.TOOL_RESPONSE]
    assert [r.call_id for e in responses for r in e.tool_results] == ["c1", "c2", "c3"]
    assert [len(e.tool_results) for e in responses] == [1, 1, 1]


async def test_one_message_holds_every_call_and_each_call_gets_exactly_one_response(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    @function_tool(side_effects=False)
    def step(label: str) -> str:
        return label.upper()

    model = ScriptedModel([three_calls(), reply("all done")])
    runner = make_runner(LlmAgent("agent", model=model, tools=[step]), sessions, breakers)

    events = complete(await run_turn(runner))

    assert [e.type for e in events] == [
        EventType.USER_MESSAGE,
        EventType.AGENT_START,
        EventType.AGENT_MESSAGE,
        EventType.TOOL_RESPONSE,
        EventType.TOOL_RESPONSE,
        EventType.TOOL_RESPONSE,
        EventType.AGENT_MESSAGE,
        EventType.AGENT_END,
    ]
    assert [c.id for c in events[2].tool_calls] == ["c1", "c2", "c3"]
    follow_up = model.requests[1].messages
    assert [(m.role, m.tool_call_id, m.text) for m in follow_up[-3:]] == [
        ("tool", "c1", "FIRST"),
        ("tool", "c2", "SECOND"),
        ("tool", "c3", "THIRD"),
    ]
    assert [c.id for c in follow_up[-4].tool_calls] == ["c1", "c2", "c3"]
    assert events[-2].text == "all done"


# Failing, unknown and badly called tools become error results.


@function_tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        pytest.param(tool_call("explode", reason="disk"), "RuntimeError: boom: disk", id="raises"),
        pytest.param(tool_call("teleport", to="mars"), "unknown tool 'teleport'", id="unknown"),
        pytest.param(tool_call("add", a=1), "tool_arguments_invalid", id="invalid-arguments"),
    ],
)
async def test_a_tool_failure_becomes_an_error_result_the_model_reads_and_the_run_goes_on(
    sessions: InMemorySessionService,
    breakers: BreakerRegistry,
    call: ScriptedResponse,
    expected: str,
) -> None:
    model = ScriptedModel([call, reply("sorry, that failed")])
    agent = LlmAgent("agent", model=model, tools=[add, explode])

    events = complete(await run_turn(make_runner(agent, sessions, breakers)))

    [response] = [e for e in events if e.type is EventType.TOOL_RESPONSE]
    [result] = response.tool_results
    assert result.is_error
    assert expected in result.output
    tool_message = model.requests[1].messages[-1]
    assert (tool_message.role, tool_message.text) == ("tool", result.output)
    assert events[-2].is_final_response()
    assert events[-1].type is EventType.AGENT_END
    assert not any(e.type is EventType.ERROR for e in events)


# What the scripted model says a tool round cost (the demo's figures).


async def test_the_scripted_model_counts_tool_calls_and_results_as_tokens(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([tool_call("add", a=120_000_000_000, b=345_000_000_000), reply("Done.")])
    runner = make_runner(LlmAgent("agent", model=model, tools=[add]), sessions, breakers)

    events = complete(await run_turn(runner))

    calling, answering = [e.usage for e in events if e.type is EventType.AGENT_MESSAGE]
    assert calling is not None and answering is not None
    assert calling.output_tokens >= len('add{"a": 120000000000, "b": 345000000000}') // 4
    # The second call's prompt holds the call and its result (12 digits) on top.
    assert answering.input_tokens >= calling.input_tokens + calling.output_tokens + 3
