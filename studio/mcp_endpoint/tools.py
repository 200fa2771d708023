"""The tools Studio's MCP endpoint offers a signed-in user, and what calling them does.

- ``agent_<name>``: each published agent of the user (one with a saved version). A call
  takes ``{"message": "..."}``, runs the agent as a new Studio session of the user
  (visible on the sessions page, counted against their run cap and budgets) and answers
  its final text; ``structuredContent`` names the session and run.
- ``calculator``: Studio's arithmetic tool (no ``eval``).
- ``workspace_ls``, ``workspace_read``, ``workspace_glob``, ``workspace_grep``: the
  read-only filesystem tools, jailed to the user's own workspace, the folder their
  agents' filesystem tools use.

Left out on purpose: the filesystem writers (a leaked token must not plant files that
the user's agents then read or run), the shell (it runs programs on Studio's host),
``ask_user`` and ``exit_loop`` (they only mean something inside a run), and the user's
MCP servers (their stored secrets stay with runs).
"""

from __future__ import annotations

from typing import Any, cast

from mcp.server.context import ServerRequestContext
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)

from agents_core import exceptions as core_exceptions
from agents_core.tools import BaseTool, FilesystemSettings, filesystem_tools
from agents_core.tools.base import ToolContext, render_output
from studio import services
from studio.agents.tools import calculator, workspace_dir
from studio.db import db_sync_to_async
from studio.errors import StudioError
from studio.models import Agent

USER_KEY = "studio.mcp_user_id"
"""Where the endpoint puts the token's user id in the request's ASGI scope."""
AGENT_PREFIX = "agent_"
WORKSPACE_PREFIX = "workspace_"
MESSAGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "What to ask the agent.", "minLength": 1}
    },
    "required": ["message"],
    "additionalProperties": False,
}
# The catalogue's tools are context-free: none reads the run it would serve.
_NO_RUN = cast(ToolContext, None)


def user_id_of(ctx: ServerRequestContext[Any]) -> Any:
    scope = getattr(ctx.request, "scope", None) or {}
    user_id = scope.get(USER_KEY)
    if user_id is None:  # the endpoint authenticates first: this is a wiring bug
        raise PermissionError("no authenticated user on this request")
    return user_id


def catalogue(user_id: Any) -> dict[str, BaseTool]:
    """The built-in tools the user may call, by their MCP name."""
    root = workspace_dir(user_id)
    readers = filesystem_tools(FilesystemSettings(root=root, read_only=True))
    tools: dict[str, BaseTool] = {calculator.name: calculator}
    tools.update({WORKSPACE_PREFIX + tool.name: tool for tool in readers})
    return tools


def _agent_tool(agent: Agent) -> Tool:
    about = agent.description or f"The Studio agent {agent.name}."
    return Tool(
        name=AGENT_PREFIX + agent.name,
        title=agent.name,
        description=f"{about} Runs as a new Studio session; answers its final text.",
        input_schema=MESSAGE_SCHEMA,
    )


def _listing(user_id: Any) -> list[Tool]:
    tools = [_agent_tool(agent) for agent in services.published_agents(user_id)]
    for name, tool in catalogue(user_id).items():
        tools.append(
            Tool(name=name, description=tool.description, input_schema=tool.parameters_schema())
        )
    return tools


async def list_tools(
    ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
) -> ListToolsResult:
    return ListToolsResult(tools=await db_sync_to_async(_listing)(user_id_of(ctx)))


async def call_tool(
    ctx: ServerRequestContext[Any], params: CallToolRequestParams
) -> CallToolResult:
    user_id = user_id_of(ctx)
    args = params.arguments or {}
    if params.name.startswith(AGENT_PREFIX):
        return await _call_agent(user_id, params.name.removeprefix(AGENT_PREFIX), args)
    tool = (await db_sync_to_async(catalogue)(user_id)).get(params.name)
    if tool is None:
        return _error(f"no tool named {params.name!r}")
    try:
        result = await tool.arun(args, _NO_RUN)
    except core_exceptions.AgentsCoreError as exc:
        return _error(exc.message)
    return CallToolResult(content=[TextContent(type="text", text=render_output(result))])


async def _call_agent(user_id: Any, name: str, args: dict[str, Any]) -> CallToolResult:
    message = args.get("message")
    if not isinstance(message, str) or set(args) != {"message"}:
        return _error('give exactly one argument, "message", a string')
    try:
        answer = await services.ask_agent(user_id, name, message)
    except LookupError:
        return _error(f"no tool named {AGENT_PREFIX + name!r}")
    except StudioError as exc:
        return _error(str(exc))
    return CallToolResult(
        content=[TextContent(type="text", text=answer.text)],
        structured_content={
            "answer": answer.text,
            "status": answer.status,
            "session_id": answer.session_id,
            "run_id": answer.run_id,
        },
        is_error=not answer.ok,
    )


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
