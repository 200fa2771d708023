"""Control-flow tools: transferring to another agent and leaving a loop."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agents_core.exceptions import ToolArgumentsError
from agents_core.policies import PolicyTarget
from agents_core.tools.base import BaseTool, ToolContext

TRANSFER_TOOL_NAME = "transfer_to_agent"
EXIT_LOOP_TOOL_NAME = "exit_loop"


class TransferTool(BaseTool):
    """Hands the conversation to another agent. The calling agent stops after this call."""

    name = TRANSFER_TOOL_NAME
    side_effects = False
    timeout_s = None

    def __init__(self, targets: Sequence[tuple[str, str]]) -> None:
        """``targets``: (agent name, description) pairs the model may transfer to."""
        self.targets = dict(targets)
        lines = [f"- {name}: {desc or 'no description'}" for name, desc in self.targets.items()]
        self.description = (
            "Transfer the conversation to the agent best suited to answer. "
            "Available agents:\n" + "\n".join(lines)
        )

    def policy_subject(self, args: Mapping[str, Any]) -> tuple[PolicyTarget, str]:
        return "agent", str(args.get("agent_name", ""))

    def parameters_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "agent_name": {
                    "type": "string",
                    "enum": sorted(self.targets),
                    "description": "The agent to hand the conversation to.",
                }
            },
            "required": ["agent_name"],
            "additionalProperties": False,
        }

    async def arun(self, args: dict[str, Any], tool_context: ToolContext) -> str:
        target = args.get("agent_name")
        if set(args) != {"agent_name"} or not isinstance(target, str):
            raise ToolArgumentsError("expected exactly one string argument: agent_name")
        if target not in self.targets:
            known = ", ".join(sorted(self.targets))
            raise ToolArgumentsError(f"no agent named {target!r}; choose one of: {known}")
        tool_context.effects.transfer_to_agent = target
        return f"Transferred to {target}."


class ExitLoopTool(BaseTool):
    """Ends the enclosing ``LoopAgent`` (sets ``escalate`` on the tool's response)."""

    name = EXIT_LOOP_TOOL_NAME
    side_effects = False
    description = "Call this when the loop's work is done, to stop iterating."
    timeout_s = None

    def parameters_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {}, "additionalProperties": False}

    async def arun(self, args: dict[str, Any], tool_context: ToolContext) -> str:
        if args:
            raise ToolArgumentsError("exit_loop takes no arguments")
        tool_context.effects.escalate = True
        return "Loop exited."


exit_loop_tool = ExitLoopTool()
