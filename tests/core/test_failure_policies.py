"""Failure policies per tool, model agent and sub-agent: fail the run, continue with an
error the run reads, or degrade (go on, and say at the end what failed)."""

from __future__ import annotations

from agents_core import (
    EventType,
    InMemorySessionService,
    LlmAgent,
    ParallelAgent,
    RunConfig,
    Runner,
    SequentialAgent,
    degradations,
    function_tool,
)
from agents_core.agents.base import BaseAgent
from agents_core.builder import build_agent
from agents_core.events import Event
from agents_core.exceptions import ModelRequestError, ToolExecutionError
from agents_core.llm.resilience import BreakerRegistry
from agents_core.llm.scripted import ScriptedResponse, ScriptedToolCall
from agents_core.specs import AgentSpec
from agents_core.testing import ScriptedModel, collect, reply, tool_call
from agents_core.tools.agent_tool import AgentTool
from agents_core.tools.registry import ToolRegistry


@function_tool
def flaky(n: int) -> int:
    """Fails on purpose."""
    raise ToolExecutionError(f"flaky failed for {n}")


@function_tool
def steady(n: int) -> int:
    """Always works."""
    return n


async def run(agent: BaseAgent, run_config: RunConfig | None = None) -> list[Event]:
    runner = Runner(
        agent,
        session_service=InMemorySessionService(),
        breakers=BreakerRegistry(),
        run_config=run_config,
    )
    return await collect(runner.astream(user_id="u", session_id="s", message="go"))


def failing_model() -> ScriptedModel:
    return ScriptedModel([ModelRequestError("400: the model refused the request")])


async def test_a_tool_that_degrades_lets_the_run_go_on_and_says_what_failed() -> None:
    model = ScriptedModel([tool_call("flaky", n=1), reply("I carried on.")])
    agent = LlmAgent("a", model=model, tools=[flaky], tool_failures={"flaky": "degrade"})

    events = await run(agent)

    response = next(e for e in events if e.type is EventType.TOOL_RESPONSE)
    assert response.tool_results[0].is_error  # the model read the error
    assert response.error is not None and response.error.degraded
    assert response.error.code == "tool_failed"
    assert events[-2].text == "I carried on."
    [failure] = degradations(events)
    assert failure.message == "tool 'flaky' failed: tool_failed: flaky failed for 1"


async def test_a_tool_that_continues_is_an_error_result_and_nothing_more() -> None:
    model = ScriptedModel([tool_call("flaky", n=1), reply("ok")])
    events = await run(LlmAgent("a", model=model, tools=[flaky]))
    response = next(e for e in events if e.type is EventType.TOOL_RESPONSE)
    assert response.tool_results[0].is_error and response.error is None
    assert degradations(events) == []


async def test_a_tool_that_fails_ends_the_run_after_every_call_of_its_round_is_answered() -> None:

    both = ScriptedResponse(
        tool_calls=[
            ScriptedToolCall(name="flaky", id="c1", args={"n": 1}),
            ScriptedToolCall(name="steady", id="c2", args={"n": 2}),
        ]
    )
    model = ScriptedModel([both, reply("never")])
    agent = LlmAgent("a", model=model, tools=[flaky, steady], tool_failures={"flaky": "fail"})

    events = await run(agent)

    responses = [e for e in events if e.type is EventType.TOOL_RESPONSE]
    assert [r.tool_results[0].call_id for r in responses] == ["c1", "c2"]
    assert events[-1].is_terminal_error and events[-1].error is not None
    assert events[-1].error.code == "tool_failed"
    assert "its failure policy is fail" in events[-1].error.message
    assert len(model.requests) == 1


async def test_a_model_agent_that_continues_lets_the_pipeline_go_on() -> None:
    first = LlmAgent("first", model=failing_model(), on_failure="continue")
    second = LlmAgent("second", model=ScriptedModel([reply("second answered")]))
    events = await run(SequentialAgent("pipeline", sub_agents=[first, second]))

    error = next(e for e in events if e.type is EventType.ERROR)
    assert error.author == "first" and error.error is not None
    assert (error.error.code, error.error.failure, error.error.degraded) == (
        "model_request_error",
        "non_fatal",
        False,
    )
    assert "agent 'first' failed: 400" in error.error.message
    # the error carries the call that failed: a failed model span in the agent's span
    first_start = next(e for e in events if e.type is EventType.AGENT_START and e.author == "first")
    assert error.error.attempts == 1 and error.span_id is not None
    assert error.parent_span_id == first_start.span_id and error.started_at is not None
    first_end = next(e for e in events if e.type is EventType.AGENT_END and e.author == "first")
    assert events.index(first_end) == events.index(error) + 1
    assert any(e.text == "second answered" for e in events)
    assert not events[-1].is_terminal_error


