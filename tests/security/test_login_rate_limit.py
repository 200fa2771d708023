"""Sign-in attempts are rate limited on the page and on the API token endpoint."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient
from rest_framework.throttling import ScopedRateThrottle


@pytest.fixture
def low_auth_rate(settings: Any, monkeypatch: pytest.MonkeyPatch) -> int:
    rates = {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "auth": "5/min"}
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}
    # DRF's throttles read their rates once, when their class is created.
    monkeypatch.setattr(ScopedRateThrottle, "THROTTLE_RATES", rates)
    return 5


@pytest.mark.django_db
def test_the_sign_in_page_answers_429_once_the_attempts_are_used_up(
    ada: User, low_auth_rate: int
) -> None:
    client = Client()
    for _ in range(low_auth_rate):
        response = client.post("/accounts/login/", {"username": "ada", "password": "wrong"})
        assert response.status_code == 200  # the form again, with "wrong password"
    limited = client.post("/accounts/login/", {"username": "ada", "password": "ada-password-1"})
    assert limited.status_code == 429
    assert limited["Retry-After"] == "60"
    assert "_auth_user_id" not in client.session  # not even the right password gets in


@pytest.mark.django_db
def test_guessing_one_account_from_many_addresses_is_limited_too(
    ada: User, low_auth_rate: int
) -> None:
    for n in range(low_auth_rate):
        Client(REMOTE_ADDR=f"203.0.113.{n}").post(
            "/accounts/login/", {"username": "ADA", "password": "wrong"}
        )
    response = Client(REMOTE_ADDR="203.0.113.99").post(
        "/accounts/login/", {"username": "ada", "password": "wrong"}
    )
    assert response.status_code == 429


@pytest.mark.django_db
def test_the_token_endpoint_answers_429_once_the_attempts_are_used_up(
    ada: User, low_auth_rate: int
) -> None:
    api = APIClient()
    for _ in range(low_auth_rate):
        assert api.post("/api/auth/token/", {"username": "ada", "password": "x"}).status_code == 400
    response = api.post("/api/auth/token/", {"username": "ada", "password": "ada-password-1"})
    assert response.status_code == 429
    assert response.json()["code"] == "throttled"
