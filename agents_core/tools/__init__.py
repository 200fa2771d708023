"""Tools the model can call."""

from agents_core.tools.base import BaseTool, ToolContext, render_output
from agents_core.tools.function import FunctionTool, function_tool

__all__ = ["BaseTool", "FunctionTool", "ToolContext", "function_tool", "render_output"]
