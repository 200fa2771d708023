"""MCP servers in Studio: who may register what, what is checked before each
connection, and the tools a run gets.

Two transports, two trust levels:

- ``http``: any user may register one. Its URL is an outbound request like a model's
  base URL, so ``studio.security.check_outbound_url`` refuses loopback, private,
  link-local and metadata addresses unless ``STUDIO_OUTBOUND_ALLOWLIST`` admits them,
  when the URL is saved and again before each connection (a name may resolve elsewhere
  later), and the connection goes only to an address that was checked
  (``studio.checked_http``). The MCP client follows a redirect only on the endpoint's
  own origin, so a public server cannot bounce Studio to a refused address.
- ``stdio``: a program Studio starts on its own host, so only staff may create or change
  one (``may_manage``). It runs exactly the stored command and arguments, without a
  shell, in the owner's workspace, with an environment of ``STUDIO_MCP_ENV_ALLOWLIST``
  variables only: Studio's own value of each, or the one staff stored.

Header and environment values are secrets (``McpServer.set_headers``): encrypted at
rest, never returned, and removed from what the server says about its tools (names,
descriptions, input schemas: the connection test shows them, every run sends them to the
model) and from what the tools answer (``RedactingTool``).

The MCP SDK is slow to import (seconds), so it is loaded only when a connection is
made, and then in a worker thread (``_load_sdk``): an import on the event loop would
stall every run and socket the process serves.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings

from agents_core import builder as core_builder
from agents_core import exceptions as core_exceptions
from agents_core import specs as core_specs
from agents_core.tools.base import BaseTool, ToolContext
from studio import checked_http, security
from studio.agents.tools import workspace_dir
from studio.agents.versions import StoredSpecs
from studio.mcp import context
from studio.mcp.checks import env_allowlist
from studio.models import McpServer, Run

if TYPE_CHECKING:
    from agents_core.tools.mcp import McpServer as McpConnection


class McpRefusedError(core_exceptions.ConfigurationError):
    """A server Studio will not connect to as configured (its URL is refused now)."""

    code = "mcp_refused"


class McpConnectError(core_exceptions.ConfigurationError):
    """A server a run needs could not be reached or did not list its tools."""

    code = "mcp_unavailable"


# Connecting


def connection(server: McpServer) -> McpConnection:
    """How to reach ``server`` now; ``McpRefusedError`` if its URL is refused today."""
    from agents_core.tools.mcp import McpHttpServer, McpStdioServer

    if server.transport == McpServer.Transport.HTTP:
        try:
            security.check_outbound_url(server.url)
        except security.OutboundURLError as exc:
            raise McpRefusedError(f"MCP server {server.name!r}: {exc.detail}") from None
        return McpHttpServer(
            url=server.url,
            headers=server.headers(),
            timeout_s=settings.STUDIO_MCP_CONNECT_TIMEOUT_S,
        )
    return McpStdioServer(
        command=server.command,
        args=list(server.args),
        env=process_env(server),
        cwd=str(workspace_dir(server.owner_id)),
        exact_env=True,
    )


def process_env(server: McpServer) -> dict[str, str]:
    """A stdio server's whole environment: each allowlisted variable, with the value
    staff stored or else Studio's own. Checked again here: the allowlist may have
    shrunk since the server was saved."""
    allowed = env_allowlist()
    inherited = {name: os.environ[name] for name in sorted(allowed) if name in os.environ}
    stored = {name: value for name, value in server.env().items() if name in allowed}
    return inherited | stored


def secrets_of(server: McpServer) -> list[str]:
    return [*server.headers().values(), *server.env().values()]


@dataclass(frozen=True, slots=True)
class ToolInfo:
    name: str
    description: str


@dataclass(frozen=True, slots=True)
class ConnectionCheck:
    ok: bool
    detail: str
    latency_ms: float | None = None
    tools: tuple[ToolInfo, ...] = ()
    resources: tuple[ToolInfo, ...] = ()
    """Each resource (or template) by URI, with its name and description."""
    prompts: tuple[ToolInfo, ...] = ()
    """Each prompt with its arguments, e.g. ``review(language, code)``."""


async def check_connection(server: McpServer) -> ConnectionCheck:
    """Connect, list the tools, resources and prompts, and disconnect. Never raises,
    never echoes a secret."""
    await _load_sdk()
    from agents_core.tools.mcp import McpToolset

    secrets = secrets_of(server)
    started = time.monotonic()
    try:
        async with McpToolset(
            connection(server),
            connect_timeout_s=settings.STUDIO_MCP_CONNECT_TIMEOUT_S,
            http_transport=checked_http.checked_transport,
        ) as toolset:
            redacted = redacting(toolset.tools, secrets)
            tools = tuple(ToolInfo(tool.name, tool.description) for tool in redacted)
            listed = await context.listing(toolset, secrets)
            resources, prompts = (tuple(ToolInfo(*info) for info in infos) for infos in listed)
    except core_exceptions.AgentsCoreError as exc:
        return ConnectionCheck(ok=False, detail=security.redact(exc.message, secrets))
    elapsed = round((time.monotonic() - started) * 1000, 1)
    detail = f"{len(tools)} tool(s), {len(resources)} resource(s), {len(prompts)} prompt(s)"
    return ConnectionCheck(
        ok=True,
        detail=detail,
        latency_ms=elapsed,
        tools=tools,
        resources=resources,
        prompts=prompts,
    )


# Runs


def servers_for_run(run: Run) -> list[McpServer]:
    """The owner's servers the run's pinned agent tree names (through references too)."""
    fresh = Run.objects.select_related("session__agent_version").get(pk=run.pk)
    version = fresh.session.agent_version
    if version is None:
        return []
    owner_id = fresh.session.owner_id
    spec = core_specs.AgentSpec.model_validate(version.spec)
    names = core_builder.mcp_server_names(spec, StoredSpecs(owner_id))
    if not names:
        return []
    return list(McpServer.objects.filter(owner_id=owner_id, name__in=names))


async def _load_sdk() -> None:
    """Import the MCP adapter (and the SDK) off the event loop; a no-op once loaded."""
    if "agents_core.tools.mcp" not in sys.modules:
        await asyncio.to_thread(importlib.import_module, "agents_core.tools.mcp")


OpenedTools = Mapping[str, Sequence[BaseTool] | core_exceptions.AgentsCoreError]
"""Each server's tools, or why it could not be connected (raised when the agent is built,
so the run fails with that error like any other build problem)."""


@asynccontextmanager
async def open_tools(servers: Sequence[McpServer]) -> AsyncIterator[OpenedTools]:
    """Connect to each server for one run; every connection closes (and every stdio
    process stops) when the block ends."""
    opened: dict[str, Sequence[BaseTool] | core_exceptions.AgentsCoreError] = {}
    if not servers:  # most runs: the SDK (seconds to import) is not needed at all
        yield opened
        return
    await _load_sdk()
    from agents_core.tools.mcp import McpToolset

    async with AsyncExitStack() as stack:
        for server in servers:
            secrets = secrets_of(server)
            try:
                toolset = McpToolset(
                    connection(server),
                    call_timeout_s=settings.STUDIO_MCP_CALL_TIMEOUT_S,
                    connect_timeout_s=settings.STUDIO_MCP_CONNECT_TIMEOUT_S,
                    http_transport=checked_http.checked_transport,
                )
                await stack.enter_async_context(toolset)
            except McpRefusedError as exc:
                opened[server.name] = exc
                continue
            except core_exceptions.AgentsCoreError as exc:
                detail = security.redact(exc.message, secrets)
                opened[server.name] = McpConnectError(f"MCP server {server.name!r}: {detail}")
                continue
            offered = [*toolset.tools, *context.tools(toolset, server.name)]
            opened[server.name] = redacting(offered, secrets)
        yield opened


def connected_tools(opened: OpenedTools | None) -> dict[str, Sequence[BaseTool]]:
    """The tools of the servers that connected; raises the first connection error."""
    tools: dict[str, Sequence[BaseTool]] = {}
    for name, value in (opened or {}).items():
        if isinstance(value, core_exceptions.AgentsCoreError):
            raise value
        tools[name] = value
    return tools


def redacting(tools: Sequence[BaseTool], secrets: Sequence[str]) -> list[BaseTool]:
    return [RedactingTool(tool, secrets) for tool in tools]


class RedactingTool(BaseTool):
    """An MCP tool that never carries the server's stored secrets: not in its name,
    description or input schema (what the model is told about it), nor in its results
    and errors. A server may quote the header or variable it was given anywhere."""

    def __init__(self, inner: BaseTool, secrets: Sequence[str]) -> None:
        self._inner = inner
        self._secrets = list(secrets)
        self.name = security.redact(inner.name, self._secrets)
        self.description = security.redact(inner.description, self._secrets)
        self.timeout_s = inner.timeout_s

    def parameters_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = security.redact_json(
            self._inner.parameters_schema(), self._secrets
        )
        return schema

    async def arun(self, args: dict[str, Any], tool_context: ToolContext) -> Any:
        try:
            result = await self._inner.arun(args, tool_context)
        except core_exceptions.AgentsCoreError as exc:
            exc.message = security.redact(exc.message, self._secrets)
            exc.args = (exc.message,)
            raise exc from None
        return security.redact(result, self._secrets) if isinstance(result, str) else result
