"""Calling a tool directly, with a context built by a real run."""

from __future__ import annotations

from typing import Any

from agents_core import Event, FunctionTool, LlmAgent, Runner, ScriptedModel, ToolResponsePart
from agents_core.exceptions import ToolError
from agents_core.sessions import InMemorySessionService
from agents_core.testing import collect, reply, tool_call
from agents_core.tools.base import BaseTool, ToolContext, render_output

_captured: list[ToolContext] = []


async def tool_context() -> ToolContext:
    """A ``ToolContext`` exactly as the step loop builds one, captured once from a run.

    The tools under test never use their context, so one finished run's serves all calls.
    """
    if not _captured:

        def capture(context: ToolContext) -> str:
            _captured.append(context)
            return "captured"

        model = ScriptedModel([tool_call("capture"), reply("done")])
        agent = LlmAgent("probe", model=model, tools=[FunctionTool(capture)])
        runner = Runner(agent, session_service=InMemorySessionService())
        await collect(runner.astream(user_id="user", session_id="probe", message="go"))
    return _captured[0]


async def invoke(tool: BaseTool, **args: Any) -> Any:
    """The tool's return value; errors propagate."""
    return await tool.arun(args, await tool_context())


async def call(tool: BaseTool, **args: Any) -> str:
    """What the model would read: the rendered output, or ``code: message`` on error."""
    try:
        return render_output(await invoke(tool, **args))
    except ToolError as exc:
        return f"{exc.code}: {exc.message}"


def tool_responses(events: list[Event]) -> list[ToolResponsePart]:
    """Every tool result of a run, in order."""
    return [part for e in events for part in e.parts if isinstance(part, ToolResponsePart)]
