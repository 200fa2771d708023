"""An MCP server's resources and prompts in Studio: the tools a run gets for them, and
what the connection test lists.

A run offers each connected server's resources and prompts as tools named
``<server>__list_resources``, ``<server>__read_resource``, ``<server>__list_prompts``
and ``<server>__get_prompt`` (``agents_core.tools.mcp_context``), beside its tools, so
an agent spec's MCP reference offers them with the rest (or picks them by name in its
``tools`` list). They go over the same checked connection as the tools (the address
rules of ``studio.mcp.client``), their answers are redacted like the tools' and their
calls are tool calls in the session's timeline. Binary resources reach the model as a
one-line summary only.

Both modules are imported only once the SDK is (``client._load_sdk``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from studio import security

if TYPE_CHECKING:
    from agents_core.tools.base import BaseTool
    from agents_core.tools.mcp import McpToolset

Info = tuple[str, str]
"""A listed resource or prompt: what names it, and what describes it."""
SEPARATOR = "__"
MAX_LISTED = 100
"""The connection test shows at most this many resources and prompts each."""


def tools(toolset: McpToolset, server_name: str) -> list[BaseTool]:
    """The resource and prompt tools of ``toolset``'s server, named after the server."""
    from agents_core.tools.mcp_context import context_tools

    return context_tools(toolset, prefix=server_name + SEPARATOR)


async def listing(toolset: McpToolset, secrets: Sequence[str]) -> tuple[list[Info], list[Info]]:
    """The server's resources (and resource templates) and prompts, first page of each,
    redacted; empty for what the server does not offer."""
    capabilities = toolset.capabilities
    timeout_s = toolset.connect_timeout_s
    resources: list[Info] = []
    prompts: list[Info] = []
    if capabilities.resources is not None:
        listed = await toolset.request(
            "resources/list", lambda client: client.list_resources(), timeout_s=timeout_s
        )
        templates = await toolset.request(
            "resources/templates/list",
            lambda client: client.list_resource_templates(),
            timeout_s=timeout_s,
        )
        resources += [(r.uri, _about(r.name, r.description)) for r in listed.resources]
        resources += [
            (t.uri_template, _about(t.name, t.description)) for t in templates.resource_templates
        ]
    if capabilities.prompts is not None:
        page = await toolset.request(
            "prompts/list", lambda client: client.list_prompts(), timeout_s=timeout_s
        )
        for prompt in page.prompts:
            params = ", ".join(arg.name for arg in prompt.arguments or [])
            prompts.append((f"{prompt.name}({params})", prompt.description or ""))
    return _redacted(resources, secrets), _redacted(prompts, secrets)


def _about(name: str, description: str | None) -> str:
    return f"{name}: {description}" if description else name


def _redacted(infos: list[Info], secrets: Sequence[str]) -> list[Info]:
    return [
        (security.redact(name, secrets), security.redact(about, secrets))
        for name, about in infos[:MAX_LISTED]
    ]
