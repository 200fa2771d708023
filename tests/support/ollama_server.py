"""A small server speaking Ollama's chat API (``POST /api/chat``), for tests: whole
answers, and newline-delimited JSON streams with text and ``tool_calls`` the way Ollama
sends them. The script and its use: ``tests.support.wire_server``."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from tests.support.wire_server import Answer, Fault, Reply, WireServer, json_answer

CREATED_AT = "2026-01-01T00:00:00Z"


class OllamaServer(WireServer):
    def answer(self, path: str, body: Mapping[str, Any], reply: Reply) -> Answer:
        if path != "/api/chat":
            return self.error(Fault(404, f"no route {path}"))
        if body.get("stream", True):
            return Answer(200, "application/x-ndjson", _stream(body, reply))
        message = {"role": "assistant", "content": reply.text, **_tool_calls(reply)}
        return json_answer(200, _chunk(body, message) | _done(reply))

    def error(self, fault: Fault) -> Answer:
        return json_answer(fault.status, {"error": fault.message})


def _chunk(body: Mapping[str, Any], message: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "model": body.get("model", ""),
        "created_at": CREATED_AT,
        "message": message,
        "done": False,
    }


def _done(reply: Reply) -> dict[str, Any]:
    return {
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": reply.usage[0],
        "eval_count": reply.usage[1],
        "total_duration": 1000,
    }


def _tool_calls(reply: Reply) -> dict[str, Any]:
    if not reply.tool_calls:
        return {}
    calls = [{"function": {"name": n, "arguments": dict(a)}} for n, a in reply.tool_calls]
    return {"tool_calls": calls}


def _stream(body: Mapping[str, Any], reply: Reply) -> Iterator[bytes]:
    for token in reply.tokens():
        yield _line(_chunk(body, {"role": "assistant", "content": token}))
    if reply.tool_calls:
        yield _line(_chunk(body, {"role": "assistant", "content": "", **_tool_calls(reply)}))
    yield _line(_chunk(body, {"role": "assistant", "content": ""}) | _done(reply))


def _line(payload: Mapping[str, Any]) -> bytes:
    return json.dumps(payload).encode() + b"\n"
