"""A small server speaking the Gemini Developer API (``POST /v1beta/models/<model>:
generateContent`` and ``:streamGenerateContent?alt=sse``), for tests: text and
``functionCall`` parts, thought parts (``"thought": true``, counted in
``thoughtsTokenCount``), usage metadata, Google-style errors. The script and its use:
``tests.support.wire_server``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from tests.support.wire_server import Answer, Fault, Reply, WireServer, json_answer

_ROUTE = re.compile(r"^/v1(?:beta)?/models/[^/:]+:(generateContent|streamGenerateContent)")
_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


class GeminiServer(WireServer):
    def answer(self, path: str, body: Mapping[str, Any], reply: Reply) -> Answer:
        route = _ROUTE.match(path)
        if route is None:
            return self.error(Fault(404, f"no route {path}"))
        if route.group(1) == "streamGenerateContent":
            return Answer(200, "text/event-stream", _stream(reply))
        thought = [{"text": reply.thinking, "thought": True}] if reply.thinking else []
        parts = [{"text": reply.text}] if reply.text else []
        return json_answer(200, _response(thought + parts + _calls(reply), reply, last=True))

    def error(self, fault: Fault) -> Answer:
        status = _STATUSES.get(fault.status, "UNKNOWN")
        error = {"code": fault.status, "message": fault.message, "status": status}
        return json_answer(fault.status, {"error": error})


def _calls(reply: Reply) -> list[dict[str, Any]]:
    return [{"functionCall": {"name": n, "args": dict(a)}} for n, a in reply.tool_calls]


def _response(parts: list[dict[str, Any]], reply: Reply, *, last: bool) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    response: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-test"}
    if last:
        candidate["finishReason"] = "STOP"
        prompt, output = reply.usage
        thoughts = len(reply.thinking.split()) if reply.thinking else 0
        response["usageMetadata"] = {
            "promptTokenCount": prompt,
            "candidatesTokenCount": output,
            "totalTokenCount": prompt + output + thoughts,
        }
        if thoughts:
            response["usageMetadata"]["thoughtsTokenCount"] = thoughts
    return response


def _stream(reply: Reply) -> Iterator[bytes]:
    thought = [[{"text": w + " ", "thought": True}] for w in reply.thinking.split(" ")[:-1]]
    if reply.thinking:
        thought.append([{"text": reply.thinking.split(" ")[-1], "thought": True}])
    pieces: list[list[dict[str, Any]]] = thought + [[{"text": t}] for t in reply.tokens()]
    if reply.tool_calls:
        pieces.append(_calls(reply))
    pieces = pieces or [[{"text": ""}]]
    for i, parts in enumerate(pieces):
        payload = _response(parts, reply, last=i == len(pieces) - 1)
        yield f"data: {json.dumps(payload)}\r\n\r\n".encode()
