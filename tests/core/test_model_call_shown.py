"""A model call slow to answer shows itself: once it has neither answered nor streamed
text for ``SHOWN_AFTER_S``, the runner hands on a partial ``agent_message`` without
parts, on the call's span and from when it started, so a live view can draw the call
while it waits. A call cut off before it answered (the run cancelled, its wall-time
limit reached) is stored as an error on its span, so its time is the model's. Through
``Runner`` and the real OpenAI client over HTTP."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agents_core import (
    CancellationToken,
    InMemorySessionService,
    LlmAgent,
    RunConfig,
    Runner,
    ScriptedModel,
    ScriptedResponse,
)
from agents_core._step_loop import SHOWN_AFTER_S
from agents_core.events import Event, EventType
from agents_core.llm.openai import openai_compatible
from agents_core.llm.resilience import BreakerRegistry
from agents_core.spans import spans_of
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


async def run_cut_off(
    openai_server: OpenAIServer,
    loopback_http_clients: dict[str, Any],
    config: RunConfig,
    *,
    cancel: bool,
) -> list[Event]:
    """The stored events of a turn whose model never answers: cancelled once the call
    showed itself (``cancel``), or left to ``config``'s limits."""
    model = openai_compatible(
        model="test-model",
        base_url=openai_server.base_url,
        api_key="sk-test",
        **loopback_http_clients,
    )
    runner = Runner(
        LlmAgent("assistant", model=model),
        session_service=InMemorySessionService(),
        run_config=config,
    )
    openai_server.reply("Too late.", hold_after=0)
    token = CancellationToken()
    events: list[Event] = []
    async for event in runner.astream(
        user_id="u", session_id="s", message="hi", cancel_token=token
    ):
        events.append(event)
        if cancel and shown(event):
            token.cancel("stopped by the user")
    return [e for e in events if not e.partial]


@pytest.mark.parametrize("cancel", [True, False], ids=["cancelled", "wall_time_limit"])
async def test_a_call_cut_off_before_it_answered_is_an_error_on_its_span(
    openai_server: OpenAIServer, loopback_http_clients: dict[str, Any], cancel: bool
) -> None:
    config = RunConfig(max_wall_time_s=30 if cancel else 0.6)
    events = await run_cut_off(openai_server, loopback_http_clients, config, cancel=cancel)

    cut, ending = events[-2:]
    assert ending.is_terminal_error and ending.error is not None
    assert ending.error.code == ("cancelled" if cancel else "limit_exceeded")
    assert cut.type is EventType.ERROR and cut.error is not None
    assert (cut.error.code, cut.error.failure) == ("model_call_cut_off", "non_fatal")
    assert cut.error.message.startswith("the model call was cut off after ")
    assert cut.parent_span_id == events[1].span_id  # the agent's span
    assert cut.started_at is not None and cut.latency_ms is not None
    assert cut.latency_ms >= SHOWN_AFTER_S * 1000
    [call] = [span for span in spans_of(e.to_wire() for e in events) if span.kind == "model"]
    assert (call.span_id, call.status) == (cut.span_id, "error")
    assert call.start == cut.started_at and call.end == cut.created_at
    assert call.error == f"model_call_cut_off: {cut.error.message}"
