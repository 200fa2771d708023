"""A small OpenAI-compatible chat-completions server for tests.

It listens on 127.0.0.1 on an ephemeral port, serves from a background thread, and
answers ``POST /v1/chat/completions`` from a script that the test writes::

    with OpenAIServer() as server:  # or take the ``openai_server`` pytest fixture
        server.fail(503, times=2)  # the next two requests answer 503
        server.reply("Hello!")  # then a text answer
        server.reply(tool_calls=[ToolCallReply("get_weather", {"city": "Paris"})])
        model = openai_compatible(model="test-model", base_url=server.base_url, api_key="k")
        ...
        assert server.requests[0].authorization == "Bearer k"

Script items play in order, one per chat request. A request that finds the script
empty answers 400, which is not retryable, so an under-scripted test fails fast and
says why. A failure's message may quote the API key the request carried, as some
providers do: ``server.fail(401, message=f"Incorrect API key provided: {QUOTED_KEY}")``.

Streaming requests (``"stream": true``) get Server-Sent Events the way OpenAI sends
them: a role chunk, one chunk per text token, then for each tool call a chunk with its
id and name followed by its JSON arguments split over several chunks, a chunk with the
finish reason, a usage chunk when ``stream_options.include_usage`` is set, and
``data: [DONE]``.

Every request is recorded in ``requests`` before it is answered, failed ones included.
The server never sleeps: a hung request (``hang()``) or a stream held part-way
(``reply(..., hold_after=n)``) waits until ``release()`` or ``stop()``. Tests wait on
observable state with ``wait_for_requests()`` and ``wait_until_held()``; these block,
so async tests call them through ``asyncio.to_thread``.

``GET /v1/models`` lists ``models``. Fixtures: ``openai_server`` (a started server) and
``loopback_http_clients`` (``ChatOpenAI`` options that make building a client for a new
``base_url`` cheap); register them by importing them into a ``conftest.py``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

import openai
import pytest

__all__ = [
    "QUOTED_KEY",
    "Fault",
    "FaultKind",
    "OpenAIServer",
    "RecordedRequest",
    "Reply",
    "TokenUsage",
    "ToolCallReply",
    "loopback_http_clients",
    "openai_server",
    "unreachable_base_url",
]

QUOTED_KEY = "{api_key}"
"""In a failure's message, replaced by the API key the request was sent with."""

CHAT_PATH = "/v1/chat/completions"
MODELS_PATH = "/v1/models"
ARGUMENT_PIECE_CHARS = 8
"""Tool-call arguments are streamed in pieces of this many characters."""

