"""Structured output: an LlmAgent's final answer validated against its output schema,
re-prompted with the problems in words, the parsed value in state and on the message."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from agents_core import (
    EventType,
    InMemorySessionService,
    LlmAgent,
    RunConfig,
    Runner,
    function_tool,
)
from agents_core.builder import check_spec
from agents_core.events import Event
from agents_core.exceptions import ConfigurationError
from agents_core.llm.resilience import BreakerRegistry
from agents_core.specs import AgentSpec
from agents_core.structured import OutputInvalid, OutputSchema, extract_json
from agents_core.testing import ScriptedModel, collect, reply, tool_call
from agents_core.tools.registry import ToolRegistry

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
    "required": ["city", "celsius"],
    "additionalProperties": False,
}


class Weather(BaseModel):
    city: str
    celsius: float


async def run(agent: LlmAgent, sessions: InMemorySessionService, **kw: Any) -> list[Event]:
    runner = Runner(agent, session_service=sessions, breakers=BreakerRegistry(), **kw)
    return await collect(runner.astream(user_id="u", session_id="s", message="Weather?"))


async def test_a_matching_answer_lands_parsed_in_state_and_on_its_message(
    sessions: InMemorySessionService,
) -> None:
    model = ScriptedModel([reply('```json\n{"city": "Paris", "celsius": 21.5}\n```')])
    agent = LlmAgent("forecaster", model=model, output_schema=WEATHER, output_key="weather")

    events = await run(agent, sessions)

    [message] = [e for e in events if e.type is EventType.AGENT_MESSAGE]
    assert message.structured is not None
    assert message.structured.value == {"city": "Paris", "celsius": 21.5}
    assert message.actions.state_delta == {"weather": {"city": "Paris", "celsius": 21.5}}
    session = await sessions.get_session(app_name="agents", user_id="u", session_id="s")
    assert session is not None and session.state["weather"]["city"] == "Paris"
    instruction = model.requests[0].system_instruction or ""
    assert "JSON Schema" in instruction and '"celsius"' in instruction


async def test_a_mismatch_is_recorded_and_re_prompted_with_its_problems_in_words(
    sessions: InMemorySessionService,
) -> None:
    model = ScriptedModel(
        [
            reply('{"city": "Paris", "celsius": "warm"}'),
            reply("It is sunny."),
            reply('{"city": "Paris", "celsius": 22}'),
        ]
    )
    agent = LlmAgent("forecaster", model=model, output_schema=WEATHER, output_key="weather")

    events = await run(agent, sessions)

    rejected = [e for e in events if e.type is EventType.ERROR]
    assert [e.error.code for e in rejected if e.error] == ["output_invalid", "output_invalid"]
    assert all(e.error and e.error.failure == "non_fatal" for e in rejected)
    assert (
        rejected[0].error and "celsius: 'warm' is not of type 'number'" in rejected[0].error.message
    )
    assert rejected[0].text == '{"city": "Paris", "celsius": "warm"}'
    assert rejected[0].usage is not None  # the rejected call's tokens still count
    assert rejected[1].error and "not JSON" in rejected[1].error.message
    second = model.requests[1].messages
    assert second[-2].role == "assistant" and "warm" in second[-2].text
    assert second[-1].role == "user" and "'warm' is not of type 'number'" in second[-1].text
    final = events[-2]
    assert final.structured is not None and final.structured.value["celsius"] == 22
    assert not events[-1].is_terminal_error


async def test_exhausted_re_prompts_are_a_terminal_output_invalid_error(
    sessions: InMemorySessionService,
) -> None:
    model = ScriptedModel([reply("no"), reply("still no")])
    agent = LlmAgent(
        "forecaster", model=model, output_schema=WEATHER, output_key="weather", output_retries=1
    )

    events = await run(agent, sessions)

    assert events[-1].is_terminal_error
    assert events[-1].error is not None and events[-1].error.code == "output_invalid"
    assert "after 1 corrective re-prompt" in events[-1].error.message
    assert not any(e.type is EventType.AGENT_MESSAGE for e in events)


async def test_re_prompts_count_against_the_model_call_limit(
    sessions: InMemorySessionService,
) -> None:
    model = ScriptedModel([reply("no"), reply("no"), reply('{"city": "x", "celsius": 1}')])
    agent = LlmAgent("forecaster", model=model, output_schema=WEATHER, output_key="weather")

    events = await run(agent, sessions, run_config=RunConfig(max_model_calls=2))

    assert events[-1].error is not None and events[-1].error.limit == "max_model_calls"


async def test_a_pydantic_model_is_a_schema_and_tool_calls_are_not_validated(
    sessions: InMemorySessionService,
) -> None:
    @function_tool
    def thermometer(city: str) -> float:
        """Read the temperature."""
        return 19.0

    model = ScriptedModel(
        [tool_call("thermometer", city="Oslo"), reply('{"city": "Oslo", "celsius": 19}')]
    )
    agent = LlmAgent(
        "forecaster", model=model, tools=[thermometer], output_schema=Weather, output_key="w"
    )

    events = await run(agent, sessions)

    assert not any(e.type is EventType.ERROR for e in events)
    assert events[-2].actions.state_delta == {"w": {"city": "Oslo", "celsius": 19.0}}


def test_an_output_schema_needs_an_output_key_and_bounded_retries() -> None:
    model = ScriptedModel([])
    with pytest.raises(ConfigurationError, match="output_key"):
        LlmAgent("a", model=model, output_schema=WEATHER)
    with pytest.raises(ConfigurationError, match="output_retries"):
        LlmAgent("a", model=model, output_schema=WEATHER, output_key="k", output_retries=6)


def test_fenced_and_surrounded_json_is_found() -> None:
    assert extract_json('Here:\n```json\n{"a": 1}\n```\nDone.') == '{"a": 1}'
    assert extract_json('The answer is {"a": [1, 2]} as asked.') == '{"a": [1, 2]}'
    assert extract_json("[1, 2]") == "[1, 2]"
    assert OutputSchema.of({"type": "array"}).parse("Sure: [1, 2]") == [1, 2]


def test_a_spec_schema_is_checked_at_its_path_inside_the_schema() -> None:
    def problems(**fields: Any) -> dict[str, str]:
        spec = AgentSpec.model_validate({"name": "a", "model": "m", **fields})
        found = check_spec(spec, models={"m"}, tools=ToolRegistry())
        return {".".join(map(str, p.path)): p.message for p in found}

    assert problems(output_schema=WEATHER, output_key="weather") == {}
    assert problems(output_schema=WEATHER) == {
        "output_key": "an agent with an output schema needs an output key: the state key its "
        "parsed answer is kept under"
    }
    bad = {"type": "object", "properties": {"celsius": {"type": "temperature"}}}
    assert list(problems(output_schema=bad, output_key="k")) == [
        "output_schema.properties.celsius.type"
    ]
    regex = {"type": "object", "properties": {"code": {"type": "string", "pattern": "(a+)+$"}}}
    found = problems(output_schema=regex, output_key="k")
    assert list(found) == ["output_schema.properties.code.pattern"]
    assert "regular expression" in found["output_schema.properties.code.pattern"]
    remote = {"$ref": "https://example.com/schema.json"}
    assert list(problems(output_schema=remote, output_key="k")) == ["output_schema.$ref"]
    react = problems(type="react", output_schema=WEATHER, output_key="k")
    assert react == {"output_schema": "a react agent takes no output_schema"}
    workflow = AgentSpec.model_validate(
        {
            "name": "w",
            "type": "sequential",
            "sub_agents": [{"name": "a", "model": "m"}],
            "output_schema": WEATHER,
        }
    )
    found_workflow = check_spec(workflow, models={"m"}, tools=ToolRegistry())
    assert [p.path for p in found_workflow] == [("output_schema",)]


def test_a_spec_schema_may_come_as_its_json_text() -> None:
    spec = AgentSpec.model_validate({"name": "a", "output_schema": '{"type": "array"}'})
    assert spec.output_schema == {"type": "array"}
    with pytest.raises(ValueError, match="the output schema is not valid JSON: Expecting"):
        AgentSpec.model_validate({"name": "a", "output_schema": '{"type": '})


def test_the_spec_bounds_retries_and_schema_size() -> None:
    with pytest.raises(ValueError, match="less than or equal to 5"):
        AgentSpec.model_validate({"name": "a", "output_retries": 6})
    huge = {"type": "object", "description": "x" * 25_000}
    with pytest.raises(ValueError, match="at most 20000 characters"):
        AgentSpec.model_validate({"name": "a", "output_schema": huge})


def test_deep_schemas_are_refused_and_deep_answers_are_invalid_not_a_crash() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(40):
        node["items"] = node = {}
    with pytest.raises(ValueError, match="may nest at most 32 levels"):
        AgentSpec.model_validate({"name": "a", "output_schema": deep})
    recursive = OutputSchema.of({"type": "array", "items": {"$ref": "#"}})
    with pytest.raises(OutputInvalid, match="nested too deeply"):
        recursive.parse("[" * 5000 + "]" * 5000)
