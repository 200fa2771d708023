"""Run under the production configuration (by test_production_settings, in a subprocess):
fetch every page over HTTPS as a signed-in user and print each one's status, headers and
cookies as JSON."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")

import django

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.test import Client  # noqa: E402

from studio import services  # noqa: E402
from studio.models import ModelConfig  # noqa: E402

HOST = os.environ["PROBE_HOST"]


def main() -> None:
    user = User.objects.create_superuser("probe", password="a-long-probe-password-1")
    model = ModelConfig.objects.create(owner=user, name="scripted", provider="scripted")
    agent = services.create_agent(
        user, name="helper", spec={"name": "helper", "model": "scripted", "instruction": "hi"}
    )
    session = services.start_session(user, agent)
    client = Client(HTTP_HOST=HOST)
    pages = {"/accounts/login/": client.get("/accounts/login/", secure=True)}
    login = client.post(
        "/accounts/login/",
        {"username": "probe", "password": "a-long-probe-password-1"},
        HTTP_REFERER=f"https://{HOST}/accounts/login/",
        secure=True,
    )
    for path in (
        "/",
        "/agents/",
        "/agents/new/",
        f"/agents/{agent.pk}/",
        "/models/",
        "/models/new/",
        f"/models/{model.pk}/",
        "/mcp-servers/",
        "/mcp-servers/new/",
        "/playground/",
        "/sessions/",
        f"/sessions/{session.pk}/",
        "/healthz",
        "/admin/",
        "/admin/studio/modelconfig/",
        "/api/docs/",
        "/api/models/",
        "/no-such-page/",
    ):
        pages[path] = client.get(path, secure=True)
    plain = Client(HTTP_HOST=HOST).get("/accounts/login/")
    print(
        json.dumps(
            {
                "login": {"status": login.status_code, "cookies": cookies(login)},
                "plain_http": {"status": plain.status_code, "location": plain.get("Location", "")},
                "pages": {
                    p: {"status": r.status_code, "headers": dict(r.headers)}
                    for p, r in pages.items()
                },
            }
        )
    )


def cookies(response: object) -> dict[str, str]:
    return {name: morsel.OutputString() for name, morsel in response.cookies.items()}  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
