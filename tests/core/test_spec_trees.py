"""Walking an agent spec's tree: its agents, a change made to each, and the agents of a
spec as stored (any version, unvalidated)."""

from __future__ import annotations

from typing import Any

from agents_core.specs import AgentSpec, stored_agents

TREE: dict[str, Any] = {
    "name": "root",
    "type": "sequential",
    "sub_agents": [
        {"name": "first", "model": "a", "agent_tools": [{"name": "helper", "model": "b"}]},
        {"ref": "elsewhere"},
        {"name": "second", "model": "c"},
    ],
}


def test_agents_are_every_spec_of_the_tree_parents_first_references_not_followed() -> None:
    spec = AgentSpec.model_validate(TREE)

    assert [agent.name for agent in spec.agents()] == ["root", "first", "helper", "second"]


def test_with_each_agent_changes_every_agent_and_copies_only_what_changed() -> None:
    spec = AgentSpec.model_validate(TREE)

    renamed = spec.with_each_agent(
        lambda agent: {"model": f"{agent.model}-2"} if agent.model in ("b", "c") else {}
    )

    assert [a.model for a in renamed.agents()] == [None, "a", "b-2", "c-2"]
    assert [a.model for a in spec.agents()] == [None, "a", "b", "c"]  # the original stays
    assert renamed.sub_agents[1] == spec.sub_agents[1]  # the reference, as it was
    assert spec.with_each_agent(lambda agent: {}) is spec


def test_stored_agents_walks_json_as_stored_and_skips_what_is_not_an_agent() -> None:
    stored = {**TREE, "agent_tools": "not a list", "sub_agents": [*TREE["sub_agents"], 7, None]}

    names = [agent["name"] for agent in stored_agents(stored)]

    assert names == ["root", "first", "helper", "second"]  # as AgentSpec.agents() does
    assert list(stored_agents("not a spec")) == []
