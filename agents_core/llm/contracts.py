"""The LLM boundary. Everything outside ``agents_core.llm`` sees only these types."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Sequence
from typing import Literal

from pydantic import Field, field_serializer

from agents_core.contracts import Contract, ToolCall, ToolSchema, Usage

__all__ = ["BaseLlm", "ChatMessage", "LlmRequest", "LlmResponse", "ToolSchema"]


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


class LlmRequest(Contract):
    system_instruction: str | None = None
    messages: Sequence[ChatMessage] = Field(default_factory=list)
    """A list, or the history builder's read-only view (``history.Conversation``)."""
    tools: list[ToolSchema] = Field(default_factory=list)

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
    tool_calls: list[ToolCall] = Field(default_factory=list)
    usage: Usage | None = None
    model_name: str | None = None
    finish_reason: str | None = None
    partial: bool = False


class BaseLlm(ABC):
    """A chat model. Implementations classify their failures with ``ModelError`` subclasses."""

    @property
    @abstractmethod
    def provider_key(self) -> str:
        """Identifies the provider endpoint; circuit breakers are kept per key."""

    @abstractmethod
    def astream(self, request: LlmRequest) -> AsyncGenerator[LlmResponse]:
        """Yield zero or more partial chunks, then exactly one complete response."""
