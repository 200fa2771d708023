"""Planners: per-turn hooks that shape an LlmAgent's requests and responses."""

from agents_core.planners.base import BasePlanner
from agents_core.planners.plan_react import PlanReActPlanner
from agents_core.planners.task import TaskPlanner

__all__ = ["BasePlanner", "PlanReActPlanner", "TaskPlanner"]
