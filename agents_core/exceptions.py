"""The one error tree of ``agents_core``.

Every error says how the runner must treat it, through its ``failure`` class
attribute; the runner's retry / fail / continue decisions read nothing else::

    AgentsCoreError
    ├── ConfigurationError            terminal   bad agent, tool or run configuration
    │   ├── SpecError                 terminal   an AgentSpec that cannot be built (has .path)
    │   └── PromptTemplateError       terminal   (prompts) a template refused or failed
    ├── SessionError                  terminal
    │   └── SessionNotFoundError      terminal
    ├── ModelError                    terminal   the model call failed for good
    │   ├── ModelRequestError         terminal   4xx other than 408/429: retrying cannot help
    │   │   └── ContextOverflowError  terminal   the request is longer than the model's context
    │   ├── ModelTimeoutError         retryable
    │   ├── ModelRateLimitError       retryable
    │   ├── ModelServerError          retryable  5xx
    │   ├── ModelConnectionError      retryable
    │   ├── ModelOutputError          terminal   output the agent cannot parse, after a retry
    │   │   └── OutputSchemaError     terminal   an answer that never matched its output schema
    │   └── CircuitOpenError          terminal   the provider's breaker is open
    ├── ToolError                     non-fatal  becomes an error tool result the model sees
    │   ├── ToolNotFoundError         non-fatal
    │   ├── ToolArgumentsError        non-fatal
    │   ├── ToolTimeoutError          non-fatal
    │   └── ToolExecutionError        non-fatal
    │       ├── PathEscapeError       non-fatal  (tools.filesystem) a path leaving the jail
    │       ├── CommandNotAllowedError non-fatal (tools.shell) a program not allowlisted
    │       └── MemoryStoreError      non-fatal  (memory) a memory refused or not reachable
    ├── HookError                     terminal   a hook raised (has .hook, .stage); on a tool
    │                                            call it is that call's error result instead
    ├── FailedByPolicyError           terminal   a tool or agent whose failure policy is "fail"
    │                                            failed: ends the run wherever it happened
    ├── PolicyDeniedError             terminal   a policy rule denied a model call
    ├── LimitExceededError            terminal   a fail-safe limit was reached (has .limit)
    │   └── BudgetExceededError       terminal   a spending budget would be passed (.limit
    │                                            names it); the call was not made
    └── TelemetryError                non-fatal  a sink failed; the run never notices

Errors that are not ``AgentsCoreError`` (bugs) are treated as terminal. Failure
policies (``agents_core.failures``) decide, per tool and per agent, whether a terminal
failure ends the run, becomes an error the run reads and goes past, or degrades it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any


class Failure(StrEnum):
    """How the runner reacts to an error."""

    RETRYABLE = "retryable"
    """Try the same operation again, with backoff, up to the retry policy's limit."""
    TERMINAL = "terminal"
    """End the run with an error event."""
    NON_FATAL = "non_fatal"
    """Record it and carry on."""


class AgentsCoreError(Exception):
    """Base of every error raised by ``agents_core``."""

    failure: Failure = Failure.TERMINAL
    code: str = "error"
    """A stable snake_case identifier, carried by error events."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConfigurationError(AgentsCoreError):
    code = "configuration_error"


class SpecError(ConfigurationError):
    """An agent spec that cannot be built; ``path`` points inside the spec."""

    code = "spec_error"

    def __init__(self, message: str, *, path: tuple[str | int, ...] = ()) -> None:
        super().__init__(message)
        self.path = path

    def __str__(self) -> str:
        where = ".".join(str(p) for p in self.path) or "<root>"
        return f"{where}: {self.message}"


class SessionError(AgentsCoreError):
    code = "session_error"


class SessionNotFoundError(SessionError):
    code = "session_not_found"


@dataclass(frozen=True, slots=True)
class FailedModelCall:
    """A model call that failed for good: what its error event records of it, so the
    call is a span of its own (where the time went) and not the runner's overhead."""

    span_id: str
    parent_span_id: str | None
    """The agent span it was made in."""
    started_at: datetime
    latency_ms: float
    """From the call's start to its failure: every attempt and the waits between."""
    attempts: int
    """How many times it was tried (retries included)."""
    model: str | None = None
    """The model of the agent's chain that failed last, when the agent has a chain."""

    def event_fields(self) -> dict[str, Any]:
        """The fields of the error event that records it (``agents_core.events.Event``)."""
        return {
            "span_id": self.span_id,
            "parent_span_id": self.parent_span_id,
            "started_at": self.started_at,
            "latency_ms": self.latency_ms,
            "model": self.model,
        }


