"""agents_core: Studio's embedded agent SDK.

Orchestration (runner, agents, step loop) is separated from execution adapters
(``llm``, ``tools``, ``sessions``, ``telemetry``), and every boundary is a typed,
validated contract. This package imports no Django.
"""

from agents_core.agents import BaseAgent, LlmAgent
from agents_core.config import BreakerPolicy, RetryPolicy, RunConfig
from agents_core.context import CancellationToken, Context, ReadonlyContext
from agents_core.contracts import ToolCall, ToolResult, ToolSchema, Usage
from agents_core.events import (
    ErrorInfo,
    Event,
    EventActions,
    EventType,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResponsePart,
)
from agents_core.exceptions import AgentsCoreError, Failure
from agents_core.llm import BaseLlm, LlmRequest, LlmResponse, ScriptedModel, ScriptedResponse
from agents_core.runner import Runner
from agents_core.sessions import BaseSessionService, InMemorySessionService, Session
from agents_core.telemetry import LoggingSink, TelemetrySink
from agents_core.tools import BaseTool, FunctionTool, ToolContext, function_tool

__all__ = [
    "AgentsCoreError",
    "BaseAgent",
    "BaseLlm",
    "BaseSessionService",
    "BaseTool",
    "BreakerPolicy",
    "CancellationToken",
    "Context",
    "ErrorInfo",
    "Event",
    "EventActions",
    "EventType",
    "Failure",
    "FunctionTool",
    "InMemorySessionService",
    "LlmAgent",
    "LlmRequest",
    "LlmResponse",
    "LoggingSink",
    "ReadonlyContext",
    "RetryPolicy",
    "RunConfig",
    "Runner",
    "ScriptedModel",
    "ScriptedResponse",
    "Session",
    "TelemetrySink",
    "TextPart",
    "ThinkingPart",
    "ToolCall",
    "ToolCallPart",
    "ToolContext",
    "ToolResponsePart",
    "ToolResult",
    "ToolSchema",
    "Usage",
    "function_tool",
]
