"""Tools by name: what an ``AgentSpec`` may reference, and how each is configured."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel

from agents_core.registry import Entry, Registry
from agents_core.tools.artifacts import artifact_tools
from agents_core.tools.base import BaseTool
from agents_core.tools.control import exit_loop_tool
from agents_core.tools.filesystem import FilesystemSettings, filesystem_tools
from agents_core.tools.shell import ShellSettings, shell_tool

ToolFactory = Callable[[Any], Sequence[BaseTool]]
"""Builds the tools of one entry from its validated settings (``None`` without a model)."""


@dataclass(frozen=True, slots=True)
class ToolEntry(Entry[Sequence[BaseTool]]):
    kind: ClassVar[str] = "tool"

    def create(self, raw_settings: dict[str, Any]) -> list[BaseTool]:
        return list(self.factory(self.parse_settings(raw_settings)))


class ToolRegistry(Registry[ToolEntry]):
    """Named tool entries. Studio starts from ``default_registry()`` and adds its own."""

    kind: ClassVar[str] = "tool"

    def register(
        self,
        name: str,
        factory: ToolFactory,
        *,
        description: str,
        settings_model: type[BaseModel] | None = None,
    ) -> None:
        self.add(ToolEntry(name, description, factory, settings_model))

    def register_tool(self, tool: BaseTool) -> None:
        """Register one ready-made tool under its own name (it takes no settings)."""
        self.add(ToolEntry(tool.name, tool.description, lambda _settings: [tool]))


def default_registry() -> ToolRegistry:
    """The SDK's own tools: ``exit_loop``, the jailed ``filesystem`` toolset, the
    ``artifacts`` tools and ``shell`` (refused unless its settings enable it).

    Their settings (a filesystem root, a shell allowlist) are trusted here. An application
    whose specs come from untrusted users must register narrower entries instead, as
    Studio does, rather than let a spec choose a root or pass environment variables.
    """
    registry = ToolRegistry()
    registry.register_tool(exit_loop_tool)
    registry.register(
        "filesystem",
        filesystem_tools,
        description="List, read, write, edit, glob, grep and mkdir inside one directory.",
        settings_model=FilesystemSettings,
    )
    registry.register(
        "artifacts",
        lambda _settings: artifact_tools(),
        description="Save, load and list files of the session (versioned artifacts).",
    )
    registry.register(
        "shell",
        lambda settings: [shell_tool(settings)],
        description="Run allowlisted programs without a shell, with a timeout.",
        settings_model=ShellSettings,
    )
    return registry
