"""What an event says about a person's turn, a policy's decision, a failure, a model
fallback or an edit made when forking (``agents_core.events``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from agents_core.contracts import Contract


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
    args_schema: dict[str, Any] | None = None
    """On a request: the tool's JSON Schema for its arguments, which edited arguments
    must match."""
    timeout_s: float | None = None
    """On a request: how long the call waits for a person, from the request's
    ``created_at``; then ``on_timeout`` decides it."""
    on_timeout: Literal["approve", "deny"] | None = None


class QuestionInfo(Contract):
    """The question a ``user_question`` event asks and, on ``user_answer``, the answer."""

    call_id: str
    question: str
    args_hash: str
    answer: str | None = None
    answered_by: str | None = None
    """Who answered; ``"timeout"`` when nobody did in time (``answer`` is ``None``)."""
    timeout_s: float | None = None
    """How long the question waits for an answer, from the question's ``created_at``;
    then the model reads that nobody answered."""


class PolicyInfo(Contract):
    """What a policy rule decided about one call (``agents_core.policies``)."""

    rule: str
    target: Literal["model", "tool", "agent"]
    subject: str
    """The tool's, agent's or model's name the rule matched."""
    action: Literal["allow", "deny", "rewrite", "ask"]
    reason: str = ""
    call_id: str | None = None
    """The tool or sub-agent call decided on; ``None`` for a model call."""
    args: dict[str, Any] = Field(default_factory=dict)
    """The arguments the rule saw."""
    rewritten_args: dict[str, Any] | None = None
    """With ``rewrite``: the arguments the call went ahead with."""


class FallbackInfo(Contract):
    """An agent's call moved from one model of its chain to the next."""

    from_model: str
    to_model: str
    code: str
    """The failure's code (``server_error``, ``circuit_open`` ...)."""
    reason: str = ""


class EditInfo(Contract):
    """The user changed this event's content when forking at it: ``what`` (their
    message's text, a tool's result, or the model's reply text) and what it said
    before (``original``); ``call_id`` names the tool call whose result changed."""

    what: Literal["user_message", "tool_result", "reply"]
    original: str
    call_id: str | None = None


class IngestedInfo(Contract):
    """The OpenTelemetry span an ingested event was made from (an agent built elsewhere,
    its trace sent to Studio over OTLP): its name and kind, its status message, and
    every attribute of the span and of its resource as sent, those Studio understood
    too, so nothing is dropped from the span's detail."""

    trace_id: str = Field(pattern=r"^[0-9a-f]{32}$")
    span_id: str = Field(pattern=r"^[0-9a-f]{16}$")
    name: str
    kind: str = "internal"
    status: str = ""
    attributes: dict[str, Any] = Field(default_factory=dict)
    resource: dict[str, Any] = Field(default_factory=dict)


class ErrorInfo(Contract):
    """Why an error event was emitted (or, on a ``model_retry``, why an attempt failed)."""

    code: str
    message: str
    failure: Literal["retryable", "terminal", "non_fatal"] = "terminal"
    limit: str | None = None
    """For ``limit_exceeded``: the ``RunConfig`` field that was reached."""
    degraded: bool = False
    """A failure a ``degrade`` failure policy let the run go past: the run goes on, and
    ends ``degraded`` (``agents_core.failures.degradations``)."""
    attempts: int | None = Field(default=None, ge=0)
    """A model call that failed for good: the times it was tried (its span is the event's);
    on a ``model_retry``, the attempts made so far."""

    @property
    def terminal(self) -> bool:
        return self.failure == "terminal"
