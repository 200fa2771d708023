"""Recorded scenarios of scripted agents, built twice: once to record a run, once to
replay it. ``Make`` gives each agent its model (scripted when recording; one that
must not be called when replaying) and a list that every tool's side effect goes to."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel

from agents_core import LlmAgent, LoopAgent, ParallelAgent, SequentialAgent
from agents_core.agents.base import BaseAgent
from agents_core.approvals import ApprovalPolicy
from agents_core.llm import BaseLlm, LlmRequest, LlmResponse
from agents_core.llm.scripted import ScriptedModel, ScriptedResponse, ScriptedToolCall, ScriptStep
from agents_core.tools.agent_tool import AgentTool
from agents_core.tools.ask_user import AskUserTool
from agents_core.tools.control import exit_loop_tool
from agents_core.tools.function import function_tool

ModelFor = Callable[[str, Sequence[ScriptStep]], BaseLlm]


@dataclass
class Make:
    """How a scenario's agents get their models, and where their tools' effects go."""

    model: ModelFor
    effects: list[str] = field(default_factory=list)

    def tools(self) -> list[object]:
        effects = self.effects

        @function_tool
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            effects.append(f"add {a} {b}")
            return a + b

        @function_tool
        def save(note: str) -> str:
            """Save a note (a side effect)."""
            effects.append(f"save {note}")
            return f"saved {note}"

        @function_tool
        def broken(reason: str) -> str:
            """Always fails."""
            effects.append("broken")
            raise RuntimeError(reason)

        return [add, save, broken]


class MustNotBeCalled(BaseLlm):
    """A model a faithful replay never calls."""

    provider_key = "scripted:scripted"  # the recording's models' key: the same model

    def __init__(self) -> None:
        self.calls = 0

    async def astream(self, request: LlmRequest) -> AsyncGenerator[LlmResponse]:
        self.calls += 1
        raise AssertionError("a replay called the model")
        yield  # pragma: no cover


def scripted(name: str, script: Sequence[ScriptStep]) -> BaseLlm:
    return ScriptedModel(script=list(script), name="scripted")


def call(name: str, call_id: str, **args: object) -> ScriptedToolCall:
    return ScriptedToolCall(name=name, id=call_id, args=dict(args))


def calls(*each: ScriptedToolCall, text: str = "") -> ScriptedResponse:
    return ScriptedResponse(text=text, tool_calls=list(each))


def say(text: str) -> ScriptedResponse:
    return ScriptedResponse(text=text)


def tools_agent(make: Make) -> BaseAgent:
    script = [calls(call("add", "c1", a=2, b=3)), say("It is 5.")]
    return LlmAgent("calc", model=make.model("calc", script), tools=make.tools())


def parallel_calls(make: Make) -> BaseAgent:
    script = [
        calls(call("add", "c1", a=1, b=2), call("save", "c2", note="x"), text="Both at once."),
        calls(call("broken", "c3", reason="disk full")),
        say("Done: {last_tool_result}"),
    ]
    return LlmAgent("multi", model=make.model("multi", script), tools=make.tools())


def sequential(make: Make) -> BaseAgent:
    first = LlmAgent(
        "first",
        model=make.model("first", [calls(call("save", "s1", note="a")), say("noted")]),
        tools=make.tools(),
        output_key="first_out",
    )
    second = LlmAgent(
        "second",
        model=make.model("second", [say("after {last_user_message}")]),
        instruction="Follow up on {first_out}",
    )
    return SequentialAgent("pipeline", sub_agents=[first, second])


def parallel(make: Make) -> BaseAgent:
    branches = [
        LlmAgent(
            name,
            model=make.model(name, [calls(call("add", f"{name}1", a=i, b=i)), say(f"{name} ok")]),
            tools=make.tools(),
            output_key=name,
        )
        for i, name in enumerate(["left", "middle", "right"])
    ]
    return ParallelAgent("fan", sub_agents=branches)


def loop(make: Make) -> BaseAgent:
    drafter = LlmAgent(
        "drafter",
        model=make.model("drafter", [say("draft 1"), say("draft 2")]),
        output_key="draft",
    )
    reviewer = LlmAgent(
        "reviewer",
        model=make.model("reviewer", [say("again"), calls(call("exit_loop", "x1")), say("ok")]),
        tools=[exit_loop_tool],
    )
    return LoopAgent("refine", sub_agents=[drafter, reviewer], max_iterations=3)


def transfer(make: Make) -> BaseAgent:
    poet = LlmAgent(
        "poet", model=make.model("poet", [say("roses are red")]), description="Writes poems."
    )
    desk = LlmAgent(
        "desk",
        model=make.model("desk", [calls(call("transfer_to_agent", "t1", agent_name="poet"))]),
        sub_agents=[poet],
    )
    return desk


class Answer(BaseModel):
    city: str
    days: int


def structured(make: Make) -> BaseAgent:
    script = [say("not json"), say('{"city": "Oslo", "days": 3}')]
    return LlmAgent(
        "planner", model=make.model("planner", script), output_schema=Answer, output_key="plan"
    )


def agent_tool(make: Make) -> BaseAgent:
    checker = LlmAgent(
        "checker",
        model=make.model("checker", [calls(call("add", "k1", a=4, b=4)), say("8")]),
        tools=make.tools(),
        description="Checks sums.",
    )
    script = [calls(call("checker", "a1", request="what is 4+4?")), say("checked: 8")]
    return LlmAgent("lead", model=make.model("lead", script), tools=[AgentTool(checker)])


def approval(make: Make) -> BaseAgent:
    script = [calls(call("save", "p1", note="secret")), say("saved it")]
    return LlmAgent(
        "careful",
        model=make.model("careful", script),
        tools=make.tools(),
        approval=ApprovalPolicy(tools=frozenset({"save"})),
    )


def question(make: Make) -> BaseAgent:
    script = [
        calls(call("ask_user", "q1", question="Which city?")),
        say("{last_tool_result} it is"),
    ]
    return LlmAgent("booker", model=make.model("booker", script), tools=[AskUserTool()])


SCENARIOS: dict[str, Callable[[Make], BaseAgent]] = {
    "tools": tools_agent,
    "parallel_calls_and_a_failing_tool": parallel_calls,
    "sequential": sequential,
    "parallel": parallel,
    "loop": loop,
    "transfer": transfer,
    "structured_output_with_a_retry": structured,
    "agent_tool": agent_tool,
    "approval": approval,
    "question": question,
}
