"""``McpToolset`` against a real MCP server (tests/support/mcp_server.py), over stdio
(a child process) and streamable HTTP (a server thread on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

import pytest
import pytest_asyncio
from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from pydantic import TypeAdapter, ValidationError

from agents_core import InMemorySessionService, LlmAgent, Runner
from agents_core.events import EventType, ToolResponsePart
from agents_core.exceptions import (
    ConfigurationError,
    ToolError,
    ToolExecutionError,
    ToolTimeoutError,
)
from agents_core.llm.resilience import BreakerRegistry
from agents_core.testing import ScriptedModel, ScriptedResponse, collect, reply, tool_call
from agents_core.tools.base import BaseTool
from agents_core.tools.mcp import (
    McpHttpServer,
    McpServer,
    McpStdioServer,
    McpToolset,
    render_result,
)
from tests.support.mcp_server import serve_http

SERVER_SCRIPT = Path(__file__).parents[1] / "support" / "mcp_server.py"


def stdio_server(**settings: object) -> McpStdioServer:
    return McpStdioServer.model_validate(
        {"command": sys.executable, "args": [str(SERVER_SCRIPT)], **settings}
    )


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    with serve_http() as url:
        yield url


@pytest.fixture
def http_server(http_url: str) -> McpHttpServer:
    return McpHttpServer(url=http_url)


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def tool_responses(
    tools: Sequence[BaseTool], *script: ScriptedResponse
) -> list[ToolResponsePart]:
    """Run an agent with ``tools`` through the runner; the tool responses it stored."""
    model = ScriptedModel([*script, reply("done")])
    agent = LlmAgent("assistant", model=model, tools=tools)
    runner = Runner(agent, session_service=InMemorySessionService(), breakers=BreakerRegistry())
    events = await collect(runner.astream(user_id="ada", session_id="s1", message="go"))
    return [
        part
        for event in events
        if event.type is EventType.TOOL_RESPONSE
        for part in event.parts
        if isinstance(part, ToolResponsePart)
    ]


# --- both transports ---------------------------------------------------------------------


# Toolsets opened once per module: starting a stdio server means starting Python and
# importing the SDK, which is slow. Setup and teardown run in different tasks, which
# McpToolset allows.


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stdio_toolset() -> AsyncIterator[McpToolset]:
    """Started while this process has a secret in its environment; given only GREETING."""
    toolset = McpToolset(stdio_server(env={"GREETING": "hello"}))
    with pytest.MonkeyPatch.context() as environment:
        environment.setenv("STUDIO_TEST_SECRET", "s3cret")
        await toolset.__aenter__()
    try:
        yield toolset
    finally:
        await toolset.aclose()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def http_toolset(http_url: str) -> AsyncIterator[McpToolset]:
    async with McpToolset(McpHttpServer(url=http_url)) as toolset:
        yield toolset


@pytest.fixture(params=["stdio", "http"])
def toolset(request: pytest.FixtureRequest) -> McpToolset:
    opened: McpToolset = request.getfixturevalue(f"{request.param}_toolset")
    return opened


@pytest.mark.asyncio(loop_scope="module")
class TestBothTransports:
    async def test_tools_carry_the_servers_names_descriptions_and_input_schemas(
        self, toolset: McpToolset
    ) -> None:
        tools = {tool.name: tool for tool in toolset.tools}

        assert {"add", "echo", "fail", "slow"} <= tools.keys()
        assert tools["add"].description == "Add two integers."
        schema = tools["add"].parameters_schema()
        assert schema["properties"] == {
            "a": {"title": "A", "type": "integer"},
            "b": {"title": "B", "type": "integer"},
        }
        assert schema["required"] == ["a", "b"]

    async def test_a_call_returns_the_text_content_of_the_result(self, toolset: McpToolset) -> None:
        assert await toolset.call_tool("add", {"a": 1, "b": 2}, timeout_s=None) == "3"

    async def test_an_error_result_raises_tool_execution_error_with_the_servers_message(
        self, toolset: McpToolset
    ) -> None:
        with pytest.raises(ToolExecutionError, match="the fail tool always fails"):
            await toolset.call_tool("fail", {}, timeout_s=None)

    async def test_a_call_past_its_timeout_raises_tool_timeout_error_and_the_connection_lives(
        self, toolset: McpToolset
    ) -> None:
        with pytest.raises(ToolTimeoutError, match=r"'slow' gave no result within 0\.2s"):
            await toolset.call_tool("slow", {"seconds": 5}, timeout_s=0.2)

        assert await toolset.call_tool("echo", {"text": "still"}, timeout_s=None) == "still"

    async def test_image_content_is_named_in_brackets(self, toolset: McpToolset) -> None:
        assert await toolset.call_tool("pixel", {}, timeout_s=None) == "[image: image/png]"


# --- stdio -------------------------------------------------------------------------------


async def test_closing_a_stdio_toolset_ends_the_server_process_and_its_tasks() -> None:
    tasks_before = asyncio.all_tasks()
    async with McpToolset(stdio_server()) as opened:
        pid = int(await opened.call_tool("pid", {}, timeout_s=None))
        os.kill(pid, 0)  # alive while open

    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert asyncio.all_tasks() == tasks_before


@pytest.mark.asyncio(loop_scope="module")
async def test_a_stdio_server_sees_only_the_environment_it_is_given(
    stdio_toolset: McpToolset,
) -> None:
    async def seen(name: str) -> str:
        return await stdio_toolset.call_tool("getenv", {"name": name}, timeout_s=None)

    assert await seen("STUDIO_TEST_SECRET") == "<unset>"
    assert await seen("GREETING") == "hello"
    assert await seen("PATH") == os.defpath


async def test_a_stdio_server_that_cannot_start_raises_a_tool_error_naming_it() -> None:
    missing = McpStdioServer(command="/nonexistent/mcp-server")

    with pytest.raises(ToolError, match=r"cannot connect to MCP server '/nonexistent/mcp-server'"):
        async with McpToolset(missing):
            pass


# --- streamable HTTP ---------------------------------------------------------------------


async def test_a_refused_http_connection_raises_a_tool_error_naming_the_server() -> None:
    url = f"http://127.0.0.1:{unused_port()}/mcp"

    with pytest.raises(ToolError, match=rf"cannot connect to MCP server at {url}: ConnectError"):
        async with McpToolset(McpHttpServer(url=url)):
            pass


async def test_an_http_server_that_never_answers_raises_tool_timeout_error_on_connect() -> None:
    with socket.socket() as silent:  # accepts connections (backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/mcp"

        with pytest.raises(ToolTimeoutError, match=r"did not answer within 0\.3s"):
            async with McpToolset(McpHttpServer(url=url), connect_timeout_s=0.3):
                pass


async def test_closing_an_http_toolset_leaves_no_task_running(
    http_server: McpHttpServer,
) -> None:
    tasks_before = asyncio.all_tasks()
    async with McpToolset(http_server) as opened:
        assert opened.tools

    assert asyncio.all_tasks() == tasks_before


async def test_a_tool_past_the_toolsets_call_timeout_answers_the_model_with_a_timeout(
    http_server: McpHttpServer,
) -> None:
    async with McpToolset(http_server, call_timeout_s=0.2) as opened:
        [response] = await tool_responses(opened.tools, tool_call("slow", seconds=5))

    assert response.is_error
    assert response.result.startswith("tool_timeout:")


async def test_a_toolset_opened_in_one_task_can_be_closed_in_another(
    http_server: McpHttpServer,
) -> None:
    tasks_before = asyncio.all_tasks()
    toolset = McpToolset(http_server)
    await asyncio.create_task(toolset.__aenter__())

    await toolset.aclose()

    assert asyncio.all_tasks() == tasks_before


async def test_an_http_server_receives_the_configured_headers(http_url: str) -> None:
    server = McpHttpServer(url=http_url, headers={"X-Studio-Token": "t0ken"})
    async with McpToolset(server) as opened:
        seen = await opened.call_tool("header", {"name": "X-Studio-Token"}, timeout_s=None)

    assert seen == "t0ken"


async def test_error_messages_leave_out_credentials_in_the_url() -> None:
    server = McpHttpServer(url=f"http://ada:hunter2@127.0.0.1:{unused_port()}/mcp")

    with pytest.raises(ToolError) as caught:
        async with McpToolset(server):
            pass

    assert "hunter2" not in str(caught.value)
    assert "MCP server at http://127.0.0.1:" in str(caught.value)


# --- selecting and naming tools ----------------------------------------------------------


async def test_allowed_tools_limits_the_tools_offered(http_server: McpHttpServer) -> None:
    async with McpToolset(http_server, allowed_tools=["echo", "add"]) as toolset:
        assert [tool.name for tool in toolset.tools] == ["add", "echo"]


async def test_allowing_a_tool_the_server_lacks_is_a_configuration_error(
    http_server: McpHttpServer,
) -> None:
    with pytest.raises(ConfigurationError, match=r"has no tool named teleport; it offers: add"):
        async with McpToolset(http_server, allowed_tools=["add", "teleport"]):
            pass


async def test_a_prefix_renames_the_tools_and_calls_still_reach_the_server(
    http_server: McpHttpServer,
) -> None:
    async with McpToolset(http_server, prefix="calc_", allowed_tools=["add"]) as toolset:
        [tool] = toolset.tools
        [response] = await tool_responses(toolset.tools, tool_call("calc_add", a=2, b=3))

    assert (tool.name, tool.server_name) == ("calc_add", "add")
    assert (response.name, response.result, response.is_error) == ("calc_add", "5", False)


def test_render_result_joins_text_and_names_other_content() -> None:
    result = CallToolResult(
        content=[
            TextContent(text="first"),
            AudioContent(data="", mime_type="audio/wav"),
            ResourceLink(name="report", uri="file:///report.pdf"),
            EmbeddedResource(resource=TextResourceContents(uri="file:///a.txt", text="inline")),
            EmbeddedResource(resource=BlobResourceContents(uri="file:///b.bin", blob="")),
        ]
    )

    assert render_result(result).splitlines() == [
        "first",
        "[audio: audio/wav]",
        "[resource link: file:///report.pdf]",
        "inline",
        "[resource: file:///b.bin (binary)]",
    ]


def test_render_result_falls_back_to_structured_content() -> None:
    result = CallToolResult(content=[], structured_content={"total": 3})

    assert render_result(result) == '{"total": 3}'


# --- lifecycle ---------------------------------------------------------------------------


def test_the_tools_of_an_unopened_toolset_are_a_configuration_error() -> None:
    toolset = McpToolset(McpHttpServer(url="http://127.0.0.1:9/mcp"))

    with pytest.raises(ConfigurationError, match="open the toolset"):
        _ = toolset.tools


async def test_a_tool_called_after_its_toolset_closed_answers_that_it_is_not_connected(
    http_server: McpHttpServer,
) -> None:
    async with McpToolset(http_server, allowed_tools=["echo"]) as toolset:
        tools = toolset.tools

    [response] = await tool_responses(tools, tool_call("echo", text="late"))

    assert response.is_error
    assert "is not connected" in response.result


# --- settings ----------------------------------------------------------------------------


def test_server_settings_are_told_apart_by_transport() -> None:
    adapter: TypeAdapter[McpServer] = TypeAdapter(McpServer)

    stdio = adapter.validate_python({"transport": "stdio", "command": "mcp-files"})
    http = adapter.validate_python({"transport": "http", "url": "https://mcp.example/mcp"})

    assert isinstance(stdio, McpStdioServer)
    assert isinstance(http, McpHttpServer)


@pytest.mark.parametrize(
    "settings",
    [
        {"transport": "stdio", "command": "mcp-files", "inherit_env": True},
        {"transport": "http", "url": "ftp://mcp.example/mcp"},
        {"transport": "http", "url": "https://mcp.example/mcp", "timeout_s": 0},
    ],
)
def test_server_settings_reject_unknown_fields_and_bad_values(settings: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        TypeAdapter(McpServer).validate_python(settings)


# --- end to end --------------------------------------------------------------------------


async def test_an_llm_agent_calls_an_mcp_tool_through_the_runner(
    http_server: McpHttpServer, sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    model = ScriptedModel([tool_call("add", a=1, b=2), reply("done")])
    async with McpToolset(http_server, allowed_tools=["add"]) as toolset:
        agent = LlmAgent("calculator", model=model, tools=toolset.tools)
        runner = Runner(agent, session_service=sessions, breakers=breakers)
        events = await collect(runner.astream(user_id="ada", session_id="s1", message="1+2?"))

    [response] = [e for e in events if e.type is EventType.TOOL_RESPONSE]
    [part] = response.parts
    assert isinstance(part, ToolResponsePart)
    assert (part.name, part.result, part.is_error) == ("add", "3", False)
    assert [tool.name for tool in model.requests[0].tools] == ["add"]
    assert model.requests[0].tools[0].parameters["required"] == ["a", "b"]


async def test_an_mcp_error_result_reaches_the_model_as_an_error_tool_response(
    http_server: McpHttpServer,
) -> None:
    async with McpToolset(http_server) as toolset:
        [response] = await tool_responses(toolset.tools, tool_call("fail"))

    assert response.is_error
    assert response.result.startswith("tool_failed:")
    assert "the fail tool always fails" in response.result
