"""The ASGI endpoint at ``/mcp``: checks the Host header (Django's ``ALLOWED_HOSTS``),
authenticates the bearer token, then hands the request to the MCP SDK's streamable HTTP
session manager, which it starts on the first request (Daphne sends no lifespan
events) and stops at lifespan shutdown where the server sends one.

A bearer token is no ambient credential (no browser sends it by itself), so the
endpoint needs neither CSRF nor Origin checks; the SDK's DNS-rebinding check is off
for the same reason and because the Host check here replaces it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from studio import services
from studio.db import db_sync_to_async
from studio.mcp_endpoint import tools

logger = logging.getLogger(__name__)

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
PATHS = frozenset({"/mcp", "/mcp/"})
_MAX_BODY_BYTES = 1_000_000


def build_server() -> Server[Any]:
    return Server(
        "studio",
        instructions="Call a Studio agent with agent_<name>; each call is a Studio session.",
        on_list_tools=tools.list_tools,
        on_call_tool=tools.call_tool,
    )


class McpEndpoint:
    """One per server process; see the module docstring."""

    def __init__(self) -> None:
        self._manager: StreamableHTTPSessionManager | None = None
        self._runner: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._lock = asyncio.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not _host_allowed(scope):
            await _answer(send, 400, {"error": "invalid_request", "detail": "bad Host header"})
            return
        user_id = await _authenticate(scope)
        if user_id is None:
            await _answer(
                send,
                401,
                {"error": "invalid_token", "detail": "send Authorization: Bearer <MCP token>"},
                ((b"www-authenticate", b'Bearer realm="studio-mcp"'),),
            )
            return
        manager = await self._started()
        await manager.handle_request({**scope, tools.USER_KEY: user_id}, receive, send)

    async def _started(self) -> StreamableHTTPSessionManager:
        async with self._lock:
            if self._manager is None or self._runner is None or self._runner.done():
                manager = StreamableHTTPSessionManager(
                    app=build_server(),
                    stateless=True,
                    json_response=True,
                    max_request_body_size=_MAX_BODY_BYTES,
                    security_settings=TransportSecuritySettings(
                        enable_dns_rebinding_protection=False
                    ),
                )
                ready = asyncio.Event()
                self._stop = asyncio.Event()
                self._runner = asyncio.create_task(self._run(manager, ready), name="mcp endpoint")
                await ready.wait()
                self._manager = manager
            return self._manager

    async def _run(self, manager: StreamableHTTPSessionManager, ready: asyncio.Event) -> None:
        async with manager.run():
            ready.set()
            await self._stop.wait()

    async def aclose(self) -> None:
        """Stop the session manager (at server shutdown); a no-op if never started."""
        self._stop.set()
        if self._runner is not None:
            await self._runner
        self._manager = self._runner = None


def _header(scope: Scope, name: bytes) -> str | None:
    values = [v for key, v in scope.get("headers", []) if key.lower() == name]
    return values[0].decode("latin1") if len(values) == 1 else None


def _host_allowed(scope: Scope) -> bool:
    host = _header(scope, b"host")
    if host is None:
        return False
    domain, _ = split_domain_port(host)
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    return bool(domain) and validate_host(domain, allowed)


async def _authenticate(scope: Scope) -> Any | None:
    header = _header(scope, b"authorization")
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    user = await db_sync_to_async(services.user_for_token)(token.strip())
    return None if user is None else user.pk


async def _answer(
    send: Send, status: int, body: dict[str, str], headers: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    content = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(content)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": content})


endpoint = McpEndpoint()
