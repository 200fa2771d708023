"""The two halves of an agent step: one model call, then the tool round it asked for."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass

from agents_core.approvals import ApprovalPolicy, args_hash
from agents_core.context import Context
from agents_core.contracts import ToolCall, ToolResult
from agents_core.events import (
    ApprovalInfo,
    Event,
    EventActions,
    EventType,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResponsePart,
)
from agents_core.exceptions import ModelError, ToolError, ToolNotFoundError, ToolTimeoutError
from agents_core.llm.contracts import BaseLlm, LlmRequest, LlmResponse
from agents_core.llm.resilience import ResilientCall
from agents_core.tools.base import BaseTool, ToolContext, ToolEffects, render_output


@dataclass(slots=True)
class ModelTurn:
    """Filled in by ``stream_model_call`` once the complete response has arrived."""

    response: LlmResponse | None = None
    latency_ms: float = 0.0

    @property
    def complete(self) -> LlmResponse:
        if self.response is None:
            raise ModelError("model returned no complete response")
        return self.response


async def stream_model_call(
    ctx: Context, model: BaseLlm, request: LlmRequest, turn: ModelTurn
) -> AsyncGenerator[Event]:
    """Call ``model`` with retries and the provider's breaker, yielding partial text
    events as tokens arrive; the complete response lands in ``turn``."""
    config = ctx.run_config
    call = ResilientCall(
        model=model,
        retry=config.retry,
        breaker=ctx.breakers.get(model.provider_key, config.breaker),
        attempt_timeout_s=config.model_timeout_s,
        on_attempt=ctx.budget.charge_model_call,
    )
    started = time.perf_counter()
    async for chunk in call.astream(request):
        if chunk.partial:
            if chunk.text:
                yield ctx.event(
                    EventType.AGENT_MESSAGE, parts=[TextPart(text=chunk.text)], partial=True
                )
        else:
            turn.response = chunk
    turn.latency_ms = (time.perf_counter() - started) * 1000
    ctx.budget.charge_usage(turn.complete.usage)


def message_event(ctx: Context, turn: ModelTurn, **fields: object) -> Event:
    """The stored agent_message for a complete model response."""
    response = turn.complete
    parts: list[ThinkingPart | TextPart | ToolCallPart] = []
    if response.thinking:
        parts.append(ThinkingPart(text=response.thinking))
    if response.text:
        parts.append(TextPart(text=response.text))
    parts.extend(ToolCallPart(call_id=c.id, name=c.name, args=c.args) for c in response.tool_calls)
    return ctx.event(
        EventType.AGENT_MESSAGE,
        parts=list(parts),
        usage=response.usage,
        latency_ms=round(turn.latency_ms, 3),
        **fields,  # type: ignore[arg-type]
    )


@dataclass(slots=True, frozen=True)
class ToolOutcome:
    result: ToolResult
    effects: ToolEffects
    latency_ms: float


async def run_tool_calls(
    ctx: Context,
    tools: Mapping[str, BaseTool],
    calls: Sequence[ToolCall],
    approval: ApprovalPolicy | None = None,
) -> list[ToolOutcome]:
    """Run every call concurrently; outcomes come back in call order, not completion order.

    Each call gets exactly one result: unknown tools, invalid arguments, timeouts and
    exceptions become error results. Calls that ``approval`` covers wait for a decision
    first. Cancellation propagates.
    """
    ctx.budget.charge_tool_calls(len(calls))
    outcomes: list[ToolOutcome | None] = [None] * len(calls)

    async def run(index: int, call: ToolCall) -> None:
        started = time.perf_counter()
        if approval is not None and approval.requires(call):
            approved = await _seek_approval(ctx, call, approval)
            if isinstance(approved, ToolResult):
                outcomes[index] = ToolOutcome(approved, ToolEffects(), 0.0)
                return
            call = approved
        tool_context = ToolContext(call=call, context=ctx)
        result = await _run_one(tools, call, tool_context)
        effects = tool_context.effects if not result.is_error else ToolEffects()
        outcomes[index] = ToolOutcome(result, effects, (time.perf_counter() - started) * 1000)

    async with asyncio.TaskGroup() as group:
        for index, call in enumerate(calls):
            group.create_task(run(index, call))
    return [o for o in outcomes if o is not None]


async def _seek_approval(
    ctx: Context, call: ToolCall, policy: ApprovalPolicy
) -> ToolCall | ToolResult:
    """Announce ``call``, wait for the decision and record it. Returns the call to run
    (arguments possibly edited) or the refusal the model will read."""
    info = ApprovalInfo(
        call_id=call.id, tool=call.name, args=call.args, args_hash=args_hash(call.name, call.args)
    )
    with ctx.invocation.approvals.expect(call, session_id=ctx.session_id) as pending:
        await ctx.event_callback(ctx.event(EventType.APPROVAL_REQUEST, approval=info))
        decision = await pending.wait(policy.timeout_s)
    if decision is None:
        outcome = info.model_copy(update={"decision": policy.on_timeout, "decided_by": "timeout"})
    else:
        outcome = info.model_copy(
            update={
                "decision": decision.decision,
                "edited_args": decision.edited_args,
                "reason": decision.reason,
                "decided_by": decision.decided_by,
            }
        )
    await ctx.event_callback(ctx.event(EventType.APPROVAL_DECISION, approval=outcome))
    if outcome.decision == "deny":
        why = f" Reason: {outcome.reason}" if outcome.reason else ""
        refusal = f"denied: a person declined this call to {call.name!r}; it did not run.{why}"
        return _error_result(call, refusal)
    if outcome.edited_args is not None:
        return call.model_copy(update={"args": outcome.edited_args})
    return call


def response_event(ctx: Context, outcome: ToolOutcome) -> Event:
    """The stored tool_response for one call, carrying the effects the tool asked for."""
    result, effects = outcome.result, outcome.effects
    part = ToolResponsePart(
        call_id=result.call_id, name=result.name, result=result.output, is_error=result.is_error
    )
    actions = EventActions(
        state_delta=effects.state_delta,
        escalate=effects.escalate,
        transfer_to_agent=effects.transfer_to_agent,
    )
    return ctx.event(
        EventType.TOOL_RESPONSE,
        parts=[part],
        actions=actions,
        latency_ms=round(outcome.latency_ms, 3),
    )


async def _run_one(
    tools: Mapping[str, BaseTool], call: ToolCall, tool_context: ToolContext
) -> ToolResult:
    try:
        tool = tools.get(call.name)
        if tool is None:
            available = ", ".join(sorted(tools)) or "none"
            raise ToolNotFoundError(f"unknown tool {call.name!r}; available tools: {available}")
        try:
            async with asyncio.timeout(tool.timeout_s):
                output = await tool.arun(dict(call.args), tool_context)
        except TimeoutError as exc:
            raise ToolTimeoutError(f"tool {call.name!r} timed out after {tool.timeout_s}s") from exc
        return ToolResult(call_id=call.id, name=call.name, output=render_output(output))
    except ToolError as exc:
        return _error_result(call, f"{exc.code}: {exc.message}")
    except Exception as exc:  # a tool's own failure is data for the model, not a crash
        return _error_result(call, f"tool_failed: {type(exc).__name__}: {exc}")


def _error_result(call: ToolCall, message: str) -> ToolResult:
    return ToolResult(call_id=call.id, name=call.name, output=message, is_error=True)
