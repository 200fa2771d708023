"""Run configuration: fail-safe limits and resilience policies.

``agents_core`` reads no environment variables; callers build a ``RunConfig``.
"""

from __future__ import annotations

from pydantic import Field, PositiveFloat, PositiveInt, model_validator

from agents_core.contracts import Contract


class RetryPolicy(Contract):
    """Exponential backoff with full jitter for retryable model failures."""

    max_attempts: PositiveInt = 4
    """Attempts in all, the first included."""
    initial_backoff_s: float = Field(default=0.5, ge=0)
    max_backoff_s: float = Field(default=8.0, ge=0)
    multiplier: float = Field(default=2.0, ge=1)
    jitter: bool = True

    def backoff(self, attempt: int, rand: float) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based).

        ``rand`` is a uniform sample in [0, 1); with jitter the wait is a full-jitter
        draw below the exponential ceiling.
        """
        ceiling = min(self.max_backoff_s, self.initial_backoff_s * self.multiplier ** (attempt - 1))
        return ceiling * rand if self.jitter else ceiling


class BreakerPolicy(Contract):
    """Per-provider circuit breaker: open after N consecutive failures, probe after a cooldown."""

    failure_threshold: PositiveInt = 5
    cooldown_s: float = Field(default=30.0, ge=0)


class RunConfig(Contract):
    """Limits and policies for one invocation (one user turn).

    A limit of ``None`` is off. Reaching a limit ends the run with a terminal
    ``limit_exceeded`` error event naming the field.
    """

    max_steps: PositiveInt | None = 50
    """Agent iterations (one model call plus its tool round) across the invocation."""
    max_model_calls: PositiveInt | None = 100
    """Requests sent to a model provider, retries included."""
    max_tool_calls: PositiveInt | None = 200
    max_wall_time_s: PositiveFloat | None = 600.0
    """Preemptive: a hanging model call or tool is cut off when the time is up."""
    max_transfers: PositiveInt | None = 10
    """Agent-to-agent transfers in one invocation; ends ping-pong between agents."""
    max_tokens: PositiveInt | None = None
    """Input plus output tokens across every model call of the invocation."""
    model_timeout_s: PositiveFloat | None = 120.0
    """Longest wait for the next chunk of a model response; a timeout is retryable."""
    tool_result_max_chars: PositiveInt = 20_000
    """Tool results longer than this are truncated, with a marker, in model history."""
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    breaker: BreakerPolicy = Field(default_factory=BreakerPolicy)

    @model_validator(mode="after")
    def _backoff_is_ordered(self) -> RunConfig:
        if self.retry.initial_backoff_s > self.retry.max_backoff_s:
            raise ValueError("retry.initial_backoff_s must not exceed retry.max_backoff_s")
        return self
