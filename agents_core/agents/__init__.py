"""Agent types."""

from agents_core.agents.base import BaseAgent
from agents_core.agents.llm import LlmAgent
from agents_core.agents.loop import LoopAgent
from agents_core.agents.parallel import ParallelAgent
from agents_core.agents.react import ReActAgent
from agents_core.agents.sequential import SequentialAgent

__all__ = ["BaseAgent", "LlmAgent", "LoopAgent", "ParallelAgent", "ReActAgent", "SequentialAgent"]
