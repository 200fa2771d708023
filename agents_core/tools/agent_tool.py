"""``AgentTool``: another agent, called like a tool."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from agents_core.events import Event, EventType
from agents_core.exceptions import ToolExecutionError
from agents_core.policies import PolicyTarget
from agents_core.tools import nested
from agents_core.tools.base import BaseTool, ToolContext

if TYPE_CHECKING:
    from agents_core.agents.base import BaseAgent


class AgentTool(BaseTool):
    """Runs ``agent`` on the request the model writes and returns its final answer.

    The child runs on its own branch (``<branch>.<agent>@<call id>``), so concurrent
    calls never see each other's work. Its events stream into the parent's run as they
    happen, through the context's event callback, and are stored like any other.
    A child that failed and went on (its ``on_failure``) makes an error result that says
    why; one whose policy is ``fail`` ends the run.
    """

    timeout_s = None  # the child is bounded by the run's own limits

    def __init__(self, agent: BaseAgent, *, description: str | None = None) -> None:
        self.agent = agent
        self.name = agent.name
        self.description = description or agent.description or f"Ask the {agent.name} agent."

    def policy_subject(self, args: Mapping[str, Any]) -> tuple[PolicyTarget, str]:
        return "agent", self.agent.name

    def parameters_schema(self) -> dict[str, Any]:
        return dict(nested.REQUEST_SCHEMA)

    async def arun(self, args: dict[str, Any], tool_context: ToolContext) -> str:
        request = nested.request_of(args)
        ctx = nested.sub_run_context(tool_context, self.agent.name, request)
        final: str | None = None
        failed: str | None = None
        async with aclosing(self.agent.astream(ctx)) as events:
            async for event in events:
                await tool_context.emit(event)
                if event.is_final_response():
                    final = event.text
                elif _own_failure(event, self.agent.name, ctx.branch):
                    failed = event.error.message if event.error else None
        if failed is not None:
            raise ToolExecutionError(failed)
        if final is None:
            raise ToolExecutionError(f"agent {self.agent.name!r} finished without an answer")
        return final


def _own_failure(event: Event, agent: str, branch: str | None) -> bool:
    """The error event the agent ended with when its failure policy let it go on."""
    return event.type is EventType.ERROR and event.author == agent and event.branch == branch
