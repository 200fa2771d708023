"""A run's spans as an OpenTelemetry trace, in the GenAI semantic conventions.

``trace_of`` turns an ended run (``RunFacts``) and its final spans (``agents_core.spans``)
into ``OtelSpan`` values: a root span for the run, then one for each Studio span, under
its parent (the root for the run's top agent), over the span's own start and end.
Names and attributes follow the OpenTelemetry GenAI conventions: agents are
``invoke_agent {name}`` (``gen_ai.agent.name``), model calls ``chat {model}``
(``gen_ai.provider.name``, ``gen_ai.request.model``, ``gen_ai.usage.*``), tool calls
``execute_tool {name}`` (``gen_ai.tool.name``, ``gen_ai.tool.call.id``); a wait for a
person is an internal ``studio.approval`` span. Studio's own details are ``studio.*`` attributes.

Ids come from Studio's: the trace id is the run's id, a span id a hash of the Studio
span's id, so exporting a run again makes the same trace.

Only span data is exported: never a key, a header or an MCP server's secret. What agents
and people wrote (tool arguments and results, model text, approval reasons and edited
arguments) goes only with ``capture_content`` (``STUDIO_OTEL_CAPTURE_CONTENT``), off by
default as the conventions recommend.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.trace import SpanKind
from opentelemetry.util.types import AttributeValue

from agents_core.events import EventType
from agents_core.spans import AFTER_TURN, Span
from studio.models import Run

Attributes = dict[str, AttributeValue]
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class RunFacts:
    """What the trace says of an ended run besides its spans."""

    run_id: uuid.UUID
    session_id: uuid.UUID
    agent: str
    status: str
    error_code: str
    error_message: str
    created_at: datetime
    ended_at: datetime
    input_tokens: int
    output_tokens: int
    models: Mapping[str, str]
    """The model each agent calls, by agent name (``studio.agents.specs.agent_models``)."""
    providers: Mapping[str, str]
    """Who serves each agent's model (``provider_name``), by agent name."""
    summariser: tuple[str, str] | None = None
    """The compaction summariser's model and provider, when compaction is on: a
    ``summary`` span's call went to it, not to its agent's model."""

    @classmethod
    def of(
        cls,
        run: Run,
        *,
        agent: str,
        models: Mapping[str, str],
        providers: Mapping[str, str] | None = None,
        summariser: tuple[str, str] | None = None,
    ) -> RunFacts:
        return cls(
            run_id=run.pk,
            session_id=run.session_id,
            agent=agent,
            status=str(run.status),
            error_code=run.error_code,
            error_message=run.error_message,
            created_at=run.created_at,
            ended_at=run.ended_at or run.created_at,
            input_tokens=run.input_tokens,
            output_tokens=run.output_tokens,
            models=models,
            providers=providers or {},
            summariser=summariser,
        )


@dataclass(frozen=True, slots=True)
class OtelSpan:
    """One span of the trace, ready for the SDK."""

    name: str
    kind: SpanKind
    trace_id: int
    span_id: int
    parent_id: int | None
    start_ns: int
    end_ns: int
    attributes: Attributes
    error: str | None = None
    """Set on a failed span: its status is ERROR, with this description."""


def trace_of(facts: RunFacts, spans: Sequence[Span], *, capture_content: bool) -> list[OtelSpan]:
    """The run's trace: its root span first, then its spans in the order they began."""
    root = _root(facts)
    known = {span.span_id for span in spans}
    trace = [root]
    for span in spans:
        parent = span.parent_span_id
        parent_id = span_id_of(parent) if parent in known and parent else root.span_id
        trace.append(_span(facts, span, parent_id, capture_content))
    return trace


# Hosts of providers the conventions name (``gen_ai.provider.name``'s well-known values),
# matched on a model config's base URL; OpenAI's is also the default of an empty one.
_PROVIDER_HOSTS = (
    ("openai.azure.com", "azure.ai.openai"),
    ("openai.com", "openai"),
    ("anthropic.com", "anthropic"),
    ("generativelanguage.googleapis.com", "gcp.gemini"),
    ("mistral.ai", "mistral_ai"),
    ("groq.com", "groq"),
    ("deepseek.com", "deepseek"),
    ("x.ai", "x_ai"),
)


def provider_name(provider: str, base_url: str) -> str:
    """``gen_ai.provider.name`` of a model config: a well-known provider by its base
    URL's host, ``openai_compatible`` for another OpenAI-compatible server (Ollama, vLLM),
    ``studio.scripted`` for Studio's offline scripted models."""
    if provider == "scripted":
        return "studio.scripted"
    host = (urlsplit(base_url).hostname or "") if base_url else "api.openai.com"
    for domain, name in _PROVIDER_HOSTS:
        if host == domain or host.endswith(f".{domain}"):
            return name
    return "openai_compatible"


def span_id_of(studio_span_id: str) -> int:
    """The 64-bit OpenTelemetry span id of a Studio span (never 0, which is invalid)."""
    digest = hashlib.blake2b(studio_span_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest) or 1


def root_span_id(run_id: uuid.UUID) -> int:
    return span_id_of(f"run:{run_id}")


def nanoseconds(at: datetime) -> int:
    """``at`` in nanoseconds since the epoch, exact to the microsecond it holds."""
    return (at - _EPOCH) // timedelta(microseconds=1) * 1_000


