"""What an OpenTelemetry span of an agent built elsewhere says, in the GenAI semantic
conventions: which kind of step it was, which agent, model or tool, its tokens, and the
messages it carried.

Both releases of the conventions are read: the current one (``gen_ai.input.messages``
and ``gen_ai.output.messages`` attributes, ``gen_ai.usage.input_tokens`` and
``output_tokens``, of the input ``gen_ai.usage.cache_read.input_tokens`` from the
provider's prompt cache) and the previous (``gen_ai.user.message``, ``gen_ai.system.message``,
``gen_ai.assistant.message``, ``gen_ai.tool.message`` and ``gen_ai.choice`` span events;
``gen_ai.content.prompt``/``completion`` events and ``gen_ai.prompt``/``completion``
attributes, flattened ``gen_ai.prompt.0.content`` too; ``gen_ai.usage.prompt_tokens``
and ``completion_tokens``).

``operation`` decides the kind: a model call for ``chat``, ``text_completion``,
``generate_content`` and ``embeddings``; a tool call for ``execute_tool``; anything else
(``invoke_agent``, ``create_agent``, a span of the program's own) an agent step.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "embeddings"})
TOOL_OPERATIONS = frozenset({"execute_tool"})
_MESSAGE_EVENTS = frozenset(
    {
        "gen_ai.user.message",
        "gen_ai.system.message",
        "gen_ai.assistant.message",
        "gen_ai.tool.message",
    }
)
_KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
_STATUSES = {0: "unset", 1: "ok", 2: "error"}
_MAX_DEPTH = 16
_EARLIEST_NS = 946_684_800 * 10**9  # 2000-01-01
_LATEST_NS = 4_102_444_800 * 10**9  # 2100-01-01

Kind = Literal["agent", "model", "tool"]


@dataclass(slots=True)
class ToolCallSeen:
    call_id: str
    name: str
    args: dict[str, Any]


@dataclass(slots=True)
class GenAiSpan:
    """One span, read: its ids in hex, times, and what the conventions say of it."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    otel_kind: str
    start: datetime
    end: datetime
    failed: bool
    status: str
    attributes: dict[str, Any]
    resource: dict[str, Any]
    kind: Kind = "agent"
    agent: str = ""
    model: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    """Of ``input_tokens``, those served from the provider's prompt cache."""
    input_text: str = ""
    output_text: str = ""
    tool_calls: list[ToolCallSeen] = field(default_factory=list)
    tool_name: str = ""
    tool_call_id: str = ""
    tool_args: dict[str, Any] = field(default_factory=dict)
    tool_result: str = ""


def value_of(any_value: Any, depth: int = 0) -> Any:
    """An OTLP ``AnyValue`` as plain JSON (bytes in hex)."""
    which = any_value.WhichOneof("value")
    if which is None or depth > _MAX_DEPTH:
        return None
    if which == "array_value":
        return [value_of(v, depth + 1) for v in any_value.array_value.values]
    if which == "kvlist_value":
        return attributes_of(any_value.kvlist_value.values, depth + 1)
    if which == "bytes_value":
        return bytes(any_value.bytes_value).hex()
    return getattr(any_value, which)


def attributes_of(pairs: Iterable[Any], depth: int = 0) -> dict[str, Any]:
    return {pair.key: value_of(pair.value, depth) for pair in pairs}


def refusal(span: Any) -> str | None:
    """Why ``span`` cannot be stored (bad ids or times), or ``None``."""
    if len(span.trace_id) != 16 or not any(span.trace_id):
        return "a span without a valid 16-byte trace_id"
    if len(span.span_id) != 8 or not any(span.span_id):
        return "a span without a valid 8-byte span_id"
    if len(span.parent_span_id) not in (0, 8):
        return "a span with a parent_span_id that is not 8 bytes"
    times = (span.start_time_unix_nano, span.end_time_unix_nano)
    if not all(_EARLIEST_NS <= t < _LATEST_NS for t in times):
        return "a span whose start or end time is not between 2000 and 2100"
    return None


