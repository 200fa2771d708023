"""Tools the model can call. MCP lives in ``agents_core.tools.mcp`` and A2A (a remote
agent as a tool) in ``agents_core.tools.a2a``: their SDKs are slow to import, so they
are not loaded here."""

from agents_core.tools.agent_tool import AgentTool
from agents_core.tools.artifacts import artifact_tools
from agents_core.tools.ask_user import AskUserTool
from agents_core.tools.base import BaseTool, ToolContext, ToolEffects, render_output
from agents_core.tools.control import ExitLoopTool, TransferTool, exit_loop_tool
from agents_core.tools.filesystem import FilesystemSettings, PathEscapeError, filesystem_tools
from agents_core.tools.function import FunctionTool, function_tool
from agents_core.tools.registry import ToolEntry, ToolRegistry, default_registry
from agents_core.tools.shell import CommandNotAllowedError, ShellSettings, shell_tool

__all__ = [
    "AgentTool",
    "AskUserTool",
    "BaseTool",
    "CommandNotAllowedError",
    "ExitLoopTool",
    "FilesystemSettings",
    "FunctionTool",
    "PathEscapeError",
    "ShellSettings",
    "ToolContext",
    "ToolEffects",
    "ToolEntry",
    "ToolRegistry",
    "TransferTool",
    "artifact_tools",
    "default_registry",
    "exit_loop_tool",
    "filesystem_tools",
    "function_tool",
    "render_output",
    "shell_tool",
]
