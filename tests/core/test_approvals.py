"""Human approval of tool calls: request, decide, resume."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import pytest

from agents_core import Event, EventType, InMemorySessionService, LlmAgent, Runner, function_tool
from agents_core.approvals import (
    ApprovalBroker,
    ApprovalDecision,
    ApprovalError,
    ApprovalPolicy,
    args_hash,
)
from agents_core.context import CancellationToken
from agents_core.contracts import ToolCall
from agents_core.llm.resilience import BreakerRegistry
from agents_core.policies import Condition, PolicyRule
from agents_core.testing import ScriptedModel, reply, tool_call

deleted: list[str] = []


@function_tool
def delete_file(path: str) -> str:
    """Delete a file."""
    deleted.append(path)
    return f"deleted {path}"


@pytest.fixture(autouse=True)
def _reset() -> None:
    deleted.clear()


def make_runner(
    sessions: InMemorySessionService, breakers: BreakerRegistry, policy: ApprovalPolicy
) -> tuple[Runner, ScriptedModel]:
    model = ScriptedModel([tool_call("delete_file", "c1", path="a.txt"), reply("done")])
    agent = LlmAgent("ops", model=model, tools=[delete_file], approval=policy)
    return Runner(agent, session_service=sessions, breakers=breakers), model


async def run_deciding(
    runner: Runner, decide: ApprovalDecision | None, session_id: str = "s"
) -> list[Event]:
    """Run one turn; when the approval request arrives, deliver ``decide`` (if any)."""
    events: list[Event] = []
    stream: AsyncGenerator[Event] = runner.astream(user_id="u", session_id=session_id, message="go")
    async for event in stream:
        if event.partial:
            continue
        events.append(event)
        if event.type is EventType.APPROVAL_REQUEST and decide is not None:
            runner.approvals.decide(decide)
    return events


def decision_for(event_hash: str, verdict: str = "approve", **extra: object) -> ApprovalDecision:
    return ApprovalDecision.model_validate(
        {"call_id": "c1", "args_hash": event_hash, "decision": verdict, **extra}
    )


HASH = args_hash("delete_file", {"path": "a.txt"})


async def test_approved_call_runs_after_the_request_and_decision_events(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    runner, _ = make_runner(sessions, breakers, ApprovalPolicy(tools=frozenset({"delete_file"})))
    events = await run_deciding(runner, decision_for(HASH, decided_by="ada"))
    kinds = [e.type for e in events]
    request_at = kinds.index(EventType.APPROVAL_REQUEST)
    assert kinds[request_at + 1] is EventType.APPROVAL_DECISION
    assert kinds[request_at + 2] is EventType.TOOL_STARTED  # journalled once approved
    assert kinds[request_at + 3] is EventType.TOOL_RESPONSE
    request, decision = events[request_at], events[request_at + 1]
    assert request.approval is not None and request.approval.args_hash == HASH
    assert request.approval.args == {"path": "a.txt"} and request.approval.decision is None
    assert decision.approval is not None
    assert (decision.approval.decision, decision.approval.decided_by) == ("approve", "ada")
    assert deleted == ["a.txt"]
    assert events[-2].text == "done"


async def test_approval_with_edited_arguments_runs_the_edited_call(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    runner, _ = make_runner(sessions, breakers, ApprovalPolicy(tools=frozenset({"delete_file"})))
    events = await run_deciding(runner, decision_for(HASH, edited_args={"path": "b.txt"}))
    assert deleted == ["b.txt"]
    response = next(e for e in events if e.type is EventType.TOOL_RESPONSE)
    assert response.tool_results[0].output == "deleted b.txt"


async def test_denied_call_reaches_the_model_as_a_refusal_and_the_run_continues(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    runner, model = make_runner(
        sessions, breakers, ApprovalPolicy(tools=frozenset({"delete_file"}))
    )
    events = await run_deciding(runner, decision_for(HASH, "deny", reason="keep it"))
    assert deleted == []
    response = next(e for e in events if e.type is EventType.TOOL_RESPONSE)
    assert response.tool_results[0].is_error
    assert "denied" in response.tool_results[0].output
    tool_message = model.requests[1].messages[-1]
    assert tool_message.role == "tool" and "keep it" in tool_message.text
    assert events[-2].is_final_response()


async def test_unanswered_request_applies_the_timeout_fallback(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    policy = ApprovalPolicy(tools=frozenset({"delete_file"}), timeout_s=0.01, on_timeout="deny")
    runner, _ = make_runner(sessions, breakers, policy)
    events = await run_deciding(runner, None)
    decision = next(e for e in events if e.type is EventType.APPROVAL_DECISION)
    assert decision.approval is not None
    assert (decision.approval.decision, decision.approval.decided_by) == ("deny", "timeout")
    assert deleted == []


async def test_timeout_fallback_may_approve(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    policy = ApprovalPolicy(tools=frozenset({"delete_file"}), timeout_s=0.01, on_timeout="approve")
    runner, _ = make_runner(sessions, breakers, policy)
    await run_deciding(runner, None)
    assert deleted == ["a.txt"]


async def test_calls_outside_the_policy_run_without_asking(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    system_files = PolicyRule(
        name="system_files",
        action="ask",
        when=[Condition(arg="path", op="starts_with", value="/etc/")],
    )
    model = ScriptedModel([tool_call("delete_file", "c1", path="a.txt"), reply("done")])
    agent = LlmAgent("ops", model=model, tools=[delete_file], policies=[system_files])
    runner = Runner(agent, session_service=sessions, breakers=breakers)
    events = await run_deciding(runner, None)
    assert EventType.APPROVAL_REQUEST not in [e.type for e in events]
    assert deleted == ["a.txt"]


async def test_broker_refuses_a_decision_for_other_arguments_or_another_session() -> None:
    broker = ApprovalBroker()
    call = ToolCall(id="c1", name="delete_file", args={"path": "a.txt"})
    with broker.expect(call, session_id="s1") as pending:
        assert broker.pending_calls("s1") == ["c1"]
        forged = args_hash("delete_file", {"path": "/"})
        with pytest.raises(ApprovalError, match="different arguments"):
            broker.decide(decision_for(forged))
        with pytest.raises(ApprovalError):
            broker.decide(decision_for(HASH), session_id="s2")
        with pytest.raises(ApprovalError, match="edited arguments go with approve"):
            broker.decide(decision_for(HASH, "deny", edited_args={"path": "x"}))
        assert not pending.future.done()
        broker.decide(decision_for(HASH), session_id="s1")
        decided = await pending.wait(timeout_s=5)
        assert decided is not None and decided.decision == "approve"
        with pytest.raises(ApprovalError, match="no call"):
            broker.decide(decision_for(HASH))
    assert broker.pending_calls("s1") == []


async def test_two_sessions_waiting_on_the_same_call_id_each_get_their_own_decision() -> None:
    broker = ApprovalBroker()
    call = ToolCall(id="c1", name="delete_file", args={"path": "a.txt"})
    with (
        broker.expect(call, session_id="s1") as first,
        broker.expect(call, session_id="s2") as second,
    ):
        with pytest.raises(ApprovalError, match="several sessions"):
            broker.decide(decision_for(HASH))
        broker.decide(decision_for(HASH, "deny"), session_id="s2")
        assert not first.future.done()
        broker.decide(decision_for(HASH), session_id="s1")
        assert (await first.wait(timeout_s=5)).decision == "approve"  # type: ignore[union-attr]
        assert (await second.wait(timeout_s=5)).decision == "deny"  # type: ignore[union-attr]
    assert broker.pending_calls("s1") == broker.pending_calls("s2") == []


def test_a_call_cannot_wait_twice() -> None:
    broker = ApprovalBroker()
    call = ToolCall(id="c1", name="delete_file", args={})

    async def scenario() -> None:
        with (
            broker.expect(call, session_id="s"),
            pytest.raises(ApprovalError, match="already waiting"),
            broker.expect(call, session_id="s"),
        ):
            pass

    asyncio.run(scenario())


def test_args_hash_is_canonical_and_sensitive_to_every_argument() -> None:
    assert args_hash("t", {"a": 1, "b": 2}) == args_hash("t", {"b": 2, "a": 1})
    assert args_hash("t", {"a": 1}) != args_hash("t", {"a": 2})
    assert args_hash("t", {"a": 1}) != args_hash("u", {"a": 1})


async def test_a_turn_cancelled_while_a_call_waits_for_approval_answers_it_as_not_run(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    runner, _ = make_runner(sessions, breakers, ApprovalPolicy(tools=frozenset({"delete_file"})))
    token = CancellationToken()
    events: list[Event] = []
    async for event in runner.astream(
        user_id="u", session_id="s", message="go", cancel_token=token
    ):
        if not event.partial:
            events.append(event)
        if event.type is EventType.APPROVAL_REQUEST:
            token.cancel("stopped by ada")

    assert deleted == []
    assert [e.type for e in events[-2:]] == [EventType.TOOL_RESPONSE, EventType.ERROR]
    (result,) = events[-2].tool_results
    assert (result.call_id, result.is_error) == ("c1", True)
    assert result.output == (
        "not_run: the run was cancelled (stopped by ada) before this call ran; it did not run."
    )


async def test_a_tool_s_latency_leaves_out_the_wait_for_approval(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    runner, _ = make_runner(
        sessions,
        breakers,
        ApprovalPolicy(tools=frozenset({"delete_file"}), timeout_s=0.3, on_timeout="approve"),
    )
    events = await run_deciding(runner, None)  # nobody answers: the time-out approves

    decision = next(e for e in events if e.type is EventType.APPROVAL_DECISION)
    response = next(e for e in events if e.type is EventType.TOOL_RESPONSE)
    assert decision.approval is not None and decision.approval.decided_by == "timeout"
    waited = (decision.created_at - events[0].created_at).total_seconds()
    assert waited >= 0.3
    assert deleted == ["a.txt"]
    assert response.latency_ms is not None and response.latency_ms < 100