async def test_a_model_agent_that_degrades_is_named_among_the_degradations() -> None:
    first = LlmAgent("first", model=failing_model(), on_failure="degrade")
    second = LlmAgent("second", model=ScriptedModel([reply("fine")]))
    events = await run(SequentialAgent("pipeline", sub_agents=[first, second]))
    [failure] = degradations(events)
    assert failure.code == "model_request_error" and "agent 'first' failed" in failure.message


async def test_without_a_policy_a_failing_model_agent_fails_the_run() -> None:
    events = await run(LlmAgent("a", model=failing_model()))
    assert events[-1].is_terminal_error and events[-1].error is not None
    assert events[-1].error.code == "model_request_error"


async def test_an_agent_tool_whose_agent_fails_with_policy_fail_ends_the_run() -> None:
    child = LlmAgent("helper", model=failing_model(), on_failure="fail")
    parent_model = ScriptedModel([tool_call("helper", request="help"), reply("never")])
    events = await run(LlmAgent("lead", model=parent_model, tools=[AgentTool(child)]))

    assert events[-1].is_terminal_error and events[-1].error is not None
    assert events[-1].error.code == "model_request_error"
    assert "agent 'helper' failed" in events[-1].error.message
    response = next(e for e in events if e.type is EventType.TOOL_RESPONSE)
    assert response.tool_results[0].is_error  # its call was answered before the run ended
    assert len(parent_model.requests) == 1


async def test_an_agent_tool_whose_agent_continues_gives_the_parent_an_error_result() -> None:
    child = LlmAgent("helper", model=failing_model(), on_failure="continue")
    parent_model = ScriptedModel([tool_call("helper", request="help"), reply("I will manage.")])
    events = await run(LlmAgent("lead", model=parent_model, tools=[AgentTool(child)]))

    result = next(e for e in events if e.type is EventType.TOOL_RESPONSE).tool_results[0]
    assert result.is_error
    assert result.output.startswith("tool_failed: agent 'helper' failed: 400")
    assert events[-2].text == "I will manage."


async def test_a_parallel_branch_that_fails_with_policy_fail_ends_the_run() -> None:
    failing = LlmAgent("failing", model=failing_model(), on_failure="fail")
    fine = LlmAgent("fine", model=ScriptedModel([reply("ok")]))
    events = await run(ParallelAgent("fan", sub_agents=[failing, fine]))
    assert events[-1].is_terminal_error and events[-1].error is not None
    assert events[-1].error.code == "model_request_error"


async def test_limits_end_the_run_whatever_the_policy() -> None:
    model = ScriptedModel([tool_call("steady", n=1), reply("never")])
    agent = LlmAgent("a", model=model, tools=[steady], on_failure="continue")
    events = await run(agent, run_config=RunConfig(max_model_calls=1))
    assert events[-1].is_terminal_error and events[-1].error is not None
    assert events[-1].error.limit == "max_model_calls"


async def test_specs_set_the_policies_of_tools_and_agents() -> None:
    registry = ToolRegistry()
    registry.register_tool(flaky)
    spec = AgentSpec.model_validate(
        {
            "name": "pipeline",
            "type": "sequential",
            "sub_agents": [
                {"name": "first", "model": "broken", "on_failure": "degrade"},
                {
                    "name": "second",
                    "model": "tooling",
                    "tools": [{"name": "flaky", "on_failure": "degrade"}],
                },
            ],
        }
    )
    models = {
        "broken": failing_model(),
        "tooling": ScriptedModel([tool_call("flaky", n=3), reply("done")]),
    }
    events = await run(build_agent(spec, models=models, tools=registry))
    assert [f.code for f in degradations(events)] == ["model_request_error", "tool_failed"]
    assert not events[-1].is_terminal_error
