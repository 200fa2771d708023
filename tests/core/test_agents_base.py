"""``BaseAgent.astream``: every agent's events framed by start and end, stamped with
its name and branch; a crash becomes one terminal error."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from agents_core import BaseAgent, Context, Event, EventType, InMemorySessionService, TextPart
from agents_core.llm.resilience import BreakerRegistry
from tests.core.run_helpers import make_runner, run_turn, stored_events


class Echo(BaseAgent):
    async def _astream(self, ctx: Context) -> AsyncGenerator[Event]:
        yield ctx.event(EventType.AGENT_MESSAGE, parts=[TextPart(text=f"echo: {ctx.user_input}")])


class Relay(BaseAgent):
    """Runs its only sub-agent inside its own turn."""

    async def _astream(self, ctx: Context) -> AsyncGenerator[Event]:
        async for event in self.sub_agents[0].astream(ctx):
            yield event


async def test_an_agents_events_are_framed_by_start_and_end_and_stamped_with_its_name(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    events = await run_turn(make_runner(Echo("echo"), sessions, breakers), "hi")

    assert [(e.type, e.author, e.branch) for e in events[1:]] == [
        (EventType.AGENT_START, "echo", "echo"),
        (EventType.AGENT_MESSAGE, "echo", "echo"),
        (EventType.AGENT_END, "echo", "echo"),
    ]
    assert events[2].text == "echo: hi"


async def test_a_sub_agent_authors_its_own_events_on_its_parents_branch(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    root = Relay("relay", sub_agents=[Echo("echo")])

    events = await run_turn(make_runner(root, sessions, breakers))

    assert [(e.type, e.author, e.branch) for e in events[1:]] == [
        (EventType.AGENT_START, "relay", "relay"),
        (EventType.AGENT_START, "echo", "relay"),
        (EventType.AGENT_MESSAGE, "echo", "relay"),
        (EventType.AGENT_END, "echo", "relay"),
        (EventType.AGENT_END, "relay", "relay"),
    ]


class Crash(BaseAgent):
    async def _astream(self, ctx: Context) -> AsyncGenerator[Event]:
        yield ctx.event(EventType.AGENT_MESSAGE, parts=[TextPart(text="about to fail")])
        raise KeyError("missing")


async def test_an_agent_that_crashes_ends_the_run_with_one_internal_error_and_no_agent_end(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    events = await run_turn(make_runner(Crash("crash"), sessions, breakers))

    assert [e.type for e in events] == [
        EventType.USER_MESSAGE,
        EventType.AGENT_START,
        EventType.AGENT_MESSAGE,
        EventType.ERROR,
    ]
    error = events[-1].error
    assert error is not None
    assert (error.code, error.terminal) == ("internal_error", True)
    assert "KeyError" in error.message
    assert [e.id for e in await stored_events(sessions)] == [e.id for e in events]
