"""MCP tools: the tools of a Model Context Protocol server, over stdio or streamable HTTP.

A ``McpToolset`` holds one connection (and, for stdio, the server process) open for as
long as its ``async with`` block runs, typically one agent run::

    server = McpHttpServer(url="http://127.0.0.1:8000/mcp")
    async with McpToolset(server, prefix="docs_") as toolset:
        agent = LlmAgent("assistant", model=model, tools=toolset.tools)
        async for event in Runner(agent, session_service=sessions).astream(...):
            ...

Tool schemas and descriptions come from the server. A call answers with the text of its
content; an error result raises ``ToolExecutionError``, a call past its timeout raises
``ToolTimeoutError``, and both reach the model as error results.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import logging
import os
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from contextlib import asynccontextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Annotated, Any, Literal, Self, assert_never
from urllib.parse import urlsplit, urlunsplit

import httpx2
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import DEFAULT_INHERITED_ENV_VARS
from mcp.client.streamable_http import streamable_http_client
from mcp.types import (
    AudioContent,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    ServerCapabilities,
    TextContent,
    TextResourceContents,
    Tool,
)
from pydantic import BaseModel, ConfigDict, Field

from agents_core.exceptions import (
    ConfigurationError,
    ToolError,
    ToolExecutionError,
    ToolTimeoutError,
)
from agents_core.tools.base import BaseTool, ToolContext

logger = logging.getLogger("agents_core.tools.mcp")

# A server may hold an SSE response open between events; calls are bounded by their own
# timeout, so this only stops a silent stream from being held forever.
_SSE_READ_TIMEOUT_S = 300.0
# A server that pages its tool list without end must not hang the connect.
_MAX_TOOL_PAGES = 100


class McpStdioServer(BaseModel):
    """A local MCP server, launched as a subprocess that speaks MCP on stdin/stdout.

    The process gets ``env`` and nothing else of this process's environment, except
    the MCP SDK's fixed list of non-secret variables (HOME, LOGNAME, SHELL, TERM,
    USER). ``PATH`` is ``os.defpath`` unless ``env`` sets it. With ``exact_env`` the
    process gets exactly ``env``: not even those, nor a default ``PATH``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    transport: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict, repr=False)
    cwd: str | None = None
    exact_env: bool = False

    def describe(self) -> str:
        """How error messages name this server (without its arguments or environment)."""
        return f"MCP server {self.command!r}"


