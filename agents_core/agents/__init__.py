"""Agent types."""

from agents_core.agents.base import BaseAgent
from agents_core.agents.llm import LlmAgent

__all__ = ["BaseAgent", "LlmAgent"]
