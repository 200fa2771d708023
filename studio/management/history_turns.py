"""One generated run's events, in their wire form (``studio.management.history``).

A turn is what the runner stores for it: the user's message, the agent's start, model
calls with tool calls and the tools' responses (sometimes after a person's approval or
denial), then either the final answer and the agent's end, or the terminal error that
ended it. Every payload is what ``agents_core.events.Event.to_wire()`` would give for
the same event (schema version 2, span ids included), so readers and ``SpanTree`` see
generated runs exactly as real ones. Ids come from the generator's ``random.Random``:
the same seed writes the same history.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from agents_core import events as core_events
from agents_core.approvals import args_hash
from studio import costs
from studio.models import Event, RunStatus, Session

TOOLS = ("calculator", "search", "read_file")
BLANK_WIRE: dict[str, Any] = core_events.Event(
    type=core_events.EventType.USER_MESSAGE, invocation_id="-", session_id="-", author="-"
).to_wire()
"""Every field of an event's wire form at its default: the contract decides the shape."""
BLANK_WIRE_ERROR: dict[str, Any] = core_events.ErrorInfo(code="-", message="-").model_dump(
    mode="json"
)
ENDING_ERRORS: dict[str, tuple[str, str]] = {
    RunStatus.FAILED: ("model_error", "the model provider answered 503: overloaded"),
    RunStatus.CANCELLED: ("cancelled", "cancelled by request"),
    RunStatus.INTERRUPTED: ("interrupted", "the server restarted while the run was running"),
}
"""The terminal error (code, message) of each way a run fails."""


def new_id(rng: random.Random) -> uuid.UUID:
    """A random version-4 UUID drawn from ``rng`` (repeatable, unlike ``uuid4``)."""
    return uuid.UUID(int=rng.getrandbits(128), version=4)


def wire_time(moment: datetime) -> str:
    """``moment`` (UTC) as pydantic writes it in the wire form."""
    return moment.isoformat().replace("+00:00", "Z")


@dataclass(slots=True)
class Turn:
    """One run's events being made: the clock, the seq, the rows."""

    session: Session
    invocation_id: str
    seq: int
    clock: datetime
    agent: str
    rng: random.Random
    model: str = ""
    """The model the agent calls: what ``end_run``'s attribution stamps on its calls."""
    price: costs.Price | None = None
    """Its price: each call's cost is stamped as the session store stamps a real one."""
    events: list[Event] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, kind: str, author: str, **fields: Any) -> dict[str, Any]:
        """Store-ready event ``kind`` by ``author`` one seq and a few ms after the last."""
        self.seq += 1
        self.clock += timedelta(milliseconds=self.rng.randint(1, 40))
        wire: dict[str, Any] = {
            **BLANK_WIRE,
            "id": new_id(self.rng).hex,
            "type": kind,
            "invocation_id": self.invocation_id,
            "session_id": self.session.key,
            "seq": self.seq,
            "author": author,
            "branch": None if author == "user" else self.agent,
            "actions": {**BLANK_WIRE["actions"], "state_delta": {}},
            "hooks": [],
            "created_at": wire_time(self.clock),
            **fields,
        }
        text = "".join(p.get("text", "") for p in wire["parts"] if p["kind"] == "text")
        self.events.append(
            Event(
                id=new_id(self.rng),
                session=self.session,
                seq=self.seq,
                type=kind,
                author=author,
                branch=wire["branch"] or "",
                invocation_id=self.invocation_id,
                text=text,
                payload=wire,
                schema_version=wire["schema_version"],
                usage=wire["usage"],
                created_at=self.clock,
            )
        )
        return wire

    def model_call(self, agent_span: str, parts: list[dict[str, Any]]) -> None:
        started = self.clock
        latency = self.rng.uniform(150, 2_500)
        self.clock += timedelta(milliseconds=latency)
        usage = {"input_tokens": self.rng.randint(200, 4_000), "output_tokens": 0}
        usage["output_tokens"] = self.rng.randint(5, 600)
        usage["cached_input_tokens"] = usage["reasoning_tokens"] = 0
        self.input_tokens += usage["input_tokens"]
        self.output_tokens += usage["output_tokens"]
        counted = {k: usage[k] for k in ("input_tokens", "output_tokens", "cached_input_tokens")}
        cost = None if self.price is None else costs.call_cost(self.price, **counted)
        self.add(
            "agent_message",
            self.agent,
            parts=parts,
            usage=usage,
            latency_ms=round(latency, 3),
            span_id=new_id(self.rng).hex,
            parent_span_id=agent_span,
            started_at=wire_time(started),
            cost=None if cost is None else cost.model_dump(mode="json"),
        )
        call = self.events[-1]
        call.model = self.model
        if cost is not None:
            call.cost, call.cost_currency = cost.amount, cost.currency


