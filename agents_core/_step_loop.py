"""The first half of an agent step: one model call, through the agent's hooks
(``agents_core.hooks``) and policy (``agents_core.policies``). The tool round it asks
for is ``agents_core._tool_round``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agents_core._rate_limit_wait import wait_for_rate_limit
from agents_core._tool_round import policy_event
from agents_core.context import Context
from agents_core.contracts import built
from agents_core.events import (
    ErrorInfo,
    Event,
    EventType,
    FallbackInfo,
    HookNote,
    Part,
    StructuredPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    new_id,
    utc_now,
)
from agents_core.exceptions import FailedModelCall, ModelError, PolicyDeniedError
from agents_core.hooks import NO_HOOKS, HookStack
from agents_core.llm.chain import ModelChain, falls_back
from agents_core.llm.contracts import BaseLlm, LlmRequest, LlmResponse, estimate_prompt_tokens
from agents_core.llm.resilience import ResilientCall
from agents_core.policies import NO_POLICY, PolicyAction, PolicyEngine
from agents_core.spend import CallEstimate

SHOWN_AFTER_S = 0.25
"""A model call that has neither answered nor streamed text by then shows itself live
(``_show``): long enough that a quick call costs no event, short enough to be seen."""


CUT_OFF = "model_call_cut_off"
"""The error code of a model call cut off before it answered (``_cut_off``)."""


@dataclass(slots=True)
class ModelTurn:
    """Filled in by ``stream_model_call`` once the complete response has arrived."""

    response: LlmResponse | None = None
    latency_ms: float = 0.0
    span_id: str = field(default_factory=new_id)
    """The model call's span: its partial chunks and its message carry it."""
    started_at: datetime | None = None
    hooks: list[HookNote] = field(default_factory=list)
    """The hooks that changed this call."""
    model: str | None = None
    """The model of the agent's chain that answered, when the event should say so."""
    cached: bool = False
    """The answer came from the response cache."""
    attempts: int = 0
    """The attempts made, each model of a chain and each retry counted."""

    @property
    def complete(self) -> LlmResponse:
        if self.response is None:
            raise ModelError("model returned no complete response")
        return self.response


async def stream_model_call(
    ctx: Context,
    model: BaseLlm,
    request: LlmRequest,
    turn: ModelTurn,
    hooks: HookStack = NO_HOOKS,
    policy: PolicyEngine = NO_POLICY,
) -> AsyncGenerator[Event]:
    """Call ``model`` with retries and the provider's breaker, through ``hooks`` and
    ``policy``, yielding partial text events as tokens arrive (none when a hook may
    rewrite the answer); the complete response lands in ``turn``. A policy decision is
    stored as its event first; a denial then raises ``PolicyDeniedError``."""
    turn.started_at = utc_now()
    started = time.perf_counter()
    hooked = await hooks.before_model(ctx.readonly(), request, turn.hooks)
    if isinstance(hooked, LlmResponse):  # short-circuited: the model is not called
        turn.response = hooked
    else:
        if policy:
            await _decide(ctx, policy, model, hooked)
        stream = not hooks.rewrites_output
        if isinstance(model, ModelChain):
            calling = _call_model(ctx, model, hooked, turn, stream=stream)
        else:  # a single model: straight to its call (each generator layer costs a chunk)
            calling = _guarded(ctx, model, None, hooked, turn, stream=stream)
        try:
            async with aclosing(calling) as partials:
                async for partial in partials:
                    yield partial
        except ModelError as exc:
            turn.response = await hooks.on_model_error(ctx.readonly(), exc, turn.hooks)
            if turn.response is None:
                exc.call = exc.call or _failed(ctx, turn, started)
                raise
        except asyncio.CancelledError:
            if ctx.invocation.stopping:  # the run cancelled or out of time: the call is cut off
                ctx.invocation.post(_cut_off(ctx, turn, started))
            raise
        if not turn.cached:
            ctx.budget.charge_usage(turn.complete.usage)
    turn.latency_ms = (time.perf_counter() - started) * 1000
    turn.response = await hooks.after_model(ctx.readonly(), turn.complete, turn.hooks)


async def _decide(ctx: Context, policy: PolicyEngine, model: BaseLlm, request: LlmRequest) -> None:
    """The policy's decision on the call, stored as its event; a denial refuses it."""
    verdict = policy.decide("model", model.provider_key, _model_call_args(ctx, request))
    if verdict is not None:
        await ctx.event_callback(policy_event(ctx, verdict, None, ctx.span_id))
        if verdict.action is PolicyAction.DENY:
            raise PolicyDeniedError(verdict.refusal())


