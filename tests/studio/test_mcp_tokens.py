"""MCP tokens (``services.mcp_serving``) and their page: stored as a digest only, shown
once, owner-scoped, revoked by deleting; the agents an MCP client sees are the user's
own published ones; and the endpoint's tools answer for the token's user only."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.test import Client

from studio import services
from studio.errors import InvalidInputError
from studio.models import Agent, McpToken, ModelConfig, Session
from studio.services import mcp_serving


def client_of(user: User) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


def agent_of(owner: User, name: str, answer: str = "hello") -> Agent:
    ModelConfig.objects.get_or_create(
        owner=owner,
        name="m",
        provider="scripted",
        defaults={"options": {"script": [{"text": answer}], "loop": True}},
    )
    return services.create_agent(
        owner, name=name, spec={"name": name, "model": "m", "instruction": "."}
    )


@pytest.mark.django_db
def test_a_token_is_stored_as_its_digest_only(ada: User) -> None:
    row, token = services.create_token(ada, "laptop")
    assert token.startswith("smcp_") and len(token) > 40
    assert row.digest == hashlib.sha256(token.encode()).hexdigest()
    stored = McpToken.objects.filter(pk=row.pk).values().get()
    assert token not in repr(stored)
    assert services.user_for_token(token) == ada
    assert McpToken.objects.get(pk=row.pk).last_used_at is not None


@pytest.mark.django_db
def test_unknown_revoked_and_inactive_tokens_sign_nobody_in(ada: User) -> None:
    row, token = services.create_token(ada, "laptop")
    assert services.user_for_token(token + "x") is None
    assert services.user_for_token("Token " + token) is None
    ada.is_active = False
    ada.save()
    assert services.user_for_token(token) is None
    ada.is_active = True
    ada.save()
    services.revoke_token(row)
    assert services.user_for_token(token) is None


@pytest.mark.django_db
def test_token_names_are_checked_and_tokens_capped(ada: User, settings: Any) -> None:
    with pytest.raises(InvalidInputError):
        services.create_token(ada, "   ")
    for n in range(mcp_serving.MAX_TOKENS_PER_USER):
        services.create_token(ada, f"t{n}")
    with pytest.raises(InvalidInputError, match="at most"):
        services.create_token(ada, "one more")


@pytest.mark.django_db
def test_the_page_shows_a_new_token_once_and_never_again(ada: User) -> None:
    browser = client_of(ada)
    made = browser.post("/mcp-tokens/", {"name": "<script>x</script>"})
    token = McpToken.objects.get(owner=ada)
    page = made.content.decode()
    assert "no-store" in made["Cache-Control"]
    shown = page.split('data-testid="mcp-token-value">')[1].split("<")[0]
    assert hashlib.sha256(shown.encode()).hexdigest() == token.digest
    assert "<script>x</script>" not in page and "&lt;script&gt;x&lt;/script&gt;" in page
    again = browser.get("/mcp-tokens/").content.decode()
    assert shown not in again and token.hint in again


@pytest.mark.django_db
def test_another_users_token_is_not_listed_and_cannot_be_revoked(ada: User, bob: User) -> None:
    row, _ = services.create_token(bob, "bob's")
    browser = client_of(ada)
    assert row.hint not in browser.get("/mcp-tokens/").content.decode()
    assert browser.post(f"/mcp-tokens/{row.pk}/revoke/").status_code == 404
    assert McpToken.objects.filter(pk=row.pk).exists()
    assert client_of(bob).post(f"/mcp-tokens/{row.pk}/revoke/").status_code == 302
    assert not McpToken.objects.filter(pk=row.pk).exists()


@pytest.mark.django_db
def test_the_page_needs_a_sign_in() -> None:
    assert Client().get("/mcp-tokens/").status_code == 302


@pytest.mark.django_db
def test_published_agents_are_the_users_own_with_a_version(ada: User, bob: User) -> None:
    agent_of(ada, "mine")
    agent_of(bob, "theirs")
    Agent.objects.create(owner=ada, name="draft")  # no version yet
    assert [a.name for a in services.published_agents(ada.pk)] == ["mine"]


@pytest.mark.django_db
def test_asking_another_users_agent_is_a_lookup_error(ada: User, bob: User) -> None:
    agent_of(bob, "theirs")
    with pytest.raises(LookupError):
        async_to_sync(services.ask_agent)(ada.pk, "theirs", "hi")


@pytest.mark.django_db
def test_an_empty_message_is_refused_before_any_session(ada: User) -> None:
    agent_of(ada, "mine")
    with pytest.raises(InvalidInputError, match="message"):
        async_to_sync(services.ask_agent)(ada.pk, "mine", "  ")
    assert not Session.objects.filter(owner=ada).exists()
