"""Resuming a session from its record (``Runner.astream(message=None)``): after a lost
process, a new invocation reads the recorded tool results and goes on; nothing that
finished runs again."""

from __future__ import annotations

from agents_core import InMemorySessionService, LlmAgent, ScriptedModel, function_tool
from agents_core.events import Event, EventType, Part, ToolCallPart, ToolResponsePart, user_message
from agents_core.ledger import CallLedger
from agents_core.llm.resilience import BreakerRegistry
from agents_core.testing import collect, reply
from tests.core.run_helpers import make_runner


async def test_a_resumed_turn_reads_the_recorded_results_and_runs_nothing_twice(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    sent: list[str] = []

    @function_tool
    def send(to: str) -> str:
        sent.append(to)
        return f"sent to {to}"

    # The record as a process killed mid-turn left it: c1 answered, c2 started (the
    # journal says so), then recovery closed c2 in doubt.
    session = await sessions.create_session(app_name="agents", user_id="u", session_id="s")
    said = await sessions.append_event(session, user_message("s", "mail ada, bob"))
    inv = said.invocation_id
    c1 = ToolCallPart(call_id="c1", name="send", args={"to": "ada"})
    c2 = ToolCallPart(call_id="c2", name="send", args={"to": "bob"})
    record = [
        _event(inv, EventType.AGENT_START),
        _event(inv, EventType.AGENT_MESSAGE, [c1, c2]),
        _event(inv, EventType.TOOL_STARTED, [c1]),
        _event(inv, EventType.TOOL_STARTED, [c2]),
        _event(
            inv,
            EventType.TOOL_RESPONSE,
            [ToolResponsePart(call_id="c1", name="send", result="sent to ada")],
        ),
    ]
    for event in record:
        await sessions.append_event(session, event)
    ledger = CallLedger().observe_all(session.events)
    for closing in ledger.closing_events("s", started="in_doubt: lost", not_run="not_run: -"):
        await sessions.append_event(session, closing)

    resumed_model = ScriptedModel([reply("ada got it; bob is in doubt")])
    resumed = make_runner(LlmAgent("a", model=resumed_model, tools=[send]), sessions, breakers)
    out = await collect(resumed.astream(user_id="u", session_id="s", message=None))

    assert sent == []  # c1 is not run again, c2 (in doubt) is not either
    assert EventType.USER_MESSAGE not in [e.type for e in out]
    assert out[-1].type is EventType.AGENT_END
    assert len({e.invocation_id for e in out}) == 1
    assert out[0].invocation_id != inv
    seen = [(m.role, m.text) for m in resumed_model.requests[0].messages]
    assert seen[0] == ("user", "mail ada, bob")
    assert ("tool", "sent to ada") in seen and ("tool", "in_doubt: lost") in seen
    assert seen[-1] == ("tool", "in_doubt: lost")  # no repeated question after the record


def _event(invocation_id: str, type: EventType, parts: list[Part] | None = None) -> Event:
    return Event(
        type=type,
        invocation_id=invocation_id,
        session_id="s",
        author="a",
        branch="a",
        parts=parts or [],
    )
