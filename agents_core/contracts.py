"""Value types shared by every layer of the SDK.

These live outside the adapter packages (``llm``, ``tools``, ``sessions``) because
each adapter speaks them and adapters never import one another.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, model_validator


class Contract(BaseModel):
    """Base of every boundary model: unknown fields are an error, values are frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Usage(Contract):
    """Token usage of one model call (or a sum of several)."""

    input_tokens: NonNegativeInt = 0
    output_tokens: NonNegativeInt = 0
    cached_input_tokens: NonNegativeInt = 0
    """The part of ``input_tokens`` the provider served from its prompt cache (charged
    at a cached-input price, where the model has one)."""
    reasoning_tokens: NonNegativeInt = 0
    """The part of ``output_tokens`` the model spent thinking (reported by providers
    that count it apart, e.g. OpenAI's reasoning models)."""

    @model_validator(mode="after")
    def _cached_within_input(self) -> Usage:
        if self.cached_input_tokens > self.input_tokens:
            raise ValueError(
                f"cached_input_tokens ({self.cached_input_tokens}) is part of input_tokens"
                f" ({self.input_tokens}), so cannot exceed it"
            )
        return self

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )


class Cost(Contract):
    """What a model call cost, in ``currency`` (an ISO 4217 code). The SDK never prices
    anything: a session store that knows the model's price stamps it on the stored
    event (``Event.cost``); written as a decimal string on the wire."""

    amount: Decimal = Field(ge=0)
    currency: str = Field(pattern=r"^[A-Z]{3}$")


class ToolCall(Contract):
    """A model's request to run one tool. ``id`` pairs it with its result."""

    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)


class ToolResult(Contract):
    """What one tool call produced; ``is_error`` results are shown to the model too."""

    call_id: str = Field(min_length=1)
    name: str
    output: str
    is_error: bool = False


class ToolSchema(Contract):
    """What a model is told about one tool: its name, purpose and JSON Schema arguments."""

    name: str = Field(min_length=1)
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
