"""Anthropic, Gemini and Ollama configs through the API: their own options checked,
keys write-only, the connection test against an in-repo server speaking each wire
format, the address checks on every base URL, and a missing integration named."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest
from rest_framework.test import APIClient

from studio import security
from tests.support.anthropic_server import AnthropicServer
from tests.support.gemini_server import GeminiServer
from tests.support.ollama_server import OllamaServer
from tests.support.wire_server import WireServer

pytestmark = pytest.mark.django_db

KEY = "sk-provider-0123456789abcdefWXYZ"
SERVERS: dict[str, type[WireServer]] = {
    "anthropic": AnthropicServer,
    "gemini": GeminiServer,
    "ollama": OllamaServer,
}


@pytest.fixture(params=sorted(SERVERS))
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server(provider: str) -> Iterator[WireServer]:
    with SERVERS[provider]() as started:
        yield started


def create(api: APIClient, provider: str, base_url: str, **extra: Any) -> dict[str, Any]:
    payload = {"name": f"{provider} model", "provider": provider, "model": "test-model"}
    payload |= {"base_url": base_url, "api_key": KEY, **extra}
    created = api.post("/api/models/", payload, format="json")
    assert created.status_code == 201, created.json()
    return dict(created.json())


def connection_test(api: APIClient, config_id: str) -> dict[str, Any]:
    response = api.post(f"/api/models/{config_id}/test/")
    assert response.status_code == 200
    text = response.content.decode()
    for form in security.secret_forms(KEY):
        assert form not in text
    return dict(response.json())


def test_a_config_keeps_its_key_write_only(
    api: APIClient, provider: str, server: WireServer
) -> None:
    created = create(api, provider, server.base_url)

    shown = api.get(f"/api/models/{created['id']}/").content.decode()

    assert created["provider"] == provider
    assert created["has_api_key"] is True
    assert KEY not in shown
    assert created["api_key_hint"] == "...WXYZ"


def test_the_connection_test_reaches_the_providers_own_api(
    api: APIClient, provider: str, server: WireServer
) -> None:
    config = create(api, provider, server.base_url, options={"timeout_s": 10})
    server.reply("ok")

    body = connection_test(api, config["id"])

    assert body["ok"] is True, body
    assert body["code"] == "ok"
    (request,) = server.requests
    assert request.body.get("model", "test-model") == "test-model"
    headers = request.headers
    sent = headers.get("x-goog-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
    assert sent == ("" if provider == "ollama" else KEY)


def test_a_failed_connection_test_names_the_providers_path_and_quotes_it_without_the_key(
    api: APIClient, provider: str, server: WireServer
) -> None:
    config = create(api, provider, server.base_url)
    server.fail(401, f"invalid x-api-key {KEY}")

    body = connection_test(api, config["id"])

    assert body["ok"] is False
    assert body["code"] == "unauthorized"
    path = {"anthropic": "/v1/messages", "gemini": ":generateContent", "ollama": "/api/chat"}
    assert path[provider] in body["detail"]
    assert "invalid x-api-key" in body["detail"]


def test_options_are_checked_against_the_providers_own_list(api: APIClient, provider: str) -> None:
    payload = {"name": "m", "provider": provider, "model": "x", "options": {"api_key": "k"}}

    response = api.post("/api/models/", payload, format="json")

    assert response.status_code == 400
    assert "options" in response.json()["detail"] or "options" in response.content.decode()


def test_a_base_url_the_address_checks_refuse_is_not_stored(
    api: APIClient, provider: str, settings: Any
) -> None:
    settings.STUDIO_OUTBOUND_ALLOWLIST = []
    payload = {"name": "m", "provider": provider, "model": "x", "base_url": "http://127.0.0.1:9/"}

    response = api.post("/api/models/", payload, format="json")

    assert response.status_code == 400
    assert "base_url" in response.content.decode()
    assert api.get("/api/models/").json()["count"] == 0


def test_a_provider_whose_package_is_missing_is_refused_by_name(
    api: APIClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "langchain_ollama", None)  # as if not installed
    payload = {"name": "m", "provider": "ollama", "model": "llama3"}

    response = api.post("/api/models/", payload, format="json")

    assert response.status_code == 400
    text = response.content.decode()
    assert "langchain-ollama" in text
    assert "pip install langchain-ollama" in text


def test_a_config_whose_package_went_missing_says_so_when_tested(
    api: APIClient, monkeypatch: pytest.MonkeyPatch, server: WireServer, provider: str
) -> None:
    config = create(api, provider, server.base_url)
    module = {"anthropic": "langchain_anthropic", "gemini": "langchain_google_genai"}
    monkeypatch.setitem(sys.modules, module.get(provider, "langchain_ollama"), None)

    body = connection_test(api, config["id"])

    assert body["code"] == "provider_unavailable"
    assert "pip install langchain-" in body["detail"]
    assert server.requests == []


def test_an_address_refused_after_saving_gets_no_request(
    api: APIClient, provider: str, server: WireServer, settings: Any
) -> None:
    config = create(api, provider, server.base_url)
    settings.STUDIO_OUTBOUND_ALLOWLIST = []

    body = connection_test(api, config["id"])

    assert body["code"] == "address_refused"
    assert server.requests == []


def test_the_provider_transports_themselves_connect_only_to_admitted_addresses(
    settings: Any,
) -> None:
    """Not only the check before a call: each connection's address is checked as it is
    made, so a name that resolves elsewhere later (DNS rebinding) cannot slip past."""
    import httpx
    import httpx2

    from studio import checked_http

    with AnthropicServer() as server:
        settings.STUDIO_OUTBOUND_ALLOWLIST = []
        sync_httpx, _ = checked_http.httpx_transports()
        clients: list[tuple[Any, type[Exception]]] = [
            (httpx2.Client(transport=checked_http.model_transport()), httpx2.ConnectError),
            (httpx.Client(transport=sync_httpx), httpx.ConnectError),
        ]
        for client, refused in clients:  # each library's own error, which callers catch
            with pytest.raises(refused) as raised:
                client.post(f"{server.base_url}/v1/messages", json={})
            chain = [raised.value, raised.value.__cause__, raised.value.__context__]
            assert any(isinstance(e, checked_http.RefusedConnectError) for e in chain), chain
        assert server.requests == []


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_a_config_without_the_key_its_provider_needs_sends_nothing_and_says_so(
    api: APIClient, provider: str
) -> None:
    with SERVERS[provider]() as server:
        config = create(api, provider, server.base_url, api_key="")

        body = connection_test(api, config["id"])

        assert body["code"] == "api_key_missing"
        assert "needs an API key and none is stored" in body["detail"]
        assert server.requests == []


def test_a_client_closed_on_the_model_transport_leaves_other_runs_streams_alone() -> None:
    """Every run's Anthropic and Gemini clients share one transport: one client closed
    (as the SDKs do when it is garbage collected) must not end another run's stream."""
    from studio import checked_http
    from tests.support.held_stream import stream_while_other_clients_close

    assert stream_while_other_clients_close(checked_http.model_transport()) == b"firstlast"
