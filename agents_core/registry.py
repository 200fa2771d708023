"""Things registered in code by name and configured by settings: tools and hooks.

An ``AgentSpec`` refers to an entry by its name, with settings that the entry's pydantic
model validates; the entry's factory builds what the agent uses from them. ``ToolRegistry``
(``agents_core.tools.registry``) and ``HookRegistry`` (``agents_core.hooks``) are the two
registries built on these bases.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from pydantic import BaseModel

from agents_core.exceptions import ConfigurationError

_NO_SETTINGS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}


@dataclass(frozen=True, slots=True)
class Entry[T]:
    """One named thing: its factory builds ``T`` from validated settings (``None``
    without a settings model)."""

    kind: ClassVar[str] = "entry"

    name: str
    description: str
    factory: Callable[[Any], T]
    settings_model: type[BaseModel] | None = None

    def settings_schema(self) -> dict[str, Any]:
        if self.settings_model is None:
            return dict(_NO_SETTINGS)
        return self.settings_model.model_json_schema()

    def parse_settings(self, raw: dict[str, Any]) -> BaseModel | None:
        """Validate settings; raises pydantic's ``ValidationError`` (or ``ValueError``)."""
        if self.settings_model is None:
            if raw:
                raise ValueError(f"{self.kind} {self.name!r} takes no settings")
            return None
        return self.settings_model.model_validate(raw)


class Registry[E: Entry[Any]]:
    """Named entries, each name once, listed in name order."""

    kind: ClassVar[str] = "entry"

    def __init__(self, entries: Sequence[E] = ()) -> None:
        self._entries: dict[str, E] = {}
        for entry in entries:
            self.add(entry)

    def add(self, entry: E) -> None:
        if entry.name in self._entries:
            raise ConfigurationError(f"a {self.kind} named {entry.name!r} is already registered")
        self._entries[entry.name] = entry

    def get(self, name: str) -> E | None:
        return self._entries.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[E]:
        return iter(sorted(self._entries.values(), key=lambda e: e.name))

    def copy(self) -> Self:
        return type(self)(list(self._entries.values()))
