"""OTLP trace requests built by hand, for the ingest tests: spans in the GenAI semantic
conventions (current and previous releases), in protobuf and in the OTLP JSON encoding
(hex ids, lowerCamelCase, 64-bit integers as strings) as an exporter writes them."""

from __future__ import annotations

import base64
import json
import os
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

NS = 1_000_000_000


def new_trace_id() -> str:
    return os.urandom(16).hex()


def new_span_id() -> str:
    return os.urandom(8).hex()


def any_value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, list | tuple):
        out = AnyValue()
        out.array_value.values.extend(any_value(v) for v in value)
        return out
    return AnyValue(string_value=str(value))


def key_values(attributes: dict[str, Any]) -> list[KeyValue]:
    return [KeyValue(key=k, value=any_value(v)) for k, v in attributes.items()]


@dataclass
class SpanSpec:
    name: str
    trace_id: str
    span_id: str = field(default_factory=new_span_id)
    parent: str | None = None
    start_s: float = 0.0
    """Seconds after the trace's base time."""
    end_s: float = 1.0
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    error: str | None = None
    kind: int = 1


BASE_NS = int(time.time()) * NS


def start_of(spec: SpanSpec) -> datetime:
    """When the span starts, as Studio stores it."""
    return datetime.fromtimestamp(0, UTC) + timedelta(microseconds=start_ns(spec) // 1000)


def start_ns(spec: SpanSpec) -> int:
    return BASE_NS + int(spec.start_s * NS)


def span_of(spec: SpanSpec) -> Span:
    span = Span(
        trace_id=bytes.fromhex(spec.trace_id),
        span_id=bytes.fromhex(spec.span_id),
        parent_span_id=bytes.fromhex(spec.parent) if spec.parent else b"",
        name=spec.name,
        kind=spec.kind,  # type: ignore[arg-type]
        start_time_unix_nano=start_ns(spec),
        end_time_unix_nano=BASE_NS + int(spec.end_s * NS),
        attributes=key_values(spec.attributes),
    )
    for name, attributes in spec.events:
        span.events.add(
            name=name, time_unix_nano=span.start_time_unix_nano, attributes=key_values(attributes)
        )
    if spec.error is not None:
        span.status.CopyFrom(Status(code=Status.STATUS_CODE_ERROR, message=spec.error))
    return span


def request_of(*specs: SpanSpec, service: str = "shop-agent") -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.extend(
        key_values({"service.name": service, "deployment.environment": "test"})
    )
    scope = resource_spans.scope_spans.add()
    scope.scope.name = "tests.otlp_spans"
    scope.spans.extend(span_of(s) for s in specs)
    return request


def json_body(request: ExportTraceServiceRequest) -> bytes:
    """The OTLP JSON encoding of ``request``: protobuf's JSON mapping, ids in hex."""
    document = json_format.MessageToDict(request)
    _ids_to_hex(document)
    return json.dumps(document).encode()


def _ids_to_hex(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _ids_to_hex(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str):
                node[key] = base64.b64decode(value).hex()
            else:
                _ids_to_hex(value)


def agent_trace(trace_id: str, *, generation: str = "current") -> list[SpanSpec]:
    """An agent run: ``invoke_agent`` root, a ``chat`` call asking for a tool, the
    ``execute_tool`` span, a second ``chat`` with the answer. ``generation`` picks the
    attribute names of the conventions' ``current`` or ``previous`` release."""
    root = SpanSpec(
        "invoke_agent shopper",
        trace_id,
        start_s=0,
        end_s=3,
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shopper"},
    )
    first = SpanSpec("chat gpt-test", trace_id, parent=root.span_id, start_s=0.1, end_s=1.0)
    tool = SpanSpec(
        "execute_tool price_of",
        trace_id,
        parent=root.span_id,
        start_s=1.1,
        end_s=1.5,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "price_of",
            "gen_ai.tool.call.id": "call_1",
            "gen_ai.tool.call.arguments": '{"item": "apple"}',
            "gen_ai.tool.call.result": "0.5 EUR",
        },
    )
    second = SpanSpec("chat gpt-test", trace_id, parent=root.span_id, start_s=1.6, end_s=2.9)
    for chat in (first, second):
        chat.attributes.update(
            {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-test"}
        )
    if generation == "current":
        _current(first, second)
    else:
        _previous(first, second)
    return [root, first, tool, second]


def _current(first: SpanSpec, second: SpanSpec) -> None:
    question = [
        {"role": "user", "parts": [{"type": "text", "content": "What does an apple cost?"}]}
    ]
    call = {"type": "tool_call", "id": "call_1", "name": "price_of", "arguments": {"item": "apple"}}
    first.attributes.update(
        {
            "gen_ai.usage.input_tokens": 12,
            "gen_ai.usage.output_tokens": 5,
            "gen_ai.input.messages": json.dumps(question),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [call]}]),
        }
    )
    answer = [
        {"role": "assistant", "parts": [{"type": "text", "content": "An apple costs 0.5 EUR."}]}
    ]
    second.attributes.update(
        {
            "gen_ai.usage.input_tokens": 20,
            "gen_ai.usage.output_tokens": 8,
            "gen_ai.output.messages": json.dumps(answer),
        }
    )


def _previous(first: SpanSpec, second: SpanSpec) -> None:
    first.attributes.update({"gen_ai.usage.prompt_tokens": 12, "gen_ai.usage.completion_tokens": 5})
    first.events.append(("gen_ai.user.message", {"content": "What does an apple cost?"}))
    tool_call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "price_of", "arguments": '{"item": "apple"}'},
    }
    first.events.append(
        ("gen_ai.choice", {"index": 0, "message": json.dumps({"tool_calls": [tool_call]})})
    )
    second.attributes.update(
        {"gen_ai.usage.prompt_tokens": 20, "gen_ai.usage.completion_tokens": 8}
    )
    second.events.append(
        (
            "gen_ai.choice",
            {"index": 0, "message": json.dumps({"content": "An apple costs 0.5 EUR."})},
        )
    )
