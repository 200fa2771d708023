"""A tiny OpenAI-compatible endpoint on loopback, for "test connection" and key tests."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class FakeOpenAI:
    base_url: str
    status: int = 200
    """Answer with this status; a 401 quotes the key it was sent, as some providers do."""
    authorizations: list[str] = field(default_factory=list)


def _completion(stream: bool) -> list[dict[str, Any]]:
    base = {"id": "cmpl-1", "created": 0, "model": "fake-model"}
    if not stream:
        message = {"role": "assistant", "content": "ok"}
        return [
            {
                **base,
                "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
            }
        ]
    chunk = {**base, "object": "chat.completion.chunk"}
    return [
        {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"}}]},
        {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {
            **chunk,
            "choices": [],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
        },
    ]


@contextmanager
def fake_openai() -> Iterator[FakeOpenAI]:
    state = FakeOpenAI(base_url="")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            auth = self.headers.get("Authorization", "")
            state.authorizations.append(auth)
            if state.status != 200:
                key = auth.removeprefix("Bearer ")
                error = {"message": f"Incorrect API key provided: {key}", "code": "invalid_api_key"}
                self._send(state.status, "application/json", json.dumps({"error": error}))
                return
            chunks = _completion(bool(body.get("stream")))
            if body.get("stream"):
                lines = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks)
                self._send(200, "text/event-stream", lines + "data: [DONE]\n\n")
            else:
                self._send(200, "application/json", json.dumps(chunks[0]))

        def _send(self, status: int, content_type: str, text: str) -> None:
            data = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
