"""The trace ingest settings page: ingest tokens made (shown once) and revoked, as MCP
tokens are, owner-scoped, and the external agents that sent traces."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from studio.models import IngestToken
from studio.services import tokens
from tests.studio.test_otlp_ingest import post
from tests.support.otlp_spans import agent_trace, new_trace_id, request_of


@pytest.mark.django_db(transaction=True)  # posts to the async ingest view
def test_the_page_shows_a_new_token_once_and_it_works(ada: User) -> None:
    browser = Client()
    browser.force_login(ada)
    page = browser.post("/settings/trace-ingest/", {"name": "my agent"})
    token = page.context["created"]
    assert token.startswith("sotlp_") and token in page.content.decode()
    assert IngestToken.objects.get(owner=ada).digest != token
    again = browser.get("/settings/trace-ingest/").content.decode()
    assert token not in again and "my agent" in again and "/v1/traces" in again
    assert (
        post(request_of(*agent_trace(new_trace_id())).SerializeToString(), token).status_code == 200
    )
    assert "shopper" in browser.get("/settings/trace-ingest/").content.decode()


@pytest.mark.django_db
def test_another_users_ingest_token_is_not_listed_and_cannot_be_revoked(
    ada: User, bob: User
) -> None:
    row, _ = tokens.create_token(IngestToken, bob, "bobs")
    browser = Client()
    browser.force_login(ada)
    assert "bobs" not in browser.get("/settings/trace-ingest/").content.decode()
    assert browser.post(f"/settings/trace-ingest/{row.pk}/revoke/").status_code == 404
    assert IngestToken.objects.filter(pk=row.pk).exists()
    mine, _ = tokens.create_token(IngestToken, ada, "mine")
    assert browser.post(f"/settings/trace-ingest/{mine.pk}/revoke/").status_code == 302
    assert not IngestToken.objects.filter(pk=mine.pk).exists()
