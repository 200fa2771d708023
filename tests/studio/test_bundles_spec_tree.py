"""The spec-tree walks export and import share (``studio.bundles.spec_tree``): agent
references written out in place (a cycle left as a reference), every model slot read
and renamed alike."""

from __future__ import annotations

from typing import Any

from agents_core.specs import stored_agents
from studio.bundles.spec_tree import inline_refs, model_names, renamed_models

HELPER = {"name": "helper", "model": "small", "sub_agents": [{"ref": "root"}]}
ROOT: dict[str, Any] = {
    "name": "root",
    "model": "big",
    "fallback_models": ["small", "spare"],
    "compaction": {"model": "summariser"},
    "sub_agents": [{"ref": "helper"}, {"ref": "nobody"}],
    "agent_tools": [{"name": "tool_agent", "model": "tooly"}],
}


def test_references_are_written_out_and_a_cycle_stays_a_reference() -> None:
    written = inline_refs(ROOT, {"root": ROOT, "helper": HELPER})
    helper = written["sub_agents"][0]
    assert helper["name"] == "helper"
    assert helper["sub_agents"][0]["name"] == "root"  # root written out once more
    assert helper["sub_agents"][0]["sub_agents"][0] == {"ref": "helper"}  # then a cycle
    assert written["sub_agents"][1] == {"ref": "nobody"}  # an unknown name stays
    assert ROOT["sub_agents"][0] == {"ref": "helper"}  # the input is left alone


def test_nodes_do_not_follow_references() -> None:
    assert sorted(n["name"] for n in stored_agents(ROOT)) == ["root", "tool_agent"]


def test_every_model_slot_is_read_and_renamed() -> None:
    assert model_names(ROOT) == {"big", "small", "spare", "summariser", "tooly"}
    renamed = renamed_models(ROOT, {m: f"{m}-x" for m in model_names(ROOT)})
    assert model_names(renamed) == {"big-x", "small-x", "spare-x", "summariser-x", "tooly-x"}
    assert renamed["fallback_models"] == ["small-x", "spare-x"]
    assert renamed["compaction"] == {"model": "summariser-x"}
    assert ROOT["model"] == "big"  # a copy
