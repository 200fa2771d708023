"""What a run asks of its host around each model call: a shared rate limit to wait on,
and a response cache to read and fill.

The core knows no store: a ``RateLimiter`` and a ``ResponseCache`` are given to the
``Runner`` (Studio keeps both in its database, shared by every process). Models are
named as in the builder's model registry.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from agents_core.exceptions import ModelRateLimitError
from agents_core.llm.contracts import LlmRequest, LlmResponse


class RateLimiter(Protocol):
    """Per-model request and token rates, shared by every run that calls the model."""

    max_wait_s: float
    """The longest a call waits for the limit before it fails (``ModelRateLimitError``)."""

    async def try_acquire(self, model: str, tokens: int) -> float | None:
        """Count one call of about ``tokens`` tokens against ``model``'s limits now and
        return ``None``, or count nothing and return how many seconds to wait before
        asking again."""
        ...


class ResponseCache(Protocol):
    """Answers kept for a while, keyed by the whole request to a model."""

    async def get(self, model: str, request: LlmRequest) -> LlmResponse | None:
        """The kept answer to ``request`` sent to ``model``, if it has not expired."""
        ...

    async def put(
        self, model: str, request: LlmRequest, response: LlmResponse, ttl_s: float
    ) -> None:
        """Keep ``response`` to ``request`` for ``ttl_s`` seconds."""
        ...


class ModelGates(Protocol):
    """Where a call finds its gates (an invocation's context has both)."""

    @property
    def rate_limiter(self) -> RateLimiter | None: ...

    @property
    def response_cache(self) -> ResponseCache | None: ...


async def admitted(
    limiter: RateLimiter,
    model: str,
    tokens: int,
    *,
    waiting: Callable[[], Awaitable[None]] | None = None,
) -> float | None:
    """Wait until ``limiter`` admits a call of about ``tokens`` tokens to ``model``;
    ``waiting`` is awaited once, when the first refusal makes the call wait. Returns
    the seconds waited (``None``: admitted at once), or raises ``ModelRateLimitError``
    once waiting longer would pass the limiter's bound."""
    began, waited = time.monotonic(), False
    while (delay := await limiter.try_acquire(model, tokens)) is not None:
        if time.monotonic() - began + delay > limiter.max_wait_s:
            raise ModelRateLimitError(
                f"rate limit of model {model!r}: no room within {limiter.max_wait_s:g}s"
            )
        if not waited and waiting is not None:
            await waiting()
        waited = True
        await asyncio.sleep(delay)
    return time.monotonic() - began if waited else None