def _failed(ctx: Context, turn: ModelTurn, started: float) -> FailedModelCall:
    """What the error event of a call that failed for good records of it."""
    return FailedModelCall(
        span_id=turn.span_id,
        parent_span_id=ctx.span_id,
        started_at=turn.started_at or utc_now(),
        latency_ms=round((time.perf_counter() - started) * 1000, 3),
        attempts=turn.attempts,
        model=turn.model,
    )


def _cut_off(ctx: Context, turn: ModelTurn, started: float) -> Event:
    """The record of a call cut off before it answered (the run cancelled, its wall-time
    limit reached): an error on the call's span, so that its time is the model's and not
    the runner's. Not fatal of itself: the run's own terminal error follows it."""
    call = _failed(ctx, turn, started)
    said = f"the model call was cut off after {call.latency_ms / 1000:.1f} s, before it answered"
    return ctx.event(
        EventType.ERROR,
        error=ErrorInfo(code=CUT_OFF, message=said, failure="non_fatal"),
        **call.event_fields(),
    )


def _model_call_args(ctx: Context, request: LlmRequest) -> dict[str, Any]:
    """What a policy rule on model calls can test."""
    return {
        "prompt_tokens": estimate_prompt_tokens(request),
        "messages": len(request.messages),
        "tools": [tool.name for tool in request.tools],
        "model_calls": ctx.budget.model_calls,
    }


async def _call_model(
    ctx: Context, model: ModelChain, request: LlmRequest, turn: ModelTurn, *, stream: bool
) -> AsyncGenerator[Event]:
    """Call a chain: read the response cache, walk the chain, fill the cache."""
    cache = ctx.invocation.response_cache if model.cache_ttl_s else None
    routed = len(model.links) > 1 or cache is not None
    first = model.links[0].name
    if cache is not None and (kept := await cache.get(first, request)) is not None:
        # No usage: nothing was spent, so no limit, budget or roll-up counts it.
        turn.response = kept.model_copy(update={"usage": None})
        turn.cached, turn.model = True, kept.model_name or first
        return
    async with aclosing(_along_chain(ctx, model, request, turn, stream=stream)) as partials:
        async for partial in partials:
            yield partial
    if cache is not None and model.cache_ttl_s and turn.response is not None:
        answered = turn.response.model_copy(update={"model_name": turn.model})
        await cache.put(first, request, answered, model.cache_ttl_s)
    if not routed:
        turn.model = None


async def _along_chain(
    ctx: Context, chain: ModelChain, request: LlmRequest, turn: ModelTurn, *, stream: bool
) -> AsyncGenerator[Event]:
    """Each model of ``chain`` in turn, until one answers or a failure does not fall back."""
    for index, link in enumerate(chain.links):
        turn.model = link.name
        try:
            calling = _guarded(ctx, link.model, link.name, request, turn, stream=stream)
            async with aclosing(calling) as partials:
                async for partial in partials:
                    yield partial
            return
        except ModelError as exc:
            if index == len(chain.links) - 1 or not falls_back(exc):
                raise
            switch = FallbackInfo(
                from_model=link.name,
                to_model=chain.links[index + 1].name,
                code=exc.code,
                reason=exc.message,
            )
            text = f"{link.name} failed ({exc.code}); trying {switch.to_model}"
            await ctx.event_callback(
                ctx.event(EventType.MODEL_FALLBACK, parts=[TextPart(text=text)], fallback=switch)
            )


