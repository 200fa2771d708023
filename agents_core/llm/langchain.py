"""One adapter over any LangChain chat model. LangChain types never leave this module."""

from __future__ import annotations

import base64
import functools
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    UsageMetadata,
)
from langchain_core.runnables import Runnable

from agents_core.contracts import ToolCall, Usage, built
from agents_core.exceptions import (
    ConfigurationError,
    ModelError,
    ModelServerError,
)
from agents_core.llm.contracts import (
    Attachment,
    BaseLlm,
    ChatMessage,
    Conversation,
    LlmRequest,
    LlmResponse,
    MessageLog,
    ToolSchema,
)
from agents_core.llm.errors import classify_error

Classifier = Callable[[Exception], ModelError]
BOUND_TOOL_SETS_KEPT = 16
"""Tool sets an adapter keeps bound to its chat model (an agent's tools are one set)."""


@dataclass(slots=True)
class LangChainModel(BaseLlm):
    """Wraps a ``BaseChatModel``: binds tools, streams tokens, records usage.

    Any chat model streams: one that cannot sends its whole answer as one token.
    Provider errors are classified into ``ModelError`` subclasses by ``classify``
    (the default reads HTTP status codes and timeout/connection error types).
    """

    chat_model: BaseChatModel
    provider: str
    streaming: bool = True
    classify: Classifier | None = None
    vision: bool = False
    """Whether the chat model takes images and files (``accepts_attachments``)."""
    replays_thinking: bool = False
    """Send an assistant turn's signed thinking back as a ``thinking`` content block
    (Anthropic requires it on a tool-use turn); other providers never see one."""
    _bound: dict[
        tuple[int, ...], tuple[list[ToolSchema], Runnable[LanguageModelInput, BaseMessage]]
    ] = field(default_factory=dict, init=False, repr=False, compare=False)
    """Bound chat models by the identity of the tool schemas they were bound with
    (tools compute their schema once, so an agent's calls share one binding)."""

    @property
    def provider_key(self) -> str:
        return self.provider

    @property
    def accepts_attachments(self) -> bool:
        return self.vision

    @property
    def max_output_tokens(self) -> int | None:
        """The chat model's ``max_tokens`` (or ``max_output_tokens``), when it has one."""
        for name in ("max_tokens", "max_output_tokens"):
            value = _attribute(self.chat_model, name)
            if isinstance(value, int) and value > 0:
                return value
        return None

    async def astream(self, request: LlmRequest) -> AsyncGenerator[LlmResponse]:
        runnable = self._bind(request.tools)
        messages = to_langchain_messages(request, thinking=self.replays_thinking)
        try:
            if not self.streaming:
                message = await runnable.ainvoke(messages)
                yield from_langchain_message(message)
                return
            chunks: list[AIMessageChunk] = []
            async for piece in runnable.astream(messages):
                if (chunk := _as_chunk(piece)) is None:
                    continue
                chunks.append(chunk)
                text, thinking = _text_of(chunk.content), _thinking_of(chunk)
                if text or thinking:  # both strings this module made: built, not validated
                    yield built(LlmResponse, text=text, thinking=thinking, partial=True)
            if not chunks:
                raise ModelServerError("model stream ended without a message")
            total = _joined(chunks)  # what the provider sent, so its failures are classified
        except ModelError:
            raise
        except Exception as exc:
            raise (self.classify or classify_error)(exc) from exc
        yield from_langchain_message(total)

    def _bind(self, tools: list[ToolSchema]) -> Runnable[LanguageModelInput, BaseMessage]:
        if not tools:
            return self.chat_model
        key = tuple(map(id, tools))
        kept = self._bound.get(key)
        if kept is not None and all(a is b for a, b in zip(kept[0], tools, strict=True)):
            return kept[1]
        try:
            bound = self.chat_model.bind_tools([_tool_dict(t) for t in tools])
        except NotImplementedError as exc:
            raise ConfigurationError(
                f"chat model {type(self.chat_model).__name__} does not support tools"
            ) from exc
        if len(self._bound) >= BOUND_TOOL_SETS_KEPT:
            del self._bound[next(iter(self._bound))]
        self._bound[key] = (list(tools), bound)  # holding the schemas keeps their ids unique
        return bound


