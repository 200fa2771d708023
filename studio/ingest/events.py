"""Spans read in the GenAI conventions (``genai``) as Studio events, so the timeline and
the waterfall draw an ingested run as they draw Studio's own (``agents_core.spans``):

- an agent step: ``agent_start`` at its start and ``agent_end`` at its end (with an
  ``error`` event in it when the span failed), its span id Studio's span id;
- a model call: one ``agent_message`` at its end, ``started_at`` its start, with the
  answer's text, tokens, model and the tool calls it asked for, each with the span id of
  the ``execute_tool`` span of the same request that answers it (as Studio's own calls
  carry theirs); a call whose tool span came in an earlier request is left to it;
- a tool call: a ``tool_response`` at its end, ``started_at`` its start; before it, an
  ``agent_message`` at its start carrying the call (its ``span_id`` the tool span's)
  when no model message carries the call: the model span names no calls, or comes in a
  later request. A response whose call a model message stored before carries without a
  span (its tool span came in a later batch) opens the tool span from its
  ``started_at``; an ingested tool span starts when its OpenTelemetry span did, however
  it was opened (``agents_core.spans.SpanTree``).

Each event that opens or closes a span carries the OpenTelemetry span in ``ingested``,
with all its attributes, so the span's detail shows what Studio did not map too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from agents_core import events as core_events
from agents_core.contracts import Usage
from studio.ingest.genai import GenAiSpan

MAX_TEXT_CHARS = 100_000
"""How much of one message or tool result an event keeps."""
MAX_ATTRIBUTE_CHARS = 20_000
"""How much of one string attribute an event keeps (all of them are kept, clipped)."""

EventType = core_events.EventType


def events_of(
    spans: Iterable[GenAiSpan],
    *,
    session_key: str,
    invocation_id: str,
    placeholders: Mapping[str, GenAiSpan] = {},
    opened: Set[str] = frozenset(),
    asked: Set[str] = frozenset(),
    answered: Set[str] = frozenset(),
) -> list[core_events.Event]:
    """The events of ``spans`` (one request's spans of one trace), in time order.

    ``placeholders``: parents not arrived yet (span id -> its first child), each opened
    as an agent span at that child's start. ``opened``: parents opened so before, which
    their own span, now, closes with an ``agent_end`` that names and starts it
    (``agents_core.spans.SpanTree``), rather than opening again. ``asked``: tool calls
    that stored model messages carry; ``answered``: those stored tool spans answered."""
    spans = list(spans)
    tools = {s.tool_call_id: s.span_id for s in spans if s.kind == "tool" and s.tool_call_id}
    carried = {c.call_id for s in spans if s.kind == "model" for c in s.tool_calls} & set(tools)
    calls = _Calls(asked=asked | carried, answered=answered, tools=tools)
    made: list[tuple[datetime, int, core_events.Event]] = []
    for parent_id, child in placeholders.items():
        made.append(
            (child.start, len(made), _placeholder(parent_id, child, session_key, invocation_id))
        )
    for span in spans:
        for event in _span_events(span, session_key, invocation_id, calls):
            if span.span_id in opened and event.type is EventType.AGENT_START:
                continue
            if span.span_id in opened and event.type is EventType.AGENT_END:
                event = _naming_end(event, span)
            made.append((event.created_at, len(made), event))
    return [event for _, _, event in sorted(made, key=lambda item: (item[0], item[1]))]


def user_message(
    span: GenAiSpan, *, session_key: str, invocation_id: str, text: str
) -> core_events.Event:
    """The run's opening message: what the trace's first model call was asked."""
    return core_events.Event(
        type=EventType.USER_MESSAGE,
        invocation_id=invocation_id,
        session_id=session_key,
        author="user",
        parts=[core_events.TextPart(text=_clip(text, MAX_TEXT_CHARS))],
        created_at=span.start,
    )


def _placeholder(
    parent_id: str, child: GenAiSpan, session_key: str, invocation_id: str
) -> core_events.Event:
    author = _clip(child.agent, 100)
    return core_events.Event(
        type=EventType.AGENT_START,
        invocation_id=invocation_id,
        session_id=session_key,
        author=author,
        branch=author,
        span_id=parent_id,
        created_at=child.start,
    )


def _naming_end(end: core_events.Event, span: GenAiSpan) -> core_events.Event:
    return end.model_copy(update={"started_at": span.start, "ingested": _info(span)})


@dataclass(frozen=True, slots=True)
class _Calls:
    """The tool calls of one request's spans, by call id: ``asked``, those a model message
    carries (stored before, or of this request); ``answered``, those tool spans of earlier
    requests answered; ``tools``, this request's tool spans (call id -> span id)."""

    asked: Set[str]
    answered: Set[str]
    tools: Mapping[str, str]


def _span_events(
    span: GenAiSpan, session_key: str, invocation_id: str, calls: _Calls
) -> list[core_events.Event]:
    common: dict[str, Any] = {
        "invocation_id": invocation_id,
        "session_id": session_key,
        "author": _clip(span.agent, 100),
        "branch": _clip(span.agent, 100),
        "parent_span_id": span.parent_span_id,
    }
    if span.kind == "model":
        return [_model_message(span, common, calls)]
    if span.kind == "tool":
        return _tool_call(span, common, announce=span.tool_call_id not in calls.asked)
    return _agent_step(span, common)


def _agent_step(span: GenAiSpan, common: dict[str, Any]) -> list[core_events.Event]:
    start = core_events.Event(
        type=EventType.AGENT_START, span_id=span.span_id, created_at=span.start,
        ingested=_info(span), **common,
    )  # fmt: skip
    end = core_events.Event(
        type=EventType.AGENT_END, span_id=span.span_id, created_at=span.end, **common
    )
    if not span.failed:
        return [start, end]
    error = core_events.Event(
        type=EventType.ERROR,
        created_at=span.end,
        error=core_events.ErrorInfo(
            code="external_error", message=_clip(span.status or "failed", 2_000)
        ),
        **{**common, "parent_span_id": span.span_id},
    )
    return [start, end, error]


def _model_message(span: GenAiSpan, common: dict[str, Any], calls: _Calls) -> core_events.Event:
    parts: list[core_events.TextPart | core_events.ToolCallPart] = []
    if span.output_text:
        parts.append(core_events.TextPart(text=_clip(span.output_text, MAX_TEXT_CHARS)))
    for index, call in enumerate(span.tool_calls):
        if call.call_id and call.call_id in calls.answered:
            continue
        call_id = call.call_id or f"{span.span_id}-{index}"
        parts.append(
            core_events.ToolCallPart(
                call_id=call_id,
                name=_clip(call.name, 100),
                args=_clip_value(call.args),
                span_id=calls.tools.get(call.call_id),
            )
        )
    usage = None
    if span.input_tokens is not None or span.output_tokens is not None:
        input_tokens = span.input_tokens or 0
        usage = Usage(
            input_tokens=input_tokens,
            output_tokens=span.output_tokens or 0,
            cached_input_tokens=min(span.cached_input_tokens or 0, input_tokens),
        )
    return core_events.Event(
        type=EventType.AGENT_MESSAGE,
        span_id=span.span_id,
        started_at=span.start,
        created_at=span.end,
        latency_ms=_ms(span.end - span.start),
        parts=parts,
        usage=usage,
        model=_clip(span.model, 200) or None,
        ingested=_info(span),
        **common,
    )


def _tool_call(
    span: GenAiSpan, common: dict[str, Any], *, announce: bool
) -> list[core_events.Event]:
    """The tool's response, after the message carrying its call when ``announce`` (no
    stored model message carries it)."""
    name = _clip(span.tool_name, 100) or "tool"
    result = _clip(span.tool_result or (span.status if span.failed else ""), MAX_TEXT_CHARS)
    response = core_events.Event(
        type=EventType.TOOL_RESPONSE,
        span_id=span.span_id,
        started_at=span.start,  # the tool ran for its whole span: no approval to wait on
        created_at=span.end,
        latency_ms=_ms(span.end - span.start),
        parts=[
            core_events.ToolResponsePart(
                call_id=_clip(span.tool_call_id, 200),
                name=name,
                result=result,
                is_error=span.failed,
            )
        ],
        ingested=_info(span),
        **common,
    )
    if not announce:
        return [response]
    call = core_events.Event(
        type=EventType.AGENT_MESSAGE,
        created_at=span.start,
        parts=[
            core_events.ToolCallPart(
                call_id=_clip(span.tool_call_id, 200),
                name=name,
                args=_clip_value(span.tool_args),
                span_id=span.span_id,
            )
        ],
        **common,
    )
    return [call, response]


def _info(span: GenAiSpan) -> core_events.IngestedInfo:
    return core_events.IngestedInfo(
        trace_id=span.trace_id,
        span_id=span.span_id,
        name=_clip(span.name, 500),
        kind=span.otel_kind,
        status=_clip(span.status, 2_000),
        attributes={key: _clip_value(value) for key, value in span.attributes.items()},
        resource={key: _clip_value(value) for key, value in span.resource.items()},
    )


def _clip_value(value: Any) -> Any:
    if isinstance(value, str):
        return _clip(value, MAX_ATTRIBUTE_CHARS)
    if isinstance(value, list):
        return [_clip_value(v) for v in value]
    if isinstance(value, dict):
        return {_clip(str(k), 200): _clip_value(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):  # not JSON
        return None
    return value


def _clip(text: str, limit: int) -> str:
    text = text.replace("\x00", "\ufffd")  # PostgreSQL stores no NUL in text or JSON
    return text if len(text) <= limit else f"{text[: limit - 1]}…"


def _ms(delta: timedelta) -> float:
    return max(0.0, delta / timedelta(milliseconds=1))