def failed_call(exc: BaseException | None) -> tuple[int | None, dict[str, Any]]:
    """What the error event of ``exc`` records of the model call that failed for good
    beneath it (on it, or on an error it was raised from, as a failure policy's
    ``FailedByPolicyError``): its attempts (``ErrorInfo.attempts``) and the event's
    fields that make it the call's span; ``(None, {})`` when no call did."""
    for _ in range(8):  # a cause chain is short; a cycle must not hang
        if exc is None:
            break
        if isinstance(exc, ModelError) and exc.call is not None:
            return exc.call.attempts, exc.call.event_fields()
        exc = exc.__cause__
    return None, {}


class ModelError(AgentsCoreError):
    code = "model_error"
    call: FailedModelCall | None = None
    """Set by the agent step whose model call failed for good (``agents_core._step_loop``)."""


class ModelRequestError(ModelError):
    code = "model_request_error"


class ContextOverflowError(ModelRequestError):
    """The provider refused the request as longer than the model's context window:
    the same request can never succeed; a shorter history (compaction) might."""

    code = "model_context_overflow"


class ModelTimeoutError(ModelError):
    failure = Failure.RETRYABLE
    code = "model_timeout"


class ModelRateLimitError(ModelError):
    failure = Failure.RETRYABLE
    code = "model_rate_limited"


class ModelServerError(ModelError):
    failure = Failure.RETRYABLE
    code = "model_server_error"


class ModelConnectionError(ModelError):
    failure = Failure.RETRYABLE
    code = "model_connection_error"


class ModelOutputError(ModelError):
    code = "model_output_invalid"


class OutputSchemaError(ModelOutputError):
    """The agent's final answer did not match its output schema, re-prompts included."""

    code = "output_invalid"


class CircuitOpenError(ModelError):
    code = "circuit_open"


class ToolError(AgentsCoreError):
    failure = Failure.NON_FATAL
    code = "tool_error"


class ToolNotFoundError(ToolError):
    code = "tool_not_found"


class ToolArgumentsError(ToolError):
    code = "tool_arguments_invalid"


class ToolTimeoutError(ToolError):
    code = "tool_timeout"


class ToolExecutionError(ToolError):
    code = "tool_failed"


class HookError(AgentsCoreError):
    """A hook raised; ``hook`` is its name and ``stage`` the method that raised
    (``before_model``, ``after_tool`` ...). Isolated: never a crash of the run."""

    code = "hook_failed"

    def __init__(self, message: str, *, hook: str, stage: str) -> None:
        super().__init__(message)
        self.hook = hook
        self.stage = stage


class PolicyDeniedError(AgentsCoreError):
    """A policy rule (``agents_core.policies``) denied a model call: the agent cannot go
    on. Denied tool and sub-agent calls are error results the model reads instead."""

    code = "policy_denied"


class FailedByPolicyError(AgentsCoreError):
    """A tool call or an agent failed and its failure policy is ``fail``: the run ends,
    even where such a failure is otherwise absorbed (an agent tool, a parallel branch).
    ``code`` is the code of the failure itself."""

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.code = code


class LimitExceededError(AgentsCoreError):
    """A fail-safe limit of ``RunConfig`` was reached; ``limit`` names the field."""

    code = "limit_exceeded"

    def __init__(self, limit: str, message: str) -> None:
        super().__init__(message)
        self.limit = limit


class BudgetExceededError(LimitExceededError):
    """A model call could take a spending budget (``agents_core.spend``) past its
    limit, so it was not made; ``limit`` names the budget."""

    code = "budget_exceeded"


class TelemetryError(AgentsCoreError):
    failure = Failure.NON_FATAL
    code = "telemetry_error"


def failure_of(exc: BaseException) -> Failure:
    """Classify any exception; unknown ones are terminal."""
    return exc.failure if isinstance(exc, AgentsCoreError) else Failure.TERMINAL