def _attribute(chat_model: BaseChatModel, name: str) -> object:
    """``getattr(chat_model, name, None)`` without asking pydantic for a name the model
    does not have: its ``__getattr__`` builds an ``AttributeError`` with a message, ~5 us
    a miss, and this is read on every model call. Fields are in the instance's dict,
    properties on its class, undeclared values in its extras."""
    found = vars(chat_model).get(name)
    if found is None and _class_has(type(chat_model), name):
        found = getattr(chat_model, name, None)
    if found is None:
        found = (getattr(chat_model, "__pydantic_extra__", None) or {}).get(name)
    return found


@functools.lru_cache(maxsize=64)
def _class_has(cls: type, name: str) -> bool:
    """Whether ``cls`` defines ``name`` (asked once per class: pydantic's metaclass
    answers a missing name through a costly ``__getattr__`` too)."""
    return any(name in vars(klass) for klass in cls.__mro__)


def _joined(chunks: list[AIMessageChunk]) -> AIMessageChunk:
    """The streamed chunks as one message, merged once at the end (LangChain's own
    ``chunks[0] + chunks[1:]``, as it joins them for its callbacks). Adding each chunk
    to a running total as it arrives makes a new message of everything so far every
    time: ~30 us a chunk here, and its text copied again on each."""
    first, *rest = chunks
    return first + rest if rest else first


def _as_chunk(piece: BaseMessage) -> AIMessageChunk | None:
    """A piece of a streamed answer, as a chunk. LangChain streams a chat model that
    cannot (no ``_stream`` or ``_astream``, or ``disable_streaming``) as one piece: its
    whole answer, an ``AIMessage`` with its tool calls and usage."""
    if isinstance(piece, AIMessageChunk):
        return piece
    if isinstance(piece, AIMessage):
        return AIMessageChunk(**piece.model_dump(exclude={"type"}))
    return None


def to_langchain_messages(request: LlmRequest, *, thinking: bool = False) -> list[BaseMessage]:
    """The request's messages as LangChain messages; with ``thinking``, an assistant
    turn's signed thinking goes first in its content, as Anthropic's ``thinking`` block.

    The stretches of a ``Conversation`` over the history builder's ``MessageLog`` are
    converted once per message and the same LangChain objects handed out again on
    later calls, as a hand-written LangChain loop keeps one list of messages: a turn
    then costs the same however long the session. (A chat model must not change the
    messages it is given; LangChain's own models do not.)
    """
    out: list[BaseMessage] = []
    if request.system_instruction:
        out.append(_system_message(request.system_instruction))
    messages = request.messages
    convert = functools.partial(_to_langchain, blobs=request.blobs, thinking=thinking)
    if not isinstance(messages, Conversation):
        out.extend(map(convert, messages))
        return out
    # Blobs are addressed by their content, so a message derived with its files' bytes
    # stays right for every later call.
    derive = functools.partial(_derive, blobs=request.blobs, thinking=thinking)
    key = _DERIVED_KEY + (":thinking" if thinking else "")
    for source, start, stop in messages.stretches:
        if isinstance(source, MessageLog):
            out.extend(source.derive(key, derive, stop)[start:stop])
        else:
            out.extend(map(convert, source[start:stop]))
    return out


_DERIVED_KEY = "langchain_message"


@functools.lru_cache(maxsize=256)
def _system_message(text: str) -> SystemMessage:
    """One message per instruction text: an agent sends the same one on every call."""
    return SystemMessage(text)


def _derive(
    _: list[BaseMessage], message: ChatMessage, *, blobs: Mapping[str, bytes], thinking: bool
) -> BaseMessage:
    return _to_langchain(message, blobs=blobs, thinking=thinking)


def _to_langchain(
    message: ChatMessage, *, blobs: Mapping[str, bytes], thinking: bool = False
) -> BaseMessage:
    match message.role:
        case "system":
            return SystemMessage(message.text)
        case "user" if message.attachments:
            blocks = [{"type": "text", "text": message.text}] if message.text else []
            blocks += [_file_block(a, blobs) for a in message.attachments]
            return HumanMessage(content=blocks)  # type: ignore[arg-type]
        case "user":
            return HumanMessage(message.text)
        case "assistant":
            calls = [
                {"id": c.id, "name": c.name, "args": c.args, "type": "tool_call"}
                for c in message.tool_calls
            ]
            if thinking and message.thinking_signature:
                return AIMessage(content=_signed_blocks(message), tool_calls=calls)
            return AIMessage(content=message.text, tool_calls=calls)
        case "tool":
            return ToolMessage(
                content=message.text, tool_call_id=message.tool_call_id or "", name=message.name
            )


