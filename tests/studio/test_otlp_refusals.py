"""Requests ``POST /v1/traces`` refuses, answered as the OTLP specification says (a
``google.rpc.Status`` in the request's encoding) with nothing stored: no or a bad token
(401), too large (413, gzip bombs too), malformed (400), another content type or encoding
(415), over the token's rate (429 with Retry-After), not a POST (405)."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from google.rpc import status_pb2

from studio.gates import rate_limits
from studio.models import (
    Event,
    ExternalAgent,
    IngestedTrace,
    IngestToken,
    IngestWindow,
    McpToken,
    Session,
)
from studio.services import tokens
from tests.studio.test_otlp_ingest import PROTOBUF, URL, post, token_for
from tests.support.otlp_spans import agent_trace, json_body, new_trace_id, request_of

# Committed, not in a test's transaction: the view's ORM work runs through
# ``database_sync_to_async``, which closes the connection a test's transaction holds on
# PostgreSQL (these tests run there too, ``PG_TESTS``).
pytestmark = pytest.mark.django_db(transaction=True)


def test_gzip_bodies_are_inflated_and_a_bomb_is_refused_with_413(ada: User, settings: Any) -> None:
    token = token_for(ada)
    body = request_of(*agent_trace(new_trace_id())).SerializeToString()
    answer = post(gzip.compress(body), token, content_encoding="gzip")
    assert answer.status_code == 200, answer.content
    settings.STUDIO_OTLP_MAX_INFLATED_BYTES = 64 * 1024
    bomb = gzip.compress(b"\0" * (1024 * 1024))
    refused = post(bomb, token, content_encoding="gzip")
    assert refused.status_code == 413
    assert "inflates" in _status(refused).message
    assert post(b"not gzip", token, content_encoding="gzip").status_code == 400
    assert post(body, token, content_encoding="br").status_code == 415


def _status(answer: Any) -> status_pb2.Status:
    status = status_pb2.Status()
    if answer["Content-Type"] == PROTOBUF:
        status.ParseFromString(answer.content)
    else:
        status.message = json.loads(answer.content)["message"]
    return status


def test_bad_missing_and_revoked_tokens_get_401_and_store_nothing(ada: User) -> None:
    body = request_of(*agent_trace(new_trace_id())).SerializeToString()
    row, token = tokens.create_token(IngestToken, ada, "x")
    mcp_token = tokens.create_token(McpToken, ada, "m")[1]
    for bad in (None, token + "x", "sotlp_guess", mcp_token):
        answer = post(body, bad)
        assert answer.status_code == 401, bad
        assert answer["WWW-Authenticate"].startswith("Bearer")
        assert "token" in _status(answer).message
    tokens.revoke_token(row)
    assert post(body, token).status_code == 401
    assert not Session.objects.exists()


def test_the_x_studio_token_header_signs_in_too(ada: User) -> None:
    body = request_of(*agent_trace(new_trace_id())).SerializeToString()
    answer = Client().post(
        URL, body, content_type=PROTOBUF, headers={"x-studio-token": token_for(ada)}
    )
    assert answer.status_code == 200


def test_oversize_bodies_and_span_counts_get_413(ada: User, settings: Any) -> None:
    token = token_for(ada)
    settings.STUDIO_OTLP_MAX_BYTES = 2048
    big = request_of(*agent_trace(new_trace_id()))
    big.resource_spans[0].scope_spans[0].spans[0].name = "x" * 4096
    assert post(big.SerializeToString(), token).status_code == 413
    settings.STUDIO_OTLP_MAX_BYTES = 4 * 1024 * 1024
    settings.STUDIO_OTLP_MAX_SPANS = 3
    refused = post(request_of(*agent_trace(new_trace_id())).SerializeToString(), token)
    assert refused.status_code == 413 and "4 spans" in _status(refused).message
    assert not Session.objects.exists()


def test_malformed_bodies_get_400_with_a_status_in_their_encoding_and_store_nothing(
    ada: User,
) -> None:
    token = token_for(ada)
    garbage = post(b"\xff\xff\xff\xff not protobuf", token)
    assert garbage.status_code == 400 and garbage["Content-Type"] == PROTOBUF
    assert _status(garbage).code == 3  # INVALID_ARGUMENT
    good = json.loads(json_body(request_of(*agent_trace(new_trace_id()))))
    bad_id = json.loads(json.dumps(good))
    bad_id["resourceSpans"][0]["scopeSpans"][0]["spans"][2]["spanId"] = "not-hex"
    for body in (b"{not json", b"[1, 2]", json.dumps(bad_id).encode(), b'{"resourceSpans": 5}'):
        answer = post(body, token, content_type="application/json")
        assert answer.status_code == 400, body
        assert answer["Content-Type"] == "application/json"
        assert json.loads(answer.content)["code"] == 3
    assert not Session.objects.exists() and not Event.objects.exists()
    assert not ExternalAgent.objects.exists()


def test_other_content_types_get_415(ada: User) -> None:
    body = request_of(*agent_trace(new_trace_id())).SerializeToString()
    for media in ("text/plain", "application/grpc", "multipart/form-data; boundary=x"):
        answer = post(body, token_for(ada, media[:20]), content_type=media)
        assert answer.status_code == 415, media
    assert not Session.objects.exists()


def test_a_token_over_its_rate_gets_429_with_retry_after(
    ada: User, bob: User, settings: Any
) -> None:
    settings.STUDIO_OTLP_BURST = 2
    settings.STUDIO_OTLP_RATE_PER_S = 1e-6  # a window of 2e6 s: the test never ends one
    token = token_for(ada)
    bodies = [request_of(*agent_trace(new_trace_id())).SerializeToString() for _ in range(3)]
    assert [post(b, token).status_code for b in bodies] == [200, 200, 429]
    refused = post(bodies[2], token)
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    assert post(bodies[2], token_for(bob)).status_code == 200  # each token its own bucket
    assert IngestedTrace.objects.filter(owner=ada).count() == 2
    # counted in the database, not in this process: every server sees the same windows
    assert IngestWindow.objects.get(token__owner=ada).requests == 2


def test_a_token_sends_its_burst_per_window_then_waits_for_the_next(
    ada: User, settings: Any
) -> None:
    settings.STUDIO_OTLP_BURST = 3
    settings.STUDIO_OTLP_RATE_PER_S = 0.5  # windows of 6 s
    row = tokens.token_row(IngestToken, token_for(ada))
    assert row is not None
    start = 1_000_000 * 6.0  # a window's first second
    taken = [rate_limits.take_ingest(row.pk, start + i) for i in range(4)]
    assert taken[:3] == [None, None, None]
    assert taken[3] == 6.0 - 3  # the next window starts in 3 s
    assert rate_limits.take_ingest(row.pk, start + 6.0) is None  # the next window
    assert IngestWindow.objects.filter(token=row).count() == 2


def test_get_is_not_allowed(ada: User) -> None:
    answer = Client().get(URL, headers={"authorization": f"Bearer {token_for(ada)}"})
    assert answer.status_code == 405 and answer["Allow"] == "POST"
