"""Public test doubles and helpers for code built on ``agents_core``."""

from __future__ import annotations

from collections.abc import AsyncIterable

from agents_core.events import Event, EventType
from agents_core.llm.scripted import ScriptedModel, ScriptedResponse, ScriptedToolCall

__all__ = [
    "CollectingSink",
    "ScriptedModel",
    "ScriptedResponse",
    "ScriptedToolCall",
    "collect",
    "event_types",
    "reply",
    "tool_call",
]


class CollectingSink:
    """A telemetry sink that keeps every event it receives."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def on_event(self, event: Event) -> None:
        self.events.append(event)


async def collect(stream: AsyncIterable[Event], *, partial: bool = False) -> list[Event]:
    """Drain an event stream; partial events are dropped unless ``partial``."""
    return [e async for e in stream if partial or not e.partial]


def event_types(events: list[Event]) -> list[EventType]:
    return [e.type for e in events]


def reply(text: str) -> ScriptedResponse:
    """A scripted final answer."""
    return ScriptedResponse(text=text)


def tool_call(name: str, call_id: str | None = None, /, **args: object) -> ScriptedResponse:
    """A scripted response that calls one tool."""
    return ScriptedResponse(tool_calls=[ScriptedToolCall(name=name, id=call_id, args=dict(args))])
