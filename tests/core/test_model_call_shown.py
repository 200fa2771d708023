"""A model call slow to answer shows itself: once it has neither answered nor streamed
text for ``SHOWN_AFTER_S``, the runner hands on a partial ``agent_message`` without
parts, on the call's span and from when it started, so a live view can draw the call
while it waits. Through ``Runner`` and the real OpenAI client over HTTP."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agents_core import InMemorySessionService, LlmAgent, Runner, ScriptedModel, ScriptedResponse
from agents_core._step_loop import SHOWN_AFTER_S
from agents_core.events import Event, EventType
from agents_core.llm.openai import openai_compatible
from agents_core.llm.resilience import BreakerRegistry
from tests.support.openai_server import OpenAIServer


def shown(event: Event) -> bool:
    """Whether ``event`` is a call showing itself (no text: not a streamed chunk)."""
    return event.partial and event.type is EventType.AGENT_MESSAGE and not event.parts


async def run_held(
    openai_server: OpenAIServer,
    loopback_http_clients: dict[str, Any],
    breakers: BreakerRegistry,
    *,
    streaming: bool,
) -> tuple[list[Event], list[Event]]:
    """A turn whose model holds its answer until the call has shown itself: the events
    before the release and the events of the whole turn."""
    model = openai_compatible(
        model="test-model",
        base_url=openai_server.base_url,
        api_key="sk-test",
        streaming=streaming,
        **loopback_http_clients,
    )
    agent = LlmAgent("assistant", model=model)
    runner = Runner(agent, session_service=InMemorySessionService(), breakers=breakers)
    openai_server.reply("Here it is.", hold_after=0)
    events: list[Event] = []
    showing = asyncio.Event()

    async def turn() -> None:
        async for event in runner.astream(user_id="u", session_id="s", message="hi"):
            events.append(event)
            if shown(event):
                showing.set()

    running = asyncio.create_task(turn())
    await asyncio.wait_for(showing.wait(), timeout=10)
    before = list(events)
    openai_server.release()
    await asyncio.wait_for(running, timeout=10)
    return before, events


@pytest.mark.parametrize("streaming", [True, False], ids=["streamed", "whole"])
async def test_a_call_held_by_its_model_shows_itself_on_its_span_before_its_answer(
    openai_server: OpenAIServer,
    loopback_http_clients: dict[str, Any],
    breakers: BreakerRegistry,
    streaming: bool,
) -> None:
    before, events = await run_held(
        openai_server, loopback_http_clients, breakers, streaming=streaming
    )

    [call] = [e for e in before if shown(e)]
    assert [e.type for e in before if not e.partial] == [
        EventType.USER_MESSAGE,
        EventType.AGENT_START,
    ]
    assert before[-1] is call  # shown while held: nothing of the answer yet
    [answer] = [e for e in events if e.type is EventType.AGENT_MESSAGE and not e.partial]
    assert answer.text == "Here it is."
    assert (call.span_id, call.started_at) == (answer.span_id, answer.started_at)
    assert call.parent_span_id == before[1].span_id  # in the agent's span
    assert call.started_at is not None and call.created_at >= call.started_at
    assert (call.created_at - call.started_at).total_seconds() >= SHOWN_AFTER_S
    assert call.seq is None and call.author == "assistant"
    assert [e for e in events if shown(e)] == [call]  # once a call, however long it waits


async def test_a_call_that_answers_at_once_shows_nothing_before_its_answer() -> None:
    model = ScriptedModel([ScriptedResponse(text="Quick.")])
    runner = Runner(LlmAgent("assistant", model=model), session_service=InMemorySessionService())

    events = [e async for e in runner.astream(user_id="u", session_id="s", message="hi")]

    assert not [e for e in events if shown(e)]
    assert [e.text for e in events if e.partial] == ["Quick."]  # its streamed text only
    assert [e.type for e in events if not e.partial] == [
        EventType.USER_MESSAGE,
        EventType.AGENT_START,
        EventType.AGENT_MESSAGE,
        EventType.AGENT_END,
    ]
