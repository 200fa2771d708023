"""Tools by name: what an ``AgentSpec`` may reference, and how each is configured."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from agents_core.exceptions import ConfigurationError
from agents_core.tools.base import BaseTool
from agents_core.tools.control import exit_loop_tool
from agents_core.tools.filesystem import FilesystemSettings, filesystem_tools
from agents_core.tools.shell import ShellSettings, shell_tool

ToolFactory = Callable[[Any], Sequence[BaseTool]]
"""Builds the tools of one entry from its validated settings (``None`` without a model)."""


@dataclass(frozen=True, slots=True)
class ToolEntry:
    name: str
    description: str
    factory: ToolFactory
    settings_model: type[BaseModel] | None = None

    def settings_schema(self) -> dict[str, Any]:
        if self.settings_model is None:
            return {"type": "object", "properties": {}, "additionalProperties": False}
        return self.settings_model.model_json_schema()

    def parse_settings(self, raw: dict[str, Any]) -> BaseModel | None:
        """Validate settings; raises pydantic's ``ValidationError`` (or ``ValueError``)."""
        if self.settings_model is None:
            if raw:
                raise ValueError(f"tool {self.name!r} takes no settings")
            return None
        return self.settings_model.model_validate(raw)

    def create(self, raw_settings: dict[str, Any]) -> list[BaseTool]:
        return list(self.factory(self.parse_settings(raw_settings)))


class ToolRegistry:
    """Named tool entries. Studio starts from ``default_registry()`` and adds its own."""

    def __init__(self, entries: Sequence[ToolEntry] = ()) -> None:
        self._entries: dict[str, ToolEntry] = {}
        for entry in entries:
            self.add(entry)

    def add(self, entry: ToolEntry) -> None:
        if entry.name in self._entries:
            raise ConfigurationError(f"a tool named {entry.name!r} is already registered")
        self._entries[entry.name] = entry

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

    def get(self, name: str) -> ToolEntry | None:
        return self._entries.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[ToolEntry]:
        return iter(sorted(self._entries.values(), key=lambda e: e.name))

    def copy(self) -> ToolRegistry:
        return ToolRegistry(list(self._entries.values()))


def default_registry() -> ToolRegistry:
    """The SDK's own tools: ``exit_loop``, the jailed ``filesystem`` toolset and ``shell``
    (refused unless its settings enable it).

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
        "shell",
        lambda settings: [shell_tool(settings)],
        description="Run allowlisted programs without a shell, with a timeout.",
        settings_model=ShellSettings,
    )
    return registry
