"""Hooks: an ordered stack around model and tool calls that inspects, rewrites,
short-circuits and recovers; noted on the events; isolated when it raises; registered by
name and referenced from specs."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from agents_core import (
    EventType,
    Hook,
    HookRegistry,
    InMemorySessionService,
    LlmAgent,
    ReActAgent,
    Runner,
    function_tool,
)
from agents_core.builder import build_agent, check_spec
from agents_core.context import ReadonlyContext
from agents_core.contracts import ToolCall, ToolResult
from agents_core.events import Event
from agents_core.exceptions import ModelError, ModelRequestError
from agents_core.llm.contracts import LlmRequest, LlmResponse
from agents_core.llm.resilience import BreakerRegistry
from agents_core.specs import AgentSpec
from agents_core.testing import ScriptedModel, collect, reply, tool_call
from agents_core.tools.registry import ToolRegistry


@function_tool
def double(n: int) -> int:
    """Double a number."""
    return n * 2


class Shout(Hook):
    name = "shout"

    async def after_model(self, ctx: ReadonlyContext, response: LlmResponse) -> LlmResponse:
        return response.model_copy(update={"text": response.text.upper()})


class Exclaim(Hook):
    name = "exclaim"

    async def after_model(self, ctx: ReadonlyContext, response: LlmResponse) -> LlmResponse:
        return response.model_copy(update={"text": response.text + "!"})


class Watcher(Hook):
    """Inspects without changing anything."""

    name = "watcher"

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def before_model(self, ctx: ReadonlyContext, request: LlmRequest) -> LlmRequest:
        self.seen.append(f"model:{ctx.agent_name}")
        return request

    async def before_tool(self, ctx: ReadonlyContext, call: ToolCall) -> ToolCall:
        self.seen.append(f"tool:{call.name}")
        return call


async def run(agent: LlmAgent, sessions: InMemorySessionService) -> list[Event]:
    runner = Runner(agent, session_service=sessions, breakers=BreakerRegistry())
    return await collect(runner.astream(user_id="u", session_id="s", message="go"), partial=True)


def stored(events: list[Event]) -> list[Event]:
    return [e for e in events if not e.partial]


async def test_hooks_rewrite_in_order_each_seeing_the_previous_rewrite(
    sessions: InMemorySessionService,
) -> None:
    watcher = Watcher()
    model = ScriptedModel([reply("hello there")])
    agent = LlmAgent("a", model=model, hooks=[watcher, Shout(), Exclaim()])

    events = await run(agent, sessions)

    [message] = [e for e in stored(events) if e.type is EventType.AGENT_MESSAGE]
    assert message.text == "HELLO THERE!"
    assert [(n.hook, n.stage, n.effect) for n in message.hooks] == [
        ("shout", "after_model", "rewrote"),
        ("exclaim", "after_model", "rewrote"),
    ]
    assert watcher.seen == ["model:a"]
    # An answer a hook may rewrite is never streamed: the tokens would show what it masks.
    assert not any(e.partial for e in events)


async def test_before_model_can_answer_in_the_models_place(
    sessions: InMemorySessionService,
) -> None:
    class Canned(Hook):
        name = "canned"

        async def before_model(
            self, ctx: ReadonlyContext, request: LlmRequest
        ) -> LlmRequest | LlmResponse:
            return LlmResponse(text="from the cache")

    model = ScriptedModel([reply("from the model")])
    events = await run(LlmAgent("a", model=model, hooks=[Canned(), Shout()]), sessions)

    message = next(e for e in stored(events) if e.type is EventType.AGENT_MESSAGE)
    assert message.text == "FROM THE CACHE"
    assert [(n.hook, n.effect) for n in message.hooks] == [
        ("canned", "short_circuited"),
        ("shout", "rewrote"),
    ]
    assert model.requests == []


async def test_on_model_error_recovers_a_failed_call(sessions: InMemorySessionService) -> None:
    class Fallback(Hook):
        name = "fallback"

        async def on_model_error(
            self, ctx: ReadonlyContext, error: ModelError
        ) -> LlmResponse | None:
            return LlmResponse(text=f"Sorry, the model failed ({error.code}).")

    model = ScriptedModel([ModelRequestError("400 bad request")])
    events = stored(await run(LlmAgent("a", model=model, hooks=[Fallback()]), sessions))

    assert not any(e.is_terminal_error for e in events)
    message = next(e for e in events if e.type is EventType.AGENT_MESSAGE)
    assert message.text == "Sorry, the model failed (model_request_error)."
    assert [(n.stage, n.effect) for n in message.hooks] == [("on_model_error", "recovered")]


async def test_tool_hooks_rewrite_arguments_short_circuit_and_rewrite_results(
    sessions: InMemorySessionService,
) -> None:
    class Clamp(Hook):
        name = "clamp"

        async def before_tool(self, ctx: ReadonlyContext, call: ToolCall) -> ToolCall | ToolResult:
            if call.args.get("n", 0) < 0:
                return ToolResult(
                    call_id="ignored", name="x", output="blocked: negative", is_error=True
                )
            return call.model_copy(update={"args": {"n": min(call.args["n"], 10)}})

        async def after_tool(
            self, ctx: ReadonlyContext, call: ToolCall, result: ToolResult
        ) -> ToolResult:
            return result.model_copy(update={"output": f"{result.output} (clamped)"})

    model = ScriptedModel(
        [tool_call("double", "c1", n=50), tool_call("double", "c2", n=-1), reply("done")]
    )
    events = stored(
        await run(LlmAgent("a", model=model, tools=[double], hooks=[Clamp()]), sessions)
    )

    first, second = [e for e in events if e.type is EventType.TOOL_RESPONSE]
    assert first.tool_results[0].output == "20 (clamped)"
    assert [(n.stage, n.effect) for n in first.hooks] == [
        ("before_tool", "rewrote"),
        ("after_tool", "rewrote"),
    ]
    result = second.tool_results[0]
    assert (result.call_id, result.name, result.is_error) == ("c2", "double", True)
    assert result.output == "blocked: negative (clamped)"
    assert second.hooks[0].effect == "short_circuited"


async def test_a_hook_that_raises_is_isolated(sessions: InMemorySessionService) -> None:
    class Broken(Hook):
        name = "broken"

        async def before_tool(self, ctx: ReadonlyContext, call: ToolCall) -> ToolCall:
            raise RuntimeError("oops")

    model = ScriptedModel([tool_call("double", n=2), reply("the hook failed")])
    events = stored(
        await run(LlmAgent("a", model=model, tools=[double], hooks=[Broken()]), sessions)
    )

    response = next(e for e in events if e.type is EventType.TOOL_RESPONSE)
    assert response.tool_results[0].is_error
    assert response.tool_results[0].output == (
        "hook_failed: hook 'broken' failed in before_tool: RuntimeError: oops"
    )
    assert events[-2].text == "the hook failed"

    class BrokenModelHook(Hook):
        name = "broken_model"

        async def after_model(self, ctx: ReadonlyContext, response: LlmResponse) -> LlmResponse:
            raise ValueError("bad")

    agent = LlmAgent("b", model=ScriptedModel([reply("x")]), hooks=[BrokenModelHook()])
    events = stored(await run(agent, InMemorySessionService()))
    assert events[-1].is_terminal_error and events[-1].error is not None
    assert events[-1].error.code == "hook_failed"
    assert "hook 'broken_model' failed in after_model: ValueError: bad" in events[-1].error.message


async def test_react_agents_run_their_hooks_too(sessions: InMemorySessionService) -> None:
    watcher = Watcher()
    model = ScriptedModel(
        [
            reply('{"thought": "t", "action": {"tool": "double", "args": {"n": 2}}}'),
            reply('{"thought": "t", "final_answer": "4"}'),
        ]
    )
    agent = ReActAgent("r", model=model, tools=[double], hooks=[watcher])
    await run(agent, sessions)
    assert watcher.seen == ["model:r", "tool:double", "model:r"]


class PrefixSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prefix: str


def hook_registry() -> HookRegistry:
    class Prefix(Hook):
        def __init__(self, prefix: str) -> None:
            self.prefix = prefix

        async def after_model(self, ctx: ReadonlyContext, response: LlmResponse) -> LlmResponse:
            return response.model_copy(update={"text": self.prefix + response.text})

    registry = HookRegistry()
    registry.register(
        "prefix",
        lambda settings: Prefix(settings.prefix),
        description="Prefix every answer.",
        settings_model=PrefixSettings,
    )
    return registry


def test_specs_name_registered_hooks_and_problems_are_at_their_paths() -> None:
    def problems(hooks: list[dict[str, Any]], **fields: Any) -> dict[str, str]:
        spec = AgentSpec.model_validate({"name": "a", "model": "m", "hooks": hooks, **fields})
        found = check_spec(spec, models={"m"}, tools=ToolRegistry(), hooks=hook_registry())
        return {".".join(map(str, p.path)): p.message for p in found}

    assert problems([{"name": "prefix", "settings": {"prefix": "> "}}]) == {}
    assert problems([{"name": "nope"}]) == {
        "hooks.0.name": "unknown hook 'nope' (registered: prefix)"
    }
    assert problems([{"name": "prefix", "settings": {}}]) == {
        "hooks.0.settings.prefix": "Field required"
    }
    workflow = problems(
        [{"name": "prefix", "settings": {"prefix": "x"}}],
        type="sequential",
        model=None,
        sub_agents=[{"name": "b", "model": "m"}],
    )
    assert workflow == {"hooks": "a sequential agent has no hooks; give it to a sub-agent"}


async def test_a_built_agent_runs_the_hooks_its_spec_names(
    sessions: InMemorySessionService,
) -> None:
    spec = AgentSpec.model_validate(
        {"name": "a", "model": "m", "hooks": [{"name": "prefix", "settings": {"prefix": "> "}}]}
    )
    agent = build_agent(
        spec,
        models={"m": ScriptedModel([reply("hi")])},
        tools=ToolRegistry(),
        hooks=hook_registry(),
    )
    assert isinstance(agent, LlmAgent)
    events = stored(await run(agent, sessions))
    message = next(e for e in events if e.type is EventType.AGENT_MESSAGE)
    assert message.text == "> hi"
    assert message.hooks[0].hook == "prefix"
