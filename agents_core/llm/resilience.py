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


class ChunkDeadline:
    """The limit on each wait for a model's next chunk (``RunConfig.model_timeout_s``),
    with one timer an attempt. ``asyncio.timeout`` around every wait made a ``Timeout``
    and a timer a chunk (~5 us, a third of what the SDK adds to a streamed token).

    ``start`` and ``stop`` bracket each wait; the time between waits (the caller holding
    a chunk) does not count. The timer, when it fires, looks at the wait under way: one
    past the limit is cut as ``asyncio.timeout`` cuts it (the waiting task cancelled,
    and ``stop`` says the cancellation was the limit's and no one else's); one that
    began later moves the timer to its own end; none leaves the timer off until the
    next ``start``. A limit of ``None`` never cuts."""

    __slots__ = ("_cancelling", "_cut", "_limit", "_loop", "_since", "_task", "_timer")

    def __init__(self, limit: float | None) -> None:
        self._limit = limit
        self._loop = asyncio.get_running_loop()
        self._timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[object] | None = None
        self._since: float | None = None
        self._cancelling = 0
        self._cut: asyncio.Task[object] | None = None

    def start(self) -> None:
        """A wait begins, in the current task."""
        if self._limit is None:
            return
        self._since = now = self._loop.time()
        self._task = task = asyncio.current_task()
        self._cancelling = task.cancelling() if task is not None else 0
        if self._timer is None:
            self._timer = self._loop.call_at(now + self._limit, self._fire)

    def stop(self) -> bool:
        """The wait is over; whether the limit cut it (then the cancellation it sent is
        withdrawn, and a caller's own cancellation, if any, stands)."""
        self._since = None
        cut, self._cut = self._cut, None
        return cut is not None and cut.uncancel() <= self._cancelling

    def close(self) -> None:
        """The attempt is over: no more waits."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self) -> None:
        self._timer = None
        since, limit = self._since, self._limit
        if since is None or limit is None or self._task is None:
            return  # no wait under way: the next start arms it again
        if self._loop.time() < since + limit:
            self._timer = self._loop.call_at(since + limit, self._fire)
            return
        self._cut = self._task
        self._task.cancel()


@dataclass(slots=True)
class ResilientCall:
    """Streams one logical model call, retrying retryable failures.

    ``on_attempt`` runs before every attempt (the runner charges its model-call
    budget there, so a limit can stop retries); ``on_retry`` after an attempt that
    failed retryably, with the attempts so far, the failure and the backoff before the
    next (the agent stores it as a ``model_retry`` event, so a viewer sees the call
    being retried as it happens). A retry after some chunks were
    streamed starts the stream again: partial chunks are provisional by contract.
    """

    model: BaseLlm
    retry: RetryPolicy
    breaker: CircuitBreaker
    attempt_timeout_s: float | None
    on_attempt: Callable[[], None] = lambda: None
    on_retry: Callable[[int, ModelError, float], Awaitable[object]] | None = None
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    rand: Callable[[], float] = random.random
    attempts: int = 0
    """The attempts made so far (a refused call, its breaker open, makes none)."""

    async def astream(self, request: LlmRequest) -> AsyncGenerator[LlmResponse]:
        # One generator for the retries and each attempt's chunks: every layer of
        # generators costs each chunk an ``__anext__`` and each call its setup and close.
        attempt = 0
        while True:
            attempt += 1
            self.breaker.before_call(self.model.provider_key)  # a refused call sends nothing
            self.attempts = attempt
            self.on_attempt()
            stream = self.model.astream(request)
            limit = ChunkDeadline(self.attempt_timeout_s)
            try:
                try:
                    while True:
                        limit.start()
                        try:
                            chunk = await anext(stream)
                        except StopAsyncIteration:
                            break
                        except TimeoutError as exc:  # the model's own, unclassified
                            raise ModelTimeoutError(f"model call timed out: {exc}") from exc
                        except asyncio.CancelledError as exc:
                            if limit.stop():
                                raise ModelTimeoutError(
                                    f"model call exceeded {self.attempt_timeout_s}s"
                                ) from exc
                            raise
                        finally:
                            limit.stop()
                        yield chunk
                finally:  # the attempt's stream is closed before any retry or outcome
                    limit.close()
                    await stream.aclose()
            except ModelError as exc:
                self.breaker.record_failure()
                if failure_of(exc) is not Failure.RETRYABLE or attempt >= self.retry.max_attempts:
                    raise
                await self._back_off(attempt, exc)
                continue
            except BaseException:
                self.breaker.record_abandoned()
                raise
            self.breaker.record_success()
            return

    async def _back_off(self, attempt: int, exc: ModelError) -> None:
        """Wait the policy's backoff after failed attempt ``attempt``, said first."""
        backoff = self.retry.backoff(attempt, self.rand())
        if self.on_retry is not None:
            await self.on_retry(attempt, exc, backoff)
        await self.sleep(backoff)
