"""A failed connection test says what failed in words: the address, the status, what to
check; never the key. Against the real OpenAI-compatible test server and real refused
ports, through ``POST /api/models/<id>/test/``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from rest_framework.test import APIClient

from studio import security
from tests.support.openai_server import QUOTED_KEY, OpenAIServer, unreachable_base_url

pytestmark = pytest.mark.django_db

KEY = "sk-live-0123456789abcdefWXYZ"


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as started:
        yield started


def connection_test(api: APIClient, base_url: str, *, key: str = KEY) -> dict[str, Any]:
    payload = {"name": "m", "provider": "openai_compatible", "model": "test-model"}
    payload |= {"base_url": base_url, "options": {"streaming": False}}
    if key:
        payload["api_key"] = key
    created = api.post("/api/models/", payload)
    assert created.status_code == 201, created.json()
    response = api.post(f"/api/models/{created.json()['id']}/test/")
    assert response.status_code == 200
    text = response.content.decode()
    for form in security.secret_forms(KEY):
        assert form not in text
    body = dict(response.json())
    assert body["ok"] is False, body
    return body


def host_port(server: OpenAIServer) -> str:
    return f"127.0.0.1:{server.port}"


def test_a_refused_port_names_the_address_and_says_to_start_the_server(api: APIClient) -> None:
    base_url = unreachable_base_url()
    body = connection_test(api, base_url)
    assert body["code"] == "connection_refused"
    address = base_url.removeprefix("http://").removesuffix("/v1")
    assert body["detail"].startswith(f"Nothing accepts connections at {address}")
    assert "model server is running" in body["detail"]
    assert "Connection error" not in body["detail"]


def test_a_401_says_to_check_the_key_and_quotes_the_provider_without_it(
    api: APIClient, server: OpenAIServer
) -> None:
    server.fail(401, message=f"Incorrect API key provided: {QUOTED_KEY}")
    body = connection_test(api, server.base_url)
    assert body["code"] == "unauthorized"
    assert f"{server.base_url}/chat/completions answered 401 Unauthorized" in body["detail"]
    assert "check the API key" in body["detail"]
    assert "Incorrect API key provided: [redacted]" in body["detail"]
    assert server.authorizations == [f"Bearer {KEY}"]  # it was sent, and not repeated


def test_a_401_without_a_stored_key_says_to_add_one(api: APIClient, server: OpenAIServer) -> None:
    server.fail(401, message="You didn't provide an API key.")
    body = connection_test(api, server.base_url, key="")
    assert body["code"] == "unauthorized"
    assert "none is stored: add one" in body["detail"]


def test_a_403_says_to_check_what_the_key_may_use(api: APIClient, server: OpenAIServer) -> None:
    server.fail(403, message="project does not have access")
    body = connection_test(api, server.base_url)
    assert body["code"] == "forbidden"
    assert "403 Forbidden" in body["detail"] and "'test-model'" in body["detail"]


def test_a_404_says_to_check_the_base_url_and_the_model_name(
    api: APIClient, server: OpenAIServer
) -> None:
    server.fail(404, message="The model `test-model` does not exist")
    body = connection_test(api, server.base_url)
    assert body["code"] == "not_found"
    assert "answered 404 Not Found: check the base URL" in body["detail"]
    assert "model name 'test-model'" in body["detail"]
    assert "The server said: “The model `test-model` does not exist”" in body["detail"]


def test_a_base_url_without_v1_gets_the_same_404_advice(
    api: APIClient, server: OpenAIServer
) -> None:
    body = connection_test(api, server.url)
    assert body["code"] == "not_found"
    assert f"{server.url}/chat/completions answered 404" in body["detail"]
    assert "usually ends in /v1" in body["detail"]


@pytest.mark.parametrize(
    ("status", "code", "words"),
    [
        (429, "rate_limited", "429 Too Many Requests: the key's rate limit or quota"),
        (503, "server_error", "503 Service Unavailable: the model server failed"),
        (400, "request_refused", "400 Bad Request: check the model name 'test-model'"),
    ],
)
def test_other_statuses_say_what_they_mean(
    api: APIClient, server: OpenAIServer, status: int, code: str, words: str
) -> None:
    server.fail(status)
    body = connection_test(api, server.base_url)
    assert body["code"] == code
    assert words in body["detail"]


def test_a_server_that_does_not_answer_in_time_is_a_timeout_naming_the_limit(
    api: APIClient, server: OpenAIServer, settings: Any
) -> None:
    settings.MODEL_TEST_TIMEOUT_S = 0.5
    server.hang()
    try:
        body = connection_test(api, server.base_url)
    finally:
        server.release()
    assert body["code"] == "timeout"
    assert body["detail"].startswith(f"{host_port(server)} sent no answer within 0.5 s")
    assert "STUDIO_MODEL_TEST_TIMEOUT_S" in body["detail"]


def test_https_to_a_plain_http_server_says_to_check_the_scheme(
    api: APIClient, server: OpenAIServer
) -> None:
    body = connection_test(api, f"https://127.0.0.1:{server.port}/v1")
    assert body["code"] == "tls_failed"
    assert f"The TLS handshake with {host_port(server)} failed" in body["detail"]
    assert "http:// for a server without TLS" in body["detail"]


def test_a_server_that_hangs_up_says_so(api: APIClient, server: OpenAIServer) -> None:
    server.disconnect()
    body = connection_test(api, server.base_url)
    assert body["code"] == "disconnected"
    assert f"{host_port(server)} closed the connection without an answer" in body["detail"]


def test_a_host_name_that_does_not_resolve_says_so(api: APIClient, settings: Any) -> None:
    settings.STUDIO_OUTBOUND_ALLOWLIST = ["no-such-host.invalid"]  # saved past the check
    body = connection_test(api, "http://no-such-host.invalid/v1")
    assert body["code"] == "dns_failed"
    assert "no-such-host.invalid does not resolve" in body["detail"]


def test_a_refused_address_names_the_setting_that_would_allow_it(
    api: APIClient, server: OpenAIServer, settings: Any
) -> None:
    # Saved while allowed, then the operator narrowed the allowlist.
    settings.STUDIO_OUTBOUND_ALLOWLIST = ["127.0.0.0/8"]
    payload = {"name": "m", "provider": "openai_compatible", "model": "test-model"}
    created = api.post("/api/models/", payload | {"base_url": server.base_url}).json()
    settings.STUDIO_OUTBOUND_ALLOWLIST = []
    body = api.post(f"/api/models/{created['id']}/test/").json()
    assert (body["ok"], body["code"]) == (False, "address_refused")
    assert body["detail"].startswith("Studio did not send the request: 127.0.0.1 is a loopback")
    assert (
        "the operator who runs Studio allows it with the STUDIO_OUTBOUND_ALLOWLIST"
        in (body["detail"])
    )
    assert server.requests == []
