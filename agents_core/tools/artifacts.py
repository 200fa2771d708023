"""The artifact tools: ``save_artifact``, ``load_artifact`` and ``list_artifacts``, over
the run's artifact service (``Invocation.artifacts``, ``agents_core.artifacts``)."""

from __future__ import annotations

from agents_core.artifacts import ArtifactError
from agents_core.tools.base import BaseTool, ToolContext
from agents_core.tools.function import FunctionTool

__all__ = ["MAX_TOOL_OUTPUT_CHARS", "artifact_tools"]

MAX_TOOL_OUTPUT_CHARS = 20_000
"""What ``load_artifact`` shows a model of one artifact, at most."""


async def save_artifact(
    name: str, content: str, tool_context: ToolContext, content_type: str = "text/plain"
) -> str:
    """Save text as a file of this session (a report, notes, data); saving a name
    again makes a new version.

    Args:
        name: The file name, e.g. "report.md" (no folders).
        content: The text to save.
        content_type: Its type, e.g. "text/markdown" or "text/csv".
    """
    version = await tool_context.save_artifact(name, content, content_type)
    return f"Saved {name} v{version} ({len(content.encode('utf-8'))} bytes)."


async def load_artifact(name: str, tool_context: ToolContext, version: int | None = None) -> str:
    """Read a file saved in this session.

    Args:
        name: The file name.
        version: Which version; the newest when left out.
    """
    loaded = await tool_context.load_artifact(name, version)
    if loaded is None:
        which = f" version {version}" if version is not None else ""
        raise ArtifactError(f"no artifact {name!r}{which} in this session")
    text = loaded.text()
    meta = loaded.artifact
    if text is None:
        return f"{name} v{meta.version} is binary ({meta.content_type}, {meta.size} bytes)."
    if len(text) > MAX_TOOL_OUTPUT_CHARS:
        return text[:MAX_TOOL_OUTPUT_CHARS] + f"\n[... cut at {MAX_TOOL_OUTPUT_CHARS} characters]"
    return text


async def list_artifacts(tool_context: ToolContext) -> str:
    """List the files saved in this session, with their newest versions."""
    found = await tool_context.artifact_service().list(tool_context.context.session_id)
    if not found:
        return "No artifacts yet."
    return "\n".join(f"- {a.name} v{a.version} ({a.content_type}, {a.size} bytes)" for a in found)


def artifact_tools() -> list[BaseTool]:
    """``save_artifact``, ``load_artifact`` and ``list_artifacts`` over the run's artifact
    service (``Invocation.artifacts``); loading and listing change nothing, so they are
    not journalled."""
    return [
        FunctionTool(save_artifact),
        FunctionTool(load_artifact, side_effects=False),
        FunctionTool(list_artifacts, side_effects=False),
    ]
