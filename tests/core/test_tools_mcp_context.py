"""An MCP server's resources and prompts as tools (``agents_core.tools.mcp_context``),
against the real test server (tests/support/mcp_server.py) over streamable HTTP, and
through the runner so the reads are tool calls in the run's events."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio

from agents_core.exceptions import ToolExecutionError
from agents_core.testing import tool_call
from agents_core.tools.base import BaseTool
from agents_core.tools.mcp import McpHttpServer, McpToolset
from agents_core.tools.mcp_context import context_tools
from tests.core.test_tools_mcp import tool_responses
from tests.support.mcp_server import GUIDE_TEXT, quoting, serve_http

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    with serve_http() as url:
        yield url


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def toolset(http_url: str) -> AsyncIterator[McpToolset]:
    async with McpToolset(McpHttpServer(url=http_url), call_timeout_s=10) as opened:
        yield opened


def by_name(tools: list[BaseTool]) -> dict[str, BaseTool]:
    return {tool.name: tool for tool in tools}


async def test_resources_and_prompts_are_offered_as_prefixed_tools(toolset: McpToolset) -> None:
    tools = by_name(context_tools(toolset, prefix="docs__"))
    assert sorted(tools) == [
        "docs__get_prompt",
        "docs__list_prompts",
        "docs__list_resources",
        "docs__read_resource",
    ]
    assert tools["docs__read_resource"].parameters_schema()["required"] == ["uri"]


async def test_the_agent_lists_and_reads_resources_and_gets_a_prompt(toolset: McpToolset) -> None:
    responses = await tool_responses(
        context_tools(toolset, prefix="docs__"),
        tool_call("docs__list_resources"),
        tool_call("docs__read_resource", uri="guide://readme"),
        tool_call("docs__read_resource", uri="notes://cats"),
        tool_call("docs__read_resource", uri="guide://pixel.png"),
        tool_call("docs__list_prompts"),
        tool_call(
            "docs__get_prompt", name="review", arguments={"language": "Go", "code": "x := 1"}
        ),
    )
    listed, readme, note, pixel, prompts, prompt = responses
    assert not any(part.is_error for part in responses)
    assert "guide://readme | readme (text/plain)" in listed.result
    assert "notes://{topic} | note" in listed.result
    assert readme.result == GUIDE_TEXT
    assert note.result == "a note on cats"
    # Binary contents are summarised, never handed to the model.
    assert pixel.result.startswith("[binary resource guide://pixel.png: image/png, ")
    assert pixel.result.endswith(" bytes]") and "iVBOR" not in pixel.result
    assert prompts.result.startswith("review(language, code)")
    assert prompt.result.splitlines() == [
        "(Ask for a review of a piece of code.)",
        "user: Review this Go code: x := 1",
    ]


async def test_an_unknown_resource_or_prompt_is_an_error_result(toolset: McpToolset) -> None:
    missing_resource, missing_prompt, bad_args = await tool_responses(
        context_tools(toolset),
        tool_call("read_resource", uri="guide://nothing"),
        tool_call("get_prompt", name="nothing"),
        tool_call("read_resource", path="guide://readme"),
    )
    assert missing_resource.is_error and "guide://nothing" in missing_resource.result
    assert missing_prompt.is_error and "MCP server at" in missing_prompt.result
    assert bad_args.is_error and "uri" in bad_args.result


async def test_long_answers_are_cut(toolset: McpToolset) -> None:
    (read,) = await tool_responses(
        context_tools(toolset, max_chars=10),
        tool_call("read_resource", uri="guide://readme"),
    )
    assert read.result == GUIDE_TEXT[:10] + "\n[cut at 10 characters]"


async def test_a_server_without_resources_or_prompts_gets_no_such_tools() -> None:
    with serve_http(quoting) as url:  # a low-level server with tool handlers only
        async with McpToolset(McpHttpServer(url=url)) as opened:
            assert context_tools(opened) == []


async def test_a_closed_toolset_refuses_requests(http_url: str) -> None:
    toolset = McpToolset(McpHttpServer(url=http_url))
    async with toolset:
        tools = by_name(context_tools(toolset))
    with pytest.raises(ToolExecutionError, match="not connected"):
        await tools["list_resources"].arun({}, None)  # type: ignore[arg-type]
