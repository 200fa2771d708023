"""Agents as data: AgentSpec validation paths and building runnable trees."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from agents_core import EventType, InMemorySessionService, Runner, function_tool
from agents_core.agents import LlmAgent, LoopAgent, ParallelAgent, SequentialAgent
from agents_core.builder import build_agent, build_compaction, check_spec
from agents_core.exceptions import SpecError
from agents_core.llm.resilience import BreakerRegistry
from agents_core.specs import AgentSpec, CompactionSpec
from agents_core.testing import ScriptedModel, collect, reply, tool_call
from agents_core.tools.agent_tool import AgentTool
from agents_core.tools.registry import ToolRegistry, default_registry


class GreetSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    greeting: str = "Hello"


def registry() -> ToolRegistry:
    reg = default_registry()

    def greet_factory(settings: Any) -> list[Any]:
        @function_tool
        def greet(name: str) -> str:
            """Greet someone."""
            return f"{settings.greeting}, {name}!"

        return [greet]

    reg.register("greet", greet_factory, description="Greets", settings_model=GreetSettings)
    return reg


def spec(data: dict[str, Any]) -> AgentSpec:
    return AgentSpec.model_validate(data)


def problems(data: dict[str, Any], **kwargs: Any) -> list[tuple[str, str]]:
    found = check_spec(
        spec(data),
        models=kwargs.get("models", {"fake"}),
        tools=registry(),
        agents=kwargs.get("agents"),
    )
    return [(".".join(map(str, p.path)), p.message) for p in found]


def test_a_valid_tree_has_no_problems() -> None:
    tree = {
        "type": "sequential",
        "name": "pipeline",
        "sub_agents": [
            {"name": "a", "model": "fake", "tools": [{"name": "greet"}]},
            {
                "type": "loop",
                "name": "l",
                "max_iterations": 2,
                "sub_agents": [{"name": "b", "model": "fake", "tools": [{"name": "exit_loop"}]}],
            },
        ],
    }
    assert problems(tree) == []


def test_unknown_model_and_tool_are_reported_at_their_paths() -> None:
    found = problems(
        {"name": "a", "model": "gpt-x", "tools": [{"name": "greet"}, {"name": "rm_rf"}]}
    )
    assert [path for path, _ in found] == ["model", "tools.1.name"]
    assert "unknown model 'gpt-x'" in found[0][1]
    assert "registered: artifacts, exit_loop, filesystem, greet, shell" in found[1][1]


def test_tool_settings_are_validated_with_the_path_inside_the_spec() -> None:
    found = problems(
        {"name": "a", "model": "fake", "tools": [{"name": "greet", "settings": {"greetin": 1}}]}
    )
    assert found[0][0] == "tools.0.settings.greetin"
    found = problems(
        {"name": "a", "model": "fake", "tools": [{"name": "exit_loop", "settings": {"x": 1}}]}
    )
    assert found == [("tools.0.settings", "tool 'exit_loop' takes no settings")]


def test_type_specific_mistakes_name_the_field() -> None:
    found = problems(
        {
            "type": "parallel",
            "name": "p",
            "model": "fake",
            "max_iterations": 3,
            "sub_agents": [{"type": "llm", "name": "c"}],
        }
    )
    paths = [path for path, _ in found]
    assert paths == ["model", "max_iterations", "sub_agents.0.model"]


def test_workflow_agents_need_sub_agents_and_limits_belong_to_the_root() -> None:
    found = problems(
        {
            "type": "sequential",
            "name": "s",
            "sub_agents": [{"type": "loop", "name": "l", "limits": {"max_steps": 3}}],
        }
    )
    assert [path for path, _ in found] == ["sub_agents.0.limits", "sub_agents.0.sub_agents"]


def test_duplicate_agent_names_are_refused_wherever_they_are() -> None:
    found = problems(
        {
            "name": "a",
            "model": "fake",
            "agent_tools": [{"name": "helper", "model": "fake"}],
            "sub_agents": [{"name": "helper", "model": "fake"}],
        }
    )
    assert found == [("sub_agents.0.name", "agent name 'helper' is already used at agent_tools.0")]


def test_reference_cycles_and_unknown_references_are_refused() -> None:
    stored = {
        "x": spec({"type": "sequential", "name": "x", "sub_agents": [{"ref": "y"}]}),
        "y": spec({"type": "sequential", "name": "y", "sub_agents": [{"ref": "x"}]}),
    }
    found = problems(
        {"type": "sequential", "name": "root", "sub_agents": [{"ref": "x"}]}, agents=stored
    )
    assert found[0][0] == "sub_agents.0.sub_agents.0.sub_agents.0.ref"
    assert "cycle: x -> y -> x" in found[0][1]
    found = problems({"type": "sequential", "name": "r", "sub_agents": [{"ref": "nope"}]})
    assert found == [("sub_agents.0.ref", "no agent named 'nope' to reference")]


def test_the_schema_refuses_unknown_fields_and_bad_names() -> None:
    with pytest.raises(ValidationError) as info:
        spec({"name": "bad name", "model": "fake", "code": "import os"})
    locs = {err["loc"] for err in info.value.errors()}
    assert ("name",) in locs and ("code",) in locs


def test_json_schema_is_exported_and_describes_sub_agents() -> None:
    schema = AgentSpec.json_schema()
    assert schema["$ref"] == "#/$defs/AgentSpec"  # recursive: the tree refers to itself
    node = schema["$defs"]["AgentSpec"]
    assert node["properties"]["type"]["enum"] == ["llm", "react", "sequential", "parallel", "loop"]
    assert node["additionalProperties"] is False
    assert "#/$defs/AgentSpec" in json.dumps(node["properties"]["sub_agents"])


def test_build_agent_raises_the_first_problem_and_counts_the_rest() -> None:
    with pytest.raises(SpecError) as info:
        build_agent(
            spec({"name": "a", "model": "x", "tools": [{"name": "nope"}]}),
            models={},
            tools=registry(),
        )
    assert info.value.path == ("model",)
    assert "(and 1 more problems)" in str(info.value)


def test_build_agent_makes_the_described_tree() -> None:
    fake = ScriptedModel([])
    agent = build_agent(
        spec(
            {
                "type": "sequential",
                "name": "s",
                "sub_agents": [
                    {
                        "type": "parallel",
                        "name": "p",
                        "sub_agents": [
                            {
                                "name": "a",
                                "model": "m",
                                "agent_tools": [{"name": "helper", "model": "m"}],
                            },
                            {
                                "type": "loop",
                                "name": "l",
                                "max_iterations": 7,
                                "sub_agents": [
                                    {"name": "b", "model": "m", "tools": [{"name": "exit_loop"}]}
                                ],
                            },
                        ],
                    },
                ],
            }
        ),
        models={"m": fake},
        tools=registry(),
    )
    assert isinstance(agent, SequentialAgent)
    parallel = agent.sub_agents[0]
    assert isinstance(parallel, ParallelAgent)
    llm, loop = parallel.sub_agents
    assert isinstance(llm, LlmAgent) and isinstance(llm.tools["helper"], AgentTool)
    assert isinstance(loop, LoopAgent) and loop.max_iterations == 7


def test_requires_approval_gates_every_tool_an_entry_builds() -> None:
    agent = build_agent(
        spec(
            {
                "name": "a",
                "model": "m",
                "tools": [{"name": "greet", "requires_approval": True}],
                "approval": {"timeout_s": 9, "on_timeout": "approve"},
            }
        ),
        models={"m": ScriptedModel([])},
        tools=registry(),
    )
    assert isinstance(agent, LlmAgent)
    assert agent.approval is not None
    assert (agent.approval.tools, agent.approval.timeout_s, agent.approval.on_timeout) == (
        frozenset({"greet"}),
        9,
        "approve",
    )


async def test_a_spec_round_trips_from_json_to_a_run_on_the_scripted_model(
    sessions: InMemorySessionService, breakers: BreakerRegistry
) -> None:
    raw = json.dumps(
        {
            "name": "greeter",
            "model": "script",
            "instruction": "Greet people.",
            "tools": [{"name": "greet", "settings": {"greeting": "Bonjour"}}],
            "output_key": "last_greeting",
            "limits": {"max_tool_calls": 3},
        }
    )
    agent_spec = AgentSpec.model_validate_json(raw)
    model = ScriptedModel([tool_call("greet", name="Ada"), reply("{last_tool_result}")])
    agent = build_agent(agent_spec, models={"script": model}, tools=registry())
    runner = Runner(
        agent, session_service=sessions, breakers=breakers, run_config=agent_spec.run_config()
    )
    assert runner.run_config.max_tool_calls == 3

    events = await collect(runner.astream(user_id="u", session_id="s", message="hi"))

    assert [e.type for e in events] == [
        EventType.USER_MESSAGE,
        EventType.AGENT_START,
        EventType.AGENT_MESSAGE,
        EventType.TOOL_STARTED,
        EventType.TOOL_RESPONSE,
        EventType.AGENT_MESSAGE,
        EventType.AGENT_END,
    ]
    assert events[4].tool_results[0].output == "Bonjour, Ada!"
    session = await sessions.get_session(app_name="agents", user_id="u", session_id="s")
    assert session is not None and session.state == {"last_greeting": "Bonjour, Ada!"}
    assert model.requests[0].system_instruction == "Greet people."


def test_react_agents_and_planners_are_built_from_their_spec_types() -> None:
    from agents_core.agents.react import ReActAgent
    from agents_core.planners.plan_react import PlanReActPlanner
    from agents_core.planners.task import TaskPlanner

    models = {"m": ScriptedModel([])}
    react = build_agent(
        spec({"type": "react", "name": "r", "model": "m"}), models=models, tools=registry()
    )
    assert isinstance(react, ReActAgent)
    planned = build_agent(
        spec({"name": "p", "model": "m", "planner": {"type": "plan_react"}}),
        models=models,
        tools=registry(),
    )
    assert isinstance(planned, LlmAgent) and isinstance(planned.planner, PlanReActPlanner)
    tasked = build_agent(
        spec({"name": "t", "model": "m", "planner": {"type": "task"}}),
        models=models,
        tools=registry(),
    )
    assert isinstance(tasked, LlmAgent) and isinstance(tasked.planner, TaskPlanner)
    assert "write_todos" in tasked.tools


# Compaction


def test_compaction_is_on_by_default_and_summarises_with_the_first_model_named() -> None:
    fast, smart = ScriptedModel([reply("f")], name="fast"), ScriptedModel([reply("s")])
    spec = AgentSpec.model_validate(
        {"type": "sequential", "name": "root", "sub_agents": [{"name": "a", "model": "fast"}]}
    )
    config = build_compaction(spec, models={"fast": fast, "smart": smart})
    assert config is not None
    assert (config.summarizer, config.threshold, config.keep_last) == (fast, 60, 20)
    chosen = spec.model_copy(update={"compaction": CompactionSpec(model="smart", threshold=30)})
    config = build_compaction(chosen, models={"fast": fast, "smart": smart})
    assert config is not None and (config.summarizer, config.threshold) == (smart, 30)
    off = spec.model_copy(update={"compaction": CompactionSpec(enabled=False)})
    assert build_compaction(off, models={"fast": fast}) is None


def test_compaction_is_checked_at_its_path() -> None:
    spec = AgentSpec.model_validate(
        {
            "name": "root",
            "model": "m",
            "compaction": {"model": "missing"},
            "sub_agents": [{"name": "child", "model": "m", "compaction": {}}],
        }
    )
    problems = {p.path: p.message for p in check_spec(spec, models={"m"}, tools=registry())}
    assert problems[("compaction", "model")].startswith("unknown model 'missing'")
    assert "set it on the root agent" in problems[("sub_agents", 0, "compaction")]
    with pytest.raises(ValidationError, match="keep_last must be smaller than threshold"):
        CompactionSpec(threshold=10, keep_last=10)
