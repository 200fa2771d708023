"""Agent transfer: ``transfer_to_agent`` hands the turn to another agent."""

from __future__ import annotations

import asyncio

from agents_core import (
    BaseAgent,
    Event,
    EventType,
    InMemorySessionService,
    LlmAgent,
    RunConfig,
    Runner,
)
from agents_core.agents import SequentialAgent
from agents_core.llm.resilience import BreakerRegistry
from agents_core.testing import ScriptedModel, collect, reply, tool_call
from agents_core.tools.control import TRANSFER_TOOL_NAME

SAFETY_TIMEOUT_S = 10


async def run(
    agent: BaseAgent,
    sessions: InMemorySessionService,
    breakers: BreakerRegistry,
    *,
    run_config: RunConfig | None = None,
) -> list[Event]:
    runner = Runner(agent, session_service=sessions, breakers=breakers, run_config=run_config)
    async with asyncio.timeout(SAFETY_TIMEOUT_S):
        return await collect(runner.astream(user_id="u", session_id="s", message="my invoice?"))


def final_answer(events: list[Event]) -> Event:
    return [e for e in events if e.is_final_response()][-1]


async def test_coordinator_hands_over_to_the_named_specialist_and_stops(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    # Had the coordinator kept looping, its one-step script would run out and fail the run.
    coordinator_model = ScriptedModel([tool_call(TRANSFER_TOOL_NAME, agent_name="billing")])
    billing_model = ScriptedModel([reply("Your invoice is paid.")])
    support_model = ScriptedModel([reply("not me")])
    coordinator = LlmAgent(
        "coordinator",
        model=coordinator_model,
        sub_agents=[
            LlmAgent("billing", model=billing_model, description="Invoices and payments."),
            LlmAgent("support", model=support_model, description="Technical problems."),
        ],
    )

    events = await run(coordinator, sessions, breakers)

    assert len(coordinator_model.requests) == 1
    assert support_model.requests == []
    [handover] = [e for e in events if e.type is EventType.TOOL_RESPONSE]
    assert (handover.author, handover.actions.transfer_to_agent) == ("coordinator", "billing")
    final = final_answer(events)
    assert (final.author, final.text, final.branch) == (
        "billing",
        "Your invoice is paid.",
        "coordinator",
    )
    assert [m.text for m in billing_model.requests[0].messages] == ["my invoice?"]
    assert not [e for e in events if e.type is EventType.ERROR]
    [schema] = coordinator_model.requests[0].tools
    assert schema.name == TRANSFER_TOOL_NAME
    assert schema.parameters["properties"]["agent_name"]["enum"] == ["billing", "support"]
    assert "Invoices and payments." in schema.description


async def test_ping_pong_transfers_end_with_a_max_transfers_error(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    coordinator = LlmAgent(
        "coordinator",
        model=ScriptedModel([tool_call(TRANSFER_TOOL_NAME, agent_name="specialist")], loop=True),
        sub_agents=[
            LlmAgent(
                "specialist",
                model=ScriptedModel(
                    [tool_call(TRANSFER_TOOL_NAME, agent_name="coordinator")], loop=True
                ),
            )
        ],
    )

    events = await run(coordinator, sessions, breakers, run_config=RunConfig(max_transfers=3))

    handovers = [e.actions.transfer_to_agent for e in events if e.actions.transfer_to_agent]
    assert handovers == ["specialist", "coordinator", "specialist", "coordinator"]
    last = events[-1]
    assert last.is_terminal_error
    assert last.error is not None
    assert (last.error.code, last.error.limit) == ("limit_exceeded", "max_transfers")


async def test_a_specialist_may_hand_over_to_a_peer(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    billing_model = ScriptedModel([tool_call(TRANSFER_TOOL_NAME, agent_name="support")])
    coordinator = LlmAgent(
        "coordinator",
        model=ScriptedModel([tool_call(TRANSFER_TOOL_NAME, agent_name="billing")]),
        sub_agents=[
            LlmAgent("billing", model=billing_model),
            LlmAgent("support", model=ScriptedModel([reply("Restart the router.")])),
        ],
    )

    events = await run(coordinator, sessions, breakers)

    assert (final_answer(events).author, final_answer(events).text) == (
        "support",
        "Restart the router.",
    )
    [schema] = billing_model.requests[0].tools
    assert schema.parameters["properties"]["agent_name"]["enum"] == ["coordinator", "support"]


async def test_transfer_to_an_unknown_agent_is_an_error_the_model_sees(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel(
        [tool_call(TRANSFER_TOOL_NAME, agent_name="nobody"), reply("I'll answer.")]
    )
    coordinator = LlmAgent(
        "coordinator", model=model, sub_agents=[LlmAgent("billing", model=ScriptedModel([]))]
    )

    events = await run(coordinator, sessions, breakers)

    [response] = [e for e in events if e.type is EventType.TOOL_RESPONSE]
    [result] = response.tool_results
    assert result.is_error
    assert "no agent named 'nobody'" in result.output
    assert response.actions.transfer_to_agent is None
    assert final_answer(events).text == "I'll answer."


async def test_children_of_workflow_agents_are_offered_no_transfer(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    # Handing over to the pipeline itself would restart it from its first step.
    model = ScriptedModel([reply("step done")])
    pipeline = SequentialAgent(
        "pipeline",
        sub_agents=[
            LlmAgent("step", model=model),
            LlmAgent("next", model=ScriptedModel([reply("ok")])),
        ],
    )

    await run(pipeline, sessions, breakers)

    assert model.requests[0].tools == []


def test_an_agent_without_relatives_has_no_transfer_tool() -> None:
    solo = LlmAgent("solo", model=ScriptedModel([]))
    assert solo.transfer_targets() == []
