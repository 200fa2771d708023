from __future__ import annotations

import time

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from studio.models import SignInWindow

pytestmark = pytest.mark.django_db


def test_a_username_and_password_buy_a_token_that_authenticates_api_calls(ada: User) -> None:
    client = APIClient()
    response = client.post(
        "/api/auth/token/", {"username": "ada", "password": "ada-password-1"}, format="json"
    )
    assert response.status_code == 200
    token = response.json()["token"]
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert client.get("/api/sessions/").status_code == 200


def test_a_wrong_password_gets_no_token_and_a_coded_error(ada: User) -> None:
    response = APIClient().post(
        "/api/auth/token/", {"username": "ada", "password": "wrong"}, format="json"
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid"
    assert "token" not in body


def test_the_token_endpoint_is_throttled_against_password_guessing(
    ada: User, settings: object
) -> None:
    for _ in range(2):  # again only if the attempts straddled two minutes' windows
        began, client = time.time(), APIClient()
        statuses = [
            client.post("/api/auth/token/", {"username": "ada", "password": "x"}).status_code
            for _ in range(21)
        ]
        if int(began // 60) == int(time.time() // 60):
            break
        SignInWindow.objects.all().delete()
    assert statuses[:20] == [400] * 20
    assert statuses[20] == 429


def test_anonymous_requests_answer_401_with_a_coded_error() -> None:
    response = APIClient().get("/api/agents/")
    assert response.status_code == 401
    assert response.json() == {
        "code": "not_authenticated",
        "detail": "Authentication credentials were not provided.",
    }
    assert response["WWW-Authenticate"] == "Token"


def test_a_bad_token_answers_401() -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token nope")
    response = client.get("/api/agents/")
    assert (response.status_code, response.json()["code"]) == (401, "authentication_failed")


def test_a_browser_session_authenticates_and_unsafe_requests_need_csrf(ada: User) -> None:
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(ada)
    assert client.get("/api/models/").status_code == 200
    response = client.post("/api/models/", {"name": "x", "provider": "scripted"}, format="json")
    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]


def test_unknown_routes_and_methods_use_the_error_shape(api: APIClient) -> None:
    response = api.put("/api/tools/", {})
    assert response.status_code == 405
    assert response.json()["code"] == "method_not_allowed"
