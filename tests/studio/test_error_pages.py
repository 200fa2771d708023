"""Studio's error handlers (studio/web/errors.py) with DEBUG off: 400, 403 (the CSRF
failure too), 404 and 500 are pages of the app with a way back, and JSON under /api/.
The 500 page renders without touching the database: it may be what failed."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest, HttpResponse
from django.test import Client
from django.urls import path

from studio import urls as studio_urls


def boom(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a bug")


def suspicious(request: HttpRequest) -> HttpResponse:
    raise SuspiciousOperation("a malformed request")


# This module is the URLconf of its tests: Studio's, with views that fail on purpose.
urlpatterns = [
    path("boom/", boom),
    path("api/boom/", boom),
    path("agents/suspicious/", suspicious),
    *studio_urls.urlpatterns,
]
handler400 = studio_urls.handler400
handler403 = studio_urls.handler403
handler404 = studio_urls.handler404
handler500 = studio_urls.handler500

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _production_errors(settings: Any) -> None:
    settings.DEBUG = False
    settings.ROOT_URLCONF = __name__


@pytest.fixture
def client(ada: User) -> Client:
    signed_in = Client(raise_request_exception=False)
    signed_in.force_login(ada)
    return signed_in


def test_a_server_error_is_a_page_of_the_app_rendered_without_the_database(
    client: Client, django_assert_num_queries: Any
) -> None:
    with django_assert_num_queries(0):
        response = client.get("/boom/")
    html = response.content.decode()
    assert response.status_code == 500
    assert "Something went wrong on Studio's side" in html
    assert 'href="/static/studio/css/studio.css"' in html
    assert 'rel="icon"' in html
    assert '<a class="btn primary" href="/">Go to the home page</a>' in html
    assert 'class="topnav"' not in html  # no request, no user: no navigation


def test_a_server_error_under_the_api_is_json(client: Client) -> None:
    response = client.get("/api/boom/")
    assert response.status_code == 500
    assert response.json() == {"code": "error", "detail": "A server error occurred."}


def test_a_missing_page_names_the_list_to_go_back_to(client: Client) -> None:
    response = client.get("/sessions/00000000-0000-0000-0000-000000000000/")
    html = response.content.decode()
    assert response.status_code == 404
    assert "There is nothing here" in html
    assert '<a class="btn primary" href="/sessions/">Back to Sessions</a>' in html
    assert 'class="topnav"' in html and 'aria-current="page">Sessions</a>' in html


def test_a_missing_url_under_the_api_is_the_apis_json_404() -> None:
    response = Client().get("/api/no-such-thing/")
    assert response.status_code == 404
    assert response.json() == {"code": "not_found", "detail": "Not found."}


def test_a_bad_request_is_a_page_of_the_app(client: Client) -> None:
    response = client.get("/agents/suspicious/")
    assert response.status_code == 400
    assert "Studio could not understand that request" in response.content.decode()
    assert "Back to Agents" in response.content.decode()


def test_a_form_without_its_csrf_token_is_refused_with_a_page_saying_so() -> None:
    response = Client(enforce_csrf_checks=True).post(
        "/accounts/login/", {"username": "ada", "password": "x"}
    )
    html = response.content.decode()
    assert response.status_code == 403
    assert "Studio refused this form to protect you" in html
    assert "Nothing was changed" in html
    assert 'href="/static/studio/css/studio.css"' in html
