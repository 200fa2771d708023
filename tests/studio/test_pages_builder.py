"""The builder page's data: the owner's MCP servers only (with where to ask each for its
tools), the rules of a spec's names in words and the approval defaults."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from agents_core.specs import NAME_RULE, PREFIX_RULE, STATE_KEY_RULE
from studio.models import McpServer
from tests.studio.conftest import make_agent

pytestmark = pytest.mark.django_db

DATA = re.compile(r'<script id="builder-data" type="application/json">(.*?)</script>', re.S)


def builder_data(user: User, path: str = "/agents/new/") -> tuple[dict[str, Any], str]:
    client = Client()
    client.force_login(user)
    response = client.get(path)
    assert response.status_code == 200
    html = response.content.decode()
    match = DATA.search(html)
    assert match is not None
    return json.loads(match.group(1)), html


def server(owner: User, name: str, description: str = "") -> McpServer:
    return McpServer.objects.create(
        owner=owner,
        name=name,
        description=description,
        transport="http",
        url="http://127.0.0.1:9/mcp",
    )


def test_the_builder_offers_the_owners_mcp_servers_and_no_one_elses(ada: User, bob: User) -> None:
    docs = server(ada, "docs", "Search the docs")
    theirs = server(bob, "bobs_secret_server")
    for path in ("/agents/new/", f"/agents/{make_agent(ada).pk}/"):
        data, html = builder_data(ada, path)
        assert data["mcp_servers"] == [
            {
                "name": "docs",
                "description": "Search the docs",
                "transport": "http",
                "tools_url": f"/api/mcp-servers/{docs.pk}/test/",
            }
        ]
        assert theirs.name not in html and str(theirs.pk) not in html
        assert data["urls"]["mcp_servers"] == "/mcp-servers/"


def test_the_builder_says_the_rules_of_names_in_words_and_the_spec_defaults(ada: User) -> None:
    data, html = builder_data(ada)
    assert data["rules"] == {"name": NAME_RULE, "state_key": STATE_KEY_RULE, "prefix": PREFIX_RULE}
    assert data["defaults"] == {
        "approval": {"timeout_s": 300.0, "on_timeout": "deny"},
        "compaction": {"enabled": True, "threshold": 60, "keep_last": 20, "model": None},
        "output_retries": 2,
    }
    hooks = {hook["name"]: hook for hook in data["hooks"]}
    assert set(hooks) == {"redact", "tool_guard", "tool_cache", "fallback_reply"}
    assert hooks["tool_guard"]["settings_schema"]["required"] == ["blocked_terms"]
    assert "[A-Za-z" not in html  # no pattern reaches the page
