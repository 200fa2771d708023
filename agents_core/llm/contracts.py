"""The LLM boundary. Everything outside ``agents_core.llm`` sees only these types."""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from typing import Any, Literal, TypeVar, overload

from pydantic import Field, field_serializer

from agents_core.contracts import Contract, ToolCall, ToolSchema, Usage

__all__ = [
    "Attachment",
    "BaseLlm",
    "ChatMessage",
    "Conversation",
    "LlmRequest",
    "LlmResponse",
    "MessageLog",
    "ToolSchema",
]

T = TypeVar("T")


class Attachment(Contract):
    """A file a user message carries to the model, by reference: the bytes travel in
    ``LlmRequest.blobs`` under ``blob_id``."""

    blob_id: str = Field(min_length=1)
    content_type: str
    name: str = ""


class ChatMessage(Contract):
    """One message of the conversation sent to a model."""

    role: Literal["system", "user", "assistant", "tool"]
    text: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Assistant turns: the calls the model made, with their ids."""
    tool_call_id: str | None = None
    """Tool turns: the id of the call this message answers."""
    name: str | None = None
    """Tool turns: the tool's name."""
    attachments: list[Attachment] = Field(default_factory=list)
    """User turns: files attached to the message (images, PDFs, text)."""
    thinking: str = ""
    """Assistant turns: the model's thinking, as it answered."""
    thinking_signature: str = ""
    """Assistant turns: the provider's signature of ``thinking`` (Anthropic's), which
    adapters that replay thinking send back with it; empty when there is none."""


class MessageLog(list[ChatMessage]):
    """A list of model messages that is only ever appended to (the history builder's),
    and what readers derived from it, one list per reader, each item made from the
    message at the same index. ``ChatMessage`` is frozen and the log never changes a
    message it holds, so a derived item stays right for as long as the log lives:
    starting over (compaction, an edited history) makes a new log."""

    __slots__ = ("_derived",)

    def __init__(self, messages: Sequence[ChatMessage] = ()) -> None:
        super().__init__(messages)
        self._derived: dict[str, list[Any]] = {}

    def derive(self, key: str, make: Callable[[list[T], ChatMessage], T], stop: int) -> list[T]:
        """The items derived under ``key`` from the messages up to ``stop`` (at least).
        Each message is derived once: ``make`` gets the messages not yet derived, in
        order, each with the items made before it."""
        done: list[T] = self._derived.setdefault(key, [])
        if len(done) < stop:  # a slice, not islice: islice walks the log from its start
            for message in self[len(done) : stop]:
                done.append(make(done, message))
        return done


class Conversation(Sequence[ChatMessage]):
    """Model messages as a read-only sequence over stretches of lists that are only
    ever appended to: ``(messages, start, stop)`` each, fixed when the view is made.
    Equal to any sequence with the same messages. A stretch over a ``MessageLog`` lets
    a reader reuse what it derived from the log's messages on earlier calls
    (``MessageLog.derive``) instead of redoing it for the whole conversation."""

    __slots__ = ("_length", "_stretches")

    def __init__(self, *stretches: tuple[list[ChatMessage], int, int]) -> None:
        self._stretches = tuple(s for s in stretches if s[2] > s[1])
        self._length = sum(stop - start for _, start, stop in self._stretches)

    @property
    def stretches(self) -> tuple[tuple[list[ChatMessage], int, int], ...]:
        """The non-empty ``(messages, start, stop)`` stretches, in order."""
        return self._stretches

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[ChatMessage]:
        return itertools.chain.from_iterable(
            itertools.islice(messages, start, stop) for messages, start, stop in self._stretches
        )

    @overload
    def __getitem__(self, index: int) -> ChatMessage: ...
    @overload
    def __getitem__(self, index: slice) -> list[ChatMessage]: ...
    def __getitem__(self, index: int | slice) -> ChatMessage | list[ChatMessage]:
        if isinstance(index, slice):
            return self._slice(*index.indices(self._length), step=index.step)
        position = index + self._length if index < 0 else index
        if not 0 <= position < self._length:
            raise IndexError("conversation index out of range")
        for messages, start, stop in self._stretches:
            if position < stop - start:
                return messages[start + position]
            position -= stop - start
        raise AssertionError("unreachable: the stretches add up to the length")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(other) == self._length and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # equal to lists, so unhashable like them

    def __repr__(self) -> str:
        return f"Conversation({list(self)!r})"

    def _slice(self, begin: int, end: int, _: int, *, step: int | None) -> list[ChatMessage]:
        if step not in (None, 1):
            return list(self)[begin:end:step]
        out: list[ChatMessage] = []
        offset = 0
        for messages, start, stop in self._stretches:
            size = stop - start
            low, high = max(begin - offset, 0), min(end - offset, size)
            if low < high:
                out.extend(messages[start + low : start + high])
            offset += size
        return out