class McpHttpServer(BaseModel):
    """A remote MCP server, reached over streamable HTTP."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    transport: Literal["http"] = "http"
    url: str = Field(pattern=r"^https?://")
    headers: dict[str, str] = Field(default_factory=dict, repr=False)
    """Sent with every request, e.g. ``Authorization``; never shown in messages."""
    timeout_s: float = Field(30.0, gt=0)
    """For connecting and for sending each request."""

    def describe(self) -> str:
        """How error messages name this server (without credentials in the URL)."""
        parts = urlsplit(self.url)
        return f"MCP server at {urlunsplit(parts._replace(netloc=parts.netloc.rpartition('@')[2]))}"


McpServer = Annotated[McpStdioServer | McpHttpServer, Field(discriminator="transport")]
"""Connection settings of either transport, told apart by ``transport``."""


class McpToolset:
    """An open connection to one MCP server and the tools it offers.

    Use it as an async context manager: entering connects and lists the tools,
    leaving closes the connection and stops a stdio server's process. The connection
    lives in a task of its own, so the toolset may be closed from another task than
    the one that opened it (an async generator finalised elsewhere, a test fixture),
    which the SDK's cancel scopes would otherwise refuse.

    Args:
        server: How to reach the server.
        allowed_tools: Server tool names to offer; ``None`` offers every tool.
        prefix: Put before each tool's name, so two servers' tools cannot collide.
        call_timeout_s: Per tool call; ``None`` leaves only the run's wall-time limit.
        connect_timeout_s: For connecting and listing the tools.
        http_transport: For an HTTP server, builds the transport of the connection
            (say, one that refuses to connect to some addresses); ``None`` uses httpx's.
    """

    def __init__(
        self,
        server: McpServer,
        *,
        allowed_tools: Collection[str] | None = None,
        prefix: str = "",
        call_timeout_s: float | None = 60.0,
        connect_timeout_s: float = 30.0,
        http_transport: Callable[[], httpx2.AsyncBaseTransport] | None = None,
    ) -> None:
        self.server = server
        self.http_transport = http_transport
        self.allowed_tools = None if allowed_tools is None else frozenset(allowed_tools)
        self.prefix = prefix
        self.call_timeout_s = call_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self._connection: _Connection | None = None
        self._tools: tuple[McpTool, ...] = ()

    @property
    def tools(self) -> tuple[McpTool, ...]:
        """The offered tools, ready for an agent; only while the toolset is open."""
        if self._connection is None:
            raise ConfigurationError(
                f"{self.server.describe()}: open the toolset (async with) before using its tools"
            )
        return self._tools

    async def __aenter__(self) -> Self:
        if self._connection is not None:
            raise ConfigurationError(f"{self.server.describe()}: the toolset is already open")
        opened: asyncio.Future[tuple[Client, list[Tool]]] = (
            asyncio.get_running_loop().create_future()
        )
        release = asyncio.Event()
        owner = asyncio.create_task(
            self._hold_open(opened, release), name=f"mcp: {self.server.describe()}"
        )
        try:
            client, listed = await opened
        except BaseException:  # failed or cancelled: the owner task must not outlive us
            owner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await owner
            raise
        self._connection = _Connection(client=client, owner=owner, release=release)
        try:
            self._tools = tuple(self._offer(listed))
        except ConfigurationError:
            await self.aclose()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection (for stdio, stop the server); a no-op once closed."""
        connection, self._connection, self._tools = self._connection, None, ()
        if connection is not None:
            connection.release.set()
            await connection.owner

    async def call_tool(
        self, name: str, arguments: dict[str, Any], *, timeout_s: float | None
    ) -> str:
        """Call the server's tool ``name`` (its own name, without ``prefix``); returns
        the text of the result. Raises ``ToolExecutionError`` for an error result or a
        failed connection and ``ToolTimeoutError`` after ``timeout_s``."""
        result = await self.request(
            f"tool {name!r}", lambda client: client.call_tool(name, arguments), timeout_s=timeout_s
        )
        text = render_result(result)
        if result.is_error:
            raise ToolExecutionError(text or f"tool {name!r} failed without a message")
        return text

    async def request[T](
        self, what: str, send: Callable[[Client], Awaitable[T]], *, timeout_s: float | None
    ) -> T:
        """Send one request on the open connection (``what`` names it in errors):
        ``ToolExecutionError`` for a protocol error or no connection, ``ToolTimeoutError``
        after ``timeout_s``."""
        if self._connection is None:
            raise ToolExecutionError(f"{self.server.describe()} is not connected")
        try:
            async with asyncio.timeout(timeout_s):
                return await send(self._connection.client)
        except TimeoutError as exc:
            raise ToolTimeoutError(
                f"{self.server.describe()}: {what} gave no result within {timeout_s}s"
            ) from exc
        except MCPError as exc:
            raise ToolExecutionError(f"{self.server.describe()}: {exc.message}") from exc

    @property
    def capabilities(self) -> ServerCapabilities:
        """What the server said it offers (tools, resources, prompts...) when it connected."""
        if self._connection is None:
            raise ConfigurationError(f"{self.server.describe()}: open the toolset first")
        return self._connection.client.server_capabilities

    async def _hold_open(
        self, opened: asyncio.Future[tuple[Client, list[Tool]]], release: asyncio.Event
    ) -> None:
        """The owner task: connects, reports through ``opened``, holds the connection
        until ``release`` is set, then closes it."""
        try:
            async with asyncio.timeout(self.connect_timeout_s) as deadline:
                async with _open_client(self.server, self.http_transport) as client:
                    listed = await _list_tools(client)
                    deadline.reschedule(None)
                    if opened.cancelled():  # the opener was cancelled meanwhile
                        return
                    opened.set_result((client, listed))
                    await release.wait()
        except Exception as exc:  # whatever the transport raised, even grouped
            if opened.done():  # nobody waits for this error: the tools' calls saw theirs
                logger.warning("connection to %s failed", self.server.describe(), exc_info=True)
            else:
                opened.set_exception(self._connect_error(exc))

    def _connect_error(self, exc: Exception) -> ToolError:
        where = self.server.describe()
        error: ToolError
        if isinstance(exc, TimeoutError):
            error = ToolTimeoutError(f"{where} did not answer within {self.connect_timeout_s}s")
        else:
            error = ToolExecutionError(f"cannot connect to {where}: {_reason(exc)}")
        error.__cause__ = exc
        return error

    def _offer(self, listed: list[Tool]) -> list[McpTool]:
        offered = {tool.name: tool for tool in listed}
        if self.allowed_tools is not None:
            if missing := self.allowed_tools - offered.keys():
                raise ConfigurationError(
                    f"{self.server.describe()} has no tool named {', '.join(sorted(missing))}; "
                    f"it offers: {', '.join(sorted(offered)) or 'none'}"
                )
            offered = {n: tool for n, tool in offered.items() if n in self.allowed_tools}
        return [McpTool(self, tool) for tool in offered.values()]


