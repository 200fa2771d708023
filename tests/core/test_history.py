"""The conversation a model is shown, rebuilt from the session's stored events."""

from __future__ import annotations

import pytest

from agents_core import (
    ErrorInfo,
    Event,
    EventType,
    InMemorySessionService,
    LlmAgent,
    RunConfig,
    ScriptedModel,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResponsePart,
    function_tool,
)
from agents_core.history import INTERRUPTED_RESULT, HistoryBuilder, build_history
from agents_core.llm.contracts import LlmRequest
from agents_core.llm.resilience import BreakerRegistry
from agents_core.testing import reply, tool_call
from tests.core.run_helpers import assert_valid_history, make_runner, run_turn, stored_events

AGENT = "agent"


def event(type: EventType, *parts: object, author: str = AGENT, **fields: object) -> Event:
    return Event(
        type=type,
        invocation_id="inv",
        session_id="s",
        author=author,
        branch=None if author == "user" else AGENT,
        parts=list(parts),  # type: ignore[arg-type]
        **fields,  # type: ignore[arg-type]
    )


def user(text: str) -> Event:
    return event(EventType.USER_MESSAGE, TextPart(text=text), author="user")


def says(text: str) -> Event:
    return event(EventType.AGENT_MESSAGE, TextPart(text=text))


def calls(*call_ids: str) -> Event:
    return event(
        EventType.AGENT_MESSAGE, *(ToolCallPart(call_id=c, name="lookup") for c in call_ids)
    )


def answers(call_id: str, result: str) -> Event:
    return event(
        EventType.TOOL_RESPONSE, ToolResponsePart(call_id=call_id, name="lookup", result=result)
    )


def history(events: list[Event], max_chars: int = 1_000) -> list[tuple[str, str, str | None]]:
    messages = build_history(
        events, agent_name=AGENT, branch=AGENT, tool_result_max_chars=max_chars
    )
    assert_valid_history(messages)
    return [(m.role, m.text, m.tool_call_id) for m in messages]


def test_assistant_tool_call_turns_keep_their_calls_and_ids() -> None:
    messages = build_history(
        [user("look it up"), calls("c1", "c2"), answers("c1", "A"), answers("c2", "B")],
        agent_name=AGENT,
        branch=AGENT,
        tool_result_max_chars=1_000,
    )

    assert [m.role for m in messages] == ["user", "assistant", "tool", "tool"]
    assert [(c.id, c.name) for c in messages[1].tool_calls] == [("c1", "lookup"), ("c2", "lookup")]
    assert [(m.tool_call_id, m.name, m.text) for m in messages[2:]] == [
        ("c1", "lookup", "A"),
        ("c2", "lookup", "B"),
    ]


def test_partials_errors_lifecycle_and_empty_messages_are_left_out() -> None:
    error = ErrorInfo(code="model_error", message="it broke", failure="non_fatal")
    events = [
        user("hi"),
        event(EventType.AGENT_START),
        event(EventType.AGENT_MESSAGE, TextPart(text="hel"), partial=True),
        event(EventType.AGENT_MESSAGE),
        event(EventType.AGENT_MESSAGE, ThinkingPart(text="only thoughts")),
        event(EventType.AGENT_MESSAGE, TextPart(text="")),
        event(EventType.ERROR, error=error),
        says("hello"),
        event(EventType.AGENT_END),
    ]

    assert history(events) == [("user", "hi", None), ("assistant", "hello", None)]


def test_long_tool_results_are_truncated_with_a_marker_saying_how_much_was_cut() -> None:
    events = [user("go"), calls("c1"), answers("c1", "x" * 50)]

    assert history(events, max_chars=10)[-1] == (
        "tool",
        "x" * 10 + "\n[... truncated 40 characters]",
        "c1",
    )
    assert history(events, max_chars=50)[-1] == ("tool", "x" * 50, "c1")


def test_an_unanswered_tool_call_is_answered_with_the_interrupted_marker() -> None:
    events = [user("go"), calls("c1", "c2"), answers("c1", "A"), user("are you there?")]

    assert history(events) == [
        ("user", "go", None),
        ("assistant", "", None),
        ("tool", "A", "c1"),
        ("tool", INTERRUPTED_RESULT, "c2"),
        ("user", "are you there?", None),
    ]


