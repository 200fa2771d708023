"""``POST /v1/traces`` fuzzed directly (it is not in the OpenAPI schema: it speaks
protobuf and signs in with ingest tokens): random bytes, random gzip, and valid OTLP JSON
with values swapped for random ones. Every answer is one the OTLP specification allows,
in the request's encoding, never a server error; a refused body stores nothing."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.models import IngestToken, IngestWindow, Session
from studio.services import tokens
from tests.support.otlp_spans import agent_trace, json_body, new_trace_id, request_of

ALLOWED = {200, 400, 413, 415}
FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
VALID = json.loads(json_body(request_of(*agent_trace(new_trace_id()))))

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)


@pytest.fixture
def token(django_user_model: type[User]) -> str:
    user = django_user_model.objects.create_user("fuzzer")
    return tokens.create_token(IngestToken, user, "fuzz")[1]


def send(token: str, body: bytes, content_type: str, **headers: str) -> Any:
    IngestWindow.objects.all().delete()  # the fuzzer is not testing the rate limit
    headers["authorization"] = f"Bearer {token}"
    return Client().post("/v1/traces", body, content_type=content_type, headers=headers)


def check(token: str, body: bytes, content_type: str, **headers: str) -> None:
    sessions = Session.objects.count()  # the examples before this one stored theirs
    answer = send(token, body, content_type, **headers)
    assert answer.status_code in ALLOWED, answer.content
    assert answer["Content-Type"] == content_type
    if answer.status_code != 200:
        assert Session.objects.count() == sessions


@pytest.mark.django_db
@FUZZ
@given(body=st.binary(min_size=1, max_size=300), zipped=st.booleans())
def test_random_protobuf_bodies_are_answered_per_the_spec(
    token: str, body: bytes, zipped: bool
) -> None:
    headers = {"content_encoding": "gzip"} if zipped else {}
    data = gzip.compress(body) if zipped else body
    check(token, data, "application/x-protobuf", **headers)


def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*path, index))
    return found


PATHS = _paths(VALID)[1:]


def _replaced(document: Any, path: tuple[Any, ...], value: Any) -> Any:
    copy = json.loads(json.dumps(document))
    at = copy
    for step in path[:-1]:
        at = at[step]
    at[path[-1]] = value
    return copy


@pytest.mark.django_db
@FUZZ
@given(path=st.sampled_from(PATHS), value=json_values)
def test_otlp_json_with_a_value_swapped_is_answered_per_the_spec(
    token: str, path: tuple[Any, ...], value: Any
) -> None:
    body = json.dumps(_replaced(VALID, path, value)).encode()
    check(token, body, "application/json")