def play(turn: Turn, status: RunStatus, *, tool_rounds: int) -> None:
    """Add a whole run to ``turn``: ``tool_rounds`` tool calls, then its ``status``'s end."""
    rng = turn.rng
    turn.add("user_message", "user", parts=[{"kind": "text", "text": question(rng)}])
    agent_span = new_id(rng).hex
    start = turn.add("agent_start", turn.agent, span_id=agent_span)
    for _ in range(tool_rounds):
        _tool_round(turn, agent_span, rng)
    if status in ENDING_ERRORS:
        _fail(turn, status, agent_span)
        return
    answer = [{"kind": "text", "text": f"The answer is {rng.randint(1, 999)}."}]
    turn.model_call(agent_span, answer)
    turn.add("agent_end", turn.agent, span_id=agent_span, started_at=start["created_at"])


def _fail(turn: Turn, status: RunStatus, agent_span: str) -> None:
    """The terminal error: a model error the runner stores inside the agent's span, or
    the one ``end_run`` stores for a cancelled or interrupted run (outside any span)."""
    code, message = ENDING_ERRORS[status]
    error = {**BLANK_WIRE_ERROR, "code": code, "message": message}
    parent = agent_span if status == RunStatus.FAILED else None
    turn.add("error", turn.agent, error=error, parent_span_id=parent)


def _tool_round(turn: Turn, agent_span: str, rng: random.Random) -> None:
    tool, call_id, tool_span = rng.choice(TOOLS), f"call_{new_id(rng).hex[:12]}", new_id(rng).hex
    args = {"expression": f"{rng.randint(1, 99)} * {rng.randint(1, 99)}"}
    call = {"kind": "tool_call", "call_id": call_id, "name": tool, "args": args}
    turn.model_call(agent_span, [{**call, "span_id": tool_span, "retry_of": None}])
    denied = rng.random() < 0.05 and _approval(turn, call, tool_span, rng)
    started, latency = turn.clock, rng.uniform(1, 800)
    turn.clock += timedelta(milliseconds=latency)
    refusal = f"denied: a person declined this call to {tool!r}; it did not run."
    response = {
        "kind": "tool_response",
        "call_id": call_id,
        "name": tool,
        "result": refusal if denied else str(rng.randint(1, 9_999)),
        "is_error": denied,
    }
    turn.add(
        "tool_response",
        turn.agent,
        parts=[response],
        latency_ms=round(latency, 3),
        span_id=tool_span,
        parent_span_id=agent_span,
        started_at=wire_time(started),
    )


def _approval(turn: Turn, call: dict[str, Any], tool_span: str, rng: random.Random) -> bool:
    """A wait for a person's decision on ``call``; whether they denied it."""
    asked_for = {
        "call_id": call["call_id"],
        "tool": call["name"],
        "args": call["args"],
        "args_hash": args_hash(call["name"], call["args"]),
        "args_schema": None,
        "decision": None,
        "edited_args": None,
        "reason": "",
        "decided_by": None,
        "timeout_s": 300.0,
        "on_timeout": "deny",
    }
    wait = new_id(rng).hex
    asked = turn.add(
        "approval_request", turn.agent, approval=asked_for, span_id=wait, parent_span_id=tool_span
    )
    denied = rng.random() < 0.3
    decision = {**asked_for, "decision": "deny" if denied else "approve", "decided_by": "demo"}
    turn.clock += timedelta(seconds=rng.randint(2, 90))
    turn.add(
        "approval_decision",
        turn.agent,
        approval=decision,
        span_id=wait,
        parent_span_id=tool_span,
        started_at=asked["created_at"],
    )
    return denied


def question(rng: random.Random) -> str:
    subjects = ("the invoice", "a refund", "solar power", "the roadmap", "a poem", "the logs")
    asks = ("What is", "Summarise", "Explain", "Check", "Work out", "Draft")
    return f"{rng.choice(asks)} {rng.choice(subjects)} {rng.randint(1, 500)}"
