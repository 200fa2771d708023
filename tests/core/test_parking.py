"""Parking: a call that waits on a person stops its run instead of holding it, and the
run goes on from the record, as the same calls, once they are decided."""

from __future__ import annotations

import asyncio

import pytest

from agents_core import Event, EventType, InMemorySessionService, LlmAgent, Runner, function_tool
from agents_core.agents import SequentialAgent
from agents_core.approvals import ApprovalBroker, ApprovalDecision, ApprovalPolicy, args_hash
from agents_core.llm.resilience import BreakerRegistry
from agents_core.policies import Condition, PolicyRule
from agents_core.resume import ResumePoint
from agents_core.spans import spans_of
from agents_core.testing import (
    ScriptedModel,
    ScriptedResponse,
    ScriptedToolCall,
    reply,
    tool_call,
)

ran: list[tuple[str, dict[str, object]]] = []


@function_tool
def pay(amount: int) -> str:
    """Pay an amount."""
    ran.append(("pay", {"amount": amount}))
    return f"paid {amount}"


@function_tool
def look(what: str) -> str:
    """Look something up."""
    ran.append(("look", {"what": what}))
    return f"{what}: fine"


@pytest.fixture(autouse=True)
def _reset() -> None:
    ran.clear()


def agent(model: ScriptedModel, **kwargs: object) -> LlmAgent:
    policy = kwargs.pop("approval", ApprovalPolicy(tools=frozenset({"pay"})))
    return LlmAgent("clerk", model=model, tools=[pay, look], approval=policy, **kwargs)  # type: ignore[arg-type]


async def turn(
    runner: Runner, message: str | None, invocation_id: str | None = None
) -> list[Event]:
    stream = runner.astream(
        user_id="u", session_id="s", message=message, invocation_id=invocation_id
    )
    return [e async for e in stream if not e.partial]


def kinds(events: list[Event]) -> list[str]:
    return [e.type.value for e in events]


def approve(amount: int, **extra: object) -> ApprovalDecision:
    return ApprovalDecision.model_validate(
        {
            "call_id": "c1",
            "args_hash": args_hash("pay", {"amount": amount}),
            "decision": "approve",
            **extra,
        }
    )


