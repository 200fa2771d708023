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
import re
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from agents_core import builder as core_builder
from agents_core import exceptions as core_exceptions
from agents_core import specs as core_specs
from agents_core.tools.base import BaseTool, ToolContext
from studio import checked_http, security
from studio.agents.tools import workspace_dir
from studio.models import Agent, McpServer, Run

if TYPE_CHECKING:
    from agents_core.tools.mcp import McpServer as McpConnection

MAX_HEADERS = 32
MAX_ENV = 32
MAX_ARGS = 64
MAX_VALUE_CHARS = 4_000
MAX_COMMAND_CHARS = 1_000
MAX_URL_CHARS = 2_000
# Set by the MCP client or by HTTP itself: a stored value would break the protocol or
# smuggle a second request.
RESERVED_HEADERS = frozenset(
    {
        "accept",
        "connection",
        "content-length",
        "content-type",
        "host",
        "keep-alive",
        "last-event-id",
        "mcp-protocol-version",
        "mcp-session-id",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)

# The patterns below are both the checks and the API schema's, so a value the schema
# admits is one Studio accepts. Character classes are spelled out (no \s), so Python
# and ECMAScript read them alike.
_CONTROL = r"\x00-\x1f\x7f-\x9f"


def _any_case(word: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in word)


HEADER_NAME_PATTERN = (
    rf"^(?!(?:{'|'.join(_any_case(name) for name in sorted(RESERVED_HEADERS))})$)"
    r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$"
)
"""An HTTP field name (RFC 9110 token) the MCP client does not set itself."""
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
VALUE_PATTERN = rf"^[^{_CONTROL}]*$"
"""A header or environment value: no control characters (no header injection)."""
COMMAND_PATTERN = rf"^[^ ={_CONTROL}](?:[^={_CONTROL}]*[^ ={_CONTROL}])?$"
"""One program name or path: no control characters, no '=' (env(1) would read it as a
variable), no spaces at either end."""
ARG_PATTERN = r"^[^\x00]*$"
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_IPV4 = rf"(?:{_OCTET}\.){{3}}{_OCTET}"
_H16 = "[0-9A-Fa-f]{1,4}"
_IPV6 = "|".join(
    [
        rf"(?:{_H16}:){{7}}{_H16}",
        rf"(?:{_H16}:){{1,7}}:",
        rf"(?:{_H16}:){{1,6}}:{_H16}",
        rf"(?:{_H16}:){{1,5}}(?::{_H16}){{1,2}}",
        rf"(?:{_H16}:){{1,4}}(?::{_H16}){{1,3}}",
        rf"(?:{_H16}:){{1,3}}(?::{_H16}){{1,4}}",
        rf"(?:{_H16}:){{1,2}}(?::{_H16}){{1,5}}",
        rf"{_H16}:(?::{_H16}){{1,6}}",
        rf":(?:(?::{_H16}){{1,7}}|:)",
        rf"::(?:[Ff]{{4}}(?::0{{1,4}})?:)?{_IPV4}",
        rf"(?:{_H16}:){{1,4}}:{_IPV4}",
    ]
)
_PORT = r"(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4})"
URL_PATTERN = (
    rf"^https?://(?:[A-Za-z0-9_~-]+(?:\.[A-Za-z0-9_~-]+)*\.?|\[(?:{_IPV6})\])(?::{_PORT})?"
    rf"(?:[/?#][^ {_CONTROL}]*)?$"
)
"""The shape of an MCP endpoint URL; where it points is ``check_url``'s business."""
STDIO_STAFF_ONLY = "only staff can register or change stdio MCP servers"


class McpRefusedError(core_exceptions.ConfigurationError):
    """A server Studio will not connect to as configured (its URL is refused now)."""

    code = "mcp_refused"


class McpConnectError(core_exceptions.ConfigurationError):
    """A server a run needs could not be reached or did not list its tools."""

    code = "mcp_unavailable"


# Who may do what


def may_manage(user: AbstractBaseUser | AnonymousUser, transport: str) -> bool:
    """Whether ``user`` may create or change a server of ``transport``: anyone signed in
    for ``http``; staff only for ``stdio``, which runs a program on Studio's host."""
    if not user.is_authenticated or not user.is_active:
        return False
    return transport != McpServer.Transport.STDIO or bool(getattr(user, "is_staff", False))


def env_allowlist() -> frozenset[str]:
    return frozenset(settings.STUDIO_MCP_ENV_ALLOWLIST)


# Checking values (the API's serializer and the admin's form share these)


class InvalidValue(Exception):
    """One value that cannot be stored; ``code`` is stable, the message readable."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def check_url(url: str) -> None:
    """Raise ``InvalidValue`` unless Studio may send requests to ``url`` now; the code is
    ``studio.security``'s (``address_not_allowed``, ``unresolvable``...)."""
    if not re.fullmatch(URL_PATTERN, url):
        raise InvalidValue("invalid", "an http(s) URL with a host name or address")
    try:
        security.check_outbound_url(url)
    except security.OutboundURLError as exc:
        raise InvalidValue(exc.code, exc.detail) from None


def check_headers(headers: Mapping[str, str]) -> None:
    if len(headers) > MAX_HEADERS:
        raise InvalidValue("too_many", f"at most {MAX_HEADERS} headers")
    for name, value in headers.items():
        if name.lower() in RESERVED_HEADERS:
            raise InvalidValue("reserved", f"the MCP client sets {name!r} itself")
        if not re.fullmatch(HEADER_NAME_PATTERN, name):
            raise InvalidValue("invalid_name", f"{name!r} is not a valid header name")
        _check_value(f"header {name!r}", value)


def check_env(env: Mapping[str, str]) -> None:
    allowed = env_allowlist()
    if len(env) > MAX_ENV:
        raise InvalidValue("too_many", f"at most {MAX_ENV} variables")
    for name, value in env.items():
        if not re.fullmatch(ENV_NAME_PATTERN, name):
            raise InvalidValue("invalid_name", f"{name!r} is not a valid variable name")
        if name not in allowed:
            raise InvalidValue(
                "not_allowed",
                f"{name!r} is not in STUDIO_MCP_ENV_ALLOWLIST "
                f"(allowed: {', '.join(sorted(allowed)) or 'none'})",
            )
        _check_value(f"variable {name!r}", value)


def check_command(command: str) -> None:
    if len(command) > MAX_COMMAND_CHARS or not re.fullmatch(COMMAND_PATTERN, command):
        raise InvalidValue(
            "invalid",
            "one program name or path: no control characters or '=', no spaces at either end",
        )


def check_args(args: Sequence[str]) -> None:
    if len(args) > MAX_ARGS:
        raise InvalidValue("too_many", f"at most {MAX_ARGS} arguments")
    if not all(isinstance(arg, str) and re.fullmatch(ARG_PATTERN, arg) for arg in args):
        raise InvalidValue("invalid", "each argument is a string without NUL")


def _check_value(what: str, value: str) -> None:
    if len(value) > MAX_VALUE_CHARS:
        raise InvalidValue("too_long", f"{what}: at most {MAX_VALUE_CHARS} characters")
    if not re.fullmatch(VALUE_PATTERN, value):
        raise InvalidValue("invalid", f"{what}: control characters are not allowed")


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


async def check_connection(server: McpServer) -> ConnectionCheck:
    """Connect, list the tools and disconnect. Never raises, never echoes a secret."""
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
    except core_exceptions.AgentsCoreError as exc:
        return ConnectionCheck(ok=False, detail=security.redact(exc.message, secrets))
    elapsed = round((time.monotonic() - started) * 1000, 1)
    return ConnectionCheck(ok=True, detail=f"{len(tools)} tool(s)", latency_ms=elapsed, tools=tools)


# Runs


def servers_for_run(run: Run) -> list[McpServer]:
    """The owner's servers the run's pinned agent tree names (through references too)."""
    fresh = Run.objects.select_related("session__agent_version").get(pk=run.pk)
    version = fresh.session.agent_version
    if version is None:
        return []
    owner_id = fresh.session.owner_id
    spec = core_specs.AgentSpec.model_validate(version.spec)
    names = core_builder.mcp_server_names(spec, _AgentSpecsByName(owner_id))
    if not names:
        return []
    return list(McpServer.objects.filter(owner_id=owner_id, name__in=names))


class _AgentSpecsByName(Mapping[str, core_specs.AgentSpec]):
    """The owner's agents' current specs, each read when a reference asks for it: a run
    of a tree without references costs no query for them."""

    def __init__(self, owner_id: int) -> None:
        self._agents = Agent.objects.filter(owner_id=owner_id, current_version__isnull=False)

    def __getitem__(self, name: str) -> core_specs.AgentSpec:
        row = self._agents.filter(name=name).values_list("current_version__spec", flat=True)
        spec = row.first()
        if spec is None:
            raise KeyError(name)
        return core_specs.AgentSpec.model_validate(spec)

    def __iter__(self) -> Iterator[str]:
        return iter(self._agents.values_list("name", flat=True))

    def __len__(self) -> int:
        return self._agents.count()


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
    if servers:
        await _load_sdk()
    from agents_core.tools.mcp import McpToolset

    opened: dict[str, Sequence[BaseTool] | core_exceptions.AgentsCoreError] = {}
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
            opened[server.name] = redacting(toolset.tools, secrets)
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
