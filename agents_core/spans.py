"""Spans: where a run's time went, derived from its events.

Every agent run, model call, tool call, wait for a person (an approval, or the resume
of a paused run) and wait for a model's rate limit is a ``Span``, built from the events
that open and close it (``agents_core.events``, schema 2: each names its ``span_id`` and
``parent_span_id``). ``SpanTree`` follows events in their wire form (``Event.to_wire()``,
as stored and as streamed), in seq order, and hands out the spans so far, open ones (no
``end``) included: a live run draws while it runs. ``finish`` closes what it left open.

A span's ``cost`` is what the model calls in it cost (``SpanCost``): a model span's own
call, as its stored event was priced (``Event.cost``), and for an agent span, or the tool
span of an agent called as a tool, the exact sum of the calls beneath it.

This is the one place that knows what a span is: Studio's API, pages, exports, cost
roll-ups and OpenTelemetry export all read spans from here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from agents_core.contracts import Cost
from agents_core.events import EventType
from agents_core.span_contract import AFTER_TURN as AFTER_TURN
from agents_core.span_contract import AFTER_TURN_FAILED as AFTER_TURN_FAILED
from agents_core.span_contract import Span as Span
from agents_core.span_contract import SpanKind as SpanKind
from agents_core.span_contract import SpanStatus as SpanStatus
from agents_core.span_costs import SpanCost, sum_costs

PREVIEW_CHARS = 2_000
"""How much of a model's text or a tool's arguments and result a span carries."""

Wire = Mapping[str, Any]
SPAN_EVENT_TYPES: frozenset[str] = frozenset(
    {
        EventType.AGENT_START,
        EventType.AGENT_END,
        EventType.AGENT_MESSAGE,
        EventType.MEMORY_SAVED,
        EventType.COMPACTION,
        EventType.TOOL_RESPONSE,
        EventType.APPROVAL_REQUEST,
        EventType.APPROVAL_DECISION,
        EventType.USER_QUESTION,
        EventType.USER_ANSWER,
        EventType.RUN_PAUSED,
        EventType.RUN_RESUMED,
        EventType.RATE_LIMIT_WAITING,
        EventType.RATE_LIMIT_WAIT,
        EventType.MODEL_RETRY,
        EventType.ERROR,
        EventType.POLICY_DECISION,
        EventType.RUN_PARKED,
    }
)
"""The event types spans are made of (``SpanTree`` skips every other)."""
_WAIT_OPENED: Mapping[str, str] = {
    EventType.APPROVAL_REQUEST: "approval",
    EventType.USER_QUESTION: "question",
    EventType.RUN_PAUSED: "pause",
}
"""The events that open a wait for a person, and the wait's name."""
_WAIT_CLOSED = frozenset(
    {EventType.APPROVAL_DECISION, EventType.USER_ANSWER, EventType.RUN_RESUMED}
)


@dataclass(slots=True)
class _Open:
    """A span being built: the fields of its ``Span`` so far."""

    fields: dict[str, Any]
    attributes: dict[str, Any] = field(default_factory=dict)
    answered: bool = False
    """A model call whose answer arrived: its ``call_cost`` is known or known unknown."""
    call_cost: Cost | None = None

    def span(self, cost: SpanCost | None) -> Span:
        return Span.model_validate({**self.fields, "cost": cost, "attributes": self.attributes})


