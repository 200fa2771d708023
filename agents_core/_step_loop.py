"""The two halves of an agent step: one model call, then the tool round it asked for."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass

from agents_core.context import Context
from agents_core.contracts import ToolCall, ToolResult
from agents_core.events import Event, EventType, TextPart, ThinkingPart, ToolCallPart
from agents_core.exceptions import ModelError, ToolError, ToolNotFoundError, ToolTimeoutError
from agents_core.llm.contracts import BaseLlm, LlmRequest, LlmResponse
from agents_core.llm.resilience import ResilientCall
from agents_core.tools.base import BaseTool, ToolContext, render_output


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


async def run_tool_calls(
    ctx: Context, tools: Mapping[str, BaseTool], calls: Sequence[ToolCall]
) -> list[tuple[ToolResult, float]]:
    """Run every call concurrently; results (with latency in ms) come back in call order.

    Each call gets exactly one result: unknown tools, invalid arguments, timeouts and
    exceptions become error results. Cancellation propagates.
    """
    ctx.budget.charge_tool_calls(len(calls))
    results: list[tuple[ToolResult, float] | None] = [None] * len(calls)

    async def run(index: int, call: ToolCall) -> None:
        started = time.perf_counter()
        result = await _run_one(ctx, tools, call)
        results[index] = (result, (time.perf_counter() - started) * 1000)

    async with asyncio.TaskGroup() as group:
        for index, call in enumerate(calls):
            group.create_task(run(index, call))
    return [r for r in results if r is not None]


async def _run_one(ctx: Context, tools: Mapping[str, BaseTool], call: ToolCall) -> ToolResult:
    try:
        tool = tools.get(call.name)
        if tool is None:
            available = ", ".join(sorted(tools)) or "none"
            raise ToolNotFoundError(f"unknown tool {call.name!r}; available tools: {available}")
        try:
            async with asyncio.timeout(tool.timeout_s):
                output = await tool.arun(dict(call.args), ToolContext(call=call, context=ctx))
        except TimeoutError as exc:
            raise ToolTimeoutError(f"tool {call.name!r} timed out after {tool.timeout_s}s") from exc
        return ToolResult(call_id=call.id, name=call.name, output=render_output(output))
    except ToolError as exc:
        return _error_result(call, f"{exc.code}: {exc.message}")
    except Exception as exc:  # a tool's own failure is data for the model, not a crash
        return _error_result(call, f"tool_failed: {type(exc).__name__}: {exc}")


def _error_result(call: ToolCall, message: str) -> ToolResult:
    return ToolResult(call_id=call.id, name=call.name, output=message, is_error=True)
