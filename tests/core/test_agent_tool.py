"""AgentTool: a sub-agent called like a tool, streaming its events into the parent run."""

from __future__ import annotations

from agents_core import EventType, InMemorySessionService, LlmAgent, Runner
from agents_core.llm.resilience import BreakerRegistry
from agents_core.llm.scripted import ScriptedResponse, ScriptedToolCall
from agents_core.testing import ScriptedModel, collect, reply, tool_call
from agents_core.tools.agent_tool import AgentTool


async def test_child_events_stream_live_and_are_stored_before_the_tool_response(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    child_model = ScriptedModel([reply("Paris is the capital.")])
    child = LlmAgent("researcher", model=child_model, description="Looks things up.")
    parent_model = ScriptedModel(
        [tool_call("researcher", "c1", request="capital of France?"), reply("It is Paris.")]
    )
    parent = LlmAgent("lead", model=parent_model, tools=[AgentTool(child)])
    runner = Runner(parent, session_service=sessions, breakers=breakers)

    events = await collect(runner.astream(user_id="u", session_id="s", message="Where?"))

    call_at = next(i for i, e in enumerate(events) if e.tool_calls)
    response_at = next(i for i, e in enumerate(events) if e.type is EventType.TOOL_RESPONSE)
    assert events[call_at + 1].type is EventType.TOOL_STARTED  # an agent tool is journalled
    child_events = events[call_at + 2 : response_at]
    assert [e.author for e in child_events] == ["researcher"] * 3
    assert {e.branch for e in child_events} == {"lead.researcher@c1"}
    assert all(e.seq is not None for e in child_events)
    assert events[response_at].tool_results[0].output == "Paris is the capital."
    stored = await sessions.get_session(app_name="agents", user_id="u", session_id="s")
    assert stored is not None
    assert [e.seq for e in stored.events] == list(range(1, len(events) + 1))


async def test_child_sees_the_request_but_not_the_parents_tool_calls(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    child_model = ScriptedModel([reply("done")])
    child = LlmAgent("helper", model=child_model)
    parent_model = ScriptedModel([tool_call("helper", request="summarise the report"), reply("ok")])
    parent = LlmAgent("lead", model=parent_model, tools=[AgentTool(child)])
    runner = Runner(parent, session_service=sessions, breakers=breakers)

    await collect(runner.astream(user_id="u", session_id="s", message="please help"))

    messages = child_model.requests[0].messages
    assert [(m.role, m.text) for m in messages] == [
        ("user", "please help"),
        ("user", "summarise the report"),
    ]
    assert not any(m.tool_calls for m in messages)


async def test_parallel_calls_of_one_agent_tool_run_on_separate_branches(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    child_model = ScriptedModel([reply("one"), reply("two")])
    child = LlmAgent("worker", model=child_model)
    parent_model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[
                    ScriptedToolCall(name="worker", id="a", args={"request": "first"}),
                    ScriptedToolCall(name="worker", id="b", args={"request": "second"}),
                ]
            ),
            reply("both done"),
        ]
    )
    parent = LlmAgent("lead", model=parent_model, tools=[AgentTool(child)])
    runner = Runner(parent, session_service=sessions, breakers=breakers)

    events = await collect(runner.astream(user_id="u", session_id="s", message="go"))

    branches = {e.branch for e in events if e.author == "worker"}
    assert branches == {"lead.worker@a", "lead.worker@b"}
    for request in child_model.requests:
        assert not any(m.role == "assistant" for m in request.messages)
    results = sorted(r.output for e in events for r in e.tool_results)
    assert results == ["one", "two"]


async def test_a_child_that_gives_no_answer_is_an_error_result(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    child = LlmAgent("mute", model=ScriptedModel([ScriptedResponse(text="")]))
    parent_model = ScriptedModel([tool_call("mute", request="speak"), reply("fine")])
    parent = LlmAgent("lead", model=parent_model, tools=[AgentTool(child)])
    runner = Runner(parent, session_service=sessions, breakers=breakers)

    events = await collect(runner.astream(user_id="u", session_id="s", message="go"))

    result = next(r for e in events for r in e.tool_results)
    assert result.is_error
    assert "without an answer" in result.output
    assert events[-2].text == "fine"
