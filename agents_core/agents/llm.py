"""``LlmAgent``: a model in a loop with tools."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass

from agents_core._step_loop import (
    ModelTurn,
    message_event,
    response_event,
    run_tool_calls,
    stream_model_call,
)
from agents_core.agents.base import BaseAgent
from agents_core.approvals import ApprovalPolicy
from agents_core.context import Context, ReadonlyContext, fill_instruction
from agents_core.contracts import ToolCall
from agents_core.events import Event, EventActions
from agents_core.exceptions import ConfigurationError, LimitExceededError
from agents_core.history import HistoryBuilder
from agents_core.llm.contracts import BaseLlm, LlmRequest
from agents_core.planners.base import BasePlanner
from agents_core.tools.base import BaseTool
from agents_core.tools.control import TransferTool
from agents_core.tools.function import FunctionTool

InstructionProvider = Callable[[ReadonlyContext], str]
HISTORY_CACHE_SIZE = 256
"""Sessions (and branches) whose history an agent keeps between model calls."""
ToolLike = BaseTool | Callable[..., object]


class LlmAgent(BaseAgent):
    """Calls its model, runs the tools it asks for, and repeats until the model answers
    without tool calls or ``max_iterations`` model calls have been made.

    ``instruction`` may contain ``{key}`` placeholders filled from session state
    (unknown keys stay literal), or be a function of a ``ReadonlyContext``.
    With ``output_key``, the final text is saved to state through a state delta.
    Tool calls covered by ``approval`` wait for a person's decision before they run.
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
        planner: BasePlanner | None = None,
        approval: ApprovalPolicy | None = None,
        sub_agents: Sequence[BaseAgent] = (),
    ) -> None:
        super().__init__(name, description=description, sub_agents=sub_agents)
        if max_iterations < 1:
            raise ConfigurationError(f"agent {name!r}: max_iterations must be at least 1")
        self.model = model
        self.instruction = instruction
        self.output_key = output_key
        self.max_iterations = max_iterations
        self.planner = planner
        self.approval = approval
        self._histories: dict[tuple[str, str | None], HistoryBuilder] = {}
        self.tools: dict[str, BaseTool] = {}
        for tool in [*tools, *(planner.tools() if planner else ())]:
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
            if self.planner is not None:
                turn.response = self.planner.process_response(ctx.readonly(), turn.complete)
            response = turn.complete
            actions = EventActions()
            if self.output_key and not response.tool_calls and response.text:
                actions = EventActions(state_delta={self.output_key: response.text})
            yield message_event(ctx, turn, actions=actions)
            if not response.tool_calls:
                if self.planner is None or not self.planner.pending_tasks(ctx.readonly()):
                    return
                continue
            step = _ToolStep()
            async for event in self._call_tools(ctx, response.tool_calls, step):
                yield event
            if step.finished:
                return
        raise LimitExceededError(
            "max_iterations",
            f"agent {self.name!r} made {self.max_iterations} model calls (max_iterations) "
            "without reaching a final answer",
        )

    async def _call_tools(
        self, ctx: Context, calls: list[ToolCall], step: _ToolStep
    ) -> AsyncGenerator[Event]:
        """Run the model's tool calls and yield their responses, then hand over if one
        transferred; ``step.finished`` tells whether this agent's turn is over."""
        outcomes = await run_tool_calls(ctx, self._tools_for(), calls, self.approval)
        for outcome in outcomes:
            yield response_event(ctx, outcome)
        transfer = next(
            (o.effects.transfer_to_agent for o in outcomes if o.effects.transfer_to_agent), None
        )
        if transfer is not None:
            async for event in self._transfer(ctx, transfer):
                yield event
            step.finished = True
            return
        step.finished = ctx.end_invocation or any(o.effects.escalate for o in outcomes)

    def transfer_targets(self) -> list[BaseAgent]:
        """Agents this one may hand over to: its sub-agents and, when its parent is an
        ``LlmAgent``, that parent and its peers. A workflow agent's child has a fixed
        place in its workflow: handing over to the workflow would restart it."""
        targets = list(self.sub_agents)
        parent = self.parent_agent
        if isinstance(parent, LlmAgent):
            targets.append(parent)
            targets.extend(a for a in parent.sub_agents if a is not self)
        return targets

    def _tools_for(self) -> dict[str, BaseTool]:
        targets = self.transfer_targets()
        if not targets:
            return self.tools
        transfer = TransferTool([(a.name, a.description) for a in targets])
        return {**self.tools, transfer.name: transfer}

    async def _transfer(self, ctx: Context, target_name: str) -> AsyncGenerator[Event]:
        target = next((a for a in self.transfer_targets() if a.name == target_name), None)
        if target is None:  # TransferTool validated the name; the tree changed under us
            raise ConfigurationError(f"agent {self.name!r} cannot transfer to {target_name!r}")
        ctx.invocation.transfers += 1
        limit = ctx.run_config.max_transfers
        if limit is not None and ctx.invocation.transfers > limit:
            raise LimitExceededError(
                "max_transfers", f"more than {limit} agent transfers in one turn (max_transfers)"
            )
        async with aclosing(target.astream(ctx)) as events:
            async for event in events:
                yield event

    def build_request(self, ctx: Context) -> LlmRequest:
        """The request for the next model call: instruction, history and tool schemas,
        then whatever the planner adds for this turn."""
        # Every part is already a validated contract (messages from the history builder,
        # schemas from the tools); re-validating thousands of messages on every call
        # would make long sessions quadratic.
        request = LlmRequest.model_construct(
            system_instruction=self.render_instruction(ctx) or None,
            messages=self._history(ctx).messages(ctx.invocation_id, ctx.user_input),
            tools=[tool.schema() for tool in self._tools_for().values()],
        )
        if self.planner is not None:
            extra = self.planner.build_planning_instruction(ctx.readonly(), request)
            if extra:
                request = request.with_instruction(extra)
        return request

    def _history(self, ctx: Context) -> HistoryBuilder:
        """This session's history builder, brought up to date: kept between model calls
        and turns, so each call only converts the events that are new."""
        key = (ctx.session_id, ctx.branch)
        events = ctx.session.events
        builder = self._histories.pop(key, None)
        if builder is None or not builder.continues(events):
            limit = ctx.run_config.tool_result_max_chars
            builder = HistoryBuilder(self.name, ctx.branch, limit)
        self._histories[key] = builder  # most recently used last
        while len(self._histories) > HISTORY_CACHE_SIZE:
            self._histories.pop(next(iter(self._histories)))
        return builder.update(events)

    def render_instruction(self, ctx: Context) -> str:
        if callable(self.instruction):
            return self.instruction(ctx.readonly())
        return fill_instruction(self.instruction, ctx.state)


@dataclass(slots=True)
class _ToolStep:
    """Whether the tool calls of one model turn ended the agent's turn."""

    finished: bool = False
