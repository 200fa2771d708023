"""Planner hooks in LlmAgent, PlanReActPlanner and TaskPlanner."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from agents_core import (
    BaseAgent,
    Event,
    EventType,
    InMemorySessionService,
    LlmAgent,
    LlmRequest,
    LlmResponse,
    ReadonlyContext,
    Runner,
    ThinkingPart,
    ToolContext,
)
from agents_core.llm.resilience import BreakerRegistry
from agents_core.planners.base import BasePlanner
from agents_core.planners.plan_react import PlanReActPlanner, split_sections
from agents_core.planners.task import TaskPlanner, read_todos
from agents_core.testing import (
    ScriptedModel,
    ScriptedResponse,
    ScriptedToolCall,
    collect,
    reply,
    tool_call,
)

SAFETY_TIMEOUT_S = 10


async def run(
    agent: BaseAgent, sessions: InMemorySessionService, breakers: BreakerRegistry
) -> list[Event]:
    runner = Runner(agent, session_service=sessions, breakers=breakers)
    async with asyncio.timeout(SAFETY_TIMEOUT_S):
        return await collect(runner.astream(user_id="u", session_id="s", message="go"))


async def stored_state(sessions: InMemorySessionService) -> dict[str, Any]:
    session = await sessions.get_session(app_name="agents", user_id="u", session_id="s")
    assert session is not None
    return session.state


def final_answer(events: list[Event]) -> Event:
    return [e for e in events if e.is_final_response()][-1]


def todos(*items: tuple[str, str]) -> ScriptedResponse:
    return tool_call("write_todos", todos=[{"content": c, "status": s} for c, s in items])


# --- BasePlanner hooks in LlmAgent -----------------------------------------------------


class RecordingPlanner(BasePlanner):
    """Shows each turn's state in the instruction; upper-cases answers; pending while
    ``state['open']`` is truthy."""

    def __init__(self) -> None:
        self.seen: list[tuple[dict[str, Any], int]] = []

    def build_planning_instruction(self, ctx: ReadonlyContext, request: LlmRequest) -> str | None:
        self.seen.append((dict(ctx.state), len(request.messages)))
        return f"planning turn {len(self.seen)}"

    def process_response(self, ctx: ReadonlyContext, response: LlmResponse) -> LlmResponse:
        return response.model_copy(update={"text": response.text.upper()})

    def pending_tasks(self, ctx: ReadonlyContext) -> Sequence[str]:
        return ["open item"] if ctx.state.get("open") else []


def set_open(value: bool, tool_context: ToolContext) -> str:
    """Opens or closes the work item."""
    tool_context.effects.state_delta["open"] = value
    return "noted"


async def test_planner_instruction_is_built_each_turn_from_the_live_context(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    planner = RecordingPlanner()
    model = ScriptedModel([tool_call("set_open", value=False), reply("done")])
    agent = LlmAgent(
        "agent", model=model, instruction="Be brief.", tools=[set_open], planner=planner
    )

    await run(agent, sessions, breakers)

    assert planner.seen == [({}, 1), ({"open": False}, 3)]
    instructions = [r.system_instruction for r in model.requests]
    assert instructions == ["Be brief.\n\nplanning turn 1", "Be brief.\n\nplanning turn 2"]


async def test_planner_rewrites_the_response_before_it_is_stored(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    agent = LlmAgent(
        "agent",
        model=ScriptedModel([reply("quiet answer")]),
        planner=RecordingPlanner(),
        output_key="answer",
    )

    events = await run(agent, sessions, breakers)

    assert final_answer(events).text == "QUIET ANSWER"
    assert (await stored_state(sessions))["answer"] == "QUIET ANSWER"


async def test_an_answer_without_tool_calls_does_not_end_the_turn_while_tasks_are_pending(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel(
        [
            tool_call("set_open", value=True),
            reply("progress report"),  # pending: the agent goes on
            tool_call("set_open", value=False),
            reply("finished"),  # nothing pending: the turn ends
        ]
    )
    agent = LlmAgent("agent", model=model, tools=[set_open], planner=RecordingPlanner())

    events = await run(agent, sessions, breakers)

    assert len(model.requests) == 4
    texts = [e.text for e in events if e.is_final_response()]
    assert texts == ["PROGRESS REPORT", "FINISHED"]
    assert not [e for e in events if e.type is EventType.ERROR]


# --- PlanReActPlanner ------------------------------------------------------------------

FULL_RESPONSE = """\
/*PLANNING*/
1. Look the city up.
2. Answer.
/*ACTION*/
Calling lookup.
/*REASONING*/
The lookup says Paris.
/*FINAL_ANSWER*/
The capital is Paris."""


def process(text: str, **fields: Any) -> LlmResponse:
    return PlanReActPlanner().process_response(_NO_CONTEXT, LlmResponse(text=text, **fields))


_NO_CONTEXT: Any = None  # process_response does not read the context


def test_plan_react_keeps_only_the_final_answer_as_text() -> None:
    response = process(FULL_RESPONSE, thinking="native thoughts")

    assert response.text == "The capital is Paris."
    assert response.thinking.startswith("native thoughts\n/*PLANNING*/\n1. Look the city up.")
    assert "/*REASONING*/\nThe lookup says Paris." in response.thinking
    assert "Calling lookup." in response.thinking
    assert "capital is Paris" not in response.thinking


def test_plan_react_without_a_final_answer_tag_drops_only_the_planning_parts() -> None:
    response = process("Plain answer.\n/*PLANNING*/\nstep one\n/*ACTION*/\nsearch the web")
    assert response.text == "Plain answer.\n\nsearch the web"
    assert response.thinking == "/*PLANNING*/\nstep one"
    # text after a tag belongs to that tag: a reasoning section runs to the next tag
    response = process("/*PLANNING*/\nstep one\n/*REASONING*/\nhmm\nstill thinking")
    assert response.text == ""
    assert response.thinking == "/*PLANNING*/\nstep one\n/*REASONING*/\nhmm\nstill thinking"


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("Just an answer, no tags.", "Just an answer, no tags."),
        ("/* final_answer */ lenient tags", "lenient tags"),
        ("/*PLANNING* broken tag\n/*FINAL_ANSWER*/ 42", "42"),
        ("/*FINAL_ANSWER*/ first\n/*REPLANNING*/ redo\n/*FINAL_ANSWER*/ second", "second"),
        ("/*PLANNING*/ only a plan", ""),
        ("/*FINAL_ANSWER*/", ""),
    ],
)
def test_plan_react_is_robust_to_missing_and_partial_tags(text: str, answer: str) -> None:
    assert process(text).text == answer


def test_split_sections_keeps_untagged_text_and_drops_empty_sections() -> None:
    sections = split_sections("intro /*PLANNING*/ /*REASONING*/ why")
    assert [(s.tag, s.text) for s in sections] == [(None, "intro"), ("REASONING", "why")]


async def test_plan_react_agent_plans_acts_and_answers(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    def lookup(country: str) -> str:
        """Finds a country's capital."""
        return "Paris"

    model = ScriptedModel(
        [
            ScriptedResponse(
                text="/*PLANNING*/\n1. Look it up.\n/*ACTION*/\nlookup",
                tool_calls=[ScriptedToolCall(name="lookup", args={"country": "France"})],
            ),
            ScriptedResponse(text="/*REASONING*/\nIt is Paris.\n/*FINAL_ANSWER*/\nParis."),
        ]
    )
    agent = LlmAgent(
        "geo", model=model, tools=[lookup], planner=PlanReActPlanner(), output_key="capital"
    )

    events = await run(agent, sessions, breakers)

    final = final_answer(events)
    assert final.text == "Paris."
    thinking = [p.text for p in final.parts if isinstance(p, ThinkingPart)]
    assert thinking == ["/*REASONING*/\nIt is Paris."]
    assert (await stored_state(sessions))["capital"] == "Paris."
    first, second = (r.system_instruction or "" for r in model.requests)
    assert "/*FINAL_ANSWER*/" in first
    assert "Your current plan" not in first
    assert "Your current plan (replan only if it no longer works):\n1. Look it up." in second
    # the plan is not repeated into the text the model reads as its own words
    assert all("1. Look it up." not in m.text for m in model.requests[1].messages)


