"""``function_tool``: schemas from signatures, validation, threads, timeouts and effects."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from pydantic import BaseModel

from agents_core import (
    EventType,
    InMemorySessionService,
    LlmAgent,
    RunConfig,
    ScriptedModel,
    ToolContext,
    ToolResult,
    function_tool,
)
from agents_core.exceptions import ConfigurationError
from agents_core.llm.resilience import BreakerRegistry
from agents_core.testing import ScriptedResponse, reply, tool_call
from tests.core.run_helpers import APP, SESSION, USER, complete, make_runner, run_turn


async def call_tool(
    tool: Any,
    call: ScriptedResponse,
    sessions: InMemorySessionService,
    breakers: BreakerRegistry,
) -> ToolResult:
    """Run one turn in which the model makes ``call``; return the tool's result."""
    agent = LlmAgent("agent", model=ScriptedModel([call, reply("ok")]), tools=[tool])
    # A bound on the turn, so a tool that wrongly hangs fails the test instead of stalling it.
    config = RunConfig(max_wall_time_s=10)
    events = complete(await run_turn(make_runner(agent, sessions, breakers, run_config=config)))
    assert events[-1].type is EventType.AGENT_END
    [result] = [r for e in events for r in e.tool_results]
    return result


def test_the_schema_comes_from_type_hints_and_the_docstring() -> None:
    @function_tool
    def search(query: str, limit: int = 5, tags: list[str] | None = None) -> list[str]:
        """Search the notes.

        Matches whole words only.

        Args:
            query: Words to look for.
            limit: Most results to return.
        """
        return []

    schema = search.schema()

    assert (schema.name, schema.description) == (
        "search",
        "Search the notes.\n\nMatches whole words only.",
    )
    parameters = schema.parameters
    assert parameters["required"] == ["query"]
    assert parameters["additionalProperties"] is False
    properties = parameters["properties"]
    assert properties["query"] == {
        "type": "string",
        "title": "Query",
        "description": "Words to look for.",
    }
    assert properties["limit"]["type"] == "integer"
    assert properties["limit"]["default"] == 5
    assert properties["limit"]["description"] == "Most results to return."
    assert {"type": "array", "items": {"type": "string"}} in properties["tags"]["anyOf"]


def test_name_and_description_can_be_overridden() -> None:
    @function_tool(name="lookup", description="Find a record.")
    def find(key: str) -> str:
        """Ignored."""
        return key

    assert (find.schema().name, find.schema().description) == ("lookup", "Find a record.")


def test_a_parameter_without_a_type_hint_or_a_star_parameter_is_refused() -> None:
    def untyped(x) -> str:  # type: ignore[no-untyped-def]
        return str(x)

    def star(*values: int) -> int:
        return sum(values)

    with pytest.raises(ConfigurationError, match="'x' needs a type hint"):
        function_tool(untyped)
    with pytest.raises(ConfigurationError, match=r"\*args"):
        function_tool(star)


