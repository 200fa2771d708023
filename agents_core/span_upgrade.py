"""Upgrading events stored before spans (schema version 1) to version 2.

Version 1 events carry no ``span_id``, ``parent_span_id`` or ``started_at``; ``upgrade``
works them out from what the events do say, the way the runner assigns them now: an
agent's span from its ``agent_start`` to the ``agent_end`` of the same agent on the same
branch; a model call's from its latency before its ``agent_message``; a tool call's
from the model's call to its ``tool_response``; a wait's from the ``approval_request``
to its decision; an agent run as a tool (branch segment ``<agent>@<call id>``) inside
that call. Ids are derived from the event ids, so upgrading twice gives the same ids.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from agents_core.events import SCHEMA_VERSION, EventType

_NAMESPACE = uuid.UUID("5d1e5c9e-3f0b-4d8c-9a55-6a3f1f0b2c71")


def span_id_for(event_id: str, role: str = "") -> str:
    """The span id a version 1 event gets (stable: the same event, the same id)."""
    return uuid.uuid5(_NAMESPACE, f"{event_id}:{role}").hex


@dataclass(slots=True)
class _Invocation:
    """What one invocation's events opened so far."""

    agents: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    """branch -> open agent runs on it, innermost last: (author, span id, started)."""
    calls: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    """call id -> (tool span id, the span it happened in)."""
    waits: dict[str, tuple[str, str]] = field(default_factory=dict)
    """call id -> (wait span id, when it began)."""
    parked: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    """(branch, author) -> (span id, started) of agents running when the run parked:
    each goes on in its span when it starts again."""

    def agent_span(self, branch: str | None, author: str | None = None) -> str | None:
        """The innermost open agent run on ``branch`` (``author``'s, if it has one
        there) or on its nearest ancestor branch; for an agent run as a tool, the call."""
        current = branch or ""
        while current:
            stack = self.agents.get(current)
            if stack:
                own = [span for who, span, _ in stack if who == author]
                return own[-1] if own else stack[-1][1]
            head, _, last = current.rpartition(".")
            if "@" in last and (call := self.calls.get(last.rsplit("@", 1)[1])):
                return call[0]
            current = head
        return None


def upgrade(wires: Iterable[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    """A session's events (wire form, seq order) with version 1 ones upgraded."""
    invocations: dict[str, _Invocation] = {}
    for wire in wires:
        event = dict(wire)
        if event.get("schema_version", 1) < SCHEMA_VERSION:
            inv = invocations.setdefault(event["invocation_id"], _Invocation())
            _UPGRADES.get(event["type"], _other)(inv, event)
            event["schema_version"] = SCHEMA_VERSION
        yield event


def _agent_start(inv: _Invocation, event: dict[str, Any]) -> None:
    branch = event.get("branch") or ""
    parent = inv.agent_span(branch)
    if parent is None:  # the first agent on a branch run as a tool: inside the call
        parent = inv.agent_span(branch + ".")
    span, started = inv.parked.pop(
        (branch, event["author"]), (span_id_for(event["id"]), event["created_at"])
    )
    event.update(span_id=span, parent_span_id=parent)
    inv.agents.setdefault(branch, []).append((event["author"], span, started))


def _run_parked(inv: _Invocation, event: dict[str, Any]) -> None:
    """The agents running stop here, to go on in their spans once the run does."""
    _other(inv, event)
    for branch, stack in inv.agents.items():
        for author, span, started in stack:
            inv.parked[(branch, author)] = (span, started)
    inv.agents.clear()


def _agent_end(inv: _Invocation, event: dict[str, Any]) -> None:
    stack = inv.agents.get(event.get("branch") or "", [])
    index = next((i for i in range(len(stack) - 1, -1, -1) if stack[i][0] == event["author"]), -1)
    if index < 0:
        _other(inv, event)
        return
    _, span, started = stack.pop(index)
    event.update(
        span_id=span, parent_span_id=inv.agent_span(event.get("branch")), started_at=started
    )


def _agent_message(inv: _Invocation, event: dict[str, Any]) -> None:
    parent = inv.agent_span(event.get("branch"), event["author"])
    event.update(
        span_id=span_id_for(event["id"]),
        parent_span_id=parent,
        started_at=_before(event["created_at"], event.get("latency_ms")),
    )
    parts = []
    for part in event.get("parts", ()):
        if part.get("kind") == "tool_call":
            part = {**part, "span_id": span_id_for(event["id"], part["call_id"])}
            inv.calls[part["call_id"]] = (part["span_id"], parent)
        parts.append(part)
    event["parts"] = parts


def _tool_response(inv: _Invocation, event: dict[str, Any]) -> None:
    call_id = next((p["call_id"] for p in event.get("parts", ()) if "call_id" in p), None)
    call = inv.calls.get(call_id or "")
    if call is None:
        _other(inv, event)
        return
    event.update(span_id=call[0], parent_span_id=call[1])
    if event.get("latency_ms") is not None:
        event["started_at"] = _before(event["created_at"], event["latency_ms"])


def _approval_request(inv: _Invocation, event: dict[str, Any]) -> None:
    call_id = (event.get("approval") or {}).get("call_id", "")
    span = span_id_for(event["id"])
    inv.waits[call_id] = (span, event["created_at"])
    tool = inv.calls.get(call_id)
    event.update(span_id=span, parent_span_id=tool[0] if tool else None)


def _approval_decision(inv: _Invocation, event: dict[str, Any]) -> None:
    call_id = (event.get("approval") or {}).get("call_id", "")
    wait, tool = inv.waits.pop(call_id, None), inv.calls.get(call_id)
    if wait is None:
        _other(inv, event)
        return
    event.update(span_id=wait[0], parent_span_id=tool[0] if tool else None, started_at=wait[1])


def _other(inv: _Invocation, event: dict[str, Any]) -> None:
    event["parent_span_id"] = inv.agent_span(event.get("branch"), event.get("author"))


def _before(created_at: str, latency_ms: float | None) -> str | None:
    if latency_ms is None:
        return None
    return (datetime.fromisoformat(created_at) - timedelta(milliseconds=latency_ms)).isoformat()


_UPGRADES = {
    EventType.AGENT_START: _agent_start,
    EventType.AGENT_END: _agent_end,
    EventType.AGENT_MESSAGE: _agent_message,
    EventType.TOOL_RESPONSE: _tool_response,
    EventType.APPROVAL_REQUEST: _approval_request,
    EventType.APPROVAL_DECISION: _approval_decision,
    EventType.RUN_PARKED: _run_parked,
}
