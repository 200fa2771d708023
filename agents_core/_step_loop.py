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

from agents_core._tool_round import policy_event
from agents_core.context import Context
from agents_core.events import (
    Event,
    EventType,
    HookNote,
    StructuredPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    new_id,
    utc_now,
)
from agents_core.exceptions import ModelError, PolicyDeniedError
from agents_core.hooks import NO_HOOKS, HookStack
from agents_core.llm.contracts import BaseLlm, LlmRequest, LlmResponse, estimate_prompt_tokens
from agents_core.llm.resilience import ResilientCall
from agents_core.policies import NO_POLICY, PolicyAction, PolicyEngine
from agents_core.spend import CallEstimate


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
            verdict = policy.decide("model", model.provider_key, _model_call_args(ctx, hooked))
            if verdict is not None:
                await ctx.event_callback(policy_event(ctx, verdict, None, ctx.span_id))
                if verdict.action is PolicyAction.DENY:
                    raise PolicyDeniedError(verdict.refusal())
        stream = not hooks.rewrites_output
        try:
            async with aclosing(_call_model(ctx, model, hooked, turn, stream=stream)) as partials:
                async for partial in partials:
                    yield partial
        except ModelError as exc:
            turn.response = await hooks.on_model_error(ctx.readonly(), exc, turn.hooks)
            if turn.response is None:
                raise
        ctx.budget.charge_usage(turn.complete.usage)
    turn.latency_ms = (time.perf_counter() - started) * 1000
    turn.response = await hooks.after_model(ctx.readonly(), turn.complete, turn.hooks)


def _model_call_args(ctx: Context, request: LlmRequest) -> dict[str, Any]:
    """What a policy rule on model calls can test."""
    return {
        "prompt_tokens": estimate_prompt_tokens(request),
        "messages": len(request.messages),
        "tools": [tool.name for tool in request.tools],
        "model_calls": ctx.budget.model_calls,
    }


async def _call_model(
    ctx: Context, model: BaseLlm, request: LlmRequest, turn: ModelTurn, *, stream: bool
) -> AsyncGenerator[Event]:
    prompt = estimate_prompt_tokens(request)
    ctx.budget.reserve_tokens(prompt, model.max_output_tokens or 0)
    guard = ctx.invocation.spend_guard
    hold = None
    if guard is not None:  # may refuse the call (BudgetExceededError) before it is made
        estimate = CallEstimate(ctx.agent_name, model.provider_key, prompt, model.max_output_tokens)
        hold = await guard.reserve(estimate)
    try:
        async with aclosing(_attempts(ctx, model, request, turn, stream=stream)) as partials:
            async for partial in partials:
                yield partial
    finally:  # failed or cancelled too: what was held and not spent is released
        if hold is not None:
            await asyncio.shield(hold.settle(turn.response.usage if turn.response else None))


async def _attempts(
    ctx: Context, model: BaseLlm, request: LlmRequest, turn: ModelTurn, *, stream: bool
) -> AsyncGenerator[Event]:
    config = ctx.run_config
    call = ResilientCall(
        model=model,
        retry=config.retry,
        breaker=ctx.breakers.get(model.provider_key, config.breaker),
        attempt_timeout_s=config.model_timeout_s,
        on_attempt=ctx.budget.charge_model_call,
    )
    async with aclosing(call.astream(request)) as chunks:  # closed at once: frees the breaker
        async for chunk in chunks:
            if not chunk.partial:
                turn.response = chunk
            elif chunk.text and stream:
                yield ctx.built_event(
                    EventType.AGENT_MESSAGE,
                    parts=[TextPart(text=chunk.text)],
                    partial=True,
                    span_id=turn.span_id,
                )


def message_event(
    ctx: Context, turn: ModelTurn, *, structured: StructuredPart | None = None, **fields: object
) -> Event:
    """The stored agent_message for a complete model response (with its answer parsed
    against the agent's output schema, when it has one)."""
    response = turn.complete
    parts: list[ThinkingPart | TextPart | ToolCallPart | StructuredPart] = []
    if response.thinking:
        parts.append(ThinkingPart(text=response.thinking))
    if response.text:
        parts.append(TextPart(text=response.text))
    if structured is not None:
        parts.append(structured)
    parts.extend(
        ToolCallPart(call_id=c.id, name=c.name, args=c.args, span_id=new_id())
        for c in response.tool_calls
    )
    return ctx.built_event(
        EventType.AGENT_MESSAGE,
        parts=list(parts),
        usage=response.usage,
        latency_ms=round(turn.latency_ms, 3),
        span_id=turn.span_id,
        started_at=turn.started_at,
        hooks=list(turn.hooks),
        **fields,  # type: ignore[arg-type]
    )