class LlmRequest(Contract):
    system_instruction: str | None = None
    messages: Sequence[ChatMessage] = Field(default_factory=list)
    """A list, or the history builder's read-only view (``Conversation``)."""
    tools: list[ToolSchema] = Field(default_factory=list)
    blobs: dict[str, bytes] = Field(default_factory=dict, repr=False)
    """The bytes of the messages' attachments, by ``blob_id`` (``agents_core.blobs``)."""
    purpose: Literal["turn", "summary"] = "turn"
    """``summary``: compaction asks for a summary of the conversation, not an agent's
    next turn (test doubles answer it without playing their script)."""

    @property
    def attachments(self) -> list[Attachment]:
        """Every attachment of the request's messages, in order. Asked on every model
        call: a stretch of a ``MessageLog`` is walked only when the log's running count
        of attachments says it holds some, so a long session without files costs no
        walk of its history per call."""
        messages = self.messages
        if not isinstance(messages, Conversation):
            return [a for m in messages for a in m.attachments]
        found: list[Attachment] = []
        for source, start, stop in messages.stretches:
            if isinstance(source, MessageLog):
                counts = source.derive("attachments", _running_count, stop)
                if counts[stop - 1] == (counts[start - 1] if start else 0):
                    continue
            found.extend(a for m in source[start:stop] for a in m.attachments)
        return found

    @field_serializer("messages")
    def _messages_as_list(self, messages: Sequence[ChatMessage]) -> list[ChatMessage]:
        return list(messages)

    def with_instruction(self, extra: str) -> LlmRequest:
        """A copy whose system instruction has ``extra`` appended (used by planners)."""
        merged = f"{self.system_instruction}\n\n{extra}" if self.system_instruction else extra
        return self.model_copy(update={"system_instruction": merged})


class LlmResponse(Contract):
    """A model's answer. While streaming, ``partial`` chunks carry text deltas;
    the last response of a stream is the complete, non-partial answer."""

    text: str = ""
    thinking: str = ""
    thinking_signature: str = ""
    """The provider's signature of the complete answer's ``thinking`` (Anthropic signs
    its thinking blocks and requires them back, signed, on the next request of a
    tool-use turn)."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage | None = None
    model_name: str | None = None
    finish_reason: str | None = None
    partial: bool = False
    replayed: bool = False
    """Played back from a replay's record, not made by a model: it spent nothing, so
    it carries no ``usage`` (``agents_core.replay``)."""


class BaseLlm(ABC):
    """A chat model. Implementations classify their failures with ``ModelError`` subclasses."""

    @property
    @abstractmethod
    def provider_key(self) -> str:
        """Identifies the provider endpoint; circuit breakers are kept per key."""

    @abstractmethod
    def astream(self, request: LlmRequest) -> AsyncGenerator[LlmResponse]:
        """Yield zero or more partial chunks, then exactly one complete response."""

    @property
    def max_output_tokens(self) -> int | None:
        """The most tokens one answer may take, when the model is configured with it
        (``None``: unknown). Token limits reserve it before each call."""
        return None

    @property
    def accepts_attachments(self) -> bool:
        """Whether the model takes images and files in user messages; a request with
        attachments to one that does not is refused before it is sent."""
        return False


CHARS_PER_TOKEN = 4
"""The usual English average; estimates need only be close, not exact."""
MESSAGE_OVERHEAD_TOKENS = 4


def estimate_prompt_tokens(request: LlmRequest) -> int:
    """About how many tokens ``request`` costs as a prompt: its text, its messages'
    framing and its tool schemas, at ``CHARS_PER_TOKEN`` characters a token."""
    chars = len(request.system_instruction or "") + _chars_of(request.messages)
    chars += sum(len(t.name) + len(t.description) + len(str(t.parameters)) for t in request.tools)
    return chars // CHARS_PER_TOKEN + MESSAGE_OVERHEAD_TOKENS * (len(request.messages) + 1)


def _chars_of(messages: Sequence[ChatMessage]) -> int:
    """The characters ``estimate_prompt_tokens`` counts in ``messages``: counted once
    per message of a ``MessageLog``, as running totals, so a long conversation costs
    no more per call than a short one."""
    if not isinstance(messages, Conversation):
        return sum(map(_message_chars, messages))
    total = 0
    for source, start, stop in messages.stretches:
        if isinstance(source, MessageLog):
            totals = source.derive("prompt_chars", _running_total, stop)
            total += totals[stop - 1] - (totals[start - 1] if start else 0)
        else:
            total += sum(map(_message_chars, source[start:stop]))
    return total


def _running_count(counts: list[int], message: ChatMessage) -> int:
    """The attachments of a log's messages up to and including ``message``."""
    return (counts[-1] if counts else 0) + len(message.attachments)


def _running_total(totals: list[int], message: ChatMessage) -> int:
    """The characters of a log's messages up to and including ``message``."""
    return (totals[-1] if totals else 0) + _message_chars(message)


ATTACHMENT_TOKENS = 1_600
"""A rough price of one attached image or file (an image of about 1.2 megapixels
costs this much at Anthropic and OpenAI)."""


def _message_chars(message: ChatMessage) -> int:
    calls = sum(len(str(c.args)) + len(c.name) for c in message.tool_calls)
    files = len(message.attachments) * ATTACHMENT_TOKENS * CHARS_PER_TOKEN
    return len(message.text) + calls + files
