"""OTLP/HTTP on the wire: a request body read into an ``ExportTraceServiceRequest``, and
the answers written back, both in the request's encoding (the OTLP specification,
"OTLP/HTTP"): binary protobuf (``application/x-protobuf``) or the OTLP JSON encoding
(``application/json``: lowerCamelCase field names, trace and span ids in hex, 64-bit
integers as strings or numbers, enums as integers), optionally gzip-compressed.

Every refusal is an ``OtlpError`` with the HTTP status it is answered with; its body is
a ``google.rpc.Status`` in the request's encoding (JSON when that is unknown).
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_ID_FIELDS = {"traceId": 16, "spanId": 8, "parentSpanId": 8}
_ID_FIELDS_SNAKE = {"trace_id": 16, "span_id": 8, "parent_span_id": 8}
_JSON_DEPTH = 64
"""How deeply an OTLP JSON body may nest (attribute values nest: arrays, key lists)."""


@dataclass(frozen=True, slots=True)
class OtlpError(Exception):
    """A request refused with ``status`` (400 malformed, 413 too large, 415 unsupported
    content type or encoding); ``message`` says why, to the sender."""

    status: int
    message: str
    encoding: str = JSON


def media_type(content_type: str) -> str:
    """``application/json`` from ``application/json; charset=utf-8``."""
    return content_type.split(";", 1)[0].strip().lower()


def check_media(content_type: str) -> str:
    """The request's encoding (``PROTOBUF`` or ``JSON``), or a 415."""
    media = media_type(content_type)
    if media not in (PROTOBUF, JSON):
        raise OtlpError(
            415, f"unsupported content type {media or '(none)'!r}: use {PROTOBUF} or {JSON}"
        )
    return media


def read_request(
    body: bytes, media: str, content_encoding: str, *, max_inflated: int
) -> ExportTraceServiceRequest:
    """The request in ``body`` (``media``, compressed as ``content_encoding`` says), or an
    ``OtlpError``: 415 for an unknown encoding, 413 when what it inflates to is over
    ``max_inflated`` bytes, 400 when it does not parse. (The caller caps the body.)"""
    data = _inflate(body, content_encoding.strip().lower(), media, max_bytes=max_inflated)
    if media == PROTOBUF:
        return _parse_protobuf(data)
    return _parse_json(data)


def _inflate(body: bytes, encoding: str, media: str, *, max_bytes: int) -> bytes:
    if encoding in ("", "identity"):
        if len(body) > max_bytes:
            raise OtlpError(413, f"the body is over {max_bytes} bytes", media)
        return body
    if encoding not in ("gzip", "deflate"):
        raise OtlpError(415, f"unsupported content encoding {encoding!r}: use gzip", media)
    # wbits 47: gzip or zlib, told by the header. A bomb stops at max_bytes + 1.
    inflater = zlib.decompressobj(47 if encoding == "gzip" else 15)
    try:
        data = inflater.decompress(body, max_bytes + 1)
    except zlib.error as exc:
        raise OtlpError(400, f"the body is not valid {encoding}: {exc}", media) from exc
    if len(data) > max_bytes:
        raise OtlpError(413, f"the body inflates to over {max_bytes} bytes", media)
    if not inflater.eof:
        raise OtlpError(400, f"the body is truncated {encoding}", media)
    return data


def _parse_protobuf(data: bytes) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(data)
    except (DecodeError, RecursionError) as exc:
        raise OtlpError(
            400, f"the body is not an ExportTraceServiceRequest: {exc}", PROTOBUF
        ) from exc
    return request


def _parse_json(data: bytes) -> ExportTraceServiceRequest:
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise OtlpError(400, f"the body is not JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise OtlpError(400, "the body is not a JSON object")
    _hex_ids_to_base64(document, 0)
    request = ExportTraceServiceRequest()
    try:
        # Receivers ignore fields they do not know (the OTLP specification).
        json_format.ParseDict(document, request, ignore_unknown_fields=True)
    except (json_format.ParseError, RecursionError, ValueError, TypeError) as exc:
        raise OtlpError(
            400, f"the body is not an OTLP JSON ExportTraceServiceRequest: {exc}"
        ) from exc
    return request


def _hex_ids_to_base64(node: Any, depth: int) -> None:
    """OTLP JSON writes ids in hex, where protobuf's JSON mapping expects base64."""
    if depth > _JSON_DEPTH:
        raise OtlpError(400, f"the body nests over {_JSON_DEPTH} levels")
    if isinstance(node, list):
        for item in node:
            _hex_ids_to_base64(item, depth + 1)
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        size = _ID_FIELDS.get(key) or _ID_FIELDS_SNAKE.get(key)
        if size is not None and isinstance(value, str):
            node[key] = _id_base64(key, value, size)
        else:
            _hex_ids_to_base64(value, depth + 1)


def _id_base64(key: str, value: str, size: int) -> str:
    if value == "":
        return ""
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raw = b""
    if len(raw) != size:
        raise OtlpError(400, f"{key} {value[:40]!r} is not {size * 2} hex digits")
    return base64.b64encode(raw).decode()


# Answers


def success(rejected: int, message: str, media: str) -> bytes:
    """An ``ExportTraceServiceResponse``: ``partial_success`` when spans were rejected."""
    response = ExportTraceServiceResponse()
    if rejected:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message
    return _encode(response, media)


def failure(error: OtlpError) -> bytes:
    """A ``google.rpc.Status`` saying why ``error`` refused the request."""
    status = status_pb2.Status(code=_rpc_code(error.status), message=error.message)
    return _encode(status, error.encoding)


def _encode(message: Any, media: str) -> bytes:
    if media == PROTOBUF:
        serialized: bytes = message.SerializeToString()
        return serialized
    text: str = json_format.MessageToJson(message, indent=None)
    return text.encode()


def _rpc_code(status: int) -> int:
    # google.rpc.Code: INVALID_ARGUMENT, RESOURCE_EXHAUSTED, UNAUTHENTICATED, UNIMPLEMENTED.
    return {400: 3, 413: 3, 429: 8, 401: 16, 415: 12}.get(status, 2)


def hex_id(raw: bytes) -> str:
    return binascii.hexlify(raw).decode()
