"""The calls a runner makes once its agent is done (a turn's key facts, a long session's
summary) show themselves while slow to answer, as an agent's model call does: a partial
event of the call's kind without parts, on the call's span and from when it started,
handed on before the event that records the call. Through ``Runner`` and the real
OpenAI client over HTTP, the model server holding its answer."""

from __future__ import annotations

import asyncio
from typing import Any

from agents_core import (
    CancellationToken,
    InMemorySessionService,
    LlmAgent,
    Runner,
    ScriptedModel,
    ScriptedResponse,
)
from agents_core._step_loop import SHOWN_AFTER_S
from agents_core.compaction import CompactionConfig
from agents_core.events import Event, EventType
from agents_core.llm.openai import openai_compatible
from agents_core.memory import InMemoryMemoryService, KeyFacts, MemoryConfig
from agents_core.span_contract import SUMMARY_CUT_OFF
from agents_core.spans import spans_of
from agents_core.testing import collect, reply
from tests.support.openai_server import OpenAIServer


def shown(event: Event) -> bool:
    return event.partial and not event.parts


async def turns_held(runner: Runner, server: OpenAIServer, messages: list[str]) -> list[Event]:
    """Every event of ``messages``' turns, the model server releasing each call it holds
    once the runner has shown it."""
    events: list[Event] = []
    for message in messages:
        async for event in runner.astream(user_id="u", session_id="s", message=message):
            events.append(event)
            if shown(event):
                await asyncio.to_thread(server.release)
    return events


def model_on(server: OpenAIServer, clients: dict[str, Any]) -> Any:
    return openai_compatible(
        model="m", base_url=server.base_url, api_key="k", streaming=False, **clients
    )


def summarising(summarizer: Any, **config: Any) -> Runner:
    """A runner whose agent answers "a" and whose summariser is ``summarizer``, due from
    the second turn on."""
    return Runner(
        LlmAgent("bot", model=ScriptedModel([reply("a")], loop=True)),
        session_service=InMemorySessionService(),
        compaction=CompactionConfig(summarizer, threshold=2, keep_last=1, **config),
    )


async def test_a_slow_summary_shows_itself_on_its_span_before_it_is_stored(
    openai_server: OpenAIServer, loopback_http_clients: dict[str, Any]
) -> None:
    runner = summarising(model_on(openai_server, loopback_http_clients), model_name="small")
    openai_server.reply("They said one and two.", hold_after=0)

    events = await asyncio.wait_for(turns_held(runner, openai_server, ["one", "two"]), 20)

    [call] = [e for e in events if shown(e)]
    [summary] = [e for e in events if e.type is EventType.COMPACTION and not e.partial]
    assert call.type is EventType.COMPACTION and call.seq is None and call.model == "small"
    assert events.index(call) == events.index(summary) - 1  # after the turn, before it
    assert events[events.index(call) - 1].type is EventType.AGENT_END
    assert (call.span_id, call.started_at) == (summary.span_id, summary.started_at)
    assert call.parent_span_id == summary.parent_span_id is not None
    assert call.started_at is not None
    assert (call.created_at - call.started_at).total_seconds() >= SHOWN_AFTER_S
    assert summary.text == "They said one and two." and summary.latency_ms is not None
    assert summary.latency_ms >= SHOWN_AFTER_S * 1000
    # While shown, the call draws as the summary's span, open; stored, it closes.
    live = spans_of(
        e.to_wire() for e in events[: events.index(call) + 1] if not shown(e) or e is call
    )
    assert [(s.name, s.status) for s in live if s.span_id == call.span_id] == [("summary", "open")]


