"""Specs that name MCP servers: checking the names, building with a real server's
connected tools (tests/support/mcp_server.py over stdio), and ``exact_env``."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from agents_core import InMemorySessionService, LlmAgent, Runner
from agents_core.builder import build_agent, check_spec, mcp_server_names
from agents_core.events import EventType, ToolResponsePart
from agents_core.exceptions import ConfigurationError, SpecError
from agents_core.specs import AgentSpec
from agents_core.testing import ScriptedModel, collect, reply, tool_call
from agents_core.tools.mcp import McpStdioServer, McpToolset, _stdio_parameters
from agents_core.tools.registry import ToolRegistry

SERVER_SCRIPT = str(Path(__file__).parents[1] / "support" / "mcp_server.py")


def spec(**fields: object) -> AgentSpec:
    return AgentSpec.model_validate({"name": "helper", "model": "m", **fields})


@pytest_asyncio.fixture
async def toolset() -> AsyncIterator[McpToolset]:
    server = McpStdioServer(command=sys.executable, args=[SERVER_SCRIPT])
    async with McpToolset(server) as opened:
        yield opened


def test_check_spec_names_unknown_and_repeated_servers_and_workflow_misuse() -> None:
    problems = check_spec(
        AgentSpec.model_validate(
            {
                "name": "root",
                "type": "sequential",
                "mcp": [{"server": "docs"}],
                "sub_agents": [
                    {
                        "name": "helper",
                        "model": "m",
                        "mcp": [{"server": "docs"}, {"server": "docs"}, {"server": "nope"}],
                    }
                ],
            }
        ),
        models={"m"},
        tools=ToolRegistry(),
        mcp_servers={"docs"},
    )
    found = {(".".join(map(str, p.path)), p.message) for p in problems}
    assert ("mcp", "a sequential agent has no mcp; give it to a sub-agent") in found
    assert ("sub_agents.0.mcp.1.server", "MCP server 'docs' is listed twice") in found
    assert ("sub_agents.0.mcp.2.server", "unknown MCP server 'nope' (docs)") in found
    assert len(problems) == 3


def test_the_servers_a_tree_names_include_those_of_referenced_agents() -> None:
    other = spec(name="other", mcp=[{"server": "search"}])
    root = spec(
        type="sequential",
        model=None,
        sub_agents=[{"ref": "other"}, {"name": "inline", "model": "m", "mcp": [{"server": "a"}]}],
    )
    assert mcp_server_names(root, {"other": other}) == {"search", "a"}
    assert mcp_server_names(root) == {"a"}


async def test_an_agent_built_from_a_spec_calls_the_servers_tools(toolset: McpToolset) -> None:
    model = ScriptedModel(script=[tool_call("srv_add", a=2, b=3), reply("5")])
    agent = build_agent(
        spec(mcp=[{"server": "local", "tools": ["add"], "prefix": "srv_"}]),
        models={"m": model},
        tools=ToolRegistry(),
        mcp_tools={"local": toolset.tools},
    )
    assert isinstance(agent, LlmAgent)
    assert sorted(agent.tools) == ["srv_add"]
    events = await collect(
        Runner(agent, session_service=InMemorySessionService()).astream(
            user_id="u", session_id="s", message="add"
        )
    )
    [response] = [e for e in events if e.type is EventType.TOOL_RESPONSE]
    [part] = response.parts
    assert isinstance(part, ToolResponsePart)
    assert (part.name, part.result, part.is_error) == ("srv_add", "5", False)


async def test_a_tool_the_server_lacks_or_a_name_clash_fails_the_build(
    toolset: McpToolset,
) -> None:
    models = {"m": ScriptedModel(script=[reply("x")])}
    with pytest.raises(SpecError, match="has no tool named nope"):
        build_agent(
            spec(mcp=[{"server": "local", "tools": ["nope"]}]),
            models=models,
            tools=ToolRegistry(),
            mcp_tools={"local": toolset.tools},
        )
    with pytest.raises(SpecError, match="two tools named 'add'"):
        build_agent(
            spec(mcp=[{"server": "local"}, {"server": "b"}]),
            models=models,
            tools=ToolRegistry(),
            mcp_tools={"local": toolset.tools, "b": toolset.tools},
        )


async def test_exact_env_gives_the_process_nothing_but_its_env(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("USER", "LOGNAME", "SHELL", "TERM", "HOME"):
        monkeypatch.setenv(name, f"inherited-{name}")
    server = McpStdioServer(
        command=sys.executable, args=[SERVER_SCRIPT], env={"LANG": "C.UTF-8"}, exact_env=True
    )
    async with McpToolset(server) as opened:
        seen = await opened.call_tool("environ", {}, timeout_s=30)
    assert dict(line.split("=", 1) for line in seen.splitlines()) == {"LANG": "C.UTF-8"}


async def test_without_exact_env_the_sdk_passes_on_its_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("USER", "inherited-user")
    server = McpStdioServer(command=sys.executable, args=[SERVER_SCRIPT])
    async with McpToolset(server) as opened:
        assert await opened.call_tool("getenv", {"name": "USER"}, timeout_s=30) == "inherited-user"


def test_exact_env_refuses_a_command_env1_would_read_as_a_variable() -> None:
    with pytest.raises(ConfigurationError, match="cannot contain '='"):
        _stdio_parameters(McpStdioServer(command="A=B", exact_env=True))
