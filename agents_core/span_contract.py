"""``Span``: one step of a run, as ``agents_core.spans`` derives it from the run's events
(and re-exports it: read spans from there)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal

from pydantic import AwareDatetime

from agents_core.contracts import Contract
from agents_core.events import EventType
from agents_core.span_costs import SpanCost

SpanKind = Literal["agent", "model", "tool", "human", "wait"]
SpanStatus = Literal["open", "ok", "error"]

AFTER_TURN = {EventType.MEMORY_SAVED: "key facts", EventType.COMPACTION: "summary"}
"""The model calls a runner makes once its agent is done, and their span's name."""
KEY_FACTS_FAILED, SUMMARY_FAILED = "key_facts_failed", "summary_failed"
KEY_FACTS_CUT_OFF, SUMMARY_CUT_OFF = "key_facts_cut_off", "summary_cut_off"
AFTER_TURN_FAILED = {KEY_FACTS_FAILED: "key facts", SUMMARY_FAILED: "summary"}
AFTER_TURN_FAILED |= {KEY_FACTS_CUT_OFF: "key facts", SUMMARY_CUT_OFF: "summary"}
"""Their error codes when they fail or are cut off: a non-fatal error on the call's span."""


class Span(Contract):
    """One step of a run, open (``end`` is ``None``) or closed."""

    span_id: str
    parent_span_id: str | None
    kind: SpanKind
    name: str
    """The agent's name, the tool's name, ``model`` (``key facts``, ``summary`` after a
    turn), ``approval``, ``question``, ``pause`` or (a ``wait``) ``rate_limit``."""
    author: str
    """The agent the span belongs to."""
    branch: str | None
    invocation_id: str
    start: AwareDatetime
    end: AwareDatetime | None = None
    status: SpanStatus = "open"
    start_seq: int | None = None
    """The first stored event of the span (``None`` for a model call still streaming)."""
    end_seq: int | None = None
    input_tokens: int | None = None
    cached_input_tokens: int | None = None
    """Of ``input_tokens``, those the provider served from its prompt cache."""
    output_tokens: int | None = None
    error: str | None = None
    cost: SpanCost | None = None
    """What the model calls in it cost: set on an answered model call and on the spans
    above one; ``None`` on spans with none beneath them (and on a call still streaming)."""
    attributes: dict[str, Any] = {}
    """Kind-specific details: a tool's ``call_id``, ``arguments``, ``result``,
    ``outcome`` and the ``policy`` rule that decided it (``rule``, ``action``,
    ``reason``, a rewrite's ``rewritten_args``); a model's ``text`` and
    ``tool_calls``, and for a call that was retried or failed for good its ``attempts``
    (and the failed attempts' errors, ``retries``, and when each failed, ``retried_at``);
    an agent's ``transfer_to`` and loop ``iteration``; a wait's ``decision``,
    ``decided_by``, ``reason`` and ``edited_args``, or its ``question``, ``answer`` and
    ``answered_by``; on a span ingested over OTLP, ``otel``: the
    OpenTelemetry span it came from (name, kind, status, every attribute)."""

    @property
    def duration_ms(self) -> float | None:
        if self.end is None:
            return None
        return (self.end - self.start) / timedelta(milliseconds=1)