async def test_a_sync_function_runs_in_a_worker_thread(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    threads: list[int] = []

    @function_tool
    def where() -> str:
        threads.append(threading.get_ident())
        return "here"

    result = await call_tool(where, tool_call("where"), sessions, breakers)

    assert (result.output, result.is_error) == ("here", False)
    assert threads
    assert threads[0] != threading.get_ident()


async def test_an_async_function_is_awaited_on_the_event_loop(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    @function_tool
    async def where() -> str:
        loops.append(asyncio.get_running_loop())
        await asyncio.sleep(0)
        return "on the loop"

    result = await call_tool(where, tool_call("where"), sessions, breakers)

    assert (result.output, result.is_error) == ("on the loop", False)
    assert loops == [asyncio.get_running_loop()]


class Point(BaseModel):
    x: int
    y: int


async def test_arguments_are_validated_and_coerced_by_the_type_hints(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    received: list[tuple[Point, list[int]]] = []

    @function_tool
    def place(point: Point, weights: list[int]) -> str:
        received.append((point, weights))
        return "placed"

    call = tool_call("place", point={"x": 1, "y": "2"}, weights=[3, "4"])
    result = await call_tool(place, call, sessions, breakers)

    assert (result.output, result.is_error) == ("placed", False)
    assert received == [(Point(x=1, y=2), [3, 4])]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        pytest.param({"a": "two", "b": 3}, "a: Input should be a valid integer", id="wrong-type"),
        pytest.param({"a": 1}, "b: Field required", id="missing"),
        pytest.param({"a": 1, "b": 2, "c": 3}, "c: Extra inputs are not permitted", id="extra"),
    ],
)
async def test_bad_arguments_become_an_error_result_naming_the_field(
    sessions: InMemorySessionService,
    breakers: BreakerRegistry,
    args: dict[str, object],
    named: str,
) -> None:
    ran: list[int] = []

    @function_tool
    def add(a: int, b: int) -> int:
        ran.append(a + b)
        return a + b

    result = await call_tool(add, tool_call("add", **args), sessions, breakers)

    assert result.is_error
    assert result.output.startswith("tool_arguments_invalid: invalid arguments:")
    assert named in result.output
    assert ran == []


async def test_a_tool_that_outlives_its_timeout_becomes_an_error_result(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    @function_tool(timeout_s=0.01)
    async def stall() -> str:
        await asyncio.Event().wait()
        return "never"

    result = await call_tool(stall, tool_call("stall"), sessions, breakers)

    assert result.is_error
    assert result.output == "tool_timeout: tool 'stall' timed out after 0.01s"


async def test_return_values_are_rendered_as_json_for_the_model(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    @function_tool
    def where() -> Point:
        return Point(x=1, y=2)

    @function_tool
    def stats() -> dict[str, object]:
        return {"count": 2, "names": ["é", "b"]}

    point = await call_tool(where, tool_call("where"), sessions, breakers)
    other_sessions = InMemorySessionService()
    data = await call_tool(stats, tool_call("stats"), other_sessions, breakers)

    assert point.output == '{"x":1,"y":2}'
    assert data.output == '{"count": 2, "names": ["é", "b"]}'


async def test_a_tool_context_parameter_is_injected_and_hidden_from_the_schema(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    @function_tool
    def whoami(greeting: str, tool_context: ToolContext) -> str:
        return f"{greeting} from call {tool_context.call.id} of {tool_context.context.agent_name}"

    assert set(whoami.schema().parameters["properties"]) == {"greeting"}
    assert whoami.schema().parameters["required"] == ["greeting"]

    result = await call_tool(whoami, tool_call("whoami", "c7", greeting="hi"), sessions, breakers)

    assert (result.output, result.is_error) == ("hi from call c7 of agent", False)


async def test_a_tool_saves_state_through_its_effects(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    @function_tool
    def remember(colour: str, tool_context: ToolContext) -> str:
        tool_context.effects.state_delta["colour"] = colour
        return "remembered"

    agent = LlmAgent(
        "agent",
        model=ScriptedModel([tool_call("remember", colour="teal"), reply("ok")]),
        tools=[remember],
    )

    events = complete(await run_turn(make_runner(agent, sessions, breakers)))

    [response] = [e for e in events if e.type is EventType.TOOL_RESPONSE]
    assert response.actions.state_delta == {"colour": "teal"}
    session = await sessions.get_session(app_name=APP, user_id=USER, session_id=SESSION)
    assert session is not None
    assert session.state == {"colour": "teal"}


async def test_a_failing_tools_state_changes_are_discarded(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    @function_tool
    def half_done(tool_context: ToolContext) -> str:
        tool_context.effects.state_delta["partial"] = True
        raise OSError("disk full")

    result = await call_tool(half_done, tool_call("half_done"), sessions, breakers)

    assert result.is_error
    session = await sessions.get_session(app_name=APP, user_id=USER, session_id=SESSION)
    assert session is not None
    assert session.state == {}


async def test_a_plain_function_given_to_an_agent_is_wrapped_as_a_tool(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    def shout(text: str) -> str:
        """Make text loud."""
        return text.upper()

    model = ScriptedModel([tool_call("shout", text="hey"), reply("{last_tool_result}")])
    agent = LlmAgent("agent", model=model, tools=[shout])

    events = complete(await run_turn(make_runner(agent, sessions, breakers)))

    assert [t.description for t in model.requests[0].tools] == ["Make text loud."]
    assert events[-2].text == "HEY"
