"""Real MCP servers for the tests, written with the SDK's server API.

``server`` offers small tools (add, echo, fail...; ``tally`` counts its calls in
``TALLY``), two resources (a text guide, a binary pixel), a resource template and a
prompt (``review``). ``quoting`` is a careless server: its tool list and its results quote
everything it was given (each request header over HTTP, each environment variable over
stdio), raw, URL-encoded and base64-encoded, in every place a tool carries text: name,
title, description, and the input schema's titles, descriptions, defaults, examples
and property names.

Run either over stdio (``python -m tests.support.mcp_server [--quoting]`` or by path),
or serve it over streamable HTTP on 127.0.0.1 with ``serve_http()``.
``serve_silence()`` is an endpoint that accepts connections and never answers: an MCP
server hung at connection time.
"""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, quote_plus

import anyio
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
)

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


@dataclass
class Tally:
    """The calls of the ``tally`` tool, counted in the process that serves it (the
    test's own, with ``serve_http()``), so a test can tell how often a tool with side
    effects ran whatever became of the Studio that called it."""

    labels: list[str] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    """Set to end every held call at once (a test's end)."""

    def reset(self) -> None:
        self.labels.clear()
        self.release.clear()


TALLY = Tally()


@server.tool()
async def tally(label: str, hold_s: float = 0.0) -> str:
    """Count one call under ``label`` (a side effect), then hold it ``hold_s`` seconds."""
    TALLY.labels.append(label)
    if hold_s > 0:
        await asyncio.to_thread(TALLY.release.wait, hold_s)
    return f"tallied {label}"


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


# Resources and prompts

GUIDE_TEXT = "Studio test guide: the answer is 42."


@server.resource("guide://readme", name="readme", mime_type="text/plain")
def readme() -> str:
    """The guide's text."""
    return GUIDE_TEXT


@server.resource("guide://pixel.png", name="pixel", mime_type="image/png")
def pixel_resource() -> bytes:
    """A one-pixel PNG: binary contents."""
    return _PIXEL_PNG


@server.resource("notes://{topic}", name="note")
def note(topic: str) -> str:
    """A note on ``topic``."""
    return f"a note on {topic}"


@server.prompt()
def review(language: str, code: str) -> str:
    """Ask for a review of a piece of code."""
    return f"Review this {language} code: {code}"


# The quoting server


def quotation(values: Iterable[str]) -> str:
    """Each value raw, URL-encoded and base64-encoded (standard and URL-safe)."""
    forms: list[str] = []
    for value in values:
        raw = value.encode()
        forms += [value, quote(value, safe=""), quote_plus(value)]
        forms += [base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()]
    return " ".join(forms)


def _given(ctx: ServerRequestContext[Any]) -> str:
    """What this request was given: its HTTP headers, or over stdio the environment."""
    headers = getattr(ctx.request, "headers", None)
    return quotation(headers.values() if headers is not None else os.environ.values())


async def _list_quoting_tools(
    ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
) -> ListToolsResult:
    given = _given(ctx)
    text = {"type": "string", "title": given, "description": given, "default": given}
    schema = {
        "type": "object",
        "title": given,
        "description": given,
        "properties": {"text": {**text, "examples": [given]}, given: text},
    }
    return ListToolsResult(
        tools=[
            Tool(name="quote", title=given, description=given, input_schema=schema),
            # Described by its title alone, and named after what it was given.
            Tool(name=f"quote_{given}", title=given, input_schema={"type": "object"}),
        ]
    )


async def _call_quoting_tool(
    ctx: ServerRequestContext[Any], params: CallToolRequestParams
) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=_given(ctx))])


quoting = Server(
    "studio-tests-quoting", on_list_tools=_list_quoting_tools, on_call_tool=_call_quoting_tool
)


async def _serve_stdio(lowlevel: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        await lowlevel.run(read, write, lowlevel.create_initialization_options())


@contextmanager
def serve_http(
    mcp: MCPServer | Server[Any] = server, *, startup_timeout_s: float = 10.0
) -> Iterator[str]:
    """Serve ``mcp`` over streamable HTTP on an ephemeral 127.0.0.1 port, from a thread;
    yields the endpoint URL once the server accepts connections, and stops it on exit."""
    import uvicorn  # only here: a stdio server should start without it

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(mcp.streamable_http_app(), log_level="warning", lifespan="on")
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


@dataclass
class Silence:
    """An endpoint that never answers; ``connected`` is set once a client connected."""

    url: str
    connected: threading.Event = field(default_factory=threading.Event)


@contextmanager
def serve_silence() -> Iterator[Silence]:
    """Accept connections on an ephemeral 127.0.0.1 port and never answer them, from a
    thread; every connection closes on exit."""
    listener = socket.create_server(("127.0.0.1", 0))
    silence = Silence(f"http://127.0.0.1:{listener.getsockname()[1]}/mcp")
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:  # the listener was shut down
                return
            accepted.append(connection)
            silence.connected.set()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield silence
    finally:
        listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        thread.join()
        listener.close()
        for connection in accepted:
            connection.close()


if __name__ == "__main__":
    if "--quoting" in sys.argv[1:]:
        anyio.run(_serve_stdio, quoting)
    else:
        server.run("stdio")
