"""An MCP server's resources and prompts in Studio: listed by the connection test (API
and page), offered to a run as ``<server>__...`` tools whose calls are stored events,
redacted, and held to the same address checks as the server's tools."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from studio.models import Event, RunStatus
from tests.studio.test_mcp_servers import (
    CANARY,
    URL,
    call,
    http_server,
    mcp_agent,
    run_agent,
    tool_results,
)
from tests.support.mcp_server import GUIDE_TEXT, serve_http


@pytest.fixture(scope="module")
def mcp_url() -> Iterator[str]:
    with serve_http() as url:
        yield url


@pytest.mark.django_db
def test_the_connection_test_lists_resources_and_prompts(
    api: APIClient, ada: User, mcp_url: str
) -> None:
    server = http_server(ada, mcp_url)
    check = api.post(f"{URL}{server.pk}/test/").json()
    assert check["ok"] is True, check
    resources = {item["name"]: item["description"] for item in check["resources"]}
    assert resources["guide://readme"] == "readme: The guide's text."
    assert "notes://{topic}" in resources
    assert [item["name"] for item in check["prompts"]] == ["review(language, code)"]
    assert check["detail"].endswith("3 resource(s), 1 prompt(s)")


@pytest.mark.django_db
def test_the_test_page_shows_resources_and_prompts_as_text(ada: User, mcp_url: str) -> None:
    server = http_server(ada, mcp_url)
    browser = Client()
    browser.force_login(ada)
    page = browser.post(f"/mcp-servers/{server.pk}/test/").content.decode()
    assert 'data-testid="mcp-resources"' in page and "guide://readme" in page
    assert 'data-testid="mcp-prompts"' in page and "review(language, code)" in page
    assert "tests__read_resource" in page


@pytest.mark.django_db(transaction=True)
def test_an_agent_reads_a_resource_and_gets_a_prompt_in_its_timeline(
    ada: User, mcp_url: str
) -> None:
    http_server(ada, mcp_url)
    script = [
        call("tests__read_resource", uri="guide://readme"),
        call("tests__read_resource", uri="guide://pixel.png"),
        call("tests__get_prompt", name="review", arguments={"language": "SQL", "code": "SELECT 1"}),
        {"text": "done"},
    ]
    run = run_agent(mcp_agent(ada, script))
    assert run.status == RunStatus.SUCCEEDED, run.error_message
    readme, pixel, prompt = tool_results(run)
    assert (readme["name"], readme["result"]) == ("tests__read_resource", GUIDE_TEXT)
    assert pixel["result"].startswith("[binary resource guide://pixel.png: image/png")
    assert "user: Review this SQL code: SELECT 1" in prompt["result"]
    messages = Event.objects.filter(session_id=run.session_id, type="agent_message")
    parts = [part for event in messages.order_by("seq") for part in event.payload["parts"]]
    names = [part["name"] for part in parts if part["kind"] == "tool_call"]
    assert names == ["tests__read_resource", "tests__read_resource", "tests__get_prompt"]


@pytest.mark.django_db(transaction=True)
def test_a_spec_naming_tools_picks_the_resource_tools_by_name(ada: User, mcp_url: str) -> None:
    http_server(ada, mcp_url)
    script = [call("tests__list_resources"), call("echo", text="hi"), {"text": "done"}]
    agent = mcp_agent(ada, script, tools=["tests__list_resources", "echo"])
    run = run_agent(agent)
    assert run.status == RunStatus.SUCCEEDED, run.error_message
    listed, echoed = tool_results(run)
    assert "guide://readme" in listed["result"] and echoed["result"] == "hi"


@pytest.mark.django_db(transaction=True)
def test_a_stored_secret_quoted_in_a_resource_is_redacted(ada: User, mcp_url: str) -> None:
    http_server(ada, mcp_url, **{"X-Api-Key": CANARY})
    script = [call("tests__read_resource", uri=f"notes://{CANARY}"), {"text": "done"}]
    run = run_agent(mcp_agent(ada, script))
    assert run.status == RunStatus.SUCCEEDED, run.error_message
    [read] = tool_results(run)
    assert read["result"] == "a note on [redacted]"


@pytest.mark.django_db
def test_a_refused_address_lists_nothing(
    api: APIClient, ada: User, settings: Any, mcp_url: str
) -> None:
    server = http_server(ada, mcp_url)
    settings.STUDIO_OUTBOUND_ALLOWLIST = []
    check = api.post(f"{URL}{server.pk}/test/").json()
    assert check["ok"] is False
    assert check["resources"] == [] and check["prompts"] == []
