"""The real server: Daphne serves Studio over HTTP on loopback and survives a restart."""

from __future__ import annotations

import json
import urllib.request

from tests.support.daphne_server import DaphneServer


def get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read()


def test_daphne_serves_the_health_check_and_the_sign_in_page(server: DaphneServer) -> None:
    status, body = get(f"{server.url}/healthz")
    assert (status, json.loads(body)) == (200, {"status": "ok"})
    status, body = get(f"{server.url}/accounts/login/")
    assert status == 200
    assert b"Sign in" in body


def test_a_killed_server_restarts_on_the_same_data(server: DaphneServer) -> None:
    token_before = server.manage(
        "shell", "-c", "from django.contrib.auth.models import User; print(User.objects.count())"
    ).stdout
    server.kill()
    server.restart()
    token_after = server.manage(
        "shell", "-c", "from django.contrib.auth.models import User; print(User.objects.count())"
    ).stdout
    assert token_before == token_after != ""
    status, _ = get(f"{server.url}/healthz")
    assert status == 200
