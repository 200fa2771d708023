"""Run under one configuration (by test_outbound_defaults, in a subprocess): with a real
OpenAI-compatible server on loopback, try what a user would (save a model on it through
the API, test its connection, test one stored before the check, open the model form)
and print what happened as JSON. ``--settings`` prints only the outbound settings."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")

from django.conf import settings

from studio import security

HOST = os.environ.get("PROBE_HOST", "127.0.0.1")
SECURE = settings.PRODUCTION


def main() -> None:
    outcome: dict[str, Any] = {
        "allowlist": settings.STUDIO_OUTBOUND_ALLOWLIST,
        "policy_line": security.policy_line(),
    }
    if "--settings" not in sys.argv:  # the settings alone need no app loaded
        import django

        django.setup()
        outcome |= try_a_loopback_model()
    print(json.dumps(outcome))


def try_a_loopback_model() -> dict[str, Any]:
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from rest_framework.test import APIClient

    from studio.models import ModelConfig
    from tests.support.openai_server import OpenAIServer

    call_command("migrate", verbosity=0)
    user = User.objects.create_user("probe", password="a-long-probe-password-1")
    api = APIClient(HTTP_HOST=HOST)
    api.force_authenticate(user)
    with OpenAIServer() as server:
        server.reply("ok")
        server.reply("ok")
        body = {"name": "local", "provider": "openai_compatible", "model": "test-model"}
        created = api.post(
            "/api/models/", body | {"base_url": server.base_url}, format="json", secure=SECURE
        )
        tested = None
        if created.status_code == 201:
            tested = test(api, created.json()["id"])
        # Stored before the check (or the allowlist narrowed since): refused at use too.
        stored = ModelConfig.objects.create(
            owner=user, **(body | {"name": "stored", "base_url": server.base_url})
        )
        outcome = {
            "create": {"status": created.status_code, "body": created.json()},
            "test": tested,
            "stored_test": test(api, str(stored.pk)),
            "requests": len(server.chat_requests),
        }
    return outcome | {
        "private": refusal("http://10.0.0.1:11434/v1"),
        "metadata": refusal("http://169.254.169.254/latest/"),
        "form_policy": form_policy(user),
    }


def test(api: Any, pk: str) -> dict[str, Any]:
    response = api.post(f"/api/models/{pk}/test/", secure=SECURE)
    return dict(response.json())


def refusal(url: str) -> str | None:
    try:
        security.check_outbound_url(url)
    except security.OutboundURLError as exc:
        return exc.detail
    return None


def form_policy(user: Any) -> str:
    from django.test import Client

    pages = Client(HTTP_HOST=HOST)
    pages.force_login(user)
    html = pages.get("/models/new/", secure=SECURE).content.decode()
    start = html.index('data-testid="outbound-policy">') + len('data-testid="outbound-policy">')
    return html[start : html.index("</span>", start)]


if __name__ == "__main__":
    main()