_TOKEN = re.compile(r"\S+\s*|\s+")
_ERROR_TYPES = {401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error"}


@dataclass(frozen=True, slots=True)
class ToolCallReply:
    """One tool call the scripted model makes. ``arguments`` may be a raw string, to
    send JSON that does not parse. Without an ``id`` the server numbers it ``call_<n>``."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True, slots=True)
class TokenUsage:
    prompt_tokens: int
    completion_tokens: int
    cached_prompt_tokens: int | None = None
    """Sent as ``prompt_tokens_details.cached_tokens`` (the part of ``prompt_tokens``
    served from the prompt cache); left out when ``None``."""
    reasoning_tokens: int | None = None
    """Sent as ``completion_tokens_details.reasoning_tokens`` (the part of
    ``completion_tokens`` a reasoning model thought in); left out when ``None``."""


@dataclass(frozen=True, slots=True)
class Reply:
    """A scripted answer: text and/or tool calls.

    ``usage`` defaults to word counts of the request and the reply. ``finish_reason``
    defaults to ``tool_calls`` when there are tool calls, else ``stop``. With
    ``hold_after=n`` a streamed answer stops after the role chunk and ``n`` more chunks
    until ``release()``, then carries on if the client is still listening; an answer
    not streamed waits until then before it is sent.
    """

    text: str = ""
    tool_calls: Sequence[ToolCallReply] = ()
    usage: TokenUsage | None = None
    finish_reason: str | None = None
    hold_after: int | None = None


class FaultKind(StrEnum):
    STATUS = "status"
    """Answer an HTTP error status with an OpenAI-style error body."""
    HANG = "hang"
    """Send nothing until ``release()`` or ``stop()``, then close the connection."""
    DISCONNECT = "disconnect"
    """Close the connection without answering."""


@dataclass(frozen=True, slots=True)
class Fault:
    kind: FaultKind
    status: int = 500
    message: str = "injected failure"


ScriptItem = Reply | Fault


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as the server received it; header names are lower-case.
    ``client_port`` is the port the client sent it from: requests that came over one
    connection share it."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: Mapping[str, Any]
    client_port: int

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.body.get("tools", []))

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream", False))

    @property
    def authorization(self) -> str | None:
        return self.headers.get("authorization")


class OpenAIServer:
    """The scripted server; see the module docstring. Use as a context manager, or
    call ``start()`` and ``stop()``."""

    def __init__(self, *, models: Sequence[str] = ("test-model",)) -> None:
        self.models = tuple(models)
        """What ``GET /v1/models`` lists; chat requests may name any model."""
        self._script: deque[ScriptItem] = deque()
        self._requests: list[RecordedRequest] = []
        self._state = threading.Condition()
        self._held = 0
        self._releases = 0
        self._stopping = False
        self._call_ids = itertools.count(1)
        self._completion_ids = itertools.count(1)
        self._http: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> Self:
        self._http = _HTTPServer(self)
        self._thread = threading.Thread(target=self._serve, name="openai-test-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Release held requests, stop serving and close every open connection."""
        with self._state:
            self._stopping = True
            self._state.notify_all()
        if self._http is None or self._thread is None:
            return
        # Wakes the accept loop at once, where serve_forever() would poll for shutdown.
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port)):
            pass
        self._thread.join()
        self._http.close_connections()
        self._http.server_close()

    def _serve(self) -> None:
        assert self._http is not None
        while not self._stopping:
            self._http.handle_request()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._http is None:
            raise RuntimeError("the server is not started")
        return self._http.server_port

    @property
    def url(self) -> str:
        """The server root, ``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """What OpenAI clients take as ``base_url``: the root plus ``/v1``."""
        return f"{self.url}/v1"

    # -- scripting -------------------------------------------------------------------

    def reply(
        self,
        text: str = "",
        *,
        tool_calls: Sequence[ToolCallReply] = (),
        usage: TokenUsage | None = None,
        finish_reason: str | None = None,
        hold_after: int | None = None,
    ) -> None:
        """Queue one answer."""
        self.enqueue(Reply(text, tuple(tool_calls), usage, finish_reason, hold_after))

    def fail(self, status: int, *, times: int = 1, message: str = "injected failure") -> None:
        """Answer the next ``times`` requests with HTTP ``status``."""
        self.enqueue(*[Fault(FaultKind.STATUS, status, message)] * times)

    def hang(self, *, times: int = 1) -> None:
        """Leave the next ``times`` requests unanswered until ``release()``."""
        self.enqueue(*[Fault(FaultKind.HANG)] * times)

    def disconnect(self, *, times: int = 1) -> None:
        """Close the connection of the next ``times`` requests without an answer."""
        self.enqueue(*[Fault(FaultKind.DISCONNECT)] * times)

    def enqueue(self, *items: ScriptItem) -> None:
        with self._state:
            self._script.extend(items)

    @property
    def pending(self) -> int:
        """Script items not played yet."""
        with self._state:
            return len(self._script)

    # -- observing -------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first (a copy)."""
        with self._state:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == CHAT_PATH]

    @property
    def authorizations(self) -> list[str | None]:
        """The ``Authorization`` header of each chat request, oldest first."""
        return [r.authorization for r in self.chat_requests]

    def release(self) -> None:
        """Let every hung or held request carry on."""
        with self._state:
            self._releases += 1
            self._state.notify_all()

    def wait_for_requests(self, count: int, *, timeout: float = 5.0) -> None:
        """Block until at least ``count`` requests have arrived."""
        self._wait(lambda: len(self._requests) >= count, f"{count} requests", timeout)

    def wait_until_held(self, count: int = 1, *, timeout: float = 5.0) -> None:
        """Block until ``count`` requests are hung or held part-way."""
        self._wait(lambda: self._held >= count, f"{count} held requests", timeout)

    def _wait(self, predicate: Callable[[], bool], what: str, timeout: float) -> None:
        with self._state:
            if not self._state.wait_for(predicate, timeout):
                raise TimeoutError(f"openai test server: still waiting for {what}")

    # -- used by the handler ---------------------------------------------------------

    def _receive(self, request: RecordedRequest) -> ScriptItem | None:
        """Record ``request``; for a chat request, take the next script item."""
        with self._state:
            self._requests.append(request)
            self._state.notify_all()
            if request.path != CHAT_PATH or not self._script:
                return None
            return self._script.popleft()

    def _hold(self) -> None:
        with self._state:
            generation = self._releases
            self._held += 1
            self._state.notify_all()
            self._state.wait_for(lambda: self._releases > generation or self._stopping)
            self._held -= 1

    def _next_call_id(self) -> str:
        return f"call_{next(self._call_ids)}"

    def _next_completion_id(self) -> str:
        return f"chatcmpl-{next(self._completion_ids)}"


