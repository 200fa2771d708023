"""Model adapters. This package is the only place that imports LangChain."""

from agents_core.llm.chain import ModelChain, ModelLink
from agents_core.llm.contracts import BaseLlm, ChatMessage, LlmRequest, LlmResponse, ToolSchema
from agents_core.llm.resilience import BreakerRegistry, CircuitBreaker
from agents_core.llm.scripted import ScriptedModel, ScriptedResponse

__all__ = [
    "BaseLlm",
    "BreakerRegistry",
    "ChatMessage",
    "CircuitBreaker",
    "LlmRequest",
    "LlmResponse",
    "ModelChain",
    "ModelLink",
    "ScriptedModel",
    "ScriptedResponse",
    "ToolSchema",
]
