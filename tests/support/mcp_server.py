"""A real MCP server for the tests, written with the SDK's server API.

Run it over stdio (``python -m tests.support.mcp_server`` or by path), or serve it over
streamable HTTP on 127.0.0.1 with ``serve_http()``.
"""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

# One transparent pixel: enough to exercise non-text content.
_PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

server = MCPServer("studio-tests", log_level="WARNING")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def fail() -> str:
    """Always fail, as a tool error result."""
    raise ToolError("the fail tool always fails")


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer: for timeout tests."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}s"


@server.tool()
def getenv(name: str) -> str:
    """The value of one of the server's environment variables, or ``<unset>``."""
    return os.environ.get(name, "<unset>")


@server.tool()
def environ() -> str:
    """The server's whole environment, as sorted NAME=value lines."""
    return "\n".join(f"{name}={value}" for name, value in sorted(os.environ.items()))


@server.tool()
def header(name: str, ctx: Context) -> str:
    """The value of one header of the HTTP request that carried this call, or ``<none>``."""
    return (ctx.headers or {}).get(name.lower(), "<none>")


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def pixel() -> Image:
    """A one-pixel PNG: non-text content."""
    return Image(data=_PIXEL_PNG, format="png")


@contextmanager
def serve_http(*, startup_timeout_s: float = 10.0) -> Iterator[str]:
    """Serve over streamable HTTP on an ephemeral 127.0.0.1 port, from a thread; yields
    the endpoint URL once the server accepts connections, and stops it on exit."""
    import uvicorn  # only here: a stdio server should start without it

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on")
    http = uvicorn.Server(config)
    thread = threading.Thread(target=http.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + startup_timeout_s
        while not http.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the MCP test server did not start")
            thread.join(timeout=0.01)  # wakes early if the server thread dies
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        http.should_exit = True
        thread.join()
        sock.close()


if __name__ == "__main__":
    server.run("stdio")
