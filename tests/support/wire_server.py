"""The common part of the small provider servers (Anthropic, Gemini, Ollama) for tests.

Each listens on 127.0.0.1 on an ephemeral port, serves from a background thread and
answers chat requests from a script the test writes, one item per request::

    with AnthropicServer() as server:
        server.reply("Hello!", usage=(7, 2))
        server.reply(tool_calls=[("get_weather", {"city": "Paris"})])
        server.fail(429, "slow down")
        server.hang()  # sends nothing until release() or stop()

A request that finds the script empty answers 400, so an under-scripted test fails
fast. Every request is recorded in ``requests`` before it is answered. A subclass
says how its provider words an answer (whole, or streamed) and an error.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self


@dataclass(frozen=True, slots=True)
class Reply:
    text: str = ""
    tool_calls: Sequence[tuple[str, Mapping[str, Any]]] = ()
    usage: tuple[int, int] = (11, 5)
    """Input and output tokens."""
    thinking: str = ""
    """What the model thinks before it answers (servers that stream thinking send it)."""

    def tokens(self) -> list[str]:
        """The text in the pieces a stream sends: word by word."""
        words = self.text.split(" ")
        return [w + " " for w in words[:-1]] + [words[-1]] if self.text else []


@dataclass(frozen=True, slots=True)
class Fault:
    status: int
    message: str


HANG = "hang"


@dataclass(frozen=True, slots=True)
class Recorded:
    path: str
    headers: Mapping[str, str]
    body: Mapping[str, Any]


@dataclass(slots=True)
class Answer:
    """What a provider sends for one request: a status, a content type and a body,
    as one piece or as pieces written and flushed one by one (a stream)."""

    status: int
    content_type: str
    pieces: Iterator[bytes] | list[bytes] = field(default_factory=list)


class WireServer:
    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._script: deque[Reply | Fault | str] = deque()
        self._released = threading.Event()
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    # The script

    def reply(
        self,
        text: str = "",
        *,
        tool_calls: Sequence[tuple[str, Mapping[str, Any]]] = (),
        usage: tuple[int, int] = (11, 5),
        thinking: str = "",
    ) -> None:
        self._script.append(Reply(text, tool_calls, usage, thinking))

    def fail(self, status: int, message: str = "injected failure") -> None:
        self._script.append(Fault(status, message))

    def hang(self) -> None:
        self._script.append(HANG)

    def release(self) -> None:
        self._released.set()

    # Life

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
        self._http.shutdown()
        self._http.server_close()

    # What a provider says: subclasses

    def answer(self, path: str, body: Mapping[str, Any], reply: Reply) -> Answer:
        raise NotImplementedError

    def error(self, fault: Fault) -> Answer:
        raise NotImplementedError

    def _next(
        self, path: str, body: Mapping[str, Any], headers: Mapping[str, str]
    ) -> Answer | None:
        with self._lock:
            self.requests.append(Recorded(path, headers, body))
            item = self._script.popleft() if self._script else Fault(400, "the script is empty")
        if item == HANG:
            self._released.wait()
            return None
        assert not isinstance(item, str)
        return self.error(item) if isinstance(item, Fault) else self.answer(path, body, item)


def json_answer(status: int, payload: Any) -> Answer:
    return Answer(status, "application/json", [json.dumps(payload).encode()])


def _handler_for(server: WireServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # Every answer says where its body ends (Content-Length, or chunked for a
        # stream), then the connection closes: a client never has to take the close
        # for the end of a body, which raced it now and then (a ReadError in CI).
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.close_connection = True
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            headers = {k.lower(): v for k, v in self.headers.items()}
            answer = server._next(self.path, body, headers)
            if answer is None:
                return
            self.send_response(answer.status)
            self.send_header("content-type", answer.content_type)
            self.send_header("connection", "close")
            if isinstance(answer.pieces, list):
                whole = b"".join(answer.pieces)
                self.send_header("content-length", str(len(whole)))
                self.end_headers()
                self.wfile.write(whole)
                return
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for piece in answer.pieces:
                if piece:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
