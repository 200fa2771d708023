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
import logging
from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from studio import token_endpoints
from studio.asgi_types import Receive, Scope, Send
from studio.mcp_endpoint import tools

logger = logging.getLogger(__name__)

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
        if not token_endpoints.host_allowed(scope):
            await token_endpoints.bad_host(send)
            return
        user_id = await token_endpoints.token_user_id(scope)
        if user_id is None:
            await token_endpoints.unauthorized(send, "studio-mcp")
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


endpoint = McpEndpoint()
