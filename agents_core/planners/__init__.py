"""Planners: per-turn hooks that shape an LlmAgent's requests and responses."""

from agents_core.planners.base import BasePlanner

__all__ = ["BasePlanner"]
