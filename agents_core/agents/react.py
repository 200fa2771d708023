"""``ReActAgent``: thought, action, observation, as structured output.

The model never uses native tool calling: each reply is one JSON object holding a
thought and either an action or a final answer. That works with any chat model, and
every step is stored as ordinary events, so history, the UI and exports need nothing new.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator, Iterable, Mapping, Sequence
from contextlib import aclosing
from typing import Any

from pydantic import Field, ValidationError, model_validator

from agents_core._step_loop import ModelTurn, message_event, stream_model_call
from agents_core._tool_round import raise_for_failures, response_event, run_tool_calls
from agents_core.agents.base import BaseAgent
from agents_core.agents.llm import InstructionProvider, LlmAgent, ToolLike
from agents_core.approvals import ApprovalPolicy
from agents_core.context import Context
from agents_core.contracts import Contract, ToolCall
from agents_core.events import Event, EventActions, EventType, ThinkingPart, ToolCallPart, new_id
from agents_core.exceptions import LimitExceededError, ModelOutputError
from agents_core.failures import FailurePolicy
from agents_core.history import build_history
from agents_core.hooks import Hook
from agents_core.llm.contracts import BaseLlm, ChatMessage, LlmRequest, LlmResponse
from agents_core.pausing import pause_point
from agents_core.policies import PolicyRule
from agents_core.tools.base import BaseTool

__all__ = ["ReActAction", "ReActAgent", "ReActStep", "parse_step"]


class ReActAction(Contract):
    tool: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)


class ReActStep(Contract):
    """One model reply: a thought, then exactly one of an action and a final answer."""

    thought: str = ""
    action: ReActAction | None = None
    final_answer: str | None = None

    @model_validator(mode="after")
    def _one_outcome(self) -> ReActStep:
        if (self.action is None) == (self.final_answer is None):
            raise ValueError("give exactly one of 'action' and 'final_answer'")
        if self.final_answer is not None and not self.final_answer.strip():
            raise ValueError("'final_answer' must not be empty")
        return self


_FENCED = re.compile(r"^```[A-Za-z]*\s*(.*?)\s*```$", re.S)


def parse_step(text: str) -> ReActStep:
    """Parse a reply, tolerating a code fence or prose around the JSON object.

    Raises:
        ValidationError: the reply holds no valid step.
    """
    text = text.strip()
    fenced = _FENCED.match(text)
    if fenced:
        text = fenced.group(1)
    else:
        start, end = text.find("{"), text.rfind("}")
        if 0 <= start < end:
            text = text[start : end + 1]
    return ReActStep.model_validate_json(text)


PROTOCOL = """\
Solve the task step by step. Reply with exactly one JSON object and nothing else.
To use a tool: {"thought": "<your reasoning>", "action": {"tool": "<tool name>", "args": {...}}}
To answer: {"thought": "<your reasoning>", "final_answer": "<the answer for the user>"}
After each action you receive its observation; use one action per reply."""


class ReActAgent(LlmAgent):
    """An agent that reasons in explicit steps, without native tool calling.

    Every model reply must be a ``ReActStep`` JSON object. A step with an action is
    stored as an ``agent_message`` holding a ``ThinkingPart`` (the thought) and a
    ``ToolCallPart`` (the action), followed by the tool's ``tool_response`` (the
    observation); the final answer is a normal ``agent_message`` with text. A reply
    that is not a valid step gets one corrective retry; a second invalid reply is a
    ``ModelOutputError``. ``max_iterations`` bounds the steps, ``output_key`` saves the
    final answer to state, and sub-agents can be reached with ``transfer_to_agent``.
    ``hooks``, ``policies``, ``approval``, ``tool_failures`` and ``on_failure`` work as
    for ``LlmAgent``.
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
        hooks: Sequence[Hook] = (),
        tool_failures: Mapping[str, FailurePolicy | str] | None = None,
        on_failure: FailurePolicy | str | None = None,
        policies: Sequence[PolicyRule] = (),
        approval: ApprovalPolicy | None = None,
    ) -> None:
        super().__init__(
            name,
            model=model,
            instruction=instruction,
            description=description,
            tools=tools,
            output_key=output_key,
            max_iterations=max_iterations,
            sub_agents=sub_agents,
            hooks=hooks,
            tool_failures=tool_failures,
            on_failure=on_failure,
            policies=policies,
            approval=approval,
        )

    async def _astream(self, ctx: Context) -> AsyncGenerator[Event]:
        for _ in range(self.max_iterations):
            async for held in pause_point(ctx):  # a paused run waits here, between steps
                yield held
            ctx.budget.charge_step()
            step, turn = await self._next_step(ctx)
            if step.action is None:
                yield self._answer_event(ctx, step, turn)
                return
            call = ToolCall(id=f"react_{new_id()}", name=step.action.tool, args=step.action.args)
            message = message_event(ctx, _as_turn(turn, thinking=step.thought, tool_calls=[call]))
            yield message
            [outcome] = await run_tool_calls(ctx, self._tools_for(), message, control=self.control)
            yield response_event(ctx, outcome)
            raise_for_failures([outcome])
            if outcome.effects.transfer_to_agent:
                async for event in self._transfer(ctx, outcome.effects.transfer_to_agent):
                    yield event
                return
            if ctx.end_invocation or outcome.effects.escalate:
                return
        raise LimitExceededError(
            "max_iterations",
            f"agent {self.name!r} took {self.max_iterations} steps (max_iterations) "
            "without reaching a final answer",
        )

    def build_request(self, ctx: Context) -> LlmRequest:
        """Instruction plus the step protocol and tool list; past steps as JSON replies
        and observations as user messages. No tool schemas are sent."""
        instruction = "\n\n".join(
            p for p in (self.render_instruction(ctx), PROTOCOL, self._tool_list()) if p
        )
        history = build_history(
            ctx.session.events,
            agent_name=self.name,
            branch=ctx.branch,
            tool_result_max_chars=ctx.run_config.tool_result_max_chars,
        )
        thoughts = _thoughts_by_call(ctx.session.events, self.name)
        return LlmRequest(system_instruction=instruction, messages=_transcript(history, thoughts))

    async def _next_step(self, ctx: Context) -> tuple[ReActStep, ModelTurn]:
        request = self.build_request(ctx)
        first = await self._call(ctx, request)
        try:
            return parse_step(first.complete.text), first
        except ValidationError as exc:
            problems = _problems(exc)
        retry = request.model_copy(
            update={"messages": [*request.messages, *_correction(first.complete.text, problems)]}
        )
        second = await self._call(ctx, retry)
        both = _combine(first, second)
        try:
            return parse_step(second.complete.text), both
        except ValidationError as exc:
            raise ModelOutputError(
                f"agent {self.name!r}: the model's reply is not a valid ReAct step, even "
                f"after a corrective retry ({_problems(exc)})"
            ) from exc

    async def _call(self, ctx: Context, request: LlmRequest) -> ModelTurn:
        turn = ModelTurn()
        # Raw JSON tokens are not shown as partial events; the parsed step is.
        stream = stream_model_call(ctx, self.model, request, turn, self.hooks, self.policy)
        async with aclosing(stream) as chunks:
            async for _ in chunks:
                pass
        return turn

    def _answer_event(self, ctx: Context, step: ReActStep, turn: ModelTurn) -> Event:
        answer = step.final_answer or ""
        actions = EventActions()
        if self.output_key:
            actions = EventActions(state_delta={self.output_key: answer})
        return message_event(
            ctx, _as_turn(turn, thinking=step.thought, text=answer), actions=actions
        )

    def _tool_list(self) -> str:
        tools = self._tools_for().values()
        if not tools:
            return "You have no tools: reply with a final_answer."
        return "Tools:\n" + "\n".join(_describe(tool) for tool in tools)


