"""Asking a person about one tool call: the approval request, the wait (or parking
the run instead, ``agents_core.approvals``), and the recorded decision."""

from __future__ import annotations

from enum import Enum
from typing import Any

from agents_core.approvals import ApprovalDecision, ApprovalPolicy, args_hash
from agents_core.context import Context
from agents_core.contracts import ToolCall, ToolResult
from agents_core.events import ApprovalInfo, Event, EventType, new_id, utc_now
from agents_core.policies import PolicyRule


class Parked(Enum):
    """What asking a person returns when the call parks its run instead of waiting."""

    PARKED = "parked"


PARKED = Parked.PARKED


async def seek_approval(
    ctx: Context,
    call: ToolCall,
    policy: ApprovalPolicy,
    tool_span: str,
    schema: dict[str, Any] | None = None,
    *,
    rule: PolicyRule | None = None,
    may_park: bool = False,
    asked: Event | None = None,
) -> ToolCall | ToolResult | Parked:
    """Announce ``call`` (unless ``asked`` did before it parked), wait for the decision
    and record it. Returns the call to run (arguments possibly edited) or the refusal
    the model will read; ``PARKED`` when ``may_park`` and nobody decided yet. The wait
    is a span of its own, inside the tool call's; its time-out runs from the request
    (``rule``'s, else the tool's, else the agent's), across parking."""
    broker = ctx.invocation.approvals
    if asked is None or asked.approval is None:
        timeout_s, on_timeout = (
            policy.for_call(call.name, rule.timeout_s, rule.on_timeout)
            if rule is not None
            else policy.for_call(call.name)
        )
        info = ApprovalInfo(
            call_id=call.id,
            tool=call.name,
            args=call.args,
            args_hash=args_hash(call.name, call.args),
            args_schema=schema,
            timeout_s=timeout_s,
            on_timeout=on_timeout,
        )
    else:
        info = asked.approval
        timeout_s, on_timeout = policy.for_call(call.name, info.timeout_s, info.on_timeout)
    with broker.expect(call, session_id=ctx.session_id) as pending:
        if may_park:  # a decision arriving from now on is the host's to keep
            broker.park(call, session_id=ctx.session_id)
        if asked is None:
            asked = ctx.event(
                EventType.APPROVAL_REQUEST,
                approval=info,
                span_id=new_id(),
                parent_span_id=tool_span,
            )
            await ctx.event_callback(asked)
        left = timeout_s - (utc_now() - asked.created_at).total_seconds()
        if may_park and left > 0 and not pending.future.done():
            return PARKED
        reply = await pending.wait(max(left, 0.0))
    decision = reply if isinstance(reply, ApprovalDecision) else None
    if decision is None:
        reason = f"nobody decided within {timeout_s:g}s"
        outcome = info.model_copy(
            update={
                "decision": on_timeout,
                "decided_by": "timeout",
                "reason": reason,
                "args_schema": None,
            }
        )
    else:
        outcome = info.model_copy(
            update={
                "decision": decision.decision,
                "edited_args": decision.edited_args,
                "reason": decision.reason,
                "decided_by": decision.decided_by,
                "args_schema": None,
            }
        )
    decided = ctx.event(
        EventType.APPROVAL_DECISION,
        approval=outcome,
        started_at=asked.created_at,
        span_id=asked.span_id,
        parent_span_id=tool_span,
    )
    await ctx.event_callback(decided)
    if outcome.decision == "deny":
        why = f" Reason: {outcome.reason}" if outcome.reason else ""
        refusal = f"denied: a person declined this call to {call.name!r}; it did not run.{why}"
        return error_result(call, refusal)
    if outcome.edited_args is not None:
        return call.model_copy(update={"args": outcome.edited_args})
    return call


def error_result(call: ToolCall, message: str) -> ToolResult:
    return ToolResult(call_id=call.id, name=call.name, output=message, is_error=True)
