"""``LlmAgent``: a model in a loop with tools."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from agents_core._step_loop import ModelTurn, message_event, stream_model_call
from agents_core._tool_round import (
    ToolControl,
    raise_for_failures,
    response_event,
    run_tool_calls,
)
from agents_core.agents.base import BaseAgent
from agents_core.approvals import ApprovalPolicy, RunParked
from agents_core.blobs import with_blobs
from agents_core.context import Context, ReadonlyContext, fill_instruction
from agents_core.contracts import built
from agents_core.events import ErrorInfo, Event, EventActions, EventType, StructuredPart, TextPart
from agents_core.exceptions import ConfigurationError, LimitExceededError, OutputSchemaError
from agents_core.failures import FailurePolicy
from agents_core.history import HistoryBuilder, HistoryCache
from agents_core.hooks import Hook, HookStack
from agents_core.llm.contracts import BaseLlm, ChatMessage, LlmRequest
from agents_core.pausing import pause_point
from agents_core.planners.base import BasePlanner
from agents_core.policies import PolicyEngine, PolicyRule, approval_rules
from agents_core.resume import in_doubt_reports, retry_message
from agents_core.structured import OutputInvalid, OutputSchema
from agents_core.tools.base import BaseTool
from agents_core.tools.control import TransferTool
from agents_core.tools.function import FunctionTool

InstructionProvider = Callable[[ReadonlyContext], str]
ToolLike = BaseTool | Callable[..., object]
SchemaLike = OutputSchema | dict[str, Any] | type[BaseModel]
MAX_OUTPUT_RETRIES = 5


class LlmAgent(BaseAgent):
    """Calls its model, runs the tools it asks for, and repeats until the model answers
    without tool calls or ``max_iterations`` model calls have been made.

    ``instruction`` may contain ``{key}`` placeholders filled from session state
    (unknown keys stay literal), or be a function of a ``ReadonlyContext``.
    With ``output_key``, the final text is saved to state through a state delta.
    ``policies`` are rules on its model, tool and sub-agent calls
    (``agents_core.policies``): allow, deny, rewrite, or ask a person, who has
    ``approval``'s time to decide (the tools ``approval`` names always ask).
    Plain functions in ``tools`` are wrapped with ``function_tool``.

    With ``output_schema`` (a JSON Schema or a pydantic model; ``output_key`` required),
    the model is told the shape of its final answer, which must parse as JSON and
    match: an answer that does not is recorded as a non-fatal ``output_invalid`` error
    and the model is asked again, with the problems in words, up to ``output_retries``
    times; then it is an ``OutputSchemaError``. A matching answer's message carries the
    value as a ``StructuredPart``, and ``output_key`` stores the value, not the text.
    ``hooks`` run, in order, around every model and tool call (``agents_core.hooks``);
    ``tool_failures`` names the failure policy of a tool's calls, by tool name, and
    ``on_failure`` the agent's own (``agents_core.failures``). ``histories`` keeps the
    sessions' histories it built: its own by default, or one that agents built afresh
    for each run share (``HistoryCache``).
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
        policies: Sequence[PolicyRule] = (),
        sub_agents: Sequence[BaseAgent] = (),
        output_schema: SchemaLike | None = None,
        output_retries: int = 2,
        hooks: Sequence[Hook] = (),
        tool_failures: Mapping[str, FailurePolicy | str] | None = None,
        on_failure: FailurePolicy | str | None = None,
        histories: HistoryCache | None = None,
    ) -> None:
        super().__init__(
            name, description=description, sub_agents=sub_agents, on_failure=on_failure
        )
        if max_iterations < 1:
            raise ConfigurationError(f"agent {name!r}: max_iterations must be at least 1")
        if output_schema is not None and not output_key:
            raise ConfigurationError(f"agent {name!r}: an output_schema needs an output_key")
        if not 0 <= output_retries <= MAX_OUTPUT_RETRIES:
            raise ConfigurationError(
                f"agent {name!r}: output_retries must be between 0 and {MAX_OUTPUT_RETRIES}"
            )
        self.model = model
        self.instruction = instruction
        self.output_key = output_key
        self.max_iterations = max_iterations
        self.planner = planner
        self.approval = approval or ApprovalPolicy()
        self.policy = PolicyEngine.of([*policies, *approval_rules(self.approval.tools)])
        self.output_schema = None if output_schema is None else OutputSchema.of(output_schema)
        self.output_retries = output_retries
        self.hooks = HookStack(tuple(hooks))
        failures = {tool: FailurePolicy(p) for tool, p in (tool_failures or {}).items()}
        self.control = ToolControl(self.hooks, failures, self.policy, self.approval)
        self.histories = HistoryCache() if histories is None else histories
        self.tools: dict[str, BaseTool] = {}
        for tool in [*tools, *(planner.tools() if planner else ())]:
            self.add_tool(tool)

    def add_tool(self, tool: ToolLike) -> None:
        resolved = tool if isinstance(tool, BaseTool) else FunctionTool(tool)
        if resolved.name in self.tools:
            raise ConfigurationError(f"agent {self.name!r} has two tools named {resolved.name!r}")
        self.tools[resolved.name] = resolved

    def _astream(self, ctx: Context) -> AsyncGenerator[Event]:
        if ctx.invocation.resume is None:  # nothing to pick up: no generator layer between
            return self._steps(ctx)
        return self._resumed(ctx)

    async def _resumed(self, ctx: Context) -> AsyncGenerator[Event]:
        """A resumed turn: what the interrupted one left (``_pick_up``), then the steps."""
        picked_up = _ToolStep()
        async with aclosing(self._pick_up(ctx, picked_up)) as resumed:
            async for event in resumed:
                yield event
        if picked_up.finished:
            return
        async with aclosing(self._steps(ctx)) as steps:  # closed at once when stopped
            async for event in steps:
                yield event

    async def _steps(self, ctx: Context) -> AsyncGenerator[Event]:
        """Model calls and the tool rounds they ask for, until a final answer."""
        for _ in range(self.max_iterations):
            async for held in pause_point(ctx):  # a paused run waits here, between steps
                yield held
            ctx.budget.charge_step()
            answer = _Answer()
            async for event in self._answer(ctx, answer):
                yield event
            response = answer.turn.complete
            actions = None
            if self.output_key and not response.tool_calls and response.text:
                value = response.text if answer.structured is None else answer.structured.value
                actions = EventActions(state_delta={self.output_key: value})
            message = message_event(ctx, answer.turn, structured=answer.structured, actions=actions)
            yield message
            if not response.tool_calls:
                if self.planner is None or not self.planner.pending_tasks(ctx.readonly()):
                    return
                continue
            step = _ToolStep()
            async for event in self._call_tools(ctx, message, step):
                yield event
            if step.finished:
                return
        raise LimitExceededError(
            "max_iterations",
            f"agent {self.name!r} made {self.max_iterations} model calls (max_iterations) "
            "without reaching a final answer",
        )

    async def _pick_up(self, ctx: Context, step: _ToolStep) -> AsyncGenerator[Event]:
        """Resuming an interrupted turn (``agents_core.resume``): report the calls it
        left in doubt, as their failure policies say, and run again those it closed
        before they started; a turn that is not resumed has nothing to pick up."""
        resume = ctx.invocation.resume
        if resume is None:
            return
        parked = resume.take_parked(self.name, ctx.branch)
        if parked:  # they wait on a person's decision again, as the same calls
            carrier = ctx.event(EventType.AGENT_MESSAGE, parts=[p.call for p in parked])
            asked = {p.call.call_id: p.asked for p in parked}
            async for event in self._call_tools(ctx, carrier, step, asked=asked):
                yield event
            if step.finished:
                return
        closed = resume.take_calls(self.name, ctx.branch)
        if not closed:
            return
        for report in in_doubt_reports(ctx, closed, self.control.failures):
            yield report
        retry = retry_message(ctx, closed)
        if retry is not None:
            yield retry
            async for event in self._call_tools(ctx, retry, step):
                yield event

    async def _answer(self, ctx: Context, answer: _Answer) -> AsyncGenerator[Event]:
        """One model call (through the hooks, then the planner) into ``answer``; with an
        output schema, a final answer that does not match is recorded and asked again."""
        request = await with_blobs(self.build_request(ctx), self.model, ctx.invocation.blobs)
        for attempt in range(1, self.output_retries + 2):
            answer.turn = turn = ModelTurn()
            calling = stream_model_call(ctx, self.model, request, turn, self.hooks, self.policy)
            async for partial in calling:
                yield partial
            if self.planner is not None:
                turn.response = self.planner.process_response(ctx.readonly(), turn.complete)
            response = turn.complete
            if self.output_schema is None or response.tool_calls:
                return
            try:
                answer.structured = StructuredPart(value=self.output_schema.parse(response.text))
                return
            except OutputInvalid as exc:
                problems = exc.problems
            if attempt > self.output_retries:
                raise OutputSchemaError(
                    f"agent {self.name!r}: the answer does not match the output schema after "
                    f"{self.output_retries} corrective re-prompt(s): {'; '.join(problems)}"
                )
            yield self._rejected(ctx, turn, problems, attempt)
            correction = [
                ChatMessage(role="assistant", text=response.text),
                ChatMessage(role="user", text=OutputSchema.correction(problems)),
            ]
            request = request.model_copy(update={"messages": [*request.messages, *correction]})

    def _rejected(self, ctx: Context, turn: ModelTurn, problems: list[str], attempt: int) -> Event:
        """The record of an answer that did not match: its text, usage and problems."""
        error = ErrorInfo(
            code="output_invalid",
            message=f"answer {attempt} of at most {self.output_retries + 1} does not match the "
            f"output schema: {'; '.join(problems)}. Asked again.",
            failure="non_fatal",
        )
        text = turn.complete.text
        return ctx.event(
            EventType.ERROR,
            parts=[TextPart(text=text)] if text else [],
            error=error,
            usage=turn.complete.usage,
            latency_ms=round(turn.latency_ms, 3),
            hooks=list(turn.hooks),
        )

    async def _call_tools(
        self,
        ctx: Context,
        message: Event,
        step: _ToolStep,
        asked: dict[str, Event] | None = None,
    ) -> AsyncGenerator[Event]:
        """Run the tool calls of the model's ``message`` and yield their responses, then
        hand over if one transferred; ``step.finished`` tells whether this agent's turn
        is over. Calls that parked on a person (``asked``: calls that parked before and
        wait again) stop the turn with ``RunParked`` once the others responded."""
        outcomes = await run_tool_calls(
            ctx, self._tools_for(), message, control=self.control, may_park=True, asked=asked
        )
        for outcome in outcomes:
            if not outcome.parked:
                yield response_event(ctx, outcome)
        raise_for_failures(outcomes)
        if parked := [o.result.call_id for o in outcomes if o.parked]:
            raise RunParked(parked)
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
        instruction = self.render_instruction(ctx)
        if self.output_schema is not None:
            instruction = "\n\n".join(
                p for p in (instruction, self.output_schema.instruction()) if p
            )
        request = built(
            LlmRequest,
            system_instruction=instruction or None,
            messages=self._history(ctx).messages(self._turn_of(ctx), ctx.user_input),
            tools=[tool.schema() for tool in self._tools_for().values()],
        )
        if self.planner is not None:
            extra = self.planner.build_planning_instruction(ctx.readonly(), request)
            if extra:
                request = request.with_instruction(extra)
        return request

    def _turn_of(self, ctx: Context) -> str:
        """The invocation whose start this agent's input belongs to: the current one,
        or, resuming, the one it first started in (so it is not shown its input twice)."""
        resume = ctx.invocation.resume
        if resume is None:
            return ctx.invocation_id
        return resume.history_invocation(self.name, ctx.branch, ctx.invocation_id)

    def _history(self, ctx: Context) -> HistoryBuilder:
        """This session's history builder, brought up to date: kept between model calls
        and turns (in ``histories``), so each call only converts the events that are new."""
        limit = ctx.run_config.tool_result_max_chars
        return self.histories.builder(ctx.session, self.name, ctx.branch, limit)

    def render_instruction(self, ctx: Context) -> str:
        if callable(self.instruction):
            return self.instruction(ctx.readonly())
        return fill_instruction(self.instruction, ctx.state)


@dataclass(slots=True)
class _Answer:
    """The model call an agent step settled on, and its answer's parsed value."""

    turn: ModelTurn = field(default_factory=ModelTurn)
    structured: StructuredPart | None = None


@dataclass(slots=True)
class _ToolStep:
    """Whether the tool calls of one model turn ended the agent's turn."""

    finished: bool = False