def _describe(tool: BaseTool) -> str:
    args = json.dumps(tool.parameters_schema(), ensure_ascii=False, sort_keys=True)
    return f"- {tool.name}: {tool.description or 'no description'}\n  args (JSON Schema): {args}"


def _as_turn(turn: ModelTurn, **fields: Any) -> ModelTurn:
    """The stored form of a step: the parsed parts, with the call's usage and latency."""
    complete = turn.complete
    response = LlmResponse(
        usage=complete.usage, model_name=complete.model_name, replayed=complete.replayed, **fields
    )
    return ModelTurn(
        response=response,
        latency_ms=turn.latency_ms,
        span_id=turn.span_id,
        started_at=turn.started_at,
        hooks=turn.hooks,
        model=turn.model,
        cached=turn.cached,
    )


def _combine(first: ModelTurn, second: ModelTurn) -> ModelTurn:
    """The retried call, charged with both calls' usage and latency."""
    usages = [t.complete.usage for t in (first, second) if t.complete.usage is not None]
    usage = usages[0] + usages[1] if len(usages) == 2 else (usages[0] if usages else None)
    response = second.complete.model_copy(update={"usage": usage})
    return ModelTurn(
        response=response,
        latency_ms=first.latency_ms + second.latency_ms,
        span_id=first.span_id,
        started_at=first.started_at,
        hooks=[*first.hooks, *second.hooks],
        # One event names one model: the retry's (a chain may have moved on by then).
        model=second.model,
        cached=first.cached and second.cached,
    )


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'reply'}: {err['msg']}" for err in exc.errors()
    )


def _correction(reply: str, problems: str) -> list[ChatMessage]:
    return [
        ChatMessage(role="assistant", text=reply),
        ChatMessage(
            role="user",
            text=f"That reply is not a valid step ({problems}). Reply again with exactly one "
            "JSON object with a thought and either an action or a final_answer.",
        ),
    ]


def _thoughts_by_call(events: Iterable[Event], agent_name: str) -> dict[str, str]:
    """The thought behind each of this agent's past actions, keyed by call id."""
    thoughts: dict[str, str] = {}
    for event in events:
        if event.type is not EventType.AGENT_MESSAGE or event.author != agent_name:
            continue
        thought = "".join(p.text for p in event.parts if isinstance(p, ThinkingPart))
        for part in event.parts:
            if isinstance(part, ToolCallPart):
                thoughts[part.call_id] = thought
    return thoughts


def _transcript(history: list[ChatMessage], thoughts: dict[str, str]) -> list[ChatMessage]:
    """Native tool turns rewritten as the JSON steps and observations the model wrote
    and read, so the model sees its own protocol."""
    messages: list[ChatMessage] = []
    for message in history:
        if message.role == "assistant":
            messages.append(ChatMessage(role="assistant", text=_past_step(message, thoughts)))
        elif message.role == "tool":
            text = f"Observation from {message.name}: {message.text}"
            messages.append(ChatMessage(role="user", text=text))
        else:
            messages.append(message)
    return messages


def _past_step(message: ChatMessage, thoughts: dict[str, str]) -> str:
    if not message.tool_calls:
        return json.dumps({"final_answer": message.text}, ensure_ascii=False)
    return "\n".join(
        ReActStep(
            thought=thoughts.get(call.id, ""), action=ReActAction(tool=call.name, args=call.args)
        ).model_dump_json(exclude_none=True)
        for call in message.tool_calls
    )
