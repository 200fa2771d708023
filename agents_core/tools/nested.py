"""What the tools that run a sub-run share (``AgentTool``, ``A2aAgentTool``): the one
``request`` argument the model writes, and the context the sub-run's events carry, on
a branch of the call (``<branch>.<name>@<call id>``) inside the call's span, so the
timeline draws them nested under the call."""

from __future__ import annotations

from typing import Any

from agents_core.context import Context
from agents_core.exceptions import ToolArgumentsError
from agents_core.tools.base import ToolContext

REQUEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"request": {"type": "string", "description": "What the agent should do."}},
    "required": ["request"],
    "additionalProperties": False,
}


def request_of(args: dict[str, Any]) -> str:
    """The request the model wrote; ``ToolArgumentsError`` for anything else."""
    request = args.get("request")
    if set(args) != {"request"} or not isinstance(request, str) or not request.strip():
        raise ToolArgumentsError("expected one non-empty string argument: request")
    return request


def sub_run_context(tool_context: ToolContext, name: str, request: str) -> Context:
    """The context of the sub-run ``name`` that one call starts."""
    ctx = tool_context.context.for_branch(f"{name}@{tool_context.call.id}", user_input=request)
    if tool_context.span_id is not None:
        ctx = ctx.within(tool_context.span_id)
    return ctx