async def test_slow_key_facts_show_themselves_and_a_quick_summary_does_not(
    openai_server: OpenAIServer, loopback_http_clients: dict[str, Any]
) -> None:
    facts = model_on(openai_server, loopback_http_clients)
    memory = MemoryConfig(InMemoryMemoryService(), KeyFacts(facts, "bot"))
    runner = Runner(
        LlmAgent("bot", model=ScriptedModel([reply("Hi, Ada.")], loop=True)),
        session_service=InMemorySessionService(),
        memory=memory,
        compaction=CompactionConfig(ScriptedModel([]), threshold=2, keep_last=1),
    )
    openai_server.reply('["Ada lives in Oslo"]', hold_after=0)

    events = await asyncio.wait_for(turns_held(runner, openai_server, ["I am Ada"]), 20)

    [call] = [e for e in events if shown(e)]
    [saved] = [e for e in events if e.type is EventType.MEMORY_SAVED and not e.partial]
    assert call.type is EventType.MEMORY_SAVED and call.author == "bot"
    assert events.index(call) == events.index(saved) - 1
    assert (call.span_id, call.started_at) == (saved.span_id, saved.started_at)
    assert [p.text for p in saved.parts] == ["Ada lives in Oslo"]  # type: ignore[union-attr]
    # The scripted summariser answers at once: its call is stored, never shown.
    openai_server.reply("Noted.")
    events = await asyncio.wait_for(turns_held(runner, openai_server, ["and you?"]), 20)
    assert not [e for e in events if shown(e)]
    assert {e.type for e in events if e.partial} == {EventType.AGENT_MESSAGE}  # its text
    assert EventType.COMPACTION in [e.type for e in events]


async def test_a_stop_while_the_summary_is_made_cuts_it_off_on_its_span(
    openai_server: OpenAIServer, loopback_http_clients: dict[str, Any]
) -> None:
    runner = summarising(model_on(openai_server, loopback_http_clients))
    await collect(runner.astream(user_id="u", session_id="s", message="one"))
    openai_server.hang()  # the summary never comes
    token = CancellationToken()
    events: list[Event] = []
    async for event in runner.astream(
        user_id="u", session_id="s", message="two", cancel_token=token
    ):
        events.append(event)
        if shown(event):
            token.cancel()
    openai_server.release()

    # The turn had ended well: the call is cut off and recorded, nothing fails the turn.
    [call] = [e for e in events if shown(e)]
    cut = events[-1]
    assert events[events.index(call) - 1].type is EventType.AGENT_END
    assert cut.type is EventType.ERROR and cut.error is not None and cut.seq is not None
    assert (cut.error.code, cut.error.failure, cut.error.attempts) == (
        SUMMARY_CUT_OFF,
        "non_fatal",
        None,
    )
    assert cut.error.message.startswith("the summary call was cut off after 0.")
    assert (cut.span_id, cut.started_at) == (call.span_id, call.started_at)
    assert EventType.COMPACTION not in {e.type for e in events if not e.partial}
    [span] = [
        s
        for s in spans_of(e.to_wire() for e in events if not e.partial)
        if s.span_id == cut.span_id
    ]
    assert (span.name, span.status) == ("summary", "error")


async def test_a_stop_asked_before_the_calls_after_the_turn_makes_none() -> None:
    facts = ScriptedModel([], summaries=[ScriptedResponse(text='["never asked"]')])
    summarizer = ScriptedModel([])
    memory = MemoryConfig(InMemoryMemoryService(), KeyFacts(facts, "bot"))
    runner = Runner(
        LlmAgent("bot", model=ScriptedModel([reply("a")], loop=True)),
        session_service=InMemorySessionService(),
        memory=memory,
        compaction=CompactionConfig(summarizer, threshold=2, keep_last=1),
    )
    await collect(runner.astream(user_id="u", session_id="s", message="one"))
    token = CancellationToken()
    events: list[Event] = []
    async for event in runner.astream(
        user_id="u", session_id="s", message="two", cancel_token=token
    ):
        events.append(event)
        if event.type is EventType.AGENT_END:
            token.cancel()  # the agent is done: the turn is not cancelled, nor summarised

    assert events[-1].type is EventType.AGENT_END
    assert len(facts.requests) == 1 and len(summarizer.requests) == 0  # the first turn's
