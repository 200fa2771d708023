"""The event envelope: everything a run produces, stored and streamed in one shape.

One wire format for storage, API, websocket and tests: ``event.model_dump(mode="json")``.
Readers keep accepting older ``schema_version`` values.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, Field, PositiveInt

from agents_core.contracts import Contract, ToolCall, ToolResult, Usage

SCHEMA_VERSION = 1


class EventType(StrEnum):
    USER_MESSAGE = "user_message"
    AGENT_START = "agent_start"
    AGENT_END = "agent_end"
    AGENT_MESSAGE = "agent_message"
    """Model output: text, thinking and/or tool calls; ``partial`` for streamed tokens."""
    TOOL_RESPONSE = "tool_response"
    ERROR = "error"
    """A failure. Terminal errors (``error.terminal``) end the invocation."""
    COMPACTION = "compaction"
    APPROVAL_REQUEST = "approval_request"
    """A tool call waits for a person's decision; ``approval`` says which call."""
    APPROVAL_DECISION = "approval_decision"
    """The decision on an approval request (or the timeout fallback)."""


class TextPart(Contract):
    kind: Literal["text"] = "text"
    text: str


class ThinkingPart(Contract):
    kind: Literal["thinking"] = "thinking"
    text: str


class ToolCallPart(Contract):
    kind: Literal["tool_call"] = "tool_call"
    call_id: str = Field(min_length=1)
    name: str
    args: dict[str, Any] = Field(default_factory=dict)

    def to_call(self) -> ToolCall:
        return ToolCall(id=self.call_id, name=self.name, args=self.args)


class ToolResponsePart(Contract):
    kind: Literal["tool_response"] = "tool_response"
    call_id: str = Field(min_length=1)
    name: str
    result: str
    is_error: bool = False

    def to_result(self) -> ToolResult:
        return ToolResult(
            call_id=self.call_id, name=self.name, output=self.result, is_error=self.is_error
        )


Part = Annotated[
    TextPart | ThinkingPart | ToolCallPart | ToolResponsePart, Field(discriminator="kind")
]


class CompactionRange(Contract):
    """The seq range (inclusive) that a compaction event's summary replaces."""

    start_seq: PositiveInt
    end_seq: PositiveInt


class EventActions(Contract):
    """Side effects an event asks the runner and session service to apply."""

    state_delta: dict[str, Any] = Field(default_factory=dict)
    transfer_to_agent: str | None = None
    escalate: bool = False
    end_invocation: bool = False
    compaction: CompactionRange | None = None


class ErrorInfo(Contract):
    """Why an error event was emitted."""

    code: str
    message: str
    failure: Literal["retryable", "terminal", "non_fatal"] = "terminal"
    limit: str | None = None
    """For ``limit_exceeded``: the ``RunConfig`` field that was reached."""

    @property
    def terminal(self) -> bool:
        return self.failure == "terminal"


class ApprovalInfo(Contract):
    """The call an approval event is about and, on a decision event, the outcome."""

    call_id: str
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    args_hash: str
    decision: Literal["approve", "deny"] | None = None
    edited_args: dict[str, Any] | None = None
    reason: str = ""
    decided_by: str | None = None
    """Who decided; ``"timeout"`` when the fallback applied."""


def new_id() -> str:
    return uuid.uuid4().hex


def utc_now() -> datetime:
    return datetime.now(UTC)


class Event(Contract):
    """One thing that happened in a session."""

    id: str = Field(default_factory=new_id)
    type: EventType
    invocation_id: str
    session_id: str
    seq: PositiveInt | None = None
    """Assigned by the session service on append; ``None`` on partial events."""
    author: str
    """``"user"`` or the name of the agent that produced the event."""
    branch: str | None = None
    """Dotted path of the agent that produced it, e.g. ``"root.researcher"``."""
    partial: bool = False
    parts: list[Part] = Field(default_factory=list)
    actions: EventActions = Field(default_factory=EventActions)
    usage: Usage | None = None
    latency_ms: float | None = Field(default=None, ge=0)
    error: ErrorInfo | None = None
    approval: ApprovalInfo | None = None
    created_at: AwareDatetime = Field(default_factory=utc_now)
    schema_version: int = SCHEMA_VERSION

    @property
    def text(self) -> str:
        """The concatenated text parts (not thinking)."""
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [p.to_call() for p in self.parts if isinstance(p, ToolCallPart)]

    @property
    def tool_results(self) -> list[ToolResult]:
        return [p.to_result() for p in self.parts if isinstance(p, ToolResponsePart)]

    @property
    def is_terminal_error(self) -> bool:
        return self.type is EventType.ERROR and self.error is not None and self.error.terminal

    def is_final_response(self) -> bool:
        """A complete model answer with text and no further tool calls."""
        return (
            self.type is EventType.AGENT_MESSAGE
            and not self.partial
            and not self.tool_calls
            and bool(self.text)
        )

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict used by storage, the API and websockets."""
        return self.model_dump(mode="json")


def user_message(session_id: str, text: str, *, invocation_id: str | None = None) -> Event:
    """The event that opens a turn: the user's message (unsaved)."""
    return Event(
        type=EventType.USER_MESSAGE,
        invocation_id=invocation_id or new_id(),
        session_id=session_id,
        author="user",
        parts=[TextPart(text=text)],
    )
