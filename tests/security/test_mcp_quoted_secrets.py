"""A stored MCP header or environment value reaches neither the connection test (API and
page) nor the model, even from a server that quotes it everywhere a tool carries text:
name, title, description, input schema and result (``quoting`` in
tests/support/mcp_server.py, over streamable HTTP and over stdio)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.test import Client

from studio import services
from studio.models import McpServer, ModelConfig, RunStatus
from studio.runs.execute import execute_run
from studio.security import REDACTED
from tests.security.test_secret_canary import forms_of
from tests.studio.conftest import client_for
from tests.support.mcp_server import quoting, serve_http
from tests.support.openai_server import OpenAIServer, ToolCallReply

# Spaces, "/", "+", "?" and "=" make its URL-encoded forms differ from the raw one.
CANARY = "mcp secret/CANARY+4e8b1a7c?9d2f=1"
SERVER_SCRIPT = str(Path(__file__).parents[1] / "support" / "mcp_server.py")


def assert_absent(where: str, text: str) -> None:
    leaked = [form for form in forms_of(CANARY) if form in text]
    assert not leaked, f"the stored secret leaked into {where} as {leaked}"


@pytest.fixture(scope="module")
def quoting_url() -> Iterator[str]:
    with serve_http(quoting) as url:
        yield url


@pytest.fixture(params=["http", "stdio"])
def quoting_server(
    request: pytest.FixtureRequest, ada: User, settings: Any, quoting_url: str
) -> McpServer:
    """The owner's server, given the canary as a header (http) or a variable (stdio)."""
    settings.STUDIO_OUTBOUND_ALLOWLIST = ["127.0.0.1"]
    settings.STUDIO_MCP_ENV_ALLOWLIST = ["PATH", "HOME", "API_TOKEN"]
    server = McpServer(owner=ada, name="quoting", transport=request.param)
    if request.param == "http":
        server.url = quoting_url
        server.set_headers({"X-Api-Key": CANARY})
    else:
        server.command, server.args = sys.executable, [SERVER_SCRIPT, "--quoting"]
        server.set_env({"API_TOKEN": CANARY})
    server.save()
    return server


@pytest.mark.django_db
def test_the_connection_test_never_shows_a_secret_the_server_quotes(
    ada: User, quoting_server: McpServer
) -> None:
    response = client_for(ada).post(f"/api/mcp-servers/{quoting_server.pk}/test/")
    body = response.json()
    assert body["ok"] is True, body["detail"]
    assert_absent("the connection test (API)", response.content.decode())
    described = {tool["name"]: tool["description"] for tool in body["tools"]}
    assert REDACTED in described["quote"]  # the server did quote it
    page = Client()
    page.force_login(ada)
    html = page.post(f"/mcp-servers/{quoting_server.pk}/test/").content.decode()
    assert "Connected" in html
    assert_absent("the connection test (page)", html)


@pytest.mark.django_db(transaction=True)
def test_a_run_never_sends_the_model_a_secret_the_server_quotes(
    ada: User, quoting_server: McpServer, openai_server: OpenAIServer
) -> None:
    openai_server.reply(tool_calls=[ToolCallReply("quote", {"text": "hi"})])
    openai_server.reply("done")
    model = ModelConfig(owner=ada, name="remote", provider="openai_compatible", model="m")
    model.base_url = openai_server.base_url
    model.set_api_key("sk-model-key-0123456789")
    model.save()
    spec = {"name": "helper", "model": "remote", "mcp": [{"server": "quoting"}]}
    agent = services.create_agent(ada, name="helper", spec=spec)
    run = services.start_run(services.start_session(ada, agent), "quote something")
    finished = async_to_sync(execute_run)(run)
    assert finished.status == RunStatus.SUCCEEDED, finished.error_message
    first, second = openai_server.chat_requests  # the tool call, then its result
    for number, sent in enumerate((first, second), start=1):
        assert_absent(f"model request {number}", json.dumps(sent.body, ensure_ascii=False))
    assert {tool["function"]["name"] for tool in first.tools} >= {"quote"}
    assert REDACTED in json.dumps(first.tools)  # the server did quote it
    assert REDACTED in second.messages[-1]["content"]
