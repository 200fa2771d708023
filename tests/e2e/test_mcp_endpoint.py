"""Studio as an MCP server, end to end: a token made on the MCP tokens page (shown
once, revoked there), and the MCP SDK's own client against a real Daphne listing the
tools, calling a published agent (a real run, whose session Studio shows) and a
catalogue tool, and refused without a valid token or for another user's agent."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult
from playwright.sync_api import Page, expect

from tests.e2e.browser import *  # noqa: F403  (the browser fixtures)
from tests.e2e.browser import Api, screenshot
from tests.support.daphne_server import DaphneServer

ANSWER = "The answer is <b>42</b>."
# Bob: another user, with an agent and a token of his own.
BOB = """
from django.contrib.auth import get_user_model
from studio import services
from studio.models import ModelConfig
bob = get_user_model().objects.create_user("bob", password="bob-password-1")
script = {"script": [{"text": "bob's secret"}]}
ModelConfig.objects.create(owner=bob, name="m", provider="scripted", options=script)
spec = {"name": "bobs-agent", "model": "m", "instruction": "."}
services.create_agent(bob, name="bobs-agent", spec=spec)
print(services.create_token(bob, "bob's laptop")[1])
"""


def in_thread[T](call: Callable[[Client], Awaitable[T]], url: str, token: str | None) -> T:
    """Connect the SDK's client to ``url`` with ``token`` and make ``call``, on a loop of
    its own (Playwright's sync API holds this thread's)."""

    async def run() -> T:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            return await call(client)

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, run()).result()


def post_status(url: str, headers: dict[str, str]) -> tuple[int, dict[str, str], Any]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read() or b"null")


def text_of(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


@pytest.fixture(scope="module")
def endpoint(pages_server: DaphneServer) -> str:
    return f"{pages_server.url}/mcp"


@pytest.fixture(scope="module")
def bob_token(pages_server: DaphneServer) -> str:
    return pages_server.manage("shell", "-c", BOB).stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def demo_token(pages_server: DaphneServer, api: Api) -> str:
    api.model("oracle-model", script=[{"text": ANSWER}], loop=True)
    api.agent({"name": "oracle", "model": "oracle-model", "instruction": "."}, "Knows things.")
    made = "from django.contrib.auth import get_user_model; from studio import services; "
    made += "demo = get_user_model().objects.get(username='demo'); "
    made += "print(services.create_token(demo, 'cli')[1])"
    return pages_server.manage("shell", "-c", made).stdout.strip().splitlines()[-1]


def test_the_token_page_shows_a_new_token_once_and_revokes_it(page: Page, endpoint: str) -> None:
    page.goto("/mcp-servers/")
    page.get_by_test_id("mcp-tokens-link").click()
    expect(page.get_by_test_id("mcp-endpoint")).to_have_text(endpoint)
    page.get_by_test_id("mcp-token-name").fill("my <i>IDE</i>")
    page.get_by_role("button", name="Create token").click()
    shown = page.get_by_test_id("mcp-token-value").inner_text()
    assert shown.startswith("smcp_") and len(shown) > 40
    row = page.locator("[data-mcp-token='my <i>IDE</i>']")
    expect(row).to_contain_text(shown[:10])  # the hint, as text: the markup is not run
    screenshot(page, "mcp-tokens")
    tools = in_thread(lambda client: client.list_tools(), endpoint, shown)
    assert "calculator" in {tool.name for tool in tools.tools}

    page.goto("/mcp-tokens/")  # shown once: not on the next visit
    expect(page.get_by_test_id("mcp-token-value")).to_have_count(0)
    assert shown not in page.content()
    page.on("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Revoke").click()
    confirm = page.get_by_role("button", name="Revoke token")
    if confirm.count():
        confirm.click()
    expect(page.locator(".alert.success")).to_contain_text("Revoked token")
    expect(row).to_have_count(0)
    status, _, _ = post_status(endpoint, {"Authorization": f"Bearer {shown}"})
    assert status == 401


def test_the_sdk_client_lists_the_users_agents_and_safe_tools(
    endpoint: str, demo_token: str, bob_token: str
) -> None:
    listed = in_thread(lambda client: client.list_tools(), endpoint, demo_token)
    names = {tool.name for tool in listed.tools}
    assert {"agent_oracle", "calculator", "workspace_read", "workspace_ls"} <= names
    assert "agent_bobs-agent" not in names  # another user's agent
    assert not {"workspace_write", "workspace_edit", "shell", "ask_user"} & names
    bobs = in_thread(lambda client: client.list_tools(), endpoint, bob_token)
    assert "agent_bobs-agent" in {t.name for t in bobs.tools}
    assert "agent_oracle" not in {t.name for t in bobs.tools}


def test_calling_an_agent_runs_a_studio_session(endpoint: str, demo_token: str, api: Api) -> None:
    result = in_thread(
        lambda client: client.call_tool("agent_oracle", {"message": "What is it?"}),
        endpoint,
        demo_token,
    )
    assert not result.is_error, text_of(result)
    assert text_of(result) == ANSWER
    structured = result.structured_content or {}
    assert structured["status"] == "succeeded"
    session = api.get(f"/api/sessions/{structured['session_id']}/")
    assert session["title"] == "What is it?"
    events = api.events(structured["session_id"])
    assert [e["type"] for e in events if e["type"] in ("user_message", "agent_message")] == [
        "user_message",
        "agent_message",
    ]
    assert ANSWER in json.dumps(events[-1]) or any(ANSWER in json.dumps(e) for e in events)


def test_a_catalogue_tool_answers(endpoint: str, demo_token: str) -> None:
    result = in_thread(
        lambda client: client.call_tool("calculator", {"expression": "6 * 7"}),
        endpoint,
        demo_token,
    )
    assert (result.is_error, text_of(result)) == (False, "42")
    escape = in_thread(
        lambda client: client.call_tool("workspace_read", {"path": "../../studio.sqlite3"}),
        endpoint,
        demo_token,
    )
    assert escape.is_error


def test_another_users_agent_cannot_be_called(
    endpoint: str, demo_token: str, bob_token: str
) -> None:
    result = in_thread(
        lambda client: client.call_tool("agent_oracle", {"message": "hi"}), endpoint, bob_token
    )
    assert result.is_error and text_of(result) == "no tool named 'agent_oracle'"


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer smcp_wrong", "Bearer ", "Token {demo}", "Basic {demo}", "bearer {demo} x"],
)
def test_no_valid_token_is_refused_with_401(
    endpoint: str, demo_token: str, authorization: str | None
) -> None:
    headers = (
        {} if authorization is None else {"Authorization": authorization.format(demo=demo_token)}
    )
    status, response_headers, body = post_status(endpoint, headers)
    assert status == 401
    assert response_headers.get("WWW-Authenticate", "").startswith("Bearer")
    assert body["error"] == "invalid_token"


def test_the_sdk_client_is_refused_without_a_token(endpoint: str) -> None:
    # The SDK reports the 401 answer to its first request as an MCP error.
    with pytest.raises(ExceptionGroup) as refused:
        in_thread(lambda client: client.list_tools(), endpoint, "smcp_not-a-token")
    assert "MCPError" in repr(refused.value)