class _HTTPServer(ThreadingHTTPServer):
    """Keeps the accepted connections, so ``stop()`` can close idle keep-alive ones."""

    daemon_threads = True

    def __init__(self, app: OpenAIServer) -> None:
        self.app = app
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # every SSE chunk goes out as soon as it is written
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read ``requests`` instead of a log."""

    def handle(self) -> None:
        # The client may give up on a held or hung request and close its end.
        with contextlib.suppress(ConnectionError):
            super().handle()

    def do_GET(self) -> None:
        app = self.server.app
        app._receive(self._recorded({}))
        if self.path != MODELS_PATH:
            self._send_error(404, f"no route for GET {self.path}")
            return
        models = [{"id": m, "object": "model", "owned_by": "tests"} for m in app.models]
        self._send_json(200, {"object": "list", "data": models})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self.server.app._receive(self._recorded({}))
            self._send_error(400, "request body is not JSON")
            return
        item = self.server.app._receive(self._recorded(body))
        if self.path != CHAT_PATH:
            self._send_error(404, f"no route for POST {self.path}")
        elif item is None:
            self._send_error(400, "openai test server: no scripted reply left")
        elif isinstance(item, Fault):
            self._play_fault(item)
        elif body.get("stream"):
            self._stream(item, body)
        else:
            if item.hold_after is not None:  # a whole answer is held before it is sent
                self.server.app._hold()
            self._send_json(200, self._completion(item, body))

    def _recorded(self, body: Mapping[str, Any]) -> RecordedRequest:
        headers = {name.lower(): value for name, value in self.headers.items()}
        return RecordedRequest(self.command, self.path, headers, body, self.client_address[1])

    def _play_fault(self, fault: Fault) -> None:
        match fault.kind:
            case FaultKind.STATUS:
                key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                self._send_error(fault.status, fault.message.replace(QUOTED_KEY, key))
            case FaultKind.HANG:
                self.server.app._hold()
                self.close_connection = True
            case FaultKind.DISCONNECT:
                self.close_connection = True

    # -- answers ---------------------------------------------------------------------

    def _completion(self, reply: Reply, body: Mapping[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        calls = self._calls(reply)
        if calls:
            message["tool_calls"] = [
                {"id": id_, "type": "function", "function": {"name": name, "arguments": args}}
                for id_, name, args in calls
            ]
        return {
            **self._envelope("chat.completion", body),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": _finish_reason(reply),
                }
            ],
            "usage": _usage_json(reply, body),
        }

    def _stream(self, reply: Reply, body: Mapping[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        envelope = self._envelope("chat.completion.chunk", body)
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        if include_usage:
            envelope["usage"] = None

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            return {**envelope, "choices": [choice]}

        events = [chunk(delta) for delta in self._deltas(reply)]
        events.append(chunk({}, _finish_reason(reply)))
        if include_usage:
            events.append({**envelope, "choices": [], "usage": _usage_json(reply, body)})
        hold_at = None if reply.hold_after is None else min(reply.hold_after, len(events) - 1)
        self._send_event(chunk({"role": "assistant", "content": ""}))
        for sent, event in enumerate(events):
            if sent == hold_at:
                self.server.app._hold()
            self._send_event(event)
        self._send_chunk(b"data: [DONE]\n\n")
        self._send_chunk(b"")

    def _deltas(self, reply: Reply) -> Iterator[dict[str, Any]]:
        for token in _TOKEN.findall(reply.text):
            yield {"content": token}
        for index, (id_, name, args) in enumerate(self._calls(reply)):
            opening = {"index": index, "id": id_, "type": "function"}
            yield {"tool_calls": [{**opening, "function": {"name": name, "arguments": ""}}]}
            for piece in _pieces(args):
                yield {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}

    def _calls(self, reply: Reply) -> list[tuple[str, str, str]]:
        """(id, name, JSON arguments) of each call; ids are assigned once per reply."""
        return [
            (
                call.id or self.server.app._next_call_id(),
                call.name,
                call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments),
            )
            for call in reply.tool_calls
        ]

    def _envelope(self, kind: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "id": self.server.app._next_completion_id(),
            "object": kind,
            "created": int(time.time()),
            "model": body.get("model", ""),
            "system_fingerprint": None,
        }

    # -- wire ------------------------------------------------------------------------

    def _send_error(self, status: int, message: str) -> None:
        fallback = "server_error" if status >= 500 else "invalid_request_error"
        kind = _ERROR_TYPES.get(status, fallback)
        error = {"message": message, "type": kind, "param": None, "code": None}
        self._send_json(status, {"error": error})

    def _send_json(self, status: int, payload: Mapping[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_event(self, payload: Mapping[str, Any]) -> None:
        self._send_chunk(f"data: {json.dumps(payload)}\n\n".encode())

    def _send_chunk(self, data: bytes) -> None:
        """One HTTP/1.1 chunk; an empty one ends the body."""
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _finish_reason(reply: Reply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")


def _usage_json(reply: Reply, body: Mapping[str, Any]) -> dict[str, Any]:
    usage = reply.usage or TokenUsage(
        prompt_tokens=sum(_words(m.get("content")) for m in body.get("messages", [])),
        completion_tokens=_words(reply.text) + len(reply.tool_calls),
    )
    wire: dict[str, Any] = {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
    }
    if usage.cached_prompt_tokens is not None:
        wire["prompt_tokens_details"] = {"cached_tokens": usage.cached_prompt_tokens}
    if usage.reasoning_tokens is not None:
        wire["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    return wire


def _words(content: object) -> int:
    return len(content.split()) if isinstance(content, str) else 0


def _pieces(text: str) -> list[str]:
    return [text[i : i + ARGUMENT_PIECE_CHARS] for i in range(0, len(text), ARGUMENT_PIECE_CHARS)]


def unreachable_base_url() -> str:
    """A loopback ``base_url`` on which nothing listens: connecting is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A started ``OpenAIServer``, stopped when the test ends."""
    with OpenAIServer() as server:
        yield server


@pytest.fixture
async def loopback_http_clients() -> AsyncIterator[dict[str, Any]]:
    """``ChatOpenAI`` options (``http_client``, ``http_async_client``) for talking plain
    HTTP to loopback servers, closed when the test ends.

    Left to itself, langchain-openai builds two clients for every new ``base_url``
    (each test server has its own port), each loading the system CA bundle, at about
    0.1 s apiece. Nothing here speaks TLS, so these clients skip that.
    """
    no_certificates = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    async with openai.DefaultAsyncHttpxClient(verify=no_certificates) as async_client:
        with openai.DefaultHttpxClient(verify=no_certificates) as client:
            yield {"http_client": client, "http_async_client": async_client}
