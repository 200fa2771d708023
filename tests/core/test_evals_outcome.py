"""An eval's outcome read from the events a real run stored, and the expectation built
from it ("add this turn to a dataset")."""

from __future__ import annotations

from decimal import Decimal

from agents_core import InMemorySessionService, LlmAgent, ScriptedModel, function_tool
from agents_core.contracts import Usage
from agents_core.evals.contracts import ExpectedToolCall, ObservedToolCall, Outcome
from agents_core.evals.outcome import (
    error_of,
    expectation_from_outcome,
    outcome_from_events,
    tokens_of,
)
from agents_core.events import (
    ErrorInfo,
    Event,
    EventType,
    HookNote,
    TextPart,
    ToolCallPart,
    user_message,
)
from agents_core.llm.resilience import BreakerRegistry
from agents_core.testing import reply, tool_call
from tests.core.run_helpers import make_runner, run_turn, stored_events


@function_tool
def lookup(city: str, days: int = 1) -> str:
    """Weather for a city."""
    return f"sunny in {city} for {days} days"


async def test_outcome_of_a_two_turn_session(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel(
        [
            tool_call("lookup", city="Paris"),
            reply("It is sunny in Paris."),
            tool_call("lookup", city="Oslo", days=2),
            reply("Oslo: sunny, two days."),
        ]
    )
    runner = make_runner(LlmAgent("agent", model=model, tools=[lookup]), sessions, breakers)
    await run_turn(runner, "Paris?")
    streamed = await run_turn(runner, "And Oslo for two days?")
    assert any(event.partial for event in streamed)  # partial chunks exist, and are skipped
    events = await stored_events(sessions)
    chunks = [event for event in streamed if event.partial]

    outcome = outcome_from_events(
        [*events[:-1], *chunks, events[-1]],  # partial chunks in the mix change nothing
        state={"k": 1},
        cost=Decimal("0.01"),
        tokens=tokens_of(events),
        latency_s=1.5,
        error=None,
    )

    assert outcome.final_output == "Oslo: sunny, two days."
    assert outcome.tool_calls == [
        ObservedToolCall(name="lookup", args={"city": "Paris"}),
        ObservedToolCall(name="lookup", args={"city": "Oslo", "days": 2}),
    ]
    assert outcome.steps == 4
    assert outcome.state == {"k": 1}
    assert outcome.cost == Decimal("0.01")
    assert outcome.error is None


def _event(type_: EventType, **fields: object) -> Event:
    return Event.model_validate(
        {"type": type_, "invocation_id": "i", "session_id": "s", "author": "agent", **fields}
    )


def test_a_last_turn_without_an_answer_has_no_final_output() -> None:
    events = [
        user_message("s", "first"),
        _event(EventType.AGENT_MESSAGE, parts=[TextPart(text="first answer")]),
        user_message("s", "second"),
        _event(
            EventType.ERROR,
            error=ErrorInfo(code="model_error", message="the model is down"),
        ),
    ]
    outcome = outcome_from_events(
        events, state={}, cost=None, tokens=0, latency_s=0, error=error_of(events)
    )
    assert outcome.final_output == ""
    assert outcome.error == "model_error: the model is down"


def test_retries_cached_and_hook_answers_are_not_counted() -> None:
    call = ToolCallPart(call_id="c1", name="pay", args={"amount": 3})
    retry = ToolCallPart(call_id="c2", name="pay", args={"amount": 3}, retry_of="c1")
    hooked = HookNote(hook="canned", stage="before_model", effect="short_circuited")
    events = [
        user_message("s", "pay"),
        _event(EventType.AGENT_MESSAGE, parts=[call], usage=Usage(input_tokens=5, output_tokens=2)),
        _event(EventType.AGENT_MESSAGE, parts=[retry]),
        _event(EventType.AGENT_MESSAGE, parts=[TextPart(text="cached")], cached=True),
        _event(EventType.AGENT_MESSAGE, parts=[TextPart(text="paid")], hooks=[hooked]),
        _event(EventType.MEMORY_SAVED, usage=Usage(input_tokens=10, output_tokens=1)),
    ]
    outcome = outcome_from_events(
        events, state={}, cost=None, tokens=tokens_of(events), latency_s=0, error=None
    )
    assert outcome.tool_calls == [ObservedToolCall(name="pay", args={"amount": 3})]
    assert outcome.steps == 2  # the call and its retry's message; not cached nor hooked
    assert outcome.tokens == 18
    assert outcome.final_output == "paid"


def test_expectation_from_an_outcome() -> None:
    outcome = Outcome(
        final_output="done",
        tool_calls=[ObservedToolCall(name="save", args={"x": [1, 2]})],
        state={"saved": True},
        tokens=10,
    )
    expect = expectation_from_outcome(outcome)
    assert expect.final_output == "done"
    assert expect.tool_calls == [ExpectedToolCall(name="save", args={"x": [1, 2]})]
    assert expect.state == {"saved": True}
    assert expect.limits is None

    empty = expectation_from_outcome(Outcome())
    assert empty.final_output is None
    assert empty.tool_calls == []  # it made no call: a case built from it expects none
    assert empty.state is None
