"""A model call's wait for its model's shared rate limit, shown as an open step.

The wait is a span: a ``rate_limit_waiting`` event opens it when the limiter first
says no, and a ``rate_limit_wait`` event closes it when the limiter admits the call or
the wait gives up (then with an ``ErrorInfo``). Both are stored, so a viewer sees the
open wait live and after a reload; a run cancelled while it waits is closed by the
runner from its ledger (``CallLedger.closing_events``), like an open tool call.
"""

from __future__ import annotations

from agents_core.context import Context
from agents_core.events import ErrorInfo, Event, EventType, TextPart, new_id
from agents_core.exceptions import ModelRateLimitError
from agents_core.model_gates import admitted


async def wait_for_rate_limit(ctx: Context, model: str, tokens: int) -> None:
    """Wait until ``model``'s shared rate limit admits a call of about ``tokens`` tokens,
    as an open wait span while it lasts. ``ModelRateLimitError`` once waiting longer
    would pass the limiter's bound."""
    limiter = ctx.invocation.rate_limiter
    if limiter is None:
        return
    opened: list[Event] = []

    async def waiting() -> None:
        opened.append(await _open(ctx, model))

    try:
        waited = await admitted(limiter, model, tokens, waiting=waiting)
    except ModelRateLimitError as failure:
        if opened:
            await _close(ctx, opened[0], f"gave up waiting for the rate limit of {model}", failure)
        raise
    if opened and waited is not None:
        await _close(ctx, opened[0], f"waited {waited:.1f}s for the rate limit of {model}", None)


async def _open(ctx: Context, model: str) -> Event:
    """The stored event that opens the wait span (stored before the wait begins)."""
    text = f"waiting for the rate limit of {model}"
    opened = ctx.event(EventType.RATE_LIMIT_WAITING, parts=[TextPart(text=text)], span_id=new_id())
    await ctx.event_callback(opened)
    return opened


async def _close(
    ctx: Context, opened: Event, text: str, failure: ModelRateLimitError | None
) -> None:
    error = None
    if failure is not None:  # the run's own error event says the rest
        error = ErrorInfo(code=failure.code, message=failure.message, failure="non_fatal")
    closing = ctx.event(
        EventType.RATE_LIMIT_WAIT,
        parts=[TextPart(text=text)],
        span_id=opened.span_id,
        started_at=opened.created_at,
        error=error,
    )
    await ctx.event_callback(closing)
