"""The second half of an agent step: the tool round a model message asked for.

Each call goes, in turn, through the agent's ``before_tool`` hooks (which may rewrite or
answer it), its policy (``agents_core.policies``: allow, deny, rewrite, or ask a person
through ``agents_core.approvals``), the tool itself, the ``after_tool`` hooks, and last
its tool's failure policy (``agents_core.failures``). Hooks run before the policy, so a
person approves the arguments that will run, never ones a hook changes afterwards.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agents_core._asking import PARKED, Parked, error_result, seek_approval
from agents_core.approvals import ApprovalPolicy
from agents_core.context import Context
from agents_core.contracts import ToolCall, ToolResult, built
from agents_core.events import (
    ErrorInfo,
    Event,
    EventActions,
    EventType,
    HookNote,
    PolicyInfo,
    ToolCallPart,
    ToolResponsePart,
    new_id,
    utc_now,
)
from agents_core.exceptions import (
    FailedByPolicyError,
    HookError,
    ToolError,
    ToolNotFoundError,
    ToolTimeoutError,
)
from agents_core.failures import FailurePolicy, result_code, tool_degradation
from agents_core.hooks import NO_HOOKS, HookStack
from agents_core.policies import NO_POLICY, PolicyAction, PolicyEngine, PolicyVerdict
from agents_core.tools.base import BaseTool, ToolContext, ToolEffects, render_output


@dataclass(slots=True, frozen=True)
class ToolOutcome:
    result: ToolResult
    effects: ToolEffects
    latency_ms: float
    span_id: str | None = None
    started_at: datetime | None = None
    hooks: tuple[HookNote, ...] = ()
    error: ErrorInfo | None = None
    """A failure its tool's ``degrade`` policy let the run go past."""
    fails_run: FailedByPolicyError | None = None
    """Set when the call failed and its failure policy is ``fail``: the agent raises it
    once every response of the round is stored."""
    parked: bool = False
    """The call waits on a person and parked its run: it has no response yet."""


@dataclass(frozen=True, slots=True)
class ToolControl:
    """What a tool round runs calls through: the agent's hooks, its policy, how long a
    person may take to approve, and per tool name a failure policy (unnamed tools:
    ``continue``, the model reads the error)."""

    hooks: HookStack = NO_HOOKS
    failures: Mapping[str, FailurePolicy] = field(default_factory=dict)
    policy: PolicyEngine = NO_POLICY
    approval: ApprovalPolicy = field(default_factory=ApprovalPolicy)


NO_CONTROL = ToolControl()


async def run_tool_calls(
    ctx: Context,
    tools: Mapping[str, BaseTool],
    message: Event,
    *,
    control: ToolControl = NO_CONTROL,
    may_park: bool = False,
    asked: Mapping[str, Event] | None = None,
) -> list[ToolOutcome]:
    """Run every call ``message`` (a model's ``agent_message``) makes, concurrently;
    outcomes come back in call order, not completion order.

    Each call gets exactly one result: unknown tools, invalid arguments, denials,
    timeouts and exceptions become error results. Cancellation propagates.

    ``may_park``: a call that would wait on a person parks instead (its outcome is
    ``parked``, without a result), where the broker parks and the record can resume
    the agent (``parkable``). ``asked``: calls that parked before, by call id, with
    their stored ``approval_request``; they wait on their decision again, past their
    hooks and policy, which passed before they parked.
    """
    parts = [p for p in message.parts if isinstance(p, ToolCallPart)]
    asked = asked or {}
    ctx.budget.charge_tool_calls(sum(1 for p in parts if p.call_id not in asked))
    outcomes: list[ToolOutcome | None] = [None] * len(parts)
    parks = may_park and parkable(ctx)

    async def run(index: int, part: ToolCallPart) -> None:
        round_ = _Call(ctx, tools, control, part.span_id or new_id(), parks)
        outcomes[index] = await round_.run(part.to_call(), asked.get(part.call_id))

    if len(parts) == 1:
        await _run_alone(run(0, parts[0]))
    else:
        async with asyncio.TaskGroup() as group:
            for index, part in enumerate(parts):
                group.create_task(run(index, part))
    return [o for o in outcomes if o is not None]


