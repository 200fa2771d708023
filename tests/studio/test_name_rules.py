"""A name that breaks its pattern gets one message that says in words what is allowed,
never a regex: the same words through the API (agents, the names inside a spec, MCP
servers), the builder's live check and the MCP server page's form."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from agents_core.specs import NAME_RULE, PREFIX_RULE, STATE_KEY_RULE
from tests.studio.conftest import scripted_model

pytestmark = pytest.mark.django_db

REGEX = re.compile(r"\^|\$|\[A-Z|\{0,|pattern")


@pytest.fixture(autouse=True)
def _ada_has_a_scripted_model(ada: User) -> None:
    scripted_model(ada)


def spec(**extra: Any) -> dict[str, Any]:
    return {"name": "calc", "model": "scripted", **extra}


def details(response: Any) -> dict[str, str]:
    assert response.status_code == 400, response.json()
    found = {e["path"]: e["detail"] for e in response.json()["errors"]}
    assert not [d for d in found.values() if REGEX.search(d)], found
    return found


@pytest.mark.parametrize(
    ("extra", "path", "rule"),
    [
        ({"output_key": "has-dash"}, "spec.output_key", STATE_KEY_RULE),
        (
            {"sub_agents": [{"name": "two words", "model": "scripted"}]},
            "spec.sub_agents.0.name",
            NAME_RULE,
        ),
        ({"sub_agents": [{"ref": "9lives"}]}, "spec.sub_agents.0.ref", NAME_RULE),
        ({"mcp": [{"server": "9docs"}]}, "spec.mcp.0.server", NAME_RULE),
        ({"mcp": [{"server": "docs", "prefix": "two words"}]}, "spec.mcp.0.prefix", PREFIX_RULE),
    ],
)
def test_a_name_inside_a_spec_that_breaks_its_pattern_is_said_in_words(
    api: APIClient, extra: dict[str, Any], path: str, rule: str
) -> None:
    response = api.post("/api/agents/", {"name": "calc", "spec": spec(**extra)}, format="json")
    assert details(response)[path] == rule


@pytest.mark.parametrize(
    ("name", "detail"),
    [
        ("9lives", NAME_RULE),
        ("a.b", NAME_RULE),
        ("x" * 65, NAME_RULE),
        ("", f"Required. {NAME_RULE}"),
    ],
)
def test_a_bad_agent_name_is_one_problem_in_words(api: APIClient, name: str, detail: str) -> None:
    response = api.post("/api/agents/", {"name": name, "spec": spec(name=name)}, format="json")
    assert details(response) == {"name": detail}
    assert response.json()["detail"] == f"name: {detail}"


def test_the_builders_live_check_says_the_same_words(ada: User) -> None:
    client = Client()
    client.force_login(ada)

    def check(body: dict[str, Any]) -> dict[str, str]:
        response = client.post("/agents/validate/", body, content_type="application/json")
        assert response.status_code == 200
        return {e["path"]: e["detail"] for e in response.json()["errors"]}

    assert check({"name": "9lives", "spec": spec(name="9lives")}) == {"name": NAME_RULE}
    assert check({"name": "calc", "spec": spec(output_key="a b")}) == {
        "spec.output_key": STATE_KEY_RULE
    }
    assert check({"name": "calc", "spec": spec()}) == {}


def test_an_mcp_server_name_is_said_in_words_by_the_api_and_the_page(
    api: APIClient, ada: User
) -> None:
    body = {"name": "no spaces", "transport": "http", "url": "http://127.0.0.1:9/mcp"}
    assert details(api.post("/api/mcp-servers/", body, format="json")) == {"name": NAME_RULE}
    client = Client()
    client.force_login(ada)
    page = client.post("/mcp-servers/new/", {"name": "9 docs", "url": "http://127.0.0.1:9/mcp"})
    assert NAME_RULE in page.content.decode()
