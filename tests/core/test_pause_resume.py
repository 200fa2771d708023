"""Pause and resume: a run held between steps by its ``PauseGate``, announced once,
its paused time not counted as run time, and still cancellable while held."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing

import pytest

from agents_core import (
    BaseAgent,
    CancellationToken,
    Context,
    Event,
    EventType,
    InMemorySessionService,
    LlmAgent,
    PauseGate,
    RunConfig,
    ScriptedModel,
    TextPart,
    function_tool,
)
from agents_core.agents import LoopAgent, ParallelAgent, ReActAgent, SequentialAgent
from agents_core.llm.resilience import BreakerRegistry
from agents_core.spans import SpanTree
from agents_core.testing import reply, tool_call
from tests.core.run_helpers import SESSION, USER, make_runner, stored_events

SAFETY_TIMEOUT_S = 10  # a net against a regression hanging the suite; nothing waits on it


async def next_stored(events: AsyncIterator[Event], type: EventType) -> list[Event]:
    """The stored events up to and including the next one of ``type``."""
    seen: list[Event] = []
    async with asyncio.timeout(SAFETY_TIMEOUT_S):
        async for event in events:
            if event.partial:
                continue
            seen.append(event)
            if event.type is type:
                return seen
    raise AssertionError(f"the run ended without a {type} event: {[e.type for e in seen]}")


async def rest(events: AsyncIterator[Event]) -> list[Event]:
    async with asyncio.timeout(SAFETY_TIMEOUT_S):
        return [event async for event in events if not event.partial]


class PausingAgent(BaseAgent):
    """Says one thing, pausing the run as it does (a pause asked mid-step)."""

    async def _astream(self, ctx: Context) -> AsyncGenerator[Event]:
        ctx.invocation.pause_gate.pause("paused by ada")
        yield ctx.event(EventType.AGENT_MESSAGE, parts=[TextPart(text="first")])


def pausing_tool(gate: PauseGate) -> object:
    @function_tool
    def look() -> str:
        """Looks, and pauses the run meanwhile."""
        gate.pause()
        return "seen"

    return look


async def test_a_run_paused_mid_step_waits_at_the_next_step_until_resumed(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    gate = PauseGate()
    model = ScriptedModel([tool_call("look"), reply("done")])
    agent = LlmAgent("agent", model=model, tools=[pausing_tool(gate)])
    runner = make_runner(agent, sessions, breakers)
    stream = runner.astream(user_id=USER, session_id=SESSION, message="hi", pause_gate=gate)
    async with aclosing(stream) as events:
        before = await next_stored(events, EventType.RUN_PAUSED)
        assert [e.type for e in before[-2:]] == [EventType.TOOL_RESPONSE, EventType.RUN_PAUSED]
        assert before[-1].text == "paused by request"
        assert len(model.requests) == 1  # held before the second model call
        gate.resume()
        after = await rest(events)
    assert [e.type for e in after[:2]] == [EventType.RUN_RESUMED, EventType.AGENT_MESSAGE]
    assert after[0].span_id == before[-1].span_id
    assert after[0].started_at == before[-1].created_at
    assert after[1].text == "done" and after[-1].type is EventType.AGENT_END
    assert len(model.requests) == 2


async def test_a_run_not_paused_emits_no_pause_events(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    gate = PauseGate()
    gate.pause()
    gate.resume()  # resumed before any step was reached: nothing to announce
    runner = make_runner(LlmAgent("agent", model=ScriptedModel([reply("ok")])), sessions, breakers)
    stream = runner.astream(user_id=USER, session_id=SESSION, message="hi", pause_gate=gate)
    async with aclosing(stream) as events:
        types = [e.type for e in await rest(events)]
    assert EventType.RUN_PAUSED not in types and EventType.RUN_RESUMED not in types


async def test_a_sequential_agent_pauses_between_its_children(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    gate = PauseGate()
    second = LlmAgent("second", model=ScriptedModel([reply("second answer")]))
    pipeline = SequentialAgent("pipeline", sub_agents=[PausingAgent("first"), second])
    runner = make_runner(pipeline, sessions, breakers)
    stream = runner.astream(user_id=USER, session_id=SESSION, message="hi", pause_gate=gate)
    async with aclosing(stream) as events:
        before = await next_stored(events, EventType.RUN_PAUSED)
        assert (before[-2].type, before[-2].author) == (EventType.AGENT_END, "first")
        assert (before[-1].author, before[-1].text) == ("pipeline", "paused by ada")
        gate.resume()
        after = await rest(events)
    assert (after[0].type, after[1].type, after[1].author) == (
        EventType.RUN_RESUMED,
        EventType.AGENT_START,
        "second",
    )


async def test_a_react_agent_pauses_before_its_next_step(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    gate = PauseGate()
    act = {"thought": "look first", "action": {"tool": "look", "args": {}}}
    done = {"thought": "seen", "final_answer": "done"}
    model = ScriptedModel([reply(json.dumps(act)), reply(json.dumps(done))])
    agent = ReActAgent("thinker", model=model, tools=[pausing_tool(gate)])
    runner = make_runner(agent, sessions, breakers)
    stream = runner.astream(user_id=USER, session_id=SESSION, message="hi", pause_gate=gate)
    async with aclosing(stream) as events:
        before = await next_stored(events, EventType.RUN_PAUSED)
        assert before[-2].type is EventType.TOOL_RESPONSE and len(model.requests) == 1
        gate.resume()
        after = await rest(events)
    assert after[0].type is EventType.RUN_RESUMED
    assert [e.text for e in after if e.is_final_response()] == ["done"]


async def test_a_loop_agent_pauses_between_its_children(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    gate = PauseGate()
    second = LlmAgent("second", model=ScriptedModel([reply("second answer")]))
    loop = LoopAgent("loop", sub_agents=[PausingAgent("first"), second], max_iterations=1)
    runner = make_runner(loop, sessions, breakers)
    stream = runner.astream(user_id=USER, session_id=SESSION, message="hi", pause_gate=gate)
    async with aclosing(stream) as events:
        before = await next_stored(events, EventType.RUN_PAUSED)
        assert (before[-2].type, before[-2].author, before[-1].author) == (
            EventType.AGENT_END,
            "first",
            "loop",
        )
        gate.resume()
        after = await rest(events)
    assert (after[0].type, after[1].author) == (EventType.RUN_RESUMED, "second")


async def test_parallel_branches_held_by_one_pause_announce_it_once(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    gate = PauseGate()
    gate.pause()
    branches = [LlmAgent(name, model=ScriptedModel([reply(name)])) for name in ("a", "b")]
    runner = make_runner(ParallelAgent("fan", sub_agents=branches), sessions, breakers)
    stream = runner.astream(user_id=USER, session_id=SESSION, message="hi", pause_gate=gate)
    async with aclosing(stream) as events:
        await next_stored(events, EventType.RUN_PAUSED)
        gate.resume()
        after = await rest(events)
    stored = await stored_events(sessions)
    assert [e.type for e in stored].count(EventType.RUN_PAUSED) == 1
    assert [e.type for e in stored].count(EventType.RUN_RESUMED) == 1
    assert sorted(e.text for e in after if e.is_final_response()) == ["a", "b"]


async def test_paused_time_does_not_count_towards_the_wall_time_limit(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    gate = PauseGate()
    gate.pause()
    limit = 0.05
    agent = LlmAgent("agent", model=ScriptedModel([reply("done")]))
    runner = make_runner(agent, sessions, breakers, run_config=RunConfig(max_wall_time_s=limit))
    stream = runner.astream(user_id=USER, session_id=SESSION, message="hi", pause_gate=gate)
    arrived: asyncio.Queue[Event | None] = asyncio.Queue()

    async def pump() -> None:
        async for event in stream:
            if not event.partial:
                arrived.put_nowait(event)
        arrived.put_nowait(None)

    pumping = asyncio.create_task(pump())
    async with asyncio.timeout(SAFETY_TIMEOUT_S):
        while (event := await arrived.get()) and event.type is not EventType.RUN_PAUSED:
            pass
    # Held for three times its wall-time limit, the run must still be waiting.
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(limit * 3):
            await arrived.get()
    gate.resume()
    await asyncio.wait_for(pumping, SAFETY_TIMEOUT_S)
    after = list(iter(arrived.get_nowait, None))
    assert [e.type for e in after][-2:] == [EventType.AGENT_MESSAGE, EventType.AGENT_END]
    assert not any(e.type is EventType.ERROR for e in after)


async def test_a_paused_run_still_ends_at_once_when_cancelled(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    gate, token = PauseGate(), CancellationToken()
    gate.pause()
    model = ScriptedModel([reply("never")])
    runner = make_runner(LlmAgent("agent", model=model), sessions, breakers)
    stream = runner.astream(
        user_id=USER, session_id=SESSION, message="hi", pause_gate=gate, cancel_token=token
    )
    async with aclosing(stream) as events:
        await next_stored(events, EventType.RUN_PAUSED)
        token.cancel()
        after = await rest(events)
    assert [e.type for e in after] == [EventType.ERROR]
    assert after[0].error is not None and after[0].error.code == "cancelled"
    assert model.requests == []


async def test_a_pause_is_a_wait_span_closed_on_resume_or_at_the_end(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    gate, token = PauseGate(), CancellationToken()
    gate.pause()
    runner = make_runner(LlmAgent("agent", model=ScriptedModel([reply("x")])), sessions, breakers)
    stream = runner.astream(
        user_id=USER, session_id=SESSION, message="hi", pause_gate=gate, cancel_token=token
    )
    async with aclosing(stream) as events:
        held = await next_stored(events, EventType.RUN_PAUSED)
        tree = SpanTree().observe_all(e.to_wire() for e in held)
        [pause] = [s for s in tree.spans() if s.kind == "human"]
        assert (pause.name, pause.end) == ("pause", None)
        gate.resume()
        wires = [e.to_wire() for e in await rest(events)]
    [pause] = [s for s in tree.observe_all(wires).spans() if s.kind == "human"]
    assert pause.status == "ok" and pause.end is not None
