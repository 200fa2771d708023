"""ReActAgent: thought, action and observation as structured JSON output."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import ValidationError

from agents_core import (
    BaseAgent,
    Event,
    EventType,
    InMemorySessionService,
    LlmAgent,
    RunConfig,
    Runner,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    Usage,
)
from agents_core.agents import SequentialAgent
from agents_core.agents.react import ReActAgent, parse_step
from agents_core.llm.resilience import BreakerRegistry
from agents_core.testing import ScriptedModel, ScriptedResponse, collect, reply

SAFETY_TIMEOUT_S = 10


def weather(city: str) -> str:
    """Today's weather.

    Args:
        city: The city to look up.
    """
    return f"sunny in {city}"


def act(thought: str, tool: str, **args: Any) -> ScriptedResponse:
    return reply(json.dumps({"thought": thought, "action": {"tool": tool, "args": args}}))


def answer(thought: str, final_answer: str) -> ScriptedResponse:
    return reply(json.dumps({"thought": thought, "final_answer": final_answer}))


async def run(
    agent: BaseAgent,
    sessions: InMemorySessionService,
    breakers: BreakerRegistry,
    *,
    run_config: RunConfig | None = None,
    partial: bool = False,
) -> list[Event]:
    runner = Runner(agent, session_service=sessions, breakers=breakers, run_config=run_config)
    stream = runner.astream(user_id="u", session_id="s", message="Weather in Paris?")
    async with asyncio.timeout(SAFETY_TIMEOUT_S):
        return await collect(stream, partial=partial)


def steps(events: list[Event]) -> list[Event]:
    return [e for e in events if e.type in (EventType.AGENT_MESSAGE, EventType.TOOL_RESPONSE)]


async def test_react_agent_shows_thought_action_observation_and_final_answer_as_events(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel(
        [
            act("I should check the weather.", "weather", city="Paris"),
            answer("The tool says sunny.", "It is sunny in Paris."),
        ]
    )
    agent = ReActAgent("forecaster", model=model, tools=[weather])

    events = await run(agent, sessions, breakers)

    action, observation, final = steps(events)
    thought, call = action.parts
    assert thought == ThinkingPart(text="I should check the weather.")
    assert isinstance(call, ToolCallPart)
    assert (call.name, call.args) == ("weather", {"city": "Paris"})
    assert not action.is_final_response()
    [result] = observation.tool_results
    assert (result.call_id, result.output, result.is_error) == (
        call.call_id,
        "sunny in Paris",
        False,
    )
    assert final.parts == [
        ThinkingPart(text="The tool says sunny."),
        TextPart(text="It is sunny in Paris."),
    ]
    assert final.is_final_response()
    assert final.usage is not None


async def test_react_agent_uses_no_native_tool_calling_and_replays_its_steps_as_json(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([act("Check it.", "weather", city="Paris"), answer("Done.", "Sunny.")])
    agent = ReActAgent("forecaster", model=model, instruction="Be precise.", tools=[weather])

    await run(agent, sessions, breakers)

    first, second = model.requests
    assert first.tools == second.tools == []
    instruction = first.system_instruction or ""
    assert instruction.startswith("Be precise.")
    assert '"final_answer"' in instruction
    assert "- weather: Today's weather." in instruction
    assert '"city"' in instruction
    past_step, observation = second.messages[1:]
    assert past_step.role == "assistant"
    assert json.loads(past_step.text) == {
        "thought": "Check it.",
        "action": {"tool": "weather", "args": {"city": "Paris"}},
    }
    assert (observation.role, observation.text) == (
        "user",
        "Observation from weather: sunny in Paris",
    )


async def test_react_agent_gives_one_corrective_retry_after_invalid_output(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel(
        [
            ScriptedResponse(text="Sure! The weather is nice.", usage=Usage(output_tokens=6)),
            answer("Oops.", "Nice weather").model_copy(update={"usage": Usage(output_tokens=9)}),
        ]
    )
    agent = ReActAgent("forecaster", model=model)

    events = await run(agent, sessions, breakers)

    assert len(model.requests) == 2
    *_, bad_reply, correction = model.requests[1].messages
    assert (bad_reply.role, bad_reply.text) == ("assistant", "Sure! The weather is nice.")
    assert correction.role == "user"
    assert "not a valid step" in correction.text
    [message] = [e for e in events if e.type is EventType.AGENT_MESSAGE]
    assert message.text == "Nice weather"
    assert message.usage is not None
    assert message.usage.output_tokens == 6 + 9  # both calls are counted


async def test_react_agent_fails_when_the_retry_is_invalid_too(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([reply("not json"), reply('{"thought": "no outcome"}')])
    agent = ReActAgent("forecaster", model=model)

    events = await run(agent, sessions, breakers)

    assert len(model.requests) == 2
    last = events[-1]
    assert last.is_terminal_error
    assert last.error is not None
    assert last.error.code == "model_output_invalid"
    assert "even after a corrective retry" in last.error.message
    assert not [e for e in events if e.type is EventType.AGENT_MESSAGE]


async def test_react_agent_shows_tool_failures_as_observations_and_goes_on(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel(
        [
            act("Try the radar.", "radar"),
            act("Wrong arguments.", "weather", town="Paris"),
            answer("Give up.", "I could not find out."),
        ]
    )
    agent = ReActAgent("forecaster", model=model, tools=[weather])

    events = await run(agent, sessions, breakers)

    results = [e.tool_results[0] for e in events if e.type is EventType.TOOL_RESPONSE]
    assert [r.is_error for r in results] == [True, True]
    assert results[0].output.startswith("tool_not_found")
    assert results[1].output.startswith("tool_arguments_invalid")
    assert "tool_not_found" in model.requests[1].messages[-1].text
    assert [e for e in events if e.is_final_response()][-1].text == "I could not find out."


async def test_react_agent_saves_its_final_answer_and_hands_it_on_in_a_pipeline(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    next_model = ScriptedModel([reply("noted")])
    pipeline = SequentialAgent(
        "pipeline",
        sub_agents=[
            ReActAgent(
                "forecaster",
                model=ScriptedModel([answer("Easy.", "Sunny.")]),
                output_key="forecast",
            ),
            ReActAgent("reporter", model=next_model),
        ],
    )

    await run(pipeline, sessions, breakers)

    session = await sessions.get_session(app_name="agents", user_id="u", session_id="s")
    assert session is not None
    assert session.state["forecast"] == "Sunny."
    assert next_model.requests[0].messages[-1].text == "[forecaster said] Sunny."


async def test_react_agent_can_transfer_to_a_sub_agent_and_stops(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([act("A meteorologist knows.", "transfer_to_agent", agent_name="expert")])
    agent = ReActAgent(
        "forecaster",
        model=model,
        sub_agents=[LlmAgent("expert", model=ScriptedModel([reply("Sunny, 24 degrees.")]))],
    )

    events = await run(agent, sessions, breakers)

    assert len(model.requests) == 1
    assert "- transfer_to_agent:" in (model.requests[0].system_instruction or "")
    final = [e for e in events if e.is_final_response()][-1]
    assert (final.author, final.text) == ("expert", "Sunny, 24 degrees.")
    assert not [e for e in events if e.type is EventType.ERROR]


async def test_react_agent_stops_at_max_iterations(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([act("Again.", "weather", city="Paris")], loop=True)
    agent = ReActAgent("forecaster", model=model, tools=[weather], max_iterations=3)

    events = await run(agent, sessions, breakers)

    assert len(model.requests) == 3
    assert events[-1].error is not None
    assert (events[-1].error.code, events[-1].error.limit) == ("limit_exceeded", "max_iterations")


async def test_react_agent_charges_one_budget_step_per_step(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([act("Again.", "weather", city="Paris")], loop=True)
    agent = ReActAgent("forecaster", model=model, tools=[weather], max_iterations=10)

    events = await run(agent, sessions, breakers, run_config=RunConfig(max_steps=2))

    assert len(model.requests) == 2
    assert events[-1].error is not None
    assert events[-1].error.limit == "max_steps"


async def test_react_agent_does_not_stream_its_raw_json(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    agent = ReActAgent("forecaster", model=ScriptedModel([answer("Easy.", "Sunny.")]))

    events = await run(agent, sessions, breakers, partial=True)

    assert not [e for e in events if e.partial]


@pytest.mark.parametrize(
    "text",
    [
        '{"thought": "t", "final_answer": "42"}',
        '```json\n{"thought": "t", "final_answer": "42"}\n```',
        'Here you go: {"thought": "t", "final_answer": "42"} Hope it helps.',
        '{"final_answer": "42"}',
    ],
)
def test_parse_step_accepts_a_json_step_with_light_wrapping(text: str) -> None:
    assert parse_step(text).final_answer == "42"


@pytest.mark.parametrize(
    "text",
    [
        "The answer is 42.",
        '{"thought": "t"}',
        '{"thought": "t", "final_answer": "42", "action": {"tool": "x"}}',
        '{"thought": "t", "final_answer": "  "}',
        '{"thought": "t", "action": {"tool": ""}}',
        '{"thought": "t", "final_answer": "42", "observation": "made up"}',
    ],
)
def test_parse_step_rejects_anything_but_one_outcome(text: str) -> None:
    with pytest.raises(ValidationError):
        parse_step(text)
