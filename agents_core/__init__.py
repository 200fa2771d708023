"""agents_core: Studio's embedded agent SDK.

Orchestration (runner, agents, step loop) is separated from execution adapters
(``llm``, ``tools``, ``sessions``, ``telemetry``), and every boundary is a typed,
validated contract. This package imports no Django.
"""

from agents_core.agents import (
    BaseAgent,
    LlmAgent,
    LoopAgent,
    ParallelAgent,
    ReActAgent,
    SequentialAgent,
)
from agents_core.approvals import ApprovalBroker, ApprovalDecision, ApprovalPolicy
from agents_core.blobs import BlobStore, InMemoryBlobStore
from agents_core.builder import build_agent, check_spec
from agents_core.compaction import CompactionConfig
from agents_core.config import BreakerPolicy, RetryPolicy, RunConfig
from agents_core.context import CancellationToken, Context, ReadonlyContext
from agents_core.contracts import ToolCall, ToolResult, ToolSchema, Usage
from agents_core.events import (
    ErrorInfo,
    Event,
    EventActions,
    EventType,
    FilePart,
    HookNote,
    StructuredPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResponsePart,
)
from agents_core.exceptions import AgentsCoreError, Failure
from agents_core.failures import FailurePolicy, degradations
from agents_core.hooks import Hook, HookEntry, HookRegistry
from agents_core.llm import BaseLlm, LlmRequest, LlmResponse, ScriptedModel, ScriptedResponse
from agents_core.pausing import PauseGate
from agents_core.planners import BasePlanner, PlanReActPlanner, TaskPlanner
from agents_core.runner import Runner
from agents_core.sessions import BaseSessionService, InMemorySessionService, Session
from agents_core.specs import AgentSpec
from agents_core.structured import OutputSchema
from agents_core.telemetry import LoggingSink, TelemetrySink
from agents_core.tools import (
    AgentTool,
    BaseTool,
    FunctionTool,
    ToolContext,
    ToolRegistry,
    default_registry,
    function_tool,
)

__all__ = [
    "AgentSpec",
    "AgentTool",
    "AgentsCoreError",
    "ApprovalBroker",
    "ApprovalDecision",
    "ApprovalPolicy",
    "BaseAgent",
    "BaseLlm",
    "BasePlanner",
    "BaseSessionService",
    "BaseTool",
    "BlobStore",
    "BreakerPolicy",
    "CancellationToken",
    "CompactionConfig",
    "Context",
    "ErrorInfo",
    "Event",
    "EventActions",
    "EventType",
    "Failure",
    "FailurePolicy",
    "FilePart",
    "FunctionTool",
    "Hook",
    "HookEntry",
    "HookNote",
    "HookRegistry",
    "InMemoryBlobStore",
    "InMemorySessionService",
    "LlmAgent",
    "LlmRequest",
    "LlmResponse",
    "LoggingSink",
    "LoopAgent",
    "OutputSchema",
    "ParallelAgent",
    "PauseGate",
    "PlanReActPlanner",
    "ReActAgent",
    "ReadonlyContext",
    "RetryPolicy",
    "RunConfig",
    "Runner",
    "ScriptedModel",
    "ScriptedResponse",
    "SequentialAgent",
    "Session",
    "StructuredPart",
    "TaskPlanner",
    "TelemetrySink",
    "TextPart",
    "ThinkingPart",
    "ToolCall",
    "ToolCallPart",
    "ToolContext",
    "ToolRegistry",
    "ToolResponsePart",
    "ToolResult",
    "ToolSchema",
    "Usage",
    "build_agent",
    "check_spec",
    "default_registry",
    "degradations",
    "function_tool",
]
