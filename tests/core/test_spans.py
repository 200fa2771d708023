"""Spans derived from a run's events (``agents_core.spans``), live and after the fact,
and version 1 events upgraded to carry them (``agents_core.span_upgrade``)."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import pytest

from agents_core import (
    Event,
    EventType,
    InMemorySessionService,
    LlmAgent,
    LoopAgent,
    ParallelAgent,
    SequentialAgent,
    Usage,
    function_tool,
)
from agents_core.approvals import ApprovalDecision, ApprovalPolicy
from agents_core.compaction import CompactionConfig
from agents_core.contracts import Cost
from agents_core.events import new_id
from agents_core.llm.resilience import BreakerRegistry
from agents_core.llm.scripted import ScriptedResponse
from agents_core.memory import InMemoryMemoryService, KeyFacts, MemoryConfig
from agents_core.policies import Condition, PolicyRule
from agents_core.span_costs import SpanCost
from agents_core.span_upgrade import upgrade
from agents_core.spans import Span, SpanTree, spans_of
from agents_core.testing import ScriptedModel, reply, tool_call
from agents_core.tools.agent_tool import AgentTool
from agents_core.tools.control import exit_loop_tool
from tests.core.run_helpers import complete, make_runner, run_turn


@function_tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    await asyncio.sleep(0.01)
    return a + b


def team() -> SequentialAgent:
    """Every kind of span: parallel branches, an agent called as a tool, a loop and a
    call that waits for approval."""
    helper = LlmAgent("helper", model=ScriptedModel([reply("helped")]))
    lead = LlmAgent(
        "lead",
        model=ScriptedModel(
            [
                tool_call("helper", "t1", request="help"),
                tool_call("add", "a1", a=1, b=2),
                reply("led"),
            ]
        ),
        tools=[AgentTool(helper), add],
        approval=ApprovalPolicy(tools=frozenset({"add"})),
    )
    fan = ParallelAgent(
        "fan",
        sub_agents=[
            LlmAgent("left", model=ScriptedModel([reply("l")])),
            LlmAgent("right", model=ScriptedModel([reply("r")])),
        ],
    )
    loop = LoopAgent(
        "loop",
        max_iterations=3,
        sub_agents=[
            LlmAgent("pass_", model=ScriptedModel([reply("once")], loop=True)),
            LlmAgent(
                "stop",
                model=ScriptedModel([reply("again"), tool_call("exit_loop")], loop=False),
                tools=[exit_loop_tool],
            ),
        ],
    )
    return SequentialAgent("root", sub_agents=[lead, fan, loop])


async def run_team(sessions: InMemorySessionService, breakers: BreakerRegistry) -> list[Event]:
    runner = make_runner(team(), sessions, breakers)
    events: list[Event] = []
    async for event in runner.astream(user_id="ada", session_id="s1", message="go"):
        events.append(event)
        if event.type is EventType.APPROVAL_REQUEST and event.approval is not None:
            await asyncio.sleep(0.02)  # a person takes a moment
            runner.approvals.decide(
                ApprovalDecision(
                    call_id=event.approval.call_id,
                    args_hash=event.approval.args_hash,
                    decision="approve",
                    decided_by="ada",
                )
            )
    return complete(events)


def by_id(spans: list[Span]) -> dict[str, Span]:
    return {span.span_id: span for span in spans}


def shape(spans: list[Span]) -> list[tuple[str, str, str | None]]:
    """Each span as (kind, name, its parent's name), in the order they began."""
    index = by_id(spans)
    parent = lambda s: index[s.parent_span_id].name if s.parent_span_id else None  # noqa: E731
    return [(s.kind, s.name, parent(s)) for s in spans]


async def test_every_agent_model_tool_and_wait_is_a_span_in_its_parent(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    events = await run_team(sessions, breakers)
    spans = spans_of(e.to_wire() for e in events)

    assert all(s.status == "ok" and s.end is not None for s in spans), spans
    kinds = shape(spans)
    assert ("agent", "root", None) in kinds
    assert ("agent", "lead", "root") in kinds
    assert ("tool", "helper", "lead") in kinds
    assert ("agent", "helper", "helper") in kinds  # the agent runs inside its tool call
    assert ("human", "approval", "add") in kinds
    assert ("agent", "left", "fan") in kinds and ("agent", "right", "fan") in kinds
    iterations = [s.attributes.get("iteration") for s in spans if s.name == "pass_"]
    assert iterations == [1, 2]
    models = [s for s in spans if s.kind == "model"]
    assert all(s.input_tokens is not None and s.parent_span_id for s in models)
    index = by_id(spans)
    for span in spans:  # children lie within their parents
        if span.parent_span_id:
            parent = index[span.parent_span_id]
            assert parent.start <= span.start and span.end <= parent.end  # type: ignore[operator]
    add_span = next(s for s in spans if s.name == "add")
    wait = next(s for s in spans if s.kind == "human")
    assert add_span.attributes["outcome"] == "done" and add_span.attributes["result"] == "3"
    assert wait.attributes["decision"] == "approve" and wait.duration_ms >= 20  # type: ignore[operator]
    assert add_span.attributes["ran_from"] >= wait.end  # the tool ran once approved


async def test_a_live_run_has_open_spans_until_their_events_arrive(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    events = await run_team(sessions, breakers)
    request = next(i for i, e in enumerate(events) if e.type is EventType.APPROVAL_REQUEST)
    tree = SpanTree().observe_all(e.to_wire() for e in events[: request + 1])

    open_spans = {(s.kind, s.name) for s in tree.spans() if s.end is None}
    assert open_spans == {
        ("agent", "root"),
        ("agent", "lead"),
        ("tool", "add"),
        ("human", "approval"),
    }
    assert all(s.status == "open" for s in tree.spans() if s.end is None)
    last = events[request].created_at
    tree.finish(last, error="cancelled: cancelled by request")
    assert all(s.end is not None for s in tree.spans())
    assert {s.status for s in tree.spans() if s.kind == "human"} == {"error"}


def downgraded(wire: dict[str, Any]) -> dict[str, Any]:
    """``wire`` as a version 1 event stored it: no span fields."""
    old = {k: v for k, v in wire.items() if k not in {"span_id", "parent_span_id", "started_at"}}
    old["parts"] = [{k: v for k, v in p.items() if k != "span_id"} for p in wire["parts"]]
    return {**old, "schema_version": 1}


async def test_version_1_events_upgrade_to_the_same_span_tree(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    wires = [e.to_wire() for e in await run_team(sessions, breakers)]
    upgraded = list(upgrade(downgraded(w) for w in wires))

    assert all(w["schema_version"] == 2 for w in upgraded)
    assert [Event.model_validate(w).type for w in upgraded] == [w["type"] for w in wires]
    assert shape(spans_of(upgraded)) == shape(spans_of(wires))
    again = list(upgrade(downgraded(w) for w in wires))
    assert [w.get("span_id") for w in again] == [w.get("span_id") for w in upgraded]
    assert list(upgrade(wires)) == wires  # version 2 events are left as they are


def test_new_ids_are_distinct_random_uuid4s_as_32_hex_digits() -> None:
    ids = [new_id() for _ in range(10_000)]

    assert len(set(ids)) == len(ids)
    for value in ids[:1_000]:
        parsed = uuid.UUID(value)
        assert parsed.hex == value
        assert (parsed.version, parsed.variant) == (4, uuid.RFC_4122)


@pytest.mark.filterwarnings("ignore:.*fork.*:DeprecationWarning")  # xdist's threads
def test_a_forked_process_makes_none_of_the_ids_its_parent_makes_next() -> None:
    """Ids are read from the system some at a time: a child must not hand out the ones
    its parent kept for its own next calls."""
    new_id()  # the parent now holds ids it has read and not handed out
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the child reports through the pipe)
        os.write(writer, " ".join(new_id() for _ in range(3)).encode())
        os._exit(0)
    os.close(writer)
    with os.fdopen(reader) as pipe:
        in_child = pipe.read().split()
    os.waitpid(child, 0)
    in_parent = [new_id() for _ in range(3)]

    assert len(in_child) == 3
    assert not set(in_child) & set(in_parent)


def priced(events: list[Event], prices: Mapping[str, Cost | None]) -> list[dict[str, Any]]:
    """The events' wire form, each model answer costing its agent's price in ``prices``
    (``None``, or an agent left out: unknown), as a session store stamps them."""
    wires = []
    for event in events:
        answer = event.type is EventType.AGENT_MESSAGE and not event.partial and event.span_id
        cost = prices.get(event.author) if answer else None
        wires.append((event.model_copy(update={"cost": cost}) if cost else event).to_wire())
    return wires


def named(spans: list[Span], kind: str, name: str) -> Span:
    return next(s for s in spans if s.kind == kind and s.name == name)


def usd(amount: str) -> Cost:
    return Cost(amount=Decimal(amount), currency="USD")


async def test_a_model_span_carries_its_calls_cost_and_agents_the_exact_sum_beneath(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    events = await run_team(sessions, breakers)
    names = {"root", "lead", "helper", "left", "right", "pass_", "stop"}
    prices = {name: usd("0.1000000000") for name in names} | {"helper": usd("0.2")}
    spans = spans_of(priced(events, prices))

    lead_calls = [s for s in spans if s.kind == "model" and s.author == "lead"]
    assert len(lead_calls) == 3
    one = SpanCost(amount=Decimal("0.1"), currency="USD", complete=True, calls=1, unknown=0)
    assert all(s.cost == one for s in lead_calls)
    # The helper ran as a tool of the lead: its call counts for the tool call and the lead.
    helper = SpanCost(amount=Decimal("0.2"), currency="USD", complete=True, calls=1, unknown=0)
    assert named(spans, "tool", "helper").cost == helper
    lead = named(spans, "agent", "lead").cost
    assert lead is not None
    assert (lead.amount, lead.calls, lead.complete) == (Decimal("0.5"), 4, True)
    assert named(spans, "agent", "lead").model_dump(mode="json")["cost"]["amount"] == "0.5000000000"
    root = named(spans, "agent", "root").cost
    models = sum(1 for s in spans if s.kind == "model")
    assert root is not None and root.calls == models and root.complete
    assert root.amount == Decimal("0.1") * (models - 1) + Decimal("0.2")
    # Spans with no model call beneath them cost nothing known or unknown: no cost.
    assert named(spans, "tool", "add").cost is None
    assert named(spans, "human", "approval").cost is None


async def test_an_unknown_cost_is_never_zero_and_makes_every_sum_above_it_incomplete(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    events = await run_team(sessions, breakers)
    prices = {name: usd("0.0000000003") for name in ("lead", "helper", "left", "pass_", "stop")}
    spans = spans_of(priced(events, prices))  # "right" has no price

    right_call = next(s for s in spans if s.kind == "model" and s.author == "right")
    unknown = SpanCost(amount=None, currency=None, complete=False, calls=1, unknown=1)
    assert right_call.cost == unknown
    assert right_call.model_dump(mode="json")["cost"]["amount"] is None
    fan = named(spans, "agent", "fan").cost
    part = SpanCost(amount=Decimal("3E-10"), currency="USD", complete=False, calls=2, unknown=1)
    assert fan == part
    assert named(spans, "agent", "fan").model_dump(mode="json")["cost"]["amount"] == "0.0000000003"
    root = named(spans, "agent", "root").cost
    assert root is not None and not root.complete and root.unknown == 1 and root.amount
    assert named(spans, "agent", "lead").cost.complete  # type: ignore[union-attr]


async def test_calls_in_more_than_one_currency_have_no_single_total(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    events = await run_team(sessions, breakers)
    euro = Cost(amount=Decimal("0.25"), currency="EUR")
    prices = {"pass_": euro, "stop": usd("0.5"), "lead": usd("1"), "helper": usd("1")}
    spans = spans_of(priced(events, prices))

    loop = named(spans, "agent", "loop").cost
    assert loop is not None and (loop.amount, loop.currency, loop.complete) == (None, None, False)
    assert loop.unknown == 0  # every call's cost is known, just not in one currency
    assert all(s.cost.currency == "EUR" for s in spans if s.author == "pass_" and s.cost)
    lead = named(spans, "agent", "lead").cost
    assert lead is not None and (lead.amount, lead.currency) == (Decimal(4), "USD")


async def test_a_call_still_streaming_has_no_cost_yet(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    events = await run_team(sessions, breakers)
    wires = priced(events, {"lead": usd("0.01")})
    first_answer = next(
        i for i, w in enumerate(wires) if w["type"] == "agent_message" and w["author"] == "lead"
    )
    chunk = {**wires[first_answer], "partial": True, "seq": None, "cost": None}
    tree = SpanTree().observe_all([*wires[:first_answer], chunk])

    call = next(s for s in tree.spans() if s.kind == "model")
    assert call.end is None and call.cost is None
    assert named(tree.spans(), "agent", "lead").cost is None
    tree.observe(wires[first_answer])
    assert named(tree.spans(), "agent", "lead").cost.amount == Decimal("0.01")  # type: ignore[union-attr]


BIG = Condition(arg="a", op="gt", value=100)


async def test_a_rule_s_decision_on_a_call_is_on_that_call_s_span_not_a_model_call_s(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    rules = [
        PolicyRule(name="no_big", match="add", action="deny", when=[BIG], reason="too big"),
        PolicyRule(name="round", match="add", action="rewrite", set={"b": 0}, priority=-1),
        PolicyRule(name="models_ok", target="model", action="allow"),
    ]
    model = ScriptedModel(
        [tool_call("add", "c1", a=1000, b=1), tool_call("add", "c2", a=1, b=2), reply("done")]
    )
    agent = LlmAgent("lead", model=model, tools=[add], policies=rules)
    runner = make_runner(agent, sessions, breakers)
    stream = runner.astream(user_id="ada", session_id="s", message="go")
    events = complete([event async for event in stream])

    spans = spans_of(e.to_wire() for e in events)
    denied, rewritten = [s for s in spans if s.kind == "tool"]
    assert denied.attributes["policy"] == {"rule": "no_big", "action": "deny", "reason": "too big"}
    assert rewritten.attributes["policy"] == {
        "rule": "round",
        "action": "rewrite",
        "reason": "",
        "rewritten_args": {"a": 1, "b": 0},
    }
    assert rewritten.attributes["result"] == "1"  # ran with the rule's arguments
    assert not any("policy" in s.attributes for s in spans if s.kind != "tool")


async def test_the_key_facts_and_summary_calls_after_a_turn_are_model_spans_of_its_root(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    """The model calls a runner makes once its agent is done (saving key facts to memory,
    summarising the session) are spans under the root agent, timed, with their tokens and
    cost: a waterfall shows them and a run's wall time counts them as the model's."""
    used = Usage(input_tokens=90, output_tokens=12)
    model = ScriptedModel(
        [reply("Hello Ada."), reply("Welcome back.")],
        summaries=[ScriptedResponse(text='["Ada is the user"]', usage=used)] * 3,
    )
    runner = make_runner(
        LlmAgent("helper", model=model),
        sessions,
        breakers,
        memory=MemoryConfig(InMemoryMemoryService(), KeyFacts(model=model, agent="helper")),
        compaction=CompactionConfig(model, threshold=2, keep_last=1),
    )
    await run_turn(runner, "I am Ada")
    events = complete(await run_turn(runner, "I am back"))  # past the threshold: compacted
    saved, summary = events[-2:]
    assert (saved.type, summary.type) == (EventType.MEMORY_SAVED, EventType.COMPACTION)
    (answer,) = [e for e in events if e.type is EventType.AGENT_MESSAGE]
    prices = {answer.id: usd("0.0001"), saved.id: usd("0.0002"), summary.id: usd("0.0003")}
    spans = spans_of(
        (e.model_copy(update={"cost": prices[e.id]}) if e.id in prices else e).to_wire()
        for e in events
    )
    root = next(s for s in spans if s.parent_span_id is None)
    facts, summarised = named(spans, "model", "key facts"), named(spans, "model", "summary")
    for span, event in ((facts, saved), (summarised, summary)):
        assert span.parent_span_id == root.span_id and span.status == "ok"
        assert (span.input_tokens, span.output_tokens) == (90, 12)
        assert span.end == event.created_at and root.end is not None
        assert root.end <= span.start <= span.end  # after the agent was done
        assert event.latency_ms is not None and event.started_at == span.start
    assert facts.cost == SpanCost(
        amount=Decimal("0.0002"), currency="USD", complete=True, calls=1, unknown=0
    )
    assert root.cost == SpanCost(
        amount=Decimal("0.0006"), currency="USD", complete=True, calls=3, unknown=0
    )
