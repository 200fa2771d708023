"""CSRF: under session auth, every unsafe method on every route answers 403 without a
token (routes enumerated from the URL resolver). Websocket origins: test_ws_origin.py."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.urls.exceptions import Resolver404

UNSAFE = ("post", "put", "patch", "delete")
# Exchanges a username and password for a token: no session, so nothing to forge.
NO_SESSION_AUTH = {
    "/api/auth/token/",
    "/v1/traces",  # OTLP ingest: an ingest token, never the session (studio.web.otlp)
}
_GROUP = re.compile(r"\(\?P<(\w+)>[^)]*\)")
# Fixed, not uuid4(): the paths are test ids, which every xdist worker must collect alike.
_SAMPLES = {
    "uuid": "9b2f3c1e-5d4a-4f6b-8c7d-2e1f0a9b8c7d",
    "int": "1",
    "str": "x",
    "slug": "x",
    "path": "x",
}


def routes(
    patterns: list[URLPattern | URLResolver] | None = None, prefix: str = ""
) -> Iterator[str]:
    """A concrete path for every route, placeholders filled with sample values."""
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        here = prefix + _concrete(entry)
        if isinstance(entry, URLResolver):
            yield from routes(entry.url_patterns, here)
        else:
            yield "/" + here


def _concrete(entry: URLPattern | URLResolver) -> str:
    pattern = entry.pattern
    converters = getattr(pattern, "converters", {})
    text = str(pattern).removeprefix("^").removesuffix("$").removesuffix("\\Z")
    if converters or ("<" in text and "(?P" not in text):
        return re.sub(r"<(?:(\w+):)?(\w+)>", lambda m: _SAMPLES.get(m[1] or "str", "x"), text)
    text = re.sub(r"\\\.\(\?P<format>[^)]*\)/\?", "", text)
    sample = lambda m: "1" if "0-9" in m[0] and "^" not in m[0] else _SAMPLES["uuid"]  # noqa: E731
    text = _GROUP.sub(sample, text)
    return text.replace("\\", "").replace("/?", "/").replace("?", "")


def resolvable_routes() -> list[str]:
    found = []
    for path in sorted(set(routes())):
        try:
            resolve(path)
        except Resolver404:
            continue
        found.append(path)
    return found


def test_every_route_is_enumerated() -> None:
    found = resolvable_routes()
    assert len(found) >= 60, found  # the pages, the API and the admin
    for expected in ("/accounts/logout/", "/api/models/", f"/api/runs/{_SAMPLES['uuid']}/cancel/"):
        assert expected in found


@pytest.mark.django_db
@pytest.mark.parametrize("path", resolvable_routes())
def test_unsafe_methods_without_a_csrf_token_answer_403(staff: User, path: str) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff)
    if path in NO_SESSION_AUTH:
        pytest.skip("no session auth on this route")
    for method in UNSAFE:
        response = getattr(client, method)(path, {}, content_type="application/json")
        assert response.status_code == 403, f"{method.upper()} {path}: {response.status_code}"


@pytest.mark.django_db
def test_a_token_made_for_another_session_does_not_pass(ada: User) -> None:
    attacker = Client(enforce_csrf_checks=True)
    attacker.get("/accounts/login/")
    token = attacker.cookies["csrftoken"].value
    victim = Client(enforce_csrf_checks=True)
    victim.force_login(ada)
    response = victim.post(
        "/api/models/",
        {"name": "m", "provider": "scripted"},
        content_type="application/json",
        HTTP_X_CSRFTOKEN=token,
    )
    assert response.status_code == 403