# --- TaskPlanner -----------------------------------------------------------------------


async def test_write_todos_stores_the_list_in_session_state(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([todos(("read", "done"), ("write", "done")), reply("ok")])
    agent = LlmAgent("agent", model=model, planner=TaskPlanner())

    events = await run(agent, sessions, breakers)

    [response] = [e for e in events if e.type is EventType.TOOL_RESPONSE]
    assert response.tool_results[0].output == "Todo list saved: 2 items, 0 not done."
    assert (await stored_state(sessions))["_todos"] == [
        {"content": "read", "status": "done"},
        {"content": "write", "status": "done"},
    ]
    assert [t.name for t in model.requests[0].tools] == ["write_todos"]


async def test_write_todos_rejects_an_invalid_list(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([todos(("read", "finished")), reply("ok")])
    agent = LlmAgent("agent", model=model, planner=TaskPlanner())

    events = await run(agent, sessions, breakers)

    [response] = [e for e in events if e.type is EventType.TOOL_RESPONSE]
    [result] = response.tool_results
    assert result.is_error
    assert "todos.0.status" in result.output
    assert "_todos" not in await stored_state(sessions)


async def test_task_planner_keeps_the_agent_going_until_every_todo_is_done(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel(
        [
            todos(("draft", "in_progress"), ("review", "pending")),
            reply("Drafted; reviewing next."),  # todos still pending: not the end
            todos(("draft", "done"), ("review", "done")),
            reply("All done."),
        ]
    )
    agent = LlmAgent("agent", model=model, planner=TaskPlanner(state_key="plan"))

    events = await run(agent, sessions, breakers)

    assert len(model.requests) == 4
    assert final_answer(events).text == "All done."
    first, second, _, last = (r.system_instruction or "" for r in model.requests)
    assert "first write a todo list" in first
    assert "[~] draft\n[ ] review" in second
    assert "Keep working" in second
    assert "[x] draft\n[x] review" in last
    assert "Keep working" not in last
    assert [t.status for t in read_todos(await stored_state(sessions), "plan")] == ["done", "done"]


async def test_task_planner_stops_at_max_iterations_with_todos_still_pending(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([todos(("impossible", "pending")), reply("I give up.")], loop=True)
    agent = LlmAgent("agent", model=model, planner=TaskPlanner(), max_iterations=4)

    events = await run(agent, sessions, breakers)

    assert len(model.requests) == 4
    last = events[-1]
    assert last.is_terminal_error
    assert last.error is not None
    assert (last.error.code, last.error.limit) == ("limit_exceeded", "max_iterations")


def test_read_todos_ignores_state_that_is_not_a_todo_list() -> None:
    assert read_todos({"_todos": "not a list"}) == []
    assert read_todos({}) == []
    assert [t.content for t in read_todos({"_todos": [{"content": "x"}]})] == ["x"]
