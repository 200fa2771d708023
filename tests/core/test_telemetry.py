"""Telemetry sinks see every event; a broken sink never changes the run."""

from __future__ import annotations

import asyncio
import logging

import pytest

from agents_core import (
    Event,
    EventType,
    InMemorySessionService,
    LlmAgent,
    LoggingSink,
    RunConfig,
    function_tool,
)
from agents_core.llm.resilience import BreakerRegistry
from agents_core.telemetry import TelemetrySink
from agents_core.testing import CollectingSink, ScriptedModel, reply, tool_call
from tests.core.run_helpers import make_runner, run_turn, stored_events


@function_tool
def add(a: int, b: int) -> int:
    return a + b


def calculator() -> LlmAgent:
    model = ScriptedModel([tool_call("add", a=2, b=3), reply("it is five")])
    return LlmAgent("calc", model=model, tools=[add])


def shape(events: list[Event]) -> list[tuple[object, ...]]:
    """What a run produced, without the ids and timestamps that differ between runs."""
    return [(e.type, e.author, e.partial, e.seq, e.text, e.tool_results) for e in events]


async def run_with(
    sinks: list[TelemetrySink], breakers: BreakerRegistry, config: RunConfig | None = None
) -> tuple[list[Event], list[Event]]:
    """One turn with ``sinks``: the events yielded, and those stored."""
    sessions = InMemorySessionService()
    runner = make_runner(calculator(), sessions, breakers, telemetry=sinks, run_config=config)
    return await run_turn(runner), await stored_events(sessions)


class RaisingSink:
    def __init__(self) -> None:
        self.calls = 0

    async def on_event(self, event: Event) -> None:
        self.calls += 1
        raise RuntimeError("collector is down")


class HangingSink:
    def __init__(self) -> None:
        self.calls = 0

    async def on_event(self, event: Event) -> None:
        self.calls += 1
        await asyncio.Event().wait()


async def test_a_sink_receives_every_event_including_partials_in_order(
    breakers: BreakerRegistry,
) -> None:
    sink = CollectingSink()

    events, _ = await run_with([sink], breakers)

    assert sink.events == events
    assert any(e.partial for e in sink.events)
    assert all(e.seq is not None for e in sink.events if not e.partial)


async def test_a_raising_sink_leaves_the_run_unchanged(breakers: BreakerRegistry) -> None:
    plain_events, plain_stored = await run_with([], breakers)
    raising, after = RaisingSink(), CollectingSink()

    events, stored = await run_with([raising, after], breakers)

    assert shape(events) == shape(plain_events)
    assert shape(stored) == shape(plain_stored)
    assert raising.calls == len(events)
    assert after.events == events


async def test_a_hanging_sink_leaves_the_run_unchanged(
    breakers: BreakerRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hanging sink gets SINK_TIMEOUT_S per event; shrunk so its worker drains in time.
    monkeypatch.setattr("agents_core.telemetry.SINK_TIMEOUT_S", 0.001)
    plain_events, plain_stored = await run_with([], breakers)
    hanging, after = HangingSink(), CollectingSink()

    events, stored = await run_with([hanging, after], breakers)

    assert shape(events) == shape(plain_events)
    assert shape(stored) == shape(plain_stored)
    assert hanging.calls == len(events)
    assert after.events == events


async def test_a_hanging_sink_does_not_count_against_the_runs_wall_time(
    breakers: BreakerRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each hung event costs the sink longer than the run may take in all; a 1 s limit
    # leaves a loaded machine room to run the scripted turn itself.
    monkeypatch.setattr("agents_core.telemetry.SINK_TIMEOUT_S", 2.0)
    config = RunConfig(max_wall_time_s=1.0)

    events, _ = await run_with([HangingSink()], breakers, config)

    assert not any(e.type is EventType.ERROR for e in events)


async def test_the_logging_sink_logs_stored_events_and_skips_partials(
    breakers: BreakerRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="agents_core.events"):
        events, _ = await run_with([LoggingSink()], breakers)

    lines = [r.getMessage() for r in caplog.records if r.name == "agents_core.events"]
    stored = [e for e in events if not e.partial]
    assert len(lines) == len(stored)
    assert [line.split()[1:3] for line in lines] == [
        [f"seq={e.seq}", f"type={e.type}"] for e in stored
    ]
    assert EventType.AGENT_MESSAGE in {e.type for e in events if e.partial}
    assert "it is five" not in "\n".join(lines)
