"""A small server speaking Anthropic's Messages API (``POST /v1/messages``), for tests:
whole answers, and Server-Sent Events streams with thinking, text and ``tool_use`` blocks the
way Anthropic sends them. The script and its use: ``tests.support.wire_server``.

Like the real API, it signs each thinking block and, when thinking is enabled, refuses
a request whose last assistant turn led to tool results without its thinking block
(with that block's signature) first in its content."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

from tests.support.wire_server import Answer, Fault, Reply, WireServer, json_answer

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}
PIECE_CHARS = 8
"""Tool input JSON is streamed in pieces of this many characters."""


class AnthropicServer(WireServer):
    def answer(self, path: str, body: Mapping[str, Any], reply: Reply) -> Answer:
        if path != "/v1/messages":
            return self.error(Fault(404, f"no route {path}"))
        if (refusal := _thinking_refusal(body)) is not None:
            return self.error(Fault(400, refusal))
        if body.get("stream"):
            return Answer(200, "text/event-stream", _stream(body, reply))
        blocks: list[dict[str, Any]] = []
        if reply.thinking:
            signed = {"thinking": reply.thinking, "signature": signature_of(reply.thinking)}
            blocks.append({"type": "thinking", **signed})
        blocks += [{"type": "text", "text": reply.text}] if reply.text else []
        blocks += [_tool_use(i, name, args) for i, (name, args) in enumerate(reply.tool_calls)]
        message = _message(body, reply) | {"content": blocks}
        message["usage"] = {"input_tokens": reply.usage[0], "output_tokens": reply.usage[1]}
        return json_answer(200, message)

    def error(self, fault: Fault) -> Answer:
        kind = _ERROR_TYPES.get(fault.status, "api_error")
        error = {"type": "error", "error": {"type": kind, "message": fault.message}}
        return json_answer(fault.status, error)


def signature_of(thinking: str) -> str:
    """The signature this server gives a thinking block (Anthropic's is opaque)."""
    return "sig-" + hashlib.sha256(thinking.encode()).hexdigest()[:32]


def _thinking_refusal(body: Mapping[str, Any]) -> str | None:
    """Why Anthropic would refuse ``body``: with thinking enabled, the assistant turn
    whose tool calls the last user turn answers must start with its signed thinking."""
    if (body.get("thinking") or {}).get("type") != "enabled":
        return None
    messages = list(body.get("messages") or ())
    if len(messages) < 2 or not _has_tool_result(messages[-1]):
        return None
    at = len(messages) - 2
    content = messages[at].get("content")
    first = content[0] if isinstance(content, list) and content else {"type": "text"}
    if not isinstance(first, dict) or first.get("type") not in ("thinking", "redacted_thinking"):
        found = first.get("type") if isinstance(first, dict) else "text"
        return (
            f"messages.{at}.content.0.type: Expected `thinking` or `redacted_thinking`, but "
            f"found `{found}`. When `thinking` is enabled, a final `assistant` message must "
            "start with a thinking block."
        )
    if first.get("type") == "thinking" and first.get("signature") != signature_of(
        str(first.get("thinking", ""))
    ):
        return f"messages.{at}.content.0: Invalid `signature` in `thinking` block"
    return None


def _has_tool_result(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    if message.get("role") != "user" or not isinstance(content, list):
        return False
    return any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def _message(body: Mapping[str, Any], reply: Reply) -> dict[str, Any]:
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", ""),
        "content": [],
        "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": reply.usage[0], "output_tokens": 1},
    }


def _tool_use(index: int, name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_{index}", "name": name, "input": dict(args)}


def _stream(body: Mapping[str, Any], reply: Reply) -> Iterator[bytes]:
    start = _message(body, reply) | {"stop_reason": None}
    yield _event("message_start", {"message": start})
    index = 0
    if reply.thinking:
        yield from _thinking_events(index, reply.thinking)
        index += 1
    if reply.text:
        block = {"type": "text", "text": ""}
        yield _event("content_block_start", {"index": index, "content_block": block})
        for token in reply.tokens():
            delta = {"type": "text_delta", "text": token}
            yield _event("content_block_delta", {"index": index, "delta": delta})
        yield _event("content_block_stop", {"index": index})
        index += 1
    for i, (name, args) in enumerate(reply.tool_calls, start=index):
        yield from _tool_use_events(i, name, args)
    stop = {"stop_reason": _message(body, reply)["stop_reason"], "stop_sequence": None}
    # The usage so far, input tokens included, as Anthropic sends it.
    usage = {"input_tokens": reply.usage[0], "output_tokens": reply.usage[1]}
    yield _event("message_delta", {"delta": stop, "usage": usage})
    yield _event("message_stop", {})


def _thinking_events(index: int, thinking: str) -> Iterator[bytes]:
    block = {"type": "thinking", "thinking": "", "signature": ""}
    yield _event("content_block_start", {"index": index, "content_block": block})
    for at in range(0, len(thinking), PIECE_CHARS):
        delta = {"type": "thinking_delta", "thinking": thinking[at : at + PIECE_CHARS]}
        yield _event("content_block_delta", {"index": index, "delta": delta})
    signature = {"type": "signature_delta", "signature": signature_of(thinking)}
    yield _event("content_block_delta", {"index": index, "delta": signature})
    yield _event("content_block_stop", {"index": index})


def _tool_use_events(index: int, name: str, args: Mapping[str, Any]) -> Iterator[bytes]:
    block = _tool_use(index, name, {})
    yield _event("content_block_start", {"index": index, "content_block": block})
    text = json.dumps(dict(args))
    for at in range(0, len(text), PIECE_CHARS):
        delta = {"type": "input_json_delta", "partial_json": text[at : at + PIECE_CHARS]}
        yield _event("content_block_delta", {"index": index, "delta": delta})
    yield _event("content_block_stop", {"index": index})


def _event(kind: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()
