from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from studio import security
from studio.models import ModelConfig
from tests.studio.conftest import make_agent, results, scripted_model
from tests.support.openai_server import QUOTED_KEY, OpenAIServer

pytestmark = pytest.mark.django_db

KEY = "sk-live-0123456789abcdefWXYZ"


def openai_payload(**overrides: Any) -> dict[str, Any]:
    return {
        "name": "fake",
        "provider": "openai_compatible",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "fake-model",
        "api_key": KEY,
        **overrides,
    }


def test_creating_a_model_config_stores_the_key_encrypted_and_answers_only_a_hint(
    api: APIClient,
) -> None:
    response = api.post("/api/models/", openai_payload())
    assert response.status_code == 201
    body = response.json()
    assert "api_key" not in body
    assert (body["api_key_hint"], body["has_api_key"]) == ("...WXYZ", True)
    config = ModelConfig.objects.get(pk=body["id"])
    assert KEY not in config.api_key_ciphertext
    assert config.api_key() == KEY


def test_listing_and_reading_model_configs_never_returns_the_key(api: APIClient) -> None:
    created = api.post("/api/models/", openai_payload()).json()
    listed = api.get("/api/models/")
    detail = api.get(f"/api/models/{created['id']}/")
    assert [m["name"] for m in results(listed.json())] == ["fake"]
    assert KEY not in listed.content.decode()
    assert KEY not in detail.content.decode()


def test_updating_without_a_key_keeps_it_and_an_empty_key_removes_it(api: APIClient) -> None:
    created = api.post("/api/models/", openai_payload()).json()
    url = f"/api/models/{created['id']}/"
    assert api.patch(url, {"model": "other"}).json()["has_api_key"] is True
    assert ModelConfig.objects.get(pk=created["id"]).api_key() == KEY
    cleared = api.patch(url, {"api_key": ""}).json()
    assert (cleared["has_api_key"], cleared["api_key_hint"]) == (False, "")


def test_a_short_key_shows_no_characters_at_all(api: APIClient) -> None:
    body = api.post("/api/models/", openai_payload(api_key="abc123")).json()
    assert body["api_key_hint"] == "..."


def test_model_options_are_validated_per_provider_with_paths(api: APIClient) -> None:
    response = api.post("/api/models/", openai_payload(options={"temperature": 9, "headers": {}}))
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid"
    assert {e["path"] for e in body["errors"]} == {"options.temperature", "options.headers"}


def test_an_openai_compatible_config_needs_a_model_name(api: APIClient) -> None:
    response = api.post("/api/models/", openai_payload(model=""))
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "model"


def test_model_names_are_unique_per_owner_but_not_across_owners(api: APIClient, bob: User) -> None:
    scripted_model(bob, "shared-name")
    assert (
        api.post("/api/models/", {"name": "shared-name", "provider": "scripted"}).status_code == 201
    )
    again = api.post("/api/models/", {"name": "shared-name", "provider": "scripted"})
    assert again.status_code == 400
    assert again.json()["errors"][0] == {
        "path": "name",
        "code": "unique",
        "detail": "you already have a model named 'shared-name'",
    }


def test_deleting_a_model_config_that_an_agent_names_is_a_conflict(
    api: APIClient, ada: User
) -> None:
    make_agent(ada, "helper")
    config = ModelConfig.objects.get(owner=ada, name="scripted")
    response = api.delete(f"/api/models/{config.pk}/")
    assert response.status_code == 409
    assert response.json()["code"] == "model_in_use"
    renamed = api.patch(f"/api/models/{config.pk}/", {"name": "renamed"})
    assert renamed.status_code == 400
    assert renamed.json()["errors"][0]["code"] == "in_use"


def test_deleting_an_unused_model_config_removes_it(api: APIClient, ada: User) -> None:
    config = scripted_model(ada, "spare")
    assert api.delete(f"/api/models/{config.pk}/").status_code == 204
    assert not ModelConfig.objects.filter(pk=config.pk).exists()


def test_testing_a_scripted_model_is_always_ok(api: APIClient, ada: User) -> None:
    config = scripted_model(ada)
    response = api.post(f"/api/models/{config.pk}/test/")
    assert response.status_code == 200
    assert response.json()["ok"] is True


@pytest.mark.parametrize("streaming", [True, False])
def test_testing_an_openai_compatible_endpoint_sends_one_request_with_the_key(
    api: APIClient, streaming: bool
) -> None:
    with OpenAIServer() as server:
        server.reply("ok")
        payload = openai_payload(base_url=server.base_url, options={"streaming": streaming})
        created = api.post("/api/models/", payload).json()
        response = api.post(f"/api/models/{created['id']}/test/")
    body = response.json()
    assert (response.status_code, body["ok"]) == (200, True), body
    assert server.authorizations == [f"Bearer {KEY}"]
    assert body["latency_ms"] >= 0
    assert KEY not in response.content.decode()


def test_a_failed_connection_test_reports_the_error_without_echoing_the_key(
    api: APIClient,
) -> None:
    with OpenAIServer() as server:
        server.fail(401, message=f"Incorrect API key provided: {QUOTED_KEY}")
        created = api.post("/api/models/", openai_payload(base_url=server.base_url)).json()
        response = api.post(f"/api/models/{created['id']}/test/")
    body = response.json()
    assert (response.status_code, body["ok"]) == (200, False)
    assert "401" in body["detail"] or "auth" in body["detail"].lower(), body
    assert KEY not in response.content.decode()
    assert "WXYZ" not in body["detail"]


def test_an_unreachable_endpoint_reports_not_ok(api: APIClient, settings: Any) -> None:
    settings.MODEL_TEST_TIMEOUT_S = 2.0
    created = api.post("/api/models/", openai_payload(base_url="http://127.0.0.1:9/v1")).json()
    body = api.post(f"/api/models/{created['id']}/test/").json()
    assert body["ok"] is False
    assert KEY not in body["detail"]


@pytest.mark.parametrize("streaming", [True, False])
def test_a_base_url_whose_name_resolves_elsewhere_at_connection_time_is_not_connected(
    api: APIClient, settings: Any, monkeypatch: pytest.MonkeyPatch, streaming: bool
) -> None:
    """DNS rebinding: "localhost" answers a public address to the checks made when the
    base URL is saved and when the model is built, then its real loopback address. The
    client connects only to addresses it checked itself, so the key never reaches the
    loopback server."""
    settings.STUDIO_OUTBOUND_ALLOWLIST = []
    real_resolver = security.system_resolver
    lookups: list[str] = []

    def rebinding(host: str, port: int) -> list[str]:
        lookups.append(host)
        return ["93.184.216.34"] if len(lookups) <= 2 else real_resolver(host, port)

    monkeypatch.setattr(security, "system_resolver", rebinding)
    with OpenAIServer() as server:
        server.reply("ok")
        payload = openai_payload(
            base_url=f"http://localhost:{server.port}/v1", options={"streaming": streaming}
        )
        created = api.post("/api/models/", payload)
        assert created.status_code == 201, created.json()
        body = api.post(f"/api/models/{created.json()['id']}/test/").json()
    # Saved, built, then resolved to loopback when connecting: refused, so the server,
    # live at that address, got nothing (not even the key).
    assert len(lookups) >= 3
    assert server.requests == []
    assert body["ok"] is False
    assert KEY not in body["detail"]
