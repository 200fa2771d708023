"""Retries with backoff and per-provider circuit breakers around model calls."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum

from agents_core.config import BreakerPolicy, RetryPolicy
from agents_core.exceptions import (
    CircuitOpenError,
    Failure,
    ModelError,
    ModelTimeoutError,
    failure_of,
)
from agents_core.llm.contracts import BaseLlm, LlmRequest, LlmResponse

Clock = Callable[[], float]


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


@dataclass(slots=True)
class CircuitBreaker:
    """Opens after ``failure_threshold`` consecutive failures; after ``cooldown_s`` one
    probe call is let through (half-open): success closes it, failure reopens it."""

    policy: BreakerPolicy
    clock: Clock = time.monotonic
    _failures: int = 0
    _opened_at: float | None = None
    _probing: bool = False

    @property
    def state(self) -> BreakerState:
        if self._opened_at is None:
            return BreakerState.CLOSED
        if self.clock() - self._opened_at >= self.policy.cooldown_s:
            return BreakerState.HALF_OPEN
        return BreakerState.OPEN

    def before_call(self, provider: str) -> None:
        """Raise ``CircuitOpenError`` unless a call may go through now."""
        state = self.state
        if state is BreakerState.OPEN or (state is BreakerState.HALF_OPEN and self._probing):
            raise CircuitOpenError(f"circuit open for model provider {provider!r}")
        if state is BreakerState.HALF_OPEN:
            self._probing = True

    def record_success(self) -> None:
        self._failures = 0
        self._opened_at = None
        self._probing = False

    def record_failure(self) -> None:
        self._failures += 1
        if self._probing or self._failures >= self.policy.failure_threshold:
            self._opened_at = self.clock()
        self._probing = False

    def record_abandoned(self) -> None:
        """A call ended without an outcome (cancelled, closed early): it says nothing
        about the provider, but it must free the probe slot or half-open never ends."""
        self._probing = False


@dataclass(slots=True)
class BreakerRegistry:
    """One breaker per provider key, shared by every run that uses the registry."""

    clock: Clock = time.monotonic
    _breakers: dict[str, CircuitBreaker] = field(default_factory=dict)

    def get(self, provider: str, policy: BreakerPolicy) -> CircuitBreaker:
        breaker = self._breakers.get(provider)
        if breaker is None:
            breaker = self._breakers[provider] = CircuitBreaker(policy, self.clock)
        return breaker


DEFAULT_BREAKERS = BreakerRegistry()


@dataclass(slots=True)
class ResilientCall:
    """Streams one logical model call, retrying retryable failures.

    ``on_attempt`` runs before every attempt (the runner charges its model-call
    budget there, so a limit can stop retries). A retry after some chunks were
    streamed starts the stream again: partial chunks are provisional by contract.
    """

    model: BaseLlm
    retry: RetryPolicy
    breaker: CircuitBreaker
    attempt_timeout_s: float | None
    on_attempt: Callable[[], None] = lambda: None
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    rand: Callable[[], float] = random.random

    async def astream(self, request: LlmRequest) -> AsyncGenerator[LlmResponse]:
        # One generator for the retries and each attempt's chunks: every layer of
        # generators costs each chunk an ``__anext__`` and each call its setup and close.
        attempt = 0
        while True:
            attempt += 1
            self.breaker.before_call(self.model.provider_key)  # a refused call sends nothing
            self.on_attempt()
            stream = self.model.astream(request)
            try:
                try:
                    while True:
                        try:
                            async with asyncio.timeout(self.attempt_timeout_s):
                                chunk = await anext(stream)
                        except StopAsyncIteration:
                            break
                        except TimeoutError as exc:
                            raise ModelTimeoutError(
                                f"model call exceeded {self.attempt_timeout_s}s"
                            ) from exc
                        yield chunk
                finally:  # the attempt's stream is closed before any retry or outcome
                    await stream.aclose()
            except ModelError as exc:
                self.breaker.record_failure()
                if failure_of(exc) is not Failure.RETRYABLE or attempt >= self.retry.max_attempts:
                    raise
                await self.sleep(self.retry.backoff(attempt, self.rand()))
                continue
            except BaseException:
                self.breaker.record_abandoned()
                raise
            self.breaker.record_success()
            return
