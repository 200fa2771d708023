"""The spend guard: asked before each model call, it can refuse the call (the run ends
with ``budget_exceeded`` and the model is never called) and is told what each call
used, or that it used nothing known, once the call is over."""

from __future__ import annotations

from dataclasses import dataclass, field

from agents_core import (
    EventType,
    InMemorySessionService,
    LlmAgent,
    ScriptedModel,
    Usage,
    function_tool,
)
from agents_core.exceptions import BudgetExceededError, ModelRequestError
from agents_core.llm.resilience import BreakerRegistry
from agents_core.spend import CallEstimate
from agents_core.testing import ScriptedResponse, ScriptedToolCall
from tests.core.run_helpers import make_runner, run_turn, stored_events


@function_tool
def ping() -> str:
    return "pong"


@dataclass(slots=True)
class TokenGuard:
    """Allows calls while what they could use fits ``limit`` tokens."""

    limit: int
    estimates: list[CallEstimate] = field(default_factory=list)
    settled: list[Usage | None] = field(default_factory=list)
    spent: int = 0

    async def reserve(self, estimate: CallEstimate) -> TokenGuard:
        self.estimates.append(estimate)
        need = estimate.prompt_tokens + (estimate.max_output_tokens or 0)
        if self.spent + need > self.limit:
            raise BudgetExceededError("run_tokens", f"{self.spent} spent, limit {self.limit}")
        return self

    async def settle(self, usage: Usage | None) -> None:
        self.settled.append(usage)
        self.spent += usage.total_tokens if usage else 0


async def test_a_guard_refuses_the_call_that_could_pass_its_budget_before_it_is_made(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    step = ScriptedResponse(tool_calls=[ScriptedToolCall(name="ping", args={})])
    costly = step.model_copy(update={"usage": Usage(input_tokens=40, output_tokens=10)})
    model = ScriptedModel([costly], loop=True, max_answer_tokens=80)
    guard = TokenGuard(limit=150)
    runner = make_runner(LlmAgent("agent", model=model, tools=[ping]), sessions, breakers)
    runner.spend_guard = guard

    events = await run_turn(runner)

    assert len(model.requests) == 1  # the second call was refused, never sent
    assert [(e.agent, e.provider_key, e.max_output_tokens) for e in guard.estimates] == [
        ("agent", "scripted:scripted", 80)
    ] * 2
    assert guard.settled == [Usage(input_tokens=40, output_tokens=10)]
    error = events[-1].error
    assert events[-1].type is EventType.ERROR and error is not None
    assert (error.code, error.limit, error.terminal) == ("budget_exceeded", "run_tokens", True)
    assert "50 spent, limit 150" in error.message
    assert (await stored_events(sessions))[-1].id == events[-1].id


async def test_a_failed_call_is_settled_with_no_usage(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    guard = TokenGuard(limit=10_000)
    model = ScriptedModel([ModelRequestError("bad request")])
    runner = make_runner(LlmAgent("agent", model=model), sessions, breakers)
    runner.spend_guard = guard

    events = await run_turn(runner)

    assert events[-1].type is EventType.ERROR
    assert guard.settled == [None]