def test_a_call_left_open_at_the_end_of_the_history_is_also_closed() -> None:
    assert history([user("go"), calls("c1")])[-1] == ("tool", INTERRUPTED_RESULT, "c1")


async def test_the_model_sees_tool_call_turns_and_truncated_results_in_a_real_run(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    @function_tool
    def dump() -> str:
        return "y" * 30

    model = ScriptedModel([tool_call("dump", "d1"), reply("that was long")])
    agent = LlmAgent(AGENT, model=model, tools=[dump])
    config = RunConfig(tool_result_max_chars=12)

    await run_turn(make_runner(agent, sessions, breakers, run_config=config), "dump it")

    follow_up = model.requests[1].messages
    assert [(m.role, m.tool_call_id) for m in follow_up] == [
        ("user", None),
        ("assistant", None),
        ("tool", "d1"),
    ]
    assert [c.id for c in follow_up[1].tool_calls] == ["d1"]
    assert follow_up[2].text == "y" * 12 + "\n[... truncated 18 characters]"
    stored = [r for e in await stored_events(sessions) for r in e.tool_results]
    assert [r.output for r in stored] == ["y" * 30]


async def test_a_second_turn_sees_the_first_turns_conversation(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    @function_tool
    def weather(city: str) -> str:
        return f"sunny in {city}"

    model = ScriptedModel([tool_call("weather", "w1", city="Oslo"), reply("It is sunny.")])
    model_2 = ScriptedModel([reply("You asked about Oslo.")])
    runner = make_runner(LlmAgent(AGENT, model=model, tools=[weather]), sessions, breakers)
    await run_turn(runner, "weather in Oslo?")
    runner_2 = make_runner(LlmAgent(AGENT, model=model_2, tools=[weather]), sessions, breakers)

    await run_turn(runner_2, "what did I ask?")

    messages = model_2.requests[0].messages
    assert_valid_history(messages)
    assert [(m.role, m.text, m.tool_call_id) for m in messages] == [
        ("user", "weather in Oslo?", None),
        ("assistant", "", None),
        ("tool", "sunny in Oslo", "w1"),
        ("assistant", "It is sunny.", None),
        ("user", "what did I ask?", None),
    ]


def test_the_builders_messages_are_a_view_that_later_events_do_not_change() -> None:
    builder = HistoryBuilder(AGENT, AGENT, 1_000)
    events = [user("q1"), calls("c1")]
    first = builder.update(events).messages()
    assert [(m.role, m.text) for m in first] == [
        ("user", "q1"),
        ("assistant", ""),
        ("tool", INTERRUPTED_RESULT),  # the open call, answered for this view only
    ]
    events += [answers("c1", "r1"), says("a1"), user("q2")]
    later = builder.update(events).messages()
    assert [m.text for m in first] == ["q1", "", INTERRUPTED_RESULT]
    assert [m.text for m in later] == ["q1", "", "r1", "a1", "q2"]
    assert later == build_history(
        events, agent_name=AGENT, branch=AGENT, tool_result_max_chars=1_000
    )


def test_the_turn_input_is_placed_before_the_agents_first_turn_of_its_invocation() -> None:
    builder = HistoryBuilder(AGENT, AGENT, 1_000)
    events = [user("earlier"), says("a0"), says("a1").model_copy(update={"invocation_id": "step"})]
    messages = builder.update(events).messages("step", "the step's input")
    assert [m.text for m in messages] == ["earlier", "a0", "the step's input", "a1"]
    assert [m.text for m in messages[1:3]] == ["a0", "the step's input"]
    assert [m.text for m in messages[-2:]] == ["the step's input", "a1"]
    assert messages[2].role == "user" and messages[-4].text == "earlier"
    with pytest.raises(IndexError):
        messages[4]


def test_a_request_serialises_the_view_as_a_list() -> None:
    builder = HistoryBuilder(AGENT, AGENT, 1_000).update([user("q1"), says("a1")])
    request = LlmRequest.model_construct(messages=builder.messages(), tools=[])
    dumped = request.model_dump(mode="json")["messages"]
    assert [m["text"] for m in dumped] == ["q1", "a1"]
    assert LlmRequest.model_validate_json(request.model_dump_json()).messages == request.messages