def _root(facts: RunFacts) -> OtelSpan:
    attributes: Attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": facts.agent,
        "gen_ai.conversation.id": str(facts.session_id),
        "gen_ai.usage.input_tokens": facts.input_tokens,
        "gen_ai.usage.output_tokens": facts.output_tokens,
        "studio.run.id": str(facts.run_id),
        "studio.session.id": str(facts.session_id),
        "studio.run.status": facts.status,
    }
    error = None
    if facts.status != "succeeded":
        attributes["error.type"] = facts.error_code or facts.status
        error = f"{facts.error_code}: {facts.error_message}" if facts.error_code else facts.status
    return OtelSpan(
        name=f"invoke_agent {facts.agent}",
        kind=SpanKind.INTERNAL,
        trace_id=facts.run_id.int,
        span_id=root_span_id(facts.run_id),
        parent_id=None,
        start_ns=nanoseconds(facts.created_at),
        end_ns=nanoseconds(max(facts.ended_at, facts.created_at)),
        attributes=attributes,
        error=error,
    )


def _span(facts: RunFacts, span: Span, parent_id: int, capture: bool) -> OtelSpan:
    attributes: Attributes = {
        "gen_ai.conversation.id": str(facts.session_id),
        "studio.span.id": span.span_id,
        "studio.agent": span.author,
    }
    if span.branch:
        attributes["studio.branch"] = span.branch
    name, kind, own = _KINDS[span.kind](facts, span, capture)
    attributes.update(own)
    if span.status == "error":
        attributes["error.type"] = _error_type(span)
    end = span.end or facts.ended_at
    return OtelSpan(
        name=name,
        kind=kind,
        trace_id=facts.run_id.int,
        span_id=span_id_of(span.span_id),
        parent_id=parent_id,
        start_ns=nanoseconds(span.start),
        end_ns=nanoseconds(max(end, span.start)),
        attributes=attributes,
        error=_error(span, capture) if span.status == "error" else None,
    )


Described = tuple[str, SpanKind, Attributes]


def _agent(facts: RunFacts, span: Span, capture: bool) -> Described:
    attributes: Attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": span.name,
    }
    if "iteration" in span.attributes:
        attributes["studio.loop.iteration"] = int(span.attributes["iteration"])
    return f"invoke_agent {span.name}", SpanKind.INTERNAL, attributes


def _model(facts: RunFacts, span: Span, capture: bool) -> Described:
    if span.name == AFTER_TURN[EventType.COMPACTION] and facts.summariser:
        model, provider = facts.summariser
    else:
        model, provider = facts.models.get(span.author, ""), facts.providers.get(span.author, "")
    attributes: Attributes = {"gen_ai.operation.name": "chat"}
    if provider:
        attributes["gen_ai.provider.name"] = provider
    if model:
        attributes["gen_ai.request.model"] = model
    if span.input_tokens is not None:
        attributes["gen_ai.usage.input_tokens"] = span.input_tokens
    if span.cached_input_tokens:
        attributes["gen_ai.usage.cache_read.input_tokens"] = span.cached_input_tokens
    if span.output_tokens is not None:
        attributes["gen_ai.usage.output_tokens"] = span.output_tokens
    if calls := [str(name) for name in span.attributes.get("tool_calls", ())]:
        attributes["studio.model.tool_calls"] = calls
    if (attempts := span.attributes.get("attempts")) is not None:  # retried, or failed
        attributes["studio.model.attempts"] = int(attempts)
    text = span.attributes.get("text")
    if capture and text:
        message = {"role": "assistant", "parts": [{"type": "text", "content": text}]}
        attributes["gen_ai.output.messages"] = json.dumps([message])
    return (f"chat {model}" if model else "chat"), SpanKind.CLIENT, attributes


def _tool(facts: RunFacts, span: Span, capture: bool) -> Described:
    details = span.attributes
    attributes: Attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": span.name,
        "gen_ai.tool.type": "function",
    }
    if details.get("call_id"):
        attributes["gen_ai.tool.call.id"] = str(details["call_id"])
    if details.get("outcome"):
        attributes["studio.tool.outcome"] = str(details["outcome"])
    if details.get("transfer_to"):
        attributes["studio.transfer_to"] = str(details["transfer_to"])
    if capture and "arguments" in details:
        attributes["gen_ai.tool.call.arguments"] = _text(details["arguments"])
    if capture and "result" in details:
        attributes["gen_ai.tool.call.result"] = _text(details["result"])
    return f"execute_tool {span.name}", SpanKind.INTERNAL, attributes


def _human(facts: RunFacts, span: Span, capture: bool) -> Described:
    details = span.attributes
    attributes: Attributes = {}
    for key in ("tool", "decision", "decided_by"):
        if details.get(key):
            attributes[f"studio.approval.{key}"] = str(details[key])
    for key in ("reason", "edited_args"):
        if capture and details.get(key):
            attributes[f"studio.approval.{key}"] = _text(details[key])
    return "studio.approval", SpanKind.INTERNAL, attributes


def _wait(facts: RunFacts, span: Span, capture: bool) -> Described:
    return "studio.rate_limit_wait", SpanKind.INTERNAL, {"studio.wait.reason": span.name}


_KINDS = {"agent": _agent, "model": _model, "tool": _tool, "human": _human, "wait": _wait}


def _error(span: Span, capture: bool) -> str:
    """A failed span's status description: a failed tool call's is its result, which
    is content (``_error_type`` stands in for it unless ``capture``)."""
    if span.kind == "tool" and not capture:
        return _error_type(span)
    return span.error or _error_type(span)


def _error_type(span: Span) -> str:
    outcome = span.attributes.get("outcome")
    if span.kind == "tool" and outcome and outcome != "done":
        return str(outcome)
    code, colon, _ = (span.error or "").partition(":")
    return code.strip() if colon and code.strip().isidentifier() else "error"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)
