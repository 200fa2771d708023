"""The effect journal: a call of a tool with side effects is stored as started
(``tool_started``) before it runs; read-only tools are not journalled; after a lost
process the ledger reads in doubt only for the calls the journal says started."""

from __future__ import annotations

from agents_core import InMemorySessionService, LlmAgent, ScriptedModel, function_tool
from agents_core import ledger as core_ledger
from agents_core.events import EventType, ToolCallPart
from agents_core.ledger import CallLedger
from agents_core.llm.resilience import BreakerRegistry
from agents_core.testing import collect, reply, tool_call
from tests.core.run_helpers import make_runner


async def test_a_side_effecting_call_is_stored_as_started_before_its_tool_runs(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    seen_when_running: list[list[EventType]] = []

    @function_tool
    async def send(to: str) -> str:
        stored = await sessions.get_session(app_name="agents", user_id="u", session_id="s")
        assert stored is not None
        seen_when_running.append([e.type for e in stored.events])
        return f"sent to {to}"

    @function_tool(side_effects=False)
    def look(city: str) -> str:
        return "sunny"

    model = ScriptedModel(
        [tool_call("send", "c1", to="ada"), tool_call("look", "c2", city="Paris"), reply("ok")]
    )
    runner = make_runner(LlmAgent("a", model=model, tools=[send, look]), sessions, breakers)

    events = await collect(runner.astream(user_id="u", session_id="s", message="go"))

    started = [e for e in events if e.type is EventType.TOOL_STARTED]
    assert [c.id for e in started for c in e.tool_calls] == ["c1"]  # not the read-only c2
    assert seen_when_running == [seen_when_running[0]]
    assert seen_when_running[0][-1] is EventType.TOOL_STARTED  # durable before the tool ran
    call = next(p for e in events for p in e.parts if isinstance(p, ToolCallPart))
    assert started[0].parent_span_id == call.span_id  # inside the call's span


async def test_after_a_lost_process_only_journalled_calls_are_in_doubt(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    @function_tool
    def send(to: str) -> str:
        return "sent"

    model = ScriptedModel([tool_call("send", "c1", to="ada"), reply("ok")])
    runner = make_runner(LlmAgent("a", model=model, tools=[send]), sessions, breakers)
    events = await collect(runner.astream(user_id="u", session_id="s", message="go"))
    # The record as a process killed mid-round left it: c1 started, c2 never did.
    message = next(e for e in events if e.tool_calls)
    second = ToolCallPart(call_id="c2", name="send", args={"to": "bob"})
    two_calls = message.model_copy(update={"parts": [*message.parts, second]})
    started = next(e for e in events if e.type is EventType.TOOL_STARTED)
    ledger = CallLedger().observe_all([two_calls, started])

    closing = ledger.closing_events("s", started="in_doubt: ?", not_run="not_run: -")

    assert {e.tool_results[0].call_id: e.tool_results[0].output for e in closing} == {
        "c1": "in_doubt: ?",
        "c2": "not_run: -",
    }
    assert core_ledger.error_code(closing[0].tool_results[0].output) == core_ledger.IN_DOUBT