def read_span(span: Any, resource: Mapping[str, Any]) -> GenAiSpan:
    """``span`` (an OTLP ``Span``) of a resource with ``resource`` attributes."""
    attrs = attributes_of(span.attributes)
    failed = span.status.code == 2
    read = GenAiSpan(
        trace_id=bytes(span.trace_id).hex(),
        span_id=bytes(span.span_id).hex(),
        parent_span_id=bytes(span.parent_span_id).hex() or None,
        name=span.name,
        otel_kind=_KINDS.get(span.kind, "unspecified"),
        start=_time(span.start_time_unix_nano),
        end=max(_time(span.end_time_unix_nano), _time(span.start_time_unix_nano)),
        failed=failed,
        status=_STATUSES.get(span.status.code, "unset")
        + (f": {span.status.message}" if span.status.message else ""),
        attributes=attrs,
        resource=dict(resource),
    )
    operation = str(attrs.get("gen_ai.operation.name", ""))
    read.kind = _kind_of(operation, attrs)
    read.agent = str(attrs.get("gen_ai.agent.name") or resource.get("service.name") or "external")
    read.model = str(attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model") or "")
    read.input_tokens = _int(attrs, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")
    read.output_tokens = _int(attrs, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")
    read.cached_input_tokens = _int(
        attrs, "gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens"
    )
    _read_messages(read, span)
    if read.kind == "tool":
        _read_tool(read, attrs)
    return read


def _kind_of(operation: str, attrs: Mapping[str, Any]) -> Kind:
    if operation in MODEL_OPERATIONS:
        return "model"
    if operation in TOOL_OPERATIONS or (not operation and "gen_ai.tool.name" in attrs):
        return "tool"
    return "agent"


def _read_tool(read: GenAiSpan, attrs: Mapping[str, Any]) -> None:
    read.tool_name = str(attrs.get("gen_ai.tool.name") or read.name.removeprefix("execute_tool "))
    read.tool_call_id = str(attrs.get("gen_ai.tool.call.id") or read.span_id)
    args = _json(attrs.get("gen_ai.tool.call.arguments"))
    read.tool_args = args if isinstance(args, dict) else ({} if args is None else {"value": args})
    result = attrs.get("gen_ai.tool.call.result")
    read.tool_result = (
        result if isinstance(result, str) else ("" if result is None else json.dumps(result))
    )


# Messages


def _read_messages(read: GenAiSpan, span: Any) -> None:
    attrs = read.attributes
    inputs = _messages(attrs.get("gen_ai.input.messages"))
    outputs = _messages(attrs.get("gen_ai.output.messages"))
    inputs += _messages(attrs.get("gen_ai.prompt")) + _flattened(attrs, "gen_ai.prompt")
    outputs += _messages(attrs.get("gen_ai.completion")) + _flattened(attrs, "gen_ai.completion")
    for event in span.events:
        found = attributes_of(event.attributes)
        if event.name in _MESSAGE_EVENTS:
            inputs += _event_message(event.name, found)
        elif event.name == "gen_ai.choice":
            outputs += _choice(found)
        elif event.name == "gen_ai.content.prompt":
            inputs += _messages(found.get("gen_ai.prompt"))
        elif event.name == "gen_ai.content.completion":
            outputs += _messages(found.get("gen_ai.completion"))
    users = [m for m in inputs if m.get("role") in ("user", None, "")]
    read.input_text = _text_of(users[-1] if users else (inputs[-1] if inputs else {}))
    read.output_text = "\n".join(t for t in (_text_of(m) for m in outputs) if t)
    read.tool_calls = [call for m in outputs for call in _calls_of(m)]


def _messages(value: Any) -> list[dict[str, Any]]:
    """Messages from an attribute: a JSON list of messages, one message, or plain text."""
    parsed = _json(value)
    if parsed is None:
        return []
    if isinstance(parsed, dict):
        parsed = [parsed]
    if not isinstance(parsed, list):
        return [{"role": "", "content": str(parsed)}]
    return [m if isinstance(m, dict) else {"role": "", "content": str(m)} for m in parsed]


def _flattened(attrs: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``gen_ai.prompt.0.role``, ``gen_ai.prompt.0.content`` ... as messages."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        index, _, name = key.removeprefix(prefix + ".").partition(".")
        if key.startswith(prefix + ".") and index.isdigit() and name in ("role", "content"):
            found.setdefault(int(index), {})[name] = value
    return [found[i] for i in sorted(found)]


def _event_message(name: str, attrs: Mapping[str, Any]) -> list[dict[str, Any]]:
    role = name.removeprefix("gen_ai.").removesuffix(".message")
    content = attrs.get("content", attrs.get("gen_ai.event.content"))
    parsed = _json(content)
    if isinstance(parsed, dict):
        return [{"role": role, **parsed}]
    return [{"role": role, "content": "" if content is None else str(content)}]


def _choice(attrs: Mapping[str, Any]) -> list[dict[str, Any]]:
    body = _json(attrs.get("message", attrs.get("gen_ai.event.content")))
    if isinstance(body, dict) and isinstance(body.get("message"), dict):
        body = body["message"]
    if isinstance(body, dict):
        return [{"role": "assistant", **body}]
    return [] if body is None else [{"role": "assistant", "content": str(body)}]


def _text_of(message: Mapping[str, Any]) -> str:
    parts = message.get("parts")
    if isinstance(parts, list):
        texts = [
            str(p.get("content", ""))
            for p in parts
            if isinstance(p, dict) and p.get("type") == "text"
        ]
        return "".join(texts)
    content = message.get("content")
    if isinstance(content, list):
        return "".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return "" if content is None else str(content)


def _calls_of(message: Mapping[str, Any]) -> list[ToolCallSeen]:
    parts = _list(message.get("parts"))
    calls = [p for p in parts if isinstance(p, dict) and p.get("type") == "tool_call"]
    seen = [_call(c.get("id"), c.get("name"), c.get("arguments")) for c in calls]
    for call in _list(message.get("tool_calls")):
        if isinstance(call, dict):
            function = call.get("function")
            function = function if isinstance(function, dict) else {}
            seen.append(_call(call.get("id"), function.get("name"), function.get("arguments")))
    return seen


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _call(call_id: Any, name: Any, arguments: Any) -> ToolCallSeen:
    args = _json(arguments)
    return ToolCallSeen(
        call_id=str(call_id or ""),
        name=str(name or "tool"),
        args=args if isinstance(args, dict) else ({} if args is None else {"value": args}),
    )


# Values


def _json(value: Any) -> Any:
    """A JSON string's value; any other value as it is."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("[", "{", '"'):
            try:
                return json.loads(stripped)
            except (json.JSONDecodeError, RecursionError):
                return value
    return value


def _int(attrs: Mapping[str, Any], *names: str) -> int | None:
    for name in names:
        value = attrs.get(name)
        if isinstance(value, int | float | str) and not isinstance(value, bool):
            try:
                return max(0, int(value))
            except ValueError:
                continue
    return None


def _time(unix_nano: int) -> datetime:
    return datetime.fromtimestamp(unix_nano / 1e9, tz=UTC)
