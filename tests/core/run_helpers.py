"""Doubles and helpers shared by the runner, history, limit and cancellation tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from agents_core import BaseAgent, Event, InMemorySessionService, Runner
from agents_core.llm import BaseLlm, ChatMessage, LlmRequest, LlmResponse
from agents_core.llm.resilience import BreakerRegistry

APP = "agents"
"""``Runner``'s default app name: sessions are looked up under it."""
USER = "ada"
SESSION = "s1"


def make_runner(
    agent: BaseAgent,
    sessions: InMemorySessionService,
    breakers: BreakerRegistry,
    **options: Any,
) -> Runner:
    return Runner(agent, session_service=sessions, breakers=breakers, **options)


async def run_turn(
    runner: Runner, message: str = "hello", *, session_id: str = SESSION, **options: Any
) -> list[Event]:
    """Every event one turn yields, partial ones included."""
    stream = runner.astream(user_id=USER, session_id=session_id, message=message, **options)
    return [event async for event in stream]


async def stored_events(sessions: InMemorySessionService, session_id: str = SESSION) -> list[Event]:
    session = await sessions.get_session(app_name=APP, user_id=USER, session_id=session_id)
    assert session is not None
    return session.events


def complete(events: Sequence[Event]) -> list[Event]:
    return [e for e in events if not e.partial]


class HangingModel(BaseLlm):
    """A model whose every call blocks forever; ``entered`` is set once a call is waiting."""

    provider_key = "hanging"

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.requests: list[LlmRequest] = []

    async def astream(self, request: LlmRequest) -> AsyncGenerator[LlmResponse]:
        self.requests.append(request)
        self.entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        yield LlmResponse(text="unreachable")


def assert_valid_history(messages: Sequence[ChatMessage]) -> None:
    """What every chat API demands: each assistant tool call is answered exactly once,
    by the tool messages right after it, and no tool message answers anything else."""
    open_calls: set[str] = set()
    for message in messages:
        if message.role == "tool":
            assert message.tool_call_id in open_calls, f"unexpected tool message {message}"
            open_calls.remove(message.tool_call_id)
            continue
        assert not open_calls, f"calls {open_calls} unanswered before a {message.role} message"
        open_calls = {call.id for call in message.tool_calls}
    assert not open_calls, f"calls {open_calls} never answered"