async def _guarded(
    ctx: Context,
    model: BaseLlm,
    name: str | None,
    request: LlmRequest,
    turn: ModelTurn,
    *,
    stream: bool,
) -> AsyncGenerator[Event]:
    """One model's call, after its rate limit (for a named model) and the run's limits
    and spend guard admit it."""
    prompt, ceiling = estimate_prompt_tokens(request), model.max_output_tokens
    if name is not None:
        await wait_for_rate_limit(ctx, name, prompt + (ceiling or 0))
    ctx.budget.reserve_tokens(prompt, ceiling or 0)
    guard = ctx.invocation.spend_guard
    hold = None
    if guard is not None:  # may refuse the call (BudgetExceededError) before it is made
        estimate = CallEstimate(ctx.agent_name, model.provider_key, prompt, ceiling)
        hold = await guard.reserve(estimate)
    config = ctx.run_config
    call = ResilientCall(
        model=model,
        retry=config.retry,
        breaker=ctx.breakers.get(model.provider_key, config.breaker),
        attempt_timeout_s=config.model_timeout_s,
        on_attempt=ctx.budget.charge_model_call,
        on_retry=lambda attempts, exc, backoff: ctx.event_callback(
            _retry_event(ctx, turn, name, attempts, exc, backoff)
        ),
    )
    shown = asyncio.get_running_loop().call_later(SHOWN_AFTER_S, _show, ctx, turn, name)
    try:  # the call's chunks read here, not through one more generator layer
        async with aclosing(call.astream(request)) as chunks:  # closed at once: frees the breaker
            async for chunk in chunks:
                if not chunk.partial:
                    shown.cancel()  # answered: the message shows it
                    turn.response = chunk
                elif stream and (chunk.text or chunk.thinking):
                    shown.cancel()  # its text shows it from here on
                    yield ctx.built_event(
                        EventType.AGENT_MESSAGE,
                        parts=_delta_parts(chunk),
                        partial=True,
                        span_id=turn.span_id,
                    )
    finally:  # failed or cancelled too: what was held and not spent is released
        shown.cancel()
        turn.attempts += call.attempts
        if hold is not None:
            await asyncio.shield(hold.settle(turn.response.usage if turn.response else None))


def _show(ctx: Context, turn: ModelTurn, name: str | None) -> None:
    """A model call that has not answered (nor streamed) after ``SHOWN_AFTER_S``: a
    partial ``agent_message`` without parts on the call's span, from when it started,
    so that a live view draws the call while it waits rather than nothing until its
    first token. Never stored; a call that answers sooner costs a timer and no event."""
    ctx.invocation.post(
        ctx.built_event(
            EventType.AGENT_MESSAGE,
            partial=True,
            span_id=turn.span_id,
            started_at=turn.started_at,
            model=name,
        )
    )


def _retry_event(
    ctx: Context, turn: ModelTurn, name: str | None, attempts: int, exc: ModelError, backoff: float
) -> Event:
    """A ``model_retry``: the call's attempt failed retryably; it goes again in ``backoff``
    seconds. On the call's span, so a live waterfall draws the call while it is retried;
    any text streamed by the failed attempt is provisional and starts again. It names the
    model of a chain that failed (``name``), whether or not the answer will."""
    limit = ctx.run_config.retry.max_attempts
    text = f"Attempt {attempts} of {limit} failed; trying again in {backoff:.1f} s."
    return ctx.event(
        EventType.MODEL_RETRY,
        parts=[TextPart(text=text)],
        error=ErrorInfo(code=exc.code, message=exc.message, failure="retryable", attempts=attempts),
        span_id=turn.span_id,
        started_at=turn.started_at,
        model=name,  # as the error of a call that failed for good does
    )


def _delta_parts(chunk: LlmResponse) -> list[Part]:
    """A streamed chunk's thinking and text deltas (a response's strings: built, not
    validated again), as the parts of a partial event."""
    parts: list[Part] = []
    if chunk.thinking:
        parts.append(built(ThinkingPart, text=chunk.thinking))
    if chunk.text:
        parts.append(built(TextPart, text=chunk.text))
    return parts


def message_event(
    ctx: Context, turn: ModelTurn, *, structured: StructuredPart | None = None, **fields: object
) -> Event:
    """The stored agent_message for a complete model response (with its answer parsed
    against the agent's output schema, when it has one)."""
    response = turn.complete
    parts: list[Part] = []
    if response.thinking:
        parts.append(ThinkingPart(text=response.thinking, signature=response.thinking_signature))
    if response.text:
        parts.append(built(TextPart, text=response.text))  # the response's: validated
    if structured is not None:
        parts.append(structured)
    parts.extend(
        built(ToolCallPart, call_id=c.id, name=c.name, args=c.args, span_id=new_id())
        for c in response.tool_calls
    )
    return ctx.built_event(
        EventType.AGENT_MESSAGE,
        parts=parts,
        usage=response.usage,
        latency_ms=round(turn.latency_ms, 3),
        span_id=turn.span_id,
        started_at=turn.started_at,
        hooks=list(turn.hooks),
        model=turn.model,
        cached=turn.cached,
        replayed=response.replayed,
        **fields,  # type: ignore[arg-type]
    )