async def test_a_run_parks_on_a_person_and_goes_on_as_the_same_call_once_decided(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel(
        [tool_call("pay", "c1", amount=50), tool_call("look", "c2", what="rate"), reply("done")]
    )
    parking = ApprovalBroker(parks=True)
    runner = Runner(agent(model), session_service=sessions, breakers=breakers, approvals=parking)
    first = await turn(runner, "pay the bill")
    assert kinds(first)[-2:] == ["approval_request", "run_parked"]
    assert ran == [] and len(model.requests) == 1
    asked = first[-2]
    assert asked.approval is not None and asked.approval.timeout_s == 300.0
    assert asked.approval.on_timeout == "deny"
    assert "c1" in first[-1].text
    # No agent_end: the turn is not over, and nothing a turn does at its end ran.
    assert EventType.AGENT_END not in [e.type for e in first]

    # Another process resumes it: a new broker, handed the stored decision first.
    woken = ApprovalBroker(parks=True)
    woken.deliver(approve(50, edited_args={"amount": 40}, decided_by="ada"), session_id="s")
    again = Runner(agent(model), session_service=sessions, breakers=breakers, approvals=woken)
    second = await turn(again, None, invocation_id=asked.invocation_id)
    assert ran == [("pay", {"amount": 40}), ("look", {"what": "rate"})]
    assert EventType.APPROVAL_REQUEST not in [e.type for e in second]  # asked once only
    decided = next(e for e in second if e.type is EventType.APPROVAL_DECISION)
    assert decided.approval is not None and decided.approval.decided_by == "ada"
    assert decided.span_id == asked.span_id  # one wait span, across the parking
    assert decided.started_at == asked.created_at
    assert {e.invocation_id for e in second} == {asked.invocation_id}
    assert second[-1].type is EventType.AGENT_END
    final = next(e for e in reversed(second) if e.type is EventType.AGENT_MESSAGE)
    assert final.text == "done"
    # The model is not asked again for the call that parked: three calls in all.
    assert len(model.requests) == 3
    session = await sessions.get_session(app_name="agents", user_id="u", session_id="s")
    assert session is not None
    responses = [e for e in session.events if e.type is EventType.TOOL_RESPONSE]
    assert [r.tool_results[0].call_id for r in responses] == ["c1", "c2"]


async def test_siblings_that_need_nobody_respond_before_the_run_parks(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel(
        [
            ScriptedResponse(
                tool_calls=[
                    ScriptedToolCall(name="pay", id="c1", args={"amount": 5}),
                    ScriptedToolCall(name="look", id="c9", args={"what": "balance"}),
                ]
            ),
            reply("ok"),
        ]
    )
    runner = Runner(
        agent(model),
        session_service=sessions,
        breakers=breakers,
        approvals=ApprovalBroker(parks=True),
    )
    first = await turn(runner, "go")
    assert ran == [("look", {"what": "balance"})]
    assert kinds(first)[-1] == "run_parked"
    responses = [e for e in first if e.type is EventType.TOOL_RESPONSE]
    assert [r.tool_results[0].call_id for r in responses] == ["c9"]
    point = ResumePoint.of(
        (await sessions.get_session(app_name="agents", user_id="u", session_id="s")).events  # type: ignore[union-attr]
    )
    assert [p.call.call_id for p in point.parked[("clerk", "clerk")]] == ["c1"]


async def test_a_time_out_runs_from_the_request_across_the_parking(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([tool_call("pay", "c1", amount=7), reply("done")])
    rule = PolicyRule(
        name="big",
        match="pay",
        when=[Condition(arg="amount", op="gt", value=5)],
        action="ask",
        timeout_s=0.05,
        on_timeout="approve",
    )
    policy = ApprovalPolicy(timeout_s=1_000)
    runner = Runner(
        agent(model, approval=policy, policies=[rule]),
        session_service=sessions,
        breakers=breakers,
        approvals=ApprovalBroker(parks=True),
    )
    first = await turn(runner, "go")
    asked = first[-2]
    assert asked.approval is not None and asked.approval.timeout_s == 0.05  # the rule's
    assert asked.approval.on_timeout == "approve"
    # Its time passes while parked, nobody decided: resuming decides it at once.
    await asyncio.sleep(0.06)
    again = Runner(
        agent(model, approval=policy, policies=[rule]),
        session_service=sessions,
        breakers=breakers,
        approvals=ApprovalBroker(parks=True),
    )
    second = await turn(again, None, invocation_id=asked.invocation_id)
    decided = next(e for e in second if e.type is EventType.APPROVAL_DECISION)
    assert decided.approval is not None
    assert (decided.approval.decision, decided.approval.decided_by) == ("approve", "timeout")
    assert decided.approval.reason == "nobody decided within 0.05s"
    assert ran == [("pay", {"amount": 7})]


async def test_undecided_and_in_time_it_parks_again_without_asking_twice(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([tool_call("pay", "c1", amount=9), reply("done")])
    runner = Runner(
        agent(model),
        session_service=sessions,
        breakers=breakers,
        approvals=ApprovalBroker(parks=True),
    )
    first = await turn(runner, "go")
    second = await turn(runner, None, invocation_id=first[-1].invocation_id)
    assert kinds(second)[-1] == "run_parked"
    assert EventType.APPROVAL_REQUEST not in [e.type for e in second]
    assert ran == []


async def test_a_decision_arriving_as_the_run_parks_is_taken_for_the_host(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([tool_call("pay", "c1", amount=3), reply("done")])
    broker = ApprovalBroker(parks=True)
    runner = Runner(agent(model), session_service=sessions, breakers=breakers, approvals=broker)
    await turn(runner, "go")
    broker.decide(approve(3), session_id="s")  # not refused: the host keeps it


async def test_a_workflow_child_parks_and_the_workflow_resumes_past_its_finished_children(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    first_model = ScriptedModel([reply("drafted")])
    second_model = ScriptedModel([tool_call("pay", "c1", amount=2), reply("paid")])
    drafter = LlmAgent("drafter", model=first_model)
    payer = LlmAgent(
        "payer", model=second_model, tools=[pay], approval=ApprovalPolicy(tools=frozenset({"pay"}))
    )
    pipeline = SequentialAgent("flow", sub_agents=[drafter, payer])
    runner = Runner(
        pipeline, session_service=sessions, breakers=breakers, approvals=ApprovalBroker(parks=True)
    )
    first = await turn(runner, "go")
    assert kinds(first)[-1] == "run_parked"
    woken = ApprovalBroker(parks=True)
    woken.deliver(approve(2), session_id="s")
    runner = Runner(pipeline, session_service=sessions, breakers=breakers, approvals=woken)
    await turn(runner, None, invocation_id=first[-1].invocation_id)
    assert ran == [("pay", {"amount": 2})]
    assert len(first_model.requests) == 1  # the finished child is not run again


async def test_without_parking_a_call_still_waits_in_its_run(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([tool_call("pay", "c1", amount=1), reply("done")])
    runner = Runner(agent(model), session_service=sessions, breakers=breakers)
    events: list[Event] = []
    async for event in runner.astream(user_id="u", session_id="s", message="go"):
        if event.partial:
            continue
        events.append(event)
        if event.type is EventType.APPROVAL_REQUEST:
            runner.approvals.decide(approve(1))
    assert EventType.RUN_PARKED not in [e.type for e in events]
    assert ran == [("pay", {"amount": 1})]


async def test_spans_end_the_parked_executions_agents_and_keep_the_wait_whole(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([tool_call("pay", "c1", amount=8), reply("done")])
    parking = ApprovalBroker(parks=True)
    runner = Runner(agent(model), session_service=sessions, breakers=breakers, approvals=parking)
    first = await turn(runner, "go")
    woken = ApprovalBroker(parks=True)
    woken.deliver(approve(8), session_id="s")
    again = Runner(agent(model), session_service=sessions, breakers=breakers, approvals=woken)
    await turn(again, None, invocation_id=first[-1].invocation_id)
    session = await sessions.get_session(app_name="agents", user_id="u", session_id="s")
    assert session is not None
    spans = spans_of(e.to_wire() for e in session.events)
    [agent_span] = [s for s in spans if s.kind == "agent"]  # one span, across parking
    assert (agent_span.status, agent_span.attributes.get("resumed")) == ("ok", True)
    assert agent_span.start == first[1].created_at
    assert agent_span.end == session.events[-1].created_at
    starts = [e for e in session.events if e.type is EventType.AGENT_START]
    assert len(starts) == 2 and starts[0].span_id == starts[1].span_id
    parked_view = spans_of(e.to_wire() for e in first)  # as a viewer saw it, parked
    [while_parked] = [s for s in parked_view if s.kind == "agent"]
    assert (while_parked.status, while_parked.end) == ("ok", first[-1].created_at)
    [wait] = [s for s in spans if s.kind == "human"]
    [tool] = [s for s in spans if s.kind == "tool"]
    assert wait.status == "ok" and wait.start == first[-2].created_at
    assert tool.start <= wait.start and tool.end is not None and tool.end >= wait.end  # type: ignore[operator]
    assert not [s for s in spans if s.status == "open"]
