"""Walking a stored agent spec (its JSON) as a tree, for bundles: the agents of the
tree, the agent references written out in place, and the model configurations it
names, read (on export) or renamed (on import) in one place.

A node's children are its ``sub_agents`` and ``agent_tools``; a child ``{"ref": name}``
names another stored agent. A node names models in three slots: ``model``,
``fallback_models`` and ``compaction.model``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

from agents_core.specs import stored_agents

CHILD_KEYS = ("sub_agents", "agent_tools")


def children(node: dict[str, Any]) -> Iterator[tuple[str, list[Any]]]:
    """Each child list ``node`` has, with its key."""
    for key in CHILD_KEYS:
        if key in node:
            yield key, list(node.get(key) or [])


def is_ref(child: Any) -> bool:
    return isinstance(child, dict) and "ref" in child


def inline_refs(spec: dict[str, Any], agents: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``spec`` with each ``{"ref": name}`` replaced by that agent's spec (a reference
    already being written out is left as it is: ``check_spec`` refuses cycles)."""

    def walk(node: dict[str, Any], seen: tuple[str, ...]) -> dict[str, Any]:
        out = dict(node)
        for key, found in children(node):
            out[key] = [written(child, seen) for child in found if isinstance(child, dict)]
        return out

    def written(child: dict[str, Any], seen: tuple[str, ...]) -> dict[str, Any]:
        ref = child.get("ref")
        if isinstance(ref, str) and ref in agents and ref not in seen:
            return walk(agents[ref], (*seen, ref))
        return walk(child, seen)

    return walk(spec, ())


def model_names(spec: dict[str, Any]) -> set[str]:
    """Every model configuration a spec tree names (models, fallbacks, compaction)."""
    found: set[str] = set()

    def note(name: str) -> str:
        found.add(name)
        return name

    _each_model(copy.deepcopy(spec), note)
    return found


def renamed_models(spec: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """A copy of ``spec`` naming ``names[m]`` wherever it named model ``m``."""
    renamed = copy.deepcopy(spec)
    _each_model(renamed, names.__getitem__)
    return renamed


def _each_model(spec: dict[str, Any], change: Callable[[str], str]) -> None:
    """Set every model name of ``spec`` (in place) to ``change(name)``."""
    for node in stored_agents(spec):
        if isinstance(node.get("model"), str):
            node["model"] = change(node["model"])
        fallbacks = node.get("fallback_models")
        if isinstance(fallbacks, list):
            node["fallback_models"] = [change(m) if isinstance(m, str) else m for m in fallbacks]
        compaction = node.get("compaction")
        if isinstance(compaction, dict) and isinstance(compaction.get("model"), str):
            compaction["model"] = change(compaction["model"])