@dataclass(slots=True, frozen=True)
class _Connection:
    client: Client
    owner: asyncio.Task[None]
    release: asyncio.Event


class McpTool(BaseTool):
    """One tool of an open ``McpToolset``, named ``prefix + server_name``."""

    def __init__(self, toolset: McpToolset, tool: Tool) -> None:
        self.toolset = toolset
        self.server_name = tool.name
        self.name = toolset.prefix + tool.name
        self.description = tool.description or tool.title or ""
        self.timeout_s = toolset.call_timeout_s
        self._input_schema = tool.input_schema

    def parameters_schema(self) -> dict[str, Any]:
        """The server's ``inputSchema``; the server validates the arguments."""
        return copy.deepcopy(self._input_schema)

    async def arun(self, args: dict[str, Any], tool_context: ToolContext) -> str:
        return await self.toolset.call_tool(self.server_name, args, timeout_s=self.timeout_s)


def render_result(result: CallToolResult) -> str:
    """A tool result as the text the model reads: text content joined by newlines,
    other content named in brackets, structured content as JSON when that is all."""
    if not result.content and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n".join(render_block(block) for block in result.content)


def render_block(block: ContentBlock) -> str:
    match block:
        case TextContent():
            return block.text
        case ImageContent():
            return f"[image: {block.mime_type}]"
        case AudioContent():
            return f"[audio: {block.mime_type}]"
        case ResourceLink():
            return f"[resource link: {block.uri}]"
        case EmbeddedResource(resource=TextResourceContents() as contents):
            return contents.text
        case EmbeddedResource():
            return f"[resource: {block.resource.uri} ({block.resource.mime_type or 'binary'})]"
        case _:
            assert_never(block)


@asynccontextmanager
async def _open_client(
    server: McpServer, http_transport: Callable[[], httpx2.AsyncBaseTransport] | None
) -> AsyncIterator[Client]:
    match server:
        case McpStdioServer():
            async with Client(_stdio_parameters(server), cache=None) as client:
                yield client
        case McpHttpServer():
            timeout = httpx2.Timeout(server.timeout_s, read=_SSE_READ_TIMEOUT_S)
            # A given transport carries every request: no proxy from the environment.
            transport = http_transport() if http_transport is not None else None
            async with (
                httpx2.AsyncClient(
                    headers=server.headers,
                    timeout=timeout,
                    transport=transport,
                    trust_env=transport is None,
                ) as http,
                Client(streamable_http_client(server.url, http_client=http), cache=None) as client,
            ):
                yield client
        case _:
            assert_never(server)


def _stdio_parameters(server: McpStdioServer) -> StdioServerParameters:
    if not server.exact_env:
        env = {"PATH": os.defpath} | server.env
        return StdioServerParameters(
            command=server.command, args=server.args, env=env, cwd=server.cwd
        )
    # The SDK always passes on its list of inherited variables; env(1) removes the ones
    # the caller did not give before it executes the server (taking only names on its
    # command line: values, which may be secrets, travel in the environment).
    if "=" in server.command:
        raise ConfigurationError(
            f"{server.describe()}: with exact_env the command cannot contain '='"
        )
    unset = [name for name in DEFAULT_INHERITED_ENV_VARS if name not in server.env]
    if not unset:
        return StdioServerParameters(
            command=server.command, args=server.args, env=server.env, cwd=server.cwd
        )
    env_program = shutil.which("env", path=os.defpath)
    if env_program is None:
        raise ConfigurationError(f"{server.describe()}: exact_env needs env(1) on {os.defpath}")
    options = [part for name in unset for part in ("-u", name)]
    return StdioServerParameters(
        command=env_program,
        args=[*options, "--", server.command, *server.args],
        env=server.env,
        cwd=server.cwd,
    )


async def _list_tools(client: Client) -> list[Tool]:
    tools: list[Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_TOOL_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        if (cursor := page.next_cursor) is None:
            break
    return tools


def _reason(exc: BaseException) -> str:
    """The first root cause inside nested exception groups, as ``Type: message``."""
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    message = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
