"""Policies: rules that allow, deny, rewrite or send for approval an agent's model, tool
and sub-agent calls, each decision stored as a policy_decision event."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import pytest
from pydantic import ValidationError

from agents_core import Event, EventType, InMemorySessionService, LlmAgent, Runner, function_tool
from agents_core.approvals import ApprovalDecision, ApprovalPolicy, args_hash
from agents_core.builder import build_agent
from agents_core.hooks import Hook
from agents_core.llm.resilience import BreakerRegistry
from agents_core.policies import PolicyEngine, PolicyRule, approval_rules
from agents_core.specs import AgentSpec
from agents_core.testing import ScriptedModel, reply, tool_call
from agents_core.tools.agent_tool import AgentTool
from agents_core.tools.registry import ToolRegistry

paid: list[dict[str, Any]] = []


@function_tool
def pay(amount: float, to: str) -> str:
    """Pay someone."""
    paid.append({"amount": amount, "to": to})
    return f"paid {amount} to {to}"


@pytest.fixture(autouse=True)
def _reset() -> None:
    paid.clear()


def rule(**fields: Any) -> PolicyRule:
    return PolicyRule.model_validate({"name": "r", **fields})


async def run_turn(
    agent: LlmAgent, decide: ApprovalDecision | None = None, *, breakers: BreakerRegistry
) -> list[Event]:
    runner = Runner(agent, session_service=InMemorySessionService(), breakers=breakers)
    events: list[Event] = []
    stream: AsyncGenerator[Event] = runner.astream(user_id="u", session_id="s", message="go")
    async for event in stream:
        if event.partial:
            continue
        events.append(event)
        if event.type is EventType.APPROVAL_REQUEST and decide is not None:
            runner.approvals.decide(decide)
    return events


def payer(*rules: PolicyRule, amount: float = 250.0, **agent: Any) -> LlmAgent:
    model = ScriptedModel([tool_call("pay", "c1", amount=amount, to="bob"), reply("done")])
    return LlmAgent("payer", model=model, tools=[pay], policies=list(rules), **agent)


def decisions(events: list[Event]) -> list[dict[str, Any]]:
    return [
        e.policy.model_dump(include={"rule", "action", "subject", "call_id", "rewritten_args"})
        for e in events
        if e.type is EventType.POLICY_DECISION and e.policy is not None
    ]


def result_of(events: list[Event]) -> tuple[str, bool]:
    [response] = [e for e in events if e.type is EventType.TOOL_RESPONSE]
    [result] = response.tool_results
    return result.output, result.is_error


# Rules


def test_conditions_test_the_arguments_at_a_dotted_path() -> None:
    args = {"payment": {"amount": 120, "to": "bob"}, "path": "/srv/docs/a.txt", "tags": ["x"]}
    holds = [
        (("payment.amount", "gt", 100), True),
        (("payment.amount", "le", 100), False),
        (("payment.to", "in", ["bob", "eve"]), True),
        (("payment.to", "not_in", ["bob"]), False),
        (("path", "starts_with", "/srv/docs/"), True),
        (("path", "not_starts_with", "/srv/docs/"), False),
        (("path", "matches", r"\.txt$"), True),
        (("tags", "contains", "x"), True),
        (("tags.0", "eq", "x"), True),
        (("tags.1", "eq", "x"), False),
        (("payment.currency", "missing", None), True),
        (("payment.currency", "exists", None), False),
        (("path", "gt", 3), False),  # a text is never greater than a number
    ]
    for (arg, op, value), expected in holds:
        condition = rule(action="deny", when=[{"arg": arg, "op": op, "value": value}]).when[0]
        assert condition.holds(args) is expected, (arg, op, value)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"action": "rewrite"}, "needs the arguments to set"),
        ({"action": "deny", "set": {"a": 1}}, "only a rewrite rule sets arguments"),
        ({"target": "model", "action": "ask"}, "can only be allowed or denied"),
        ({"action": "deny", "when": [{"arg": "a", "op": "gt", "value": "x"}]}, "greater than"),
        ({"action": "deny", "when": [{"arg": "a", "op": "matches", "value": "("}]}, "regular"),
        ({"action": "deny", "when": [{"arg": "a", "op": "in", "value": 3}]}, "list of values"),
        ({"action": "maybe"}, "action"),
    ],
)
def test_a_rule_that_cannot_work_is_refused_saying_why(
    fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        rule(**fields)


def test_the_highest_priority_decides_and_equals_keep_their_order() -> None:
    engine = PolicyEngine.of(
        [
            rule(name="first", action="allow"),
            rule(name="second", action="deny"),
            rule(name="urgent", action="ask", priority=5, match="pa?"),
        ]
    )
    verdict = engine.decide("tool", "pay", {})
    assert verdict is not None and verdict.rule.name == "urgent"
    verdict = engine.decide("tool", "read", {})
    assert verdict is not None and verdict.rule.name == "first"
    assert engine.decide("agent", "read", {}) is None  # rules name their target


def test_the_approval_flag_is_an_ask_rule_for_that_tool_alone() -> None:
    [ask] = approval_rules(["pay*"])
    engine = PolicyEngine.of([ask])
    assert engine.decide("tool", "pay*", {}) is not None
    assert engine.decide("tool", "payroll", {}) is None  # the name is not a pattern


# Tool calls


async def test_a_denied_call_never_runs_and_the_model_reads_why(
    breakers: BreakerRegistry,
) -> None:
    limit = rule(
        name="limit",
        action="deny",
        match="pay",
        when=[{"arg": "amount", "op": "gt", "value": 100}],
        reason="payments over 100 need finance",
    )
    events = await run_turn(payer(limit), breakers=breakers)

    assert paid == []
    output, is_error = result_of(events)
    assert is_error
    assert (
        output == "denied by policy 'limit': payments over 100 need finance. The call did not run."
    )
    assert decisions(events) == [
        {
            "rule": "limit",
            "action": "deny",
            "subject": "pay",
            "call_id": "c1",
            "rewritten_args": None,
        }
    ]
    kinds = [e.type for e in events]
    assert kinds.index(EventType.POLICY_DECISION) < kinds.index(EventType.TOOL_RESPONSE)


async def test_a_rule_whose_conditions_do_not_hold_lets_the_call_run_unrecorded(
    breakers: BreakerRegistry,
) -> None:
    limit = rule(action="deny", when=[{"arg": "amount", "op": "gt", "value": 100}])
    events = await run_turn(payer(limit, amount=20), breakers=breakers)
    assert paid == [{"amount": 20, "to": "bob"}]
    assert decisions(events) == []


async def test_a_rewrite_runs_the_call_with_the_rule_s_arguments(
    breakers: BreakerRegistry,
) -> None:
    cap = rule(
        name="cap",
        action="rewrite",
        when=[{"arg": "amount", "op": "gt", "value": 100}],
        set={"amount": 100},
    )
    events = await run_turn(payer(cap), breakers=breakers)
    assert paid == [{"amount": 100, "to": "bob"}]
    [decision] = decisions(events)
    assert decision["rewritten_args"] == {"amount": 100, "to": "bob"}
    assert result_of(events) == ("paid 100.0 to bob", False)


async def test_an_ask_rule_waits_for_a_person_who_sees_the_arguments_that_will_run(
    breakers: BreakerRegistry,
) -> None:
    ask = rule(name="big", action="ask", when=[{"arg": "amount", "op": "ge", "value": 200}])
    approve = ApprovalDecision(
        call_id="c1", args_hash=args_hash("pay", {"amount": 250.0, "to": "bob"}), decision="approve"
    )
    events = await run_turn(payer(ask), approve, breakers=breakers)
    kinds = [e.type for e in events]
    assert kinds.index(EventType.POLICY_DECISION) < kinds.index(EventType.APPROVAL_REQUEST)
    assert paid == [{"amount": 250.0, "to": "bob"}]


async def test_an_allow_rule_above_the_approval_flag_lets_small_calls_through(
    breakers: BreakerRegistry,
) -> None:
    small = rule(name="small", action="allow", when=[{"arg": "amount", "op": "lt", "value": 50}])
    agent = payer(small, amount=20, approval=ApprovalPolicy(tools=frozenset({"pay"})))
    events = await run_turn(agent, breakers=breakers)
    assert EventType.APPROVAL_REQUEST not in [e.type for e in events]
    assert [d["action"] for d in decisions(events)] == ["allow"]
    assert paid == [{"amount": 20, "to": "bob"}]


class Rounding(Hook):
    """Rounds every amount down to a whole number before the call."""

    name = "rounding"

    async def before_tool(self, ctx: Any, call: Any) -> Any:
        return call.model_copy(update={"args": {**call.args, "amount": int(call.args["amount"])}})


async def test_hooks_run_before_the_policy_so_it_judges_what_will_run(
    breakers: BreakerRegistry,
) -> None:
    ask = rule(name="ask", action="ask")
    rounded = {"amount": 250, "to": "bob"}
    approve = ApprovalDecision(
        call_id="c1", args_hash=args_hash("pay", rounded), decision="approve"
    )
    agent = payer(ask, amount=250.7, hooks=[Rounding()])
    events = await run_turn(agent, approve, breakers=breakers)
    [request] = [e for e in events if e.type is EventType.APPROVAL_REQUEST]
    assert request.approval is not None and request.approval.args == rounded
    assert paid == [rounded]


# Sub-agent and model calls


async def test_an_agent_rule_denies_a_call_of_an_agent_used_as_a_tool(
    breakers: BreakerRegistry,
) -> None:
    helper = LlmAgent("helper", model=ScriptedModel([reply("helped")]))
    model = ScriptedModel([tool_call("helper", "c1", request="help"), reply("done")])
    no_helper = rule(name="no_helper", target="agent", match="helper", action="deny")
    agent = LlmAgent("boss", model=model, tools=[AgentTool(helper)], policies=[no_helper])
    events = await run_turn(agent, breakers=breakers)
    assert "helper" not in {e.author for e in events}
    output, is_error = result_of(events)
    assert is_error and output.startswith("denied by policy 'no_helper'")
    assert decisions(events)[0]["subject"] == "helper"


async def test_a_denied_model_call_ends_the_agent_with_policy_denied(
    breakers: BreakerRegistry,
) -> None:
    model = ScriptedModel([tool_call("pay", "c1", amount=1, to="bob"), reply("done")])
    one_call = rule(
        name="one_call",
        target="model",
        action="deny",
        when=[{"arg": "model_calls", "op": "ge", "value": 1}],
        reason="one model call a turn",
    )
    agent = LlmAgent("payer", model=model, tools=[pay], policies=[one_call])
    events = await run_turn(agent, breakers=breakers)
    assert paid == [{"amount": 1, "to": "bob"}]  # the first call went ahead
    assert decisions(events)[0]["action"] == "deny"
    [error] = [e for e in events if e.type is EventType.ERROR]
    assert error.error is not None and error.error.code == "policy_denied"
    assert "one model call a turn" in error.error.message
    assert events[-1] is error


def test_specs_carry_policies_and_the_approval_flag_becomes_a_rule() -> None:
    registry = ToolRegistry()
    registry.register_tool(pay)
    spec = AgentSpec.model_validate(
        {
            "name": "payer",
            "model": "m",
            "tools": [{"name": "pay", "requires_approval": True}],
            "policies": [{"name": "cap", "action": "rewrite", "set": {"amount": 1}}],
        }
    )
    agent = build_agent(spec, models={"m": ScriptedModel([reply("hi")])}, tools=registry)
    assert isinstance(agent, LlmAgent)
    assert [(r.name, r.action.value) for r in agent.policy.rules] == [
        ("cap", "rewrite"),
        ("requires_approval", "ask"),
    ]


@pytest.mark.parametrize(
    ("reason", "refusal"),
    [
        ("Powers are not allowed here.", "denied by policy 'r': Powers are not allowed here."),
        ("Really not!", "denied by policy 'r': Really not!"),
        ("payments over 100 need finance", "denied by policy 'r': payments over 100 need finance."),
        ("", "denied by policy 'r'."),
    ],
)
def test_a_refusal_ends_its_reason_with_one_stop(reason: str, refusal: str) -> None:
    engine = PolicyEngine.of([PolicyRule(name="r", action="deny", reason=reason)])
    verdict = engine.decide("tool", "pay", {})
    assert verdict is not None and verdict.refusal() == f"{refusal} The call did not run."
