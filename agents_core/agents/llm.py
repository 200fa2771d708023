"""``LlmAgent``: a model in a loop with tools."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Sequence

from agents_core._step_loop import ModelTurn, message_event, run_tool_calls, stream_model_call
from agents_core.agents.base import BaseAgent
from agents_core.context import Context, ReadonlyContext, fill_instruction
from agents_core.events import Event, EventActions, EventType, ToolResponsePart
from agents_core.exceptions import ConfigurationError, LimitExceededError
from agents_core.history import build_history
from agents_core.llm.contracts import BaseLlm, LlmRequest
from agents_core.tools.base import BaseTool
from agents_core.tools.function import FunctionTool

InstructionProvider = Callable[[ReadonlyContext], str]
ToolLike = BaseTool | Callable[..., object]


class LlmAgent(BaseAgent):
    """Calls its model, runs the tools it asks for, and repeats until the model answers
    without tool calls or ``max_iterations`` model calls have been made.

    ``instruction`` may contain ``{key}`` placeholders filled from session state
    (unknown keys stay literal), or be a function of a ``ReadonlyContext``.
    With ``output_key``, the final text is saved to state through a state delta.
    Plain functions in ``tools`` are wrapped with ``function_tool``.
    """

    def __init__(
        self,
        name: str,
        *,
        model: BaseLlm,
        instruction: str | InstructionProvider = "",
        description: str = "",
        tools: Sequence[ToolLike] = (),
        output_key: str | None = None,
        max_iterations: int = 10,
        sub_agents: Sequence[BaseAgent] = (),
    ) -> None:
        super().__init__(name, description=description, sub_agents=sub_agents)
        if max_iterations < 1:
            raise ConfigurationError(f"agent {name!r}: max_iterations must be at least 1")
        self.model = model
        self.instruction = instruction
        self.output_key = output_key
        self.max_iterations = max_iterations
        self.tools: dict[str, BaseTool] = {}
        for tool in tools:
            self.add_tool(tool)

    def add_tool(self, tool: ToolLike) -> None:
        resolved = tool if isinstance(tool, BaseTool) else FunctionTool(tool)
        if resolved.name in self.tools:
            raise ConfigurationError(f"agent {self.name!r} has two tools named {resolved.name!r}")
        self.tools[resolved.name] = resolved

    async def _astream(self, ctx: Context) -> AsyncGenerator[Event]:
        for _ in range(self.max_iterations):
            ctx.budget.charge_step()
            turn = ModelTurn()
            async for partial in stream_model_call(ctx, self.model, self.build_request(ctx), turn):
                yield partial
            response = turn.complete
            calls = response.tool_calls
            actions = EventActions()
            if self.output_key and not calls and response.text:
                actions = EventActions(state_delta={self.output_key: response.text})
            yield message_event(ctx, turn, actions=actions)
            if not calls:
                return
            for result, latency_ms in await run_tool_calls(ctx, self.tools, calls):
                part = ToolResponsePart(
                    call_id=result.call_id,
                    name=result.name,
                    result=result.output,
                    is_error=result.is_error,
                )
                yield ctx.event(
                    EventType.TOOL_RESPONSE, parts=[part], latency_ms=round(latency_ms, 3)
                )
            if ctx.end_invocation:
                return
        raise LimitExceededError(
            "max_iterations",
            f"agent {self.name!r} made {self.max_iterations} model calls (max_iterations) "
            "without reaching a final answer",
        )

    def build_request(self, ctx: Context) -> LlmRequest:
        """The request for the next model call: instruction, history and tool schemas."""
        return LlmRequest(
            system_instruction=self.render_instruction(ctx) or None,
            messages=build_history(
                ctx.session.events,
                agent_name=self.name,
                branch=ctx.branch,
                tool_result_max_chars=ctx.run_config.tool_result_max_chars,
            ),
            tools=[tool.schema() for tool in self.tools.values()],
        )

    def render_instruction(self, ctx: Context) -> str:
        if callable(self.instruction):
            return self.instruction(ctx.readonly())
        return fill_instruction(self.instruction, ctx.state)
