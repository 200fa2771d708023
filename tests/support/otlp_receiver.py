"""A real OTLP/HTTP trace receiver on loopback, for the export tests.

It accepts ``POST /v1/traces`` with a protobuf ``ExportTraceServiceRequest`` (decoded
with opentelemetry-proto, gzip or not) and records each span it got, with its
resource. ``refuse()`` makes it answer 400 (a failure the exporter does not retry);
``hold()`` makes it keep requests unanswered (a hung collector) until ``release()``.
"""

from __future__ import annotations

import gzip
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

HOLD_LIMIT_S = 30.0
"""A held request is answered after this long at the latest, so a test that fails
never leaves the exporter's thread stuck."""


@dataclass(frozen=True)
class ReceivedSpan:
    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    status: str
    status_message: str
    resource: dict[str, Any]
    scope: str


class OtlpReceiver:
    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.requests = 0
        self.holding = 0
        """Requests received and not answered yet (while held)."""
        self._lock = threading.Lock()
        self._refuse = False
        self._released = threading.Event()
        self._released.set()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def refuse(self) -> None:
        self._refuse = True

    def hold(self) -> None:
        self._released.clear()

    def release(self) -> None:
        self._released.set()

    def trace(self, trace_id: str) -> list[ReceivedSpan]:
        with self._lock:
            return [span for span in self.spans if span.trace_id == trace_id]

    def close(self) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()

    def _received(self, body: bytes) -> int:
        """Record the spans of one request; the HTTP status to answer with."""
        request = ExportTraceServiceRequest.FromString(body)
        with self._lock:
            self.requests += 1
            if self._refuse:
                return 400
            self.holding += 1
        self._released.wait(HOLD_LIMIT_S)
        with self._lock:
            self.holding -= 1
            self.spans.extend(_spans(request))
        return 200


def _handler(receiver: OtlpReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            encoding = self.headers.get("Content-Encoding", "")
            if encoding == "gzip":
                body = gzip.decompress(body)
            elif encoding == "deflate":
                body = zlib.decompress(body)
            if self.path != "/v1/traces":
                self.send_error(404)
                return
            status = receiver._received(body)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    return Handler


def _spans(request: ExportTraceServiceRequest) -> Iterator[ReceivedSpan]:
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield ReceivedSpan(
                    trace_id=span.trace_id.hex(),
                    span_id=span.span_id.hex(),
                    parent_span_id=span.parent_span_id.hex() or None,
                    name=span.name,
                    kind=span.SpanKind.Name(span.kind),
                    start_ns=span.start_time_unix_nano,
                    end_ns=span.end_time_unix_nano,
                    attributes=_attributes(span.attributes),
                    status=span.status.StatusCode.Name(span.status.code),
                    status_message=span.status.message,
                    resource=resource,
                    scope=scope_spans.scope.name,
                )


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs if isinstance(pair, KeyValue)}


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    return None if kind is None else getattr(value, kind)


@pytest.fixture
def otlp_receiver() -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver()
    yield receiver
    receiver.close()
