"""A canary provider key, stored through the API, appears nowhere a user or operator
can look: API responses, pages, admin, live events, stored events, exports, run errors,
error pages and DEBUG logs, not even when the model endpoint echoes it back."""

from __future__ import annotations

import base64
import logging
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from agents_core import events as core_events
from studio import services
from studio.models import ModelConfig, Run, RunStatus, Session
from studio.runs.execute import execute_run
from tests.studio.conftest import make_agent, make_session
from tests.support.openai_server import QUOTED_KEY, OpenAIServer

pytestmark = pytest.mark.django_db(transaction=True)

CANARY = "sk-canary-Zq8fP3xW9rL2mN7vB4tY6uK1"
LOGGERS = (
    "django",
    "django.db.backends",
    "django.request",
    "channels",
    "daphne",
    "httpx",
    "httpcore",
    "openai",
    "langchain",
    "langchain_openai",
    "studio",
    "agents_core",
)


def forms_of(secret: str) -> list[str]:
    """The secret as it could show up: raw, base64 (standard and url-safe, also of the
    bearer header) and URL-encoded."""
    raw = secret.encode()
    found = {secret, quote(secret, safe=""), quote_plus(secret)}
    for blob in (raw, b"Bearer " + raw):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            found.add(encode(blob).decode().rstrip("="))
    return sorted(found)


def assert_absent(where: str, text: str) -> None:
    for form in forms_of(CANARY):
        assert form not in text, f"the canary key ({form!r}) leaked into {where}"


@pytest.fixture
def echoing_server() -> Any:
    with OpenAIServer() as server:
        # Every answer is a 401 whose error body quotes the key it was sent.
        server.fail(401, times=50, message=f"Incorrect API key provided: {QUOTED_KEY}")
        yield server


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture, settings: Any) -> pytest.LogCaptureFixture:
    settings.DEBUG = True  # Django logs every SQL statement with its parameters
    caplog.set_level(logging.DEBUG)
    for name in LOGGERS:
        caplog.set_level(logging.DEBUG, logger=name)
    return caplog


def store_canary(api: APIClient, server: OpenAIServer) -> dict[str, Any]:
    response = api.post(
        "/api/models/",
        {
            "name": "remote",
            "provider": "openai_compatible",
            "model": "fake-model",
            "base_url": server.base_url,
            "api_key": CANARY,
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    assert_absent("the create response", response.content.decode())
    return dict(response.json())


@sync_to_async
def queued_run(owner: User) -> Run:
    agent = make_agent(owner, "remote_agent", model="remote")
    return services.start_run(make_session(owner, agent), "hi")


async def test_the_canary_key_leaks_nowhere_even_when_the_endpoint_echoes_it(
    ada: User,
    staff: User,
    echoing_server: OpenAIServer,
    debug_logs: pytest.LogCaptureFixture,
    settings: Any,
) -> None:
    settings.STUDIO_OUTBOUND_ALLOWLIST = ["127.0.0.1"]
    api = APIClient()
    api.force_authenticate(ada)
    created = await sync_to_async(store_canary)(api, echoing_server)
    seen: list[core_events.Event] = []

    async def collect(event: core_events.Event) -> None:
        seen.append(event)

    finished = await execute_run(await queued_run(ada), on_event=collect)
    sent = echoing_server.authorizations
    assert sent, "the run never reached the echoing endpoint"
    assert sent == [f"Bearer {CANARY}"] * len(sent)
    assert finished.status == RunStatus.FAILED
    assert_absent("live events (websocket frames)", repr([e.to_wire() for e in seen]))
    assert_absent("the run's error", f"{finished.error_code} {finished.error_message}")
    await sync_to_async(assert_nothing_shown)(ada, staff, created, finished)
    lines = [f"{r.name} {r.getMessage()} {r.args!r} {r.exc_text}" for r in debug_logs.records]
    assert any("httpx" in line or "openai" in line for line in lines)
    assert_absent("the logs", "\n".join(lines))


def assert_nothing_shown(ada: User, staff: User, created: dict[str, Any], run: Run) -> None:
    api = APIClient()
    api.force_authenticate(ada)
    model_url = f"/api/models/{created['id']}/"
    session = Session.objects.select_related("agent_version__agent").get(pk=run.session_id)
    test = api.post(f"{model_url}test/")
    assert test.json()["ok"] is False
    for url in (
        "/api/models/",
        model_url,
        f"/api/sessions/{session.pk}/",
        f"/api/sessions/{session.pk}/events/",
        f"/api/sessions/{session.pk}/export/",
        f"/api/runs/{run.pk}/",
        "/api/runs/",
    ):
        response = api.get(url)
        assert response.status_code == 200, url
        assert_absent(url, response.content.decode())
    assert_absent("the connection test", test.content.decode())
    assert_absent("the session export", repr(services.export_session(session)))
    pages = Client()
    pages.force_login(ada)
    for url in (
        "/models/",
        f"/models/{created['id']}/",
        "/sessions/",
        f"/sessions/{session.pk}/",
        "/playground/",
    ):
        response = pages.get(url)
        assert response.status_code == 200, url
        assert_absent(url, response.content.decode())
    admin = Client()
    admin.force_login(staff)
    for url in (
        "/admin/studio/modelconfig/",
        f"/admin/studio/modelconfig/{created['id']}/change/",
        "/admin/studio/run/",
        f"/admin/studio/run/{run.pk}/change/",
        "/admin/studio/session/",
        f"/admin/studio/session/{session.pk}/change/",
    ):
        response = admin.get(url)
        assert response.status_code == 200, url
        assert_absent(url, response.content.decode())
    assert ModelConfig.objects.get(name="remote").api_key() == CANARY


def test_redaction_removes_every_form_of_the_key_and_leaves_the_rest() -> None:
    from studio.security import REDACTED, redact

    text = " | ".join(["Incorrect API key provided", *forms_of(CANARY)])
    redacted = redact(text, [CANARY])
    assert_absent("redacted text", redacted)
    assert redacted.startswith("Incorrect API key provided | ")
    assert redacted.count(REDACTED) == len(forms_of(CANARY))
    assert redact("short key abc", ["abc"]) == "short key abc"  # too short to be a key