def parkable(ctx: Context) -> bool:
    """Whether a call of ``ctx``'s agent may park its run: its broker parks, and the
    record can bring the agent back to the call: it runs on the turn's own branch (not
    in a parallel branch, a loop iteration or an agent used as a tool) and no transfer
    led to it."""
    return (
        ctx.invocation.approvals.parks
        and "." not in (ctx.branch or "")
        and ctx.invocation.transfers == 0
    )


async def _run_alone(call: Coroutine[Any, Any, None]) -> None:
    """One call in a task of its own, as in a ``TaskGroup`` (its own context; cancelled
    with the round; a failure raised as an ``ExceptionGroup``), but started eagerly: a
    call that never waits (most function tools) finishes without a trip through the
    event loop, and without a group's bookkeeping."""
    task = asyncio.Task(call, loop=asyncio.get_running_loop(), eager_start=True)
    try:
        await task
    except Exception as exc:
        raise ExceptionGroup("unhandled errors in a TaskGroup", [exc]) from None


@dataclass(slots=True)
class _Call:
    """One call of a round on its way through hooks, policy, tool and failure policy."""

    ctx: Context
    tools: Mapping[str, BaseTool]
    control: ToolControl
    span: str
    parks: bool = False
    notes: list[HookNote] = field(default_factory=list)

    async def run(self, call: ToolCall, asked: Event | None = None) -> ToolOutcome:
        """A hook that raises makes the call's error result; a sub-agent's ``fail``
        policy ends the run from here; a refusal (policy or person) is the result the
        model reads, past the hooks and failure policy. A call ``asked`` before (it
        parked) waits on its decision again, past hooks and policy."""
        started_at, started = utc_now(), time.perf_counter()
        try:
            if asked is None:
                hooked = await self.control.hooks.before_tool(self.ctx.readonly(), call, self.notes)
            else:
                hooked = call
            tool_context: ToolContext | None = None
            if isinstance(hooked, ToolResult):  # short-circuited: the tool is not called
                result = hooked
            else:
                admitted = await (
                    self._admit(hooked)
                    if asked is None
                    else seek_approval(
                        self.ctx,
                        call,
                        self.control.approval,
                        self.span,
                        may_park=self.parks,
                        asked=asked,
                    )
                )
                if admitted is PARKED:
                    waiting = ToolResult(call_id=call.id, name=call.name, output="")
                    return dataclasses.replace(self._outcome(waiting), parked=True)
                if isinstance(admitted, ToolResult):
                    return self._outcome(admitted)
                call = admitted
                # The tool's own time: a person's wait for approval is not part of it.
                started_at, started = utc_now(), time.perf_counter()
                await self._journal(call)
                tool_context = ToolContext(call=call, context=self.ctx, span_id=self.span)
                result = await _run_one(self.tools, call, tool_context)
            outcome = await self._finish(call, result, tool_context)
        except HookError as exc:
            outcome = self._outcome(error_result(call, f"{exc.code}: {exc.message}"))
        except FailedByPolicyError as exc:  # an agent tool's agent failed, with policy "fail"
            failed = self._outcome(error_result(call, f"{exc.code}: {exc.message}"))
            outcome = dataclasses.replace(failed, fails_run=exc)
        latency_ms = (time.perf_counter() - started) * 1000
        return dataclasses.replace(outcome, latency_ms=latency_ms, started_at=started_at)

    async def _finish(
        self, call: ToolCall, result: ToolResult, tool_context: ToolContext | None
    ) -> ToolOutcome:
        """``result`` through the ``after_tool`` hooks, then the failure policy."""
        result = await self.control.hooks.after_tool(self.ctx.readonly(), call, result, self.notes)
        effects = tool_context.effects if tool_context and not result.is_error else ToolEffects()
        outcome = dataclasses.replace(self._outcome(result), effects=effects)
        policy = self.control.failures.get(call.name, FailurePolicy.CONTINUE)
        return _apply_failure_policy(outcome, policy)

    async def _journal(self, call: ToolCall) -> None:
        """Note that ``call`` starts; for a tool with side effects, store it first (a
        ``tool_started`` event), so that it survives the process running it."""
        self.ctx.invocation.started_calls.add(call.id)
        tool = self.tools.get(call.name)
        if tool is None or not tool.side_effects:
            return
        part = ToolCallPart(call_id=call.id, name=call.name, args=call.args, span_id=self.span)
        started = self.ctx.event(EventType.TOOL_STARTED, parts=[part], parent_span_id=self.span)
        await self.ctx.event_callback(started)

    def _outcome(self, result: ToolResult) -> ToolOutcome:
        return ToolOutcome(result, ToolEffects(), 0.0, self.span, hooks=tuple(self.notes))

    async def _admit(self, call: ToolCall) -> ToolCall | ToolResult | Parked:
        """The policy's decision on ``call``: the call to run, or the refusal."""
        tool = self.tools.get(call.name)
        target, subject = tool.policy_subject(call.args) if tool else ("tool", call.name)
        verdict = self.control.policy.decide(target, subject, call.args)
        if verdict is None:
            return call
        await self.ctx.event_callback(policy_event(self.ctx, verdict, call.id, self.span))
        match verdict.action:
            case PolicyAction.ALLOW:
                return call
            case PolicyAction.DENY:
                return error_result(call, verdict.refusal())
            case PolicyAction.REWRITE:
                return call.model_copy(update={"args": verdict.rewritten})
            case PolicyAction.ASK:
                schema = tool.parameters_schema() if tool else None
                return await seek_approval(
                    self.ctx,
                    call,
                    self.control.approval,
                    self.span,
                    schema,
                    rule=verdict.rule,
                    may_park=self.parks,
                )


