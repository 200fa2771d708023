"""``POST /v1/traces``: OTLP/HTTP trace ingest (``studio.services.ingest`` stores it).

Answers as the OTLP specification says, in the request's encoding: 200 with an
``ExportTraceServiceResponse`` (``partial_success`` counting the spans rejected); a
``google.rpc.Status`` body with 400 for a body that does not parse, 401 without a valid
ingest token (``Authorization: Bearer <token>``, or ``x-studio-token: <token>``), 413
for a body over ``STUDIO_OTLP_MAX_BYTES`` (or inflating past
``STUDIO_OTLP_MAX_INFLATED_BYTES``, or with over ``STUDIO_OTLP_MAX_SPANS`` spans), 415
for a content type other than protobuf or JSON (or an encoding other than gzip), 429
with ``Retry-After`` (whole seconds, as OTLP/HTTP asks of a throttled client) past the
token's rate (``STUDIO_OTLP_RATE_PER_S``, bursts of ``STUDIO_OTLP_BURST``), counted in
the database (``studio.gates.rate_limits``), so it holds across every server.

Not a DRF route (it speaks protobuf, and signs in with its own tokens): it is not in the
OpenAPI schema, and its tests call it directly.
"""

from __future__ import annotations

import math
import time
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from studio.db import db_sync_to_async
from studio.gates import rate_limits
from studio.ingest import wire
from studio.ingest.wire import OtlpError
from studio.models import IngestToken
from studio.services import ingest, tokens


@csrf_exempt
async def traces(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        answer = _refuse(OtlpError(405, "use POST"))
        answer["Allow"] = "POST"
        return answer
    try:
        return await _export(request)
    except OtlpError as error:
        return _refuse(error)


async def _export(request: HttpRequest) -> HttpResponse:
    token = await db_sync_to_async(_token_row)(_token_of(request))
    media = wire.media_type(request.headers.get("Content-Type", ""))
    encoding = media if media in (wire.PROTOBUF, wire.JSON) else wire.JSON
    if token is None:
        raise OtlpError(
            401, "a valid ingest token is required: Authorization: Bearer <token>", encoding
        )
    media = wire.check_media(media)
    wait = await db_sync_to_async(rate_limits.take_ingest)(token.pk, time.time())
    if wait is not None:
        answer = _refuse(OtlpError(429, "too many requests for this token: retry later", media))
        answer["Retry-After"] = str(max(1, math.ceil(wait)))
        return answer
    parsed = wire.read_request(
        _body(request, media),
        media,
        request.headers.get("Content-Encoding", ""),
        max_inflated=settings.STUDIO_OTLP_MAX_INFLATED_BYTES,
    )
    _check_span_count(parsed, media)
    done = await db_sync_to_async(ingest.ingest)(token.owner_id, parsed)
    await ingest.publish(done)
    return HttpResponse(wire.success(done.rejected, done.reason, media), content_type=media)


def _token_of(request: HttpRequest) -> str:
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return request.headers.get("X-Studio-Token", "").strip()


def _token_row(token: str) -> IngestToken | None:
    return tokens.token_row(IngestToken, token) if token else None


def _body(request: HttpRequest, media: str) -> bytes:
    limit: int = settings.STUDIO_OTLP_MAX_BYTES
    declared = request.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        raise OtlpError(413, f"the body is over {limit} bytes", media)
    body = request.read(limit + 1)
    if len(body) > limit:
        raise OtlpError(413, f"the body is over {limit} bytes", media)
    return body


def _check_span_count(parsed: Any, media: str) -> None:
    limit: int = settings.STUDIO_OTLP_MAX_SPANS
    count: int = sum(
        len(scope.spans) for resource in parsed.resource_spans for scope in resource.scope_spans
    )
    if count > limit:
        raise OtlpError(413, f"{count} spans in one request, over {limit}: send fewer", media)


def _refuse(error: OtlpError) -> HttpResponse:
    answer = HttpResponse(wire.failure(error), status=error.status, content_type=error.encoding)
    if error.status == 401:
        answer["WWW-Authenticate"] = 'Bearer realm="otlp"'
    return answer