@dataclass(slots=True)
class SpanTree:
    """The spans of the events ``observe``-d so far, in the order they began."""

    _spans: dict[str, _Open] = field(default_factory=dict)
    _asked: dict[str, Any] = field(default_factory=dict)
    """The arguments of calls a model's message made with no span (an ingested tool span
    sent in a later batch answers them), by call id."""

    def observe(self, wire: Wire) -> None:
        self._observe(wire)
        if wire.get("ingested"):
            self._ingested(wire)

    def _observe(self, wire: Wire) -> None:
        kind = wire.get("type")
        if kind == EventType.AGENT_START:
            self._open(wire, "agent", wire["author"], _time(wire["created_at"]))
            self._agent(wire)
        elif kind == EventType.AGENT_END:
            self._close(wire, "ok")
        elif kind == EventType.AGENT_MESSAGE or kind in AFTER_TURN:
            self._model(wire)
        elif kind in _WAIT_OPENED or kind in _WAIT_CLOSED:
            self._wait(str(kind), wire)
        elif (read := _READERS.get(str(kind))) is not None:
            read(self, wire)

    def observe_all(self, wires: Iterable[Wire]) -> SpanTree:
        for wire in wires:
            self.observe(wire)
        return self

    def spans(self) -> list[Span]:
        costs = self._costs()
        return [built.span(costs.get(span_id)) for span_id, built in self._spans.items()]

    def finish(self, at: datetime, *, error: str | None = None) -> None:
        """Close the spans a run left open when it ended at ``at``: errors, saying
        ``error``, when it failed, was cancelled or interrupted."""
        for built in self._spans.values():
            parked = built.attributes.get("parked", False)  # never went on: it ends so
            if built.fields["end"] is None or (parked and error is not None):
                built.fields["end"] = built.fields["end"] or max(at, built.fields["start"])
                built.fields["status"] = "ok" if error is None else "error"
                if error is not None:
                    built.fields.setdefault("error", error)

    def _costs(self) -> dict[str, SpanCost]:
        """Each answered model call's cost, added to its own span and every span above it."""
        calls: dict[str, list[Cost | None]] = {}
        for span_id, built in self._spans.items():
            if not built.answered:
                continue
            at: str | None = span_id
            seen: set[str] = set()  # a parent loop in damaged events must not hang
            while at is not None and at in self._spans and at not in seen:
                seen.add(at)
                calls.setdefault(at, []).append(built.call_cost)
                at = self._spans[at].fields["parent_span_id"]
        return {span_id: sum_costs(costs) for span_id, costs in calls.items()}

    # Opening and closing

    def _parked(self, wire: Wire) -> None:
        """The execution stopped on a person: its agents' spans end here (``parked``)
        until the run's next execution starts them again. Calls and waits go on."""
        for built in self._spans.values():
            fields = built.fields
            ended = fields["kind"] != "agent" or fields["end"] is not None
            if ended or fields["invocation_id"] != wire["invocation_id"]:
                continue
            end = max(_time(wire["created_at"]), fields["start"])
            fields.update(end=end, end_seq=wire.get("seq"), status="ok")
            built.attributes["parked"] = True

    def _open(self, wire: Wire, kind: SpanKind, name: str, start: datetime) -> _Open | None:
        span_id = wire.get("span_id")
        if not span_id:
            return None  # an event from before spans (schema version 1, not upgraded)
        built = self._spans.get(span_id)
        if built is None:
            built = self._spans[span_id] = _Open(
                {
                    "span_id": span_id,
                    "parent_span_id": wire.get("parent_span_id"),
                    "kind": kind,
                    "name": name,
                    "author": wire["author"],
                    "branch": wire.get("branch"),
                    "invocation_id": wire["invocation_id"],
                    "start": start,
                    "end": None,
                    "start_seq": wire.get("seq"),
                }
            )
        elif built.attributes.pop("parked", False):  # it goes on after parking
            built.fields.update(end=None, end_seq=None, status="open")
            built.attributes["resumed"] = True
        elif built.fields["start_seq"] is None:
            built.fields["start_seq"] = wire.get("seq")
        return built

    def _close(self, wire: Wire, status: SpanStatus) -> _Open | None:
        built = self._spans.get(wire.get("span_id") or "")
        if built is None:
            return None
        end = max(_time(wire["created_at"]), built.fields["start"])
        built.fields.update(end=end, end_seq=wire.get("seq"), status=status)
        return built

    # Kinds

    def _agent(self, wire: Wire) -> None:
        built = self._spans.get(wire.get("span_id") or "")
        branch = wire.get("branch") or ""
        last = branch.rsplit(".", 1)[-1]
        if built is not None and "@" in last:
            suffix = last.rsplit("@", 1)[1]
            if suffix.isdigit():
                built.attributes["iteration"] = int(suffix)

    def _model(self, wire: Wire) -> None:
        calls = [p for p in wire.get("parts", ()) if p["kind"] == "tool_call"]
        if not wire.get("span_id"):  # no model call: the agent retrying lost calls
            for part in calls:
                self._tool_call(wire, part)
            return
        start = _time(wire.get("started_at") or wire["created_at"])
        built = self._open(wire, "model", AFTER_TURN.get(wire["type"], "model"), start)
        if built is None or wire.get("partial"):
            return
        built.fields["start"] = start  # the call began before its first streamed chunk
        texts = (p.get("text", "") for p in wire.get("parts", ()) if p["kind"] == "text")
        text = ("\n" if wire["type"] in AFTER_TURN else "").join(texts)  # facts a line each
        built.attributes["text"] = _clip(text)
        built.attributes["tool_calls"] = [p["name"] for p in calls]
        usage = wire.get("usage") or {}
        built.fields["input_tokens"] = usage.get("input_tokens")
        built.fields["cached_input_tokens"] = usage.get("cached_input_tokens")
        built.fields["output_tokens"] = usage.get("output_tokens")
        built.answered = True
        built.call_cost = Cost.model_validate(wire["cost"]) if wire.get("cost") else None
        self._close(wire, "ok")
        for part in calls:
            self._tool_call(wire, part)

    def _tool_call(self, message: Wire, part: Wire) -> None:
        span_id = part.get("span_id")
        if not span_id:
            self._asked[part["call_id"]] = part.get("args", {})
            return
        opened = {**message, "span_id": span_id, "parent_span_id": message.get("parent_span_id")}
        built = self._open(opened, "tool", part["name"], _time(message["created_at"]))
        if built is not None:
            built.attributes.update(call_id=part["call_id"], arguments=part.get("args", {}))
            if part.get("retry_of"):
                built.attributes["retry_of"] = part["retry_of"]

    def _tool_response(self, wire: Wire) -> None:
        """A tool span runs from the model's call to the response; within it, the tool
        itself ran for ``ran_ms`` from ``ran_from`` (after any wait for approval). A call
        that its model's message carried with no span (an ingested tool span sent in a
        later batch than its model's) opens its span here, from when the tool started;
        an ingested tool span starts then however it was opened: its OpenTelemetry span's
        times are what happened."""
        part = next((p for p in wire.get("parts", ()) if p["kind"] == "tool_response"), None)
        if part is not None and wire.get("started_at") and wire.get("span_id") not in self._spans:
            opened = self._open(wire, "tool", part["name"], _time(wire["started_at"]))
            if opened is not None:
                opened.attributes["call_id"] = part["call_id"]
                if part["call_id"] in self._asked:  # as the model asked for it
                    opened.attributes["arguments"] = self._asked.pop(part["call_id"])
        outcome = _outcome(part) if part is not None else "done"
        built = self._close(wire, "ok" if outcome == "done" else "error")
        if built is None:
            return
        ran_from, ran_ms = wire.get("started_at"), wire.get("latency_ms")
        if ran_from and ran_ms is not None:  # responses are stored in call order, so the
            end = _time(ran_from) + timedelta(milliseconds=ran_ms)  # tool's own end
            if wire.get("ingested"):
                built.fields["start"] = _time(ran_from)
            built.fields["end"] = max(end, built.fields["start"])
            built.attributes.update(ran_from=_time(ran_from), ran_ms=ran_ms)
        if part is not None:
            built.attributes["result"] = _clip(part["result"])
            built.attributes["outcome"] = outcome
            if outcome != "done":
                built.fields["error"] = _clip(part["result"])
        transfer = (wire.get("actions") or {}).get("transfer_to_agent")
        if transfer:
            built.attributes["transfer_to"] = transfer

    def _ingested(self, wire: Wire) -> None:
        """The OpenTelemetry span an ingested event came from, kept whole on its span.
        An agent span opened for a parent that had not arrived yet is named, placed and
        started by the parent's own ``agent_end`` (its ``started_at``) when it comes."""
        built = self._spans.get(wire.get("span_id") or "")
        if built is None:
            return
        built.attributes["otel"] = dict(wire["ingested"])
        if wire.get("type") == EventType.AGENT_END and wire.get("started_at"):
            built.fields.update(
                name=wire["author"],
                author=wire["author"],
                branch=wire.get("branch"),
                parent_span_id=wire.get("parent_span_id"),
                start=min(built.fields["start"], _time(wire["started_at"])),
            )

    def _approval(self, wire: Wire) -> None:
        built, approval = self._spans.get(wire.get("span_id") or ""), wire.get("approval") or {}
        if built is None or not approval:
            return
        built.attributes["tool"] = approval.get("tool")
        for key in ("decision", "decided_by", "reason", "edited_args"):
            if approval.get(key):
                built.attributes[key] = approval[key]

    def _wait(self, kind: str, wire: Wire) -> None:
        """A wait for a person: an approval, an answer to a question, a pause (for
        whoever paused the run); the event that ends it closes it."""
        if kind in _WAIT_OPENED:
            self._open(wire, "human", _WAIT_OPENED[kind], _time(wire["created_at"]))
        self._approval(wire)
        self._question(wire)
        if kind in _WAIT_CLOSED:
            answered = (wire.get("question") or {}).get("answer")
            self._close(wire, "error" if kind == EventType.USER_ANSWER and not answered else "ok")

    def _rate_limit(self, wire: Wire) -> None:
        """A model call's wait for its rate limit: open from ``rate_limit_waiting`` (or,
        stored before that event existed, only the closing event's ``started_at``)."""
        start = _time(wire.get("started_at") or wire["created_at"])
        built = self._open(wire, "wait", "rate_limit", start)
        if built is None:
            return
        text = "".join(p.get("text", "") for p in wire.get("parts", ()) if p["kind"] == "text")
        built.attributes["text"] = _clip(text)
        if wire["type"] == EventType.RATE_LIMIT_WAIT:
            error = wire.get("error")
            self._close(wire, "error" if error else "ok")
            if error:
                built.fields["error"] = f"{error.get('code')}: {error.get('message')}"

    def _question(self, wire: Wire) -> None:
        built, question = self._spans.get(wire.get("span_id") or ""), wire.get("question") or {}
        if built is None:
            return
        for key in ("question", "answer", "answered_by"):
            if question.get(key):
                built.attributes[key] = _clip(question[key])

    def _policy(self, wire: Wire) -> None:
        """A rule's decision on a tool or sub-agent call, on that call's span."""
        policy = wire.get("policy") or {}
        built = self._spans.get(wire.get("parent_span_id") or "")
        if built is None or built.fields["kind"] != "tool" or policy.get("call_id") is None:
            return
        found = {key: policy.get(key) for key in ("rule", "action", "reason")}
        if policy.get("rewritten_args") is not None:
            found["rewritten_args"] = policy["rewritten_args"]
        built.attributes["policy"] = found

    def _retry(self, wire: Wire) -> None:
        """A failed attempt of a model call that goes again: the call's span opens (a live
        waterfall draws it while it is retried) and counts the attempts, their errors and
        when each failed."""
        error = wire.get("error") or {}
        start = _time(wire.get("started_at") or wire["created_at"])
        call = self._open(wire, "model", "model", start)
        if call is None or error.get("attempts") is None:
            return
        a = call.attributes
        a["attempts"] = error["attempts"] + 1  # the one under way
        a["retries"] = [*a.get("retries", ()), f"{error.get('code')}: {error.get('message')}"]
        a["retried_at"] = [*a.get("retried_at", ()), _time(wire["created_at"])]

    def _error(self, wire: Wire) -> None:
        """The error of a model call that failed for good carries that call's span (its
        ``span_id`` and ``started_at``): a failed model span (an after-turn call's named as
        its own), each retry in it. A terminal error fails the agent span it happened in."""
        error = wire.get("error") or {}
        said = f"{error.get('code')}: {error.get('message')}"
        if wire.get("span_id") and wire.get("started_at"):
            name = AFTER_TURN_FAILED.get(error.get("code") or "", "model")
            call = self._open(wire, "model", name, _time(wire["started_at"]))
            if call is not None and self._close(wire, "error") is not None:
                call.fields["error"] = said
                call.attributes["attempts"] = error.get("attempts")
        built = self._spans.get(wire.get("parent_span_id") or "")
        if built is not None and error.get("failure", "terminal") == "terminal":
            built.fields["error"] = said
            built.fields["status"] = "error"
            if built.fields["end"] is None:
                self._close({**wire, "span_id": built.fields["span_id"]}, "error")


_READERS: Mapping[str, Callable[[SpanTree, Wire], None]] = {
    EventType.TOOL_RESPONSE: SpanTree._tool_response,
    EventType.RATE_LIMIT_WAITING: SpanTree._rate_limit,
    EventType.RATE_LIMIT_WAIT: SpanTree._rate_limit,
    EventType.MODEL_RETRY: SpanTree._retry,
    EventType.ERROR: SpanTree._error,
    EventType.POLICY_DECISION: SpanTree._policy,
    EventType.RUN_PARKED: SpanTree._parked,
}
"""What each other kind of span event does to the tree."""


def spans_of(wires: Iterable[Wire]) -> list[Span]:
    """The spans of ``wires`` (stored events in seq order)."""
    return SpanTree().observe_all(wires).spans()


def _outcome(part: Wire) -> str:
    if not part.get("is_error"):
        return "done"
    code, colon, _ = str(part.get("result", "")).partition(":")
    return code.strip() if colon and code.strip().isidentifier() else "error"


def _time(value: str | datetime) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)


def _clip(text: Any) -> Any:
    if isinstance(text, str) and len(text) > PREVIEW_CHARS:
        return f"{text[:PREVIEW_CHARS]}…"
    return text
