"""The evaluators an eval may name: the built-in kinds of ``agents_core.evals``, and
the custom ones registered in Python (``agents_core.evals.registry``)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from agents_core.evals import registry

BUILTIN: dict[str, str] = {
    "exact": "The final output equals the case's expected final output.",
    "contains": "The final output contains a text (default: the expected final output).",
    "regex": "The final output matches a regular expression.",
    "json_schema": "The final output is JSON valid against a JSON Schema.",
    "trajectory": "The tool calls match the expected ones: in exact order, in any order, "
    "or as a subset; arguments match as a JSON subset.",
    "limits": "Cost, tokens, latency and steps stay within limits (default: the case's).",
    "state": "The session state at the end holds the expected state (a JSON subset).",
    "judge": "An LLM judge, one of your model configurations, scores the answer on a "
    "rubric; a judge that fails is an error, never a pass.",
}


def catalogue() -> list[dict[str, Any]]:
    """Every evaluator, built-in kinds first, then the custom ones by name."""
    rows = [
        {"kind": kind, "name": kind, "description": text, "builtin": True, "params": []}
        for kind, text in BUILTIN.items()
    ]
    return rows + custom_evaluators()


def custom_evaluators() -> list[dict[str, Any]]:
    """The evaluators registered in Python, by name (``kind: custom``, ``name``), each
    with the parameters it declares."""
    return [
        {
            "kind": "custom",
            "name": one.name,
            "description": one.description,
            "builtin": False,
            "params": None if one.params is None else [asdict(field) for field in one.params],
        }
        for one in sorted(registry.registered(), key=lambda one: one.name)
    ]