def policy_event(
    ctx: Context, verdict: PolicyVerdict, call_id: str | None, parent_span: str | None
) -> Event:
    """The record of one policy decision, inside the call's span."""
    info = PolicyInfo(
        rule=verdict.rule.name,
        target=verdict.target,
        subject=verdict.subject,
        action=verdict.action.value,
        reason=verdict.rule.reason,
        call_id=call_id,
        args=verdict.args,
        rewritten_args=verdict.rewritten,
    )
    return ctx.event(EventType.POLICY_DECISION, policy=info, parent_span_id=parent_span)


def response_event(ctx: Context, outcome: ToolOutcome) -> Event:
    """The stored tool_response for one call, carrying the effects the tool asked for."""
    result, effects = outcome.result, outcome.effects
    part = built(  # from the call's result, a contract: nothing to validate again
        ToolResponsePart,
        call_id=result.call_id,
        name=result.name,
        result=result.output,
        is_error=result.is_error,
    )
    actions = None  # none asked for: the shared empty actions
    if (
        effects.state_delta
        or effects.escalate
        or effects.transfer_to_agent
        or effects.artifact_delta
    ):
        actions = EventActions(
            state_delta=effects.state_delta,
            escalate=effects.escalate,
            transfer_to_agent=effects.transfer_to_agent,
            artifact_delta=effects.artifact_delta,
        )
    return ctx.built_event(
        EventType.TOOL_RESPONSE,
        parts=[part],
        actions=actions,
        latency_ms=round(outcome.latency_ms, 3),
        span_id=outcome.span_id,
        started_at=outcome.started_at,
        hooks=list(outcome.hooks),
        error=outcome.error,
    )


def raise_for_failures(outcomes: list[ToolOutcome]) -> None:
    """End the run for the first call of the round whose failure policy is ``fail``
    (called once the round's responses are stored, so each call has its response)."""
    failed = next((o.fails_run for o in outcomes if o.fails_run is not None), None)
    if failed is not None:
        raise failed


def _apply_failure_policy(outcome: ToolOutcome, policy: FailurePolicy) -> ToolOutcome:
    result = outcome.result
    if not result.is_error or policy is FailurePolicy.CONTINUE:
        return outcome
    if policy is FailurePolicy.DEGRADE:
        return dataclasses.replace(outcome, error=tool_degradation(result))
    failure = FailedByPolicyError(
        f"tool {result.name!r} failed and its failure policy is fail: {result.output}",
        code=result_code(result),
    )
    return dataclasses.replace(outcome, fails_run=failure)


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
        return error_result(call, f"{exc.code}: {exc.message}")
    except FailedByPolicyError:
        raise
    except Exception as exc:  # a tool's own failure is data for the model, not a crash
        return error_result(call, f"tool_failed: {type(exc).__name__}: {exc}")