def _signed_blocks(message: ChatMessage) -> list[str | dict[str, Any]]:
    """An assistant turn's content with its signed thinking first, as Anthropic sent it."""
    block = {
        "type": "thinking",
        "thinking": message.thinking,
        "signature": message.thinking_signature,
    }
    text = [{"type": "text", "text": message.text}] if message.text else []
    return [block, *text]


def _file_block(attachment: Attachment, blobs: Mapping[str, bytes]) -> dict[str, Any]:
    """LangChain's standard content block for an attached file: an image or a file
    (PDF) as base64, which each integration turns into its provider's form; plain text
    as a text block, which every model reads. Without its bytes in the request, a note
    that the file was there."""
    data = blobs.get(attachment.blob_id)
    if data is None:  # a request made without them (a compaction summary): say what was there
        return {
            "type": "text",
            "text": f"[attached {attachment.content_type} file {attachment.name!r}]",
        }
    if attachment.content_type == "text/plain":
        body = data.decode("utf-8", errors="replace")
        return {"type": "text", "text": f"[attached file {attachment.name!r}]\n{body}"}
    kind = "image" if attachment.content_type.startswith("image/") else "file"
    block: dict[str, Any] = {
        "type": kind,
        "base64": base64.b64encode(data).decode("ascii"),
        "mime_type": attachment.content_type,
    }
    if kind == "file" and attachment.name:
        block["filename"] = attachment.name
    return block


def from_langchain_message(message: BaseMessage) -> LlmResponse:
    calls: list[ToolCall] = []
    usage: Usage | None = None
    if isinstance(message, AIMessage):
        calls = [
            ToolCall(id=c.get("id") or f"call_{i}", name=c["name"], args=c.get("args") or {})
            for i, c in enumerate(message.tool_calls)
        ]
        if message.usage_metadata:
            usage = _usage_of(message.usage_metadata)
    meta = message.response_metadata or {}
    return LlmResponse(
        text=_text_of(message.content),
        thinking=_thinking_of(message),
        thinking_signature=_signature_of(message),
        tool_calls=calls,
        usage=usage,
        model_name=meta.get("model_name") or meta.get("model"),
        finish_reason=meta.get("finish_reason"),
    )


def _usage_of(metadata: UsageMetadata) -> Usage:
    """LangChain's standard usage fields; ``input_token_details.cache_read`` is the part
    of the input served from the prompt cache (langchain-openai fills it from OpenAI's
    ``prompt_tokens_details.cached_tokens``), ``output_token_details.reasoning`` the
    part of the output spent thinking."""
    details = metadata.get("input_token_details") or {}
    output_details = metadata.get("output_token_details") or {}
    return Usage(
        input_tokens=metadata.get("input_tokens", 0),
        output_tokens=metadata.get("output_tokens", 0),
        cached_input_tokens=details.get("cache_read") or 0,
        reasoning_tokens=output_details.get("reasoning") or 0,
    )


def _text_of(content: str | list[Any]) -> str:
    if isinstance(content, str):
        return content
    return "".join(
        block if isinstance(block, str) else block.get("text", "")
        for block in content
        if isinstance(block, str) or block.get("type") == "text"
    )


def _thinking_of(message: BaseMessage) -> str:
    reasoning = message.additional_kwargs.get("reasoning_content")
    if isinstance(reasoning, str):
        return reasoning
    if isinstance(message.content, list):
        return "".join(
            str(b.get("reasoning") or b.get("thinking") or "")
            for b in message.content
            if isinstance(b, dict) and b.get("type") in {"reasoning", "thinking"}
        )
    return ""


def _signature_of(message: BaseMessage) -> str:
    """The signature of a message's thinking blocks (Anthropic signs each one)."""
    if not isinstance(message.content, list):
        return ""
    return "".join(
        str(b.get("signature") or "")
        for b in message.content
        if isinstance(b, dict) and b.get("type") == "thinking"
    )


def _tool_dict(tool: ToolSchema) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }
