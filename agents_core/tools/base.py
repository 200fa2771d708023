"""The tool contract. A tool receives validated arguments and returns a value or raises."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from agents_core.artifacts import ArtifactError
from agents_core.contracts import ToolCall, ToolSchema
from agents_core.exceptions import ToolArgumentsError
from agents_core.policies import PolicyTarget

if TYPE_CHECKING:
    from agents_core.artifacts import ArtifactService, LoadedArtifact
    from agents_core.context import Context
    from agents_core.events import Event


@dataclass(slots=True)
class ToolEffects:
    """Actions a tool asks for; they are attached to its tool_response event."""

    state_delta: dict[str, Any] = field(default_factory=dict)
    escalate: bool = False
    transfer_to_agent: str | None = None
    artifact_delta: dict[str, int] = field(default_factory=dict)
    """Artifacts the call saved: name -> the version it saved (``agents_core.artifacts``)."""


@dataclass(slots=True)
class ToolContext:
    """What a tool may see of the run: the call it serves, the agent's context, and
    the effects it wants applied (``effects.state_delta`` is how a tool saves state)."""

    call: ToolCall
    context: Context
    effects: ToolEffects = field(default_factory=ToolEffects)
    span_id: str | None = None
    """The span of this call: agents the tool runs run inside it."""

    @property
    def state(self) -> dict[str, Any]:
        return self.context.state

    async def emit(self, event: Event) -> Event:
        """Stream an event into the run while the tool works (stored, then returned)."""
        return await self.context.event_callback(event)

    def artifact_service(self) -> ArtifactService:
        """The run's artifact service; ``ArtifactError`` when it has none."""
        service = self.context.invocation.artifacts
        if service is None:
            raise ArtifactError("this run has no artifact service: artifacts are not available")
        return service

    async def save_artifact(self, name: str, data: bytes | str, content_type: str) -> int:
        """Save ``data`` (text as UTF-8) as the next version of the session's artifact
        ``name`` and answer the version; the call's ``tool_response`` records it
        (``artifact_delta``). ``ArtifactError`` when it is refused (nothing stored)."""
        raw = data.encode("utf-8") if isinstance(data, str) else data
        service = self.artifact_service()
        version = await service.save(self.context.session_id, name, raw, content_type)
        self.effects.artifact_delta[name] = version
        return version

    async def load_artifact(self, name: str, version: int | None = None) -> LoadedArtifact | None:
        """A version of the session's artifact ``name`` (the newest by default)."""
        return await self.artifact_service().load(self.context.session_id, name, version)


class BaseTool(ABC):
    """A named capability the model can call.

    Subclasses set ``name`` and ``description``, describe their parameters with
    ``parameters_schema()`` and implement ``arun``. Errors raised by ``arun`` become an
    error result the model sees; the run continues.
    """

    name: str
    description: str = ""
    timeout_s: float | None = 60.0
    """Per call; ``None`` leaves only the run's wall-time limit."""
    side_effects: bool = True
    """Whether a call may change something outside the run. Such calls are journalled
    (a ``tool_started`` event is stored before they run), so a run that dies while they
    run reports them in doubt rather than not run, and never runs them again. Read-only
    tools set it ``False`` and cost nothing."""

    @abstractmethod
    def parameters_schema(self) -> dict[str, Any]:
        """JSON Schema of the arguments object."""

    @abstractmethod
    async def arun(self, args: dict[str, Any], tool_context: ToolContext) -> Any:
        """Run the tool. ``args`` are unvalidated: validate them, raising ``ToolArgumentsError``."""

    def policy_subject(self, args: Mapping[str, Any]) -> tuple[PolicyTarget, str]:
        """What policy rules (``agents_core.policies``) see a call of this tool as: a
        tool, by its name. Tools that call agents say which agent."""
        return "tool", self.name

    def schema(self) -> ToolSchema:
        return ToolSchema(
            name=self.name, description=self.description, parameters=self.parameters_schema()
        )


def parse_args[M: BaseModel](model: type[M], args: dict[str, Any]) -> M:
    """Validate a tool's arguments; problems become one ``ToolArgumentsError`` the model
    can act on, naming each field."""
    try:
        return model.model_validate(args)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, err['loc'])) or 'arguments'}: {err['msg']}" for err in exc.errors()
        )
        raise ToolArgumentsError(f"invalid arguments: {problems}") from exc


def args_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of an arguments model, as models are shown it (no title)."""
    schema = model.model_json_schema()
    schema.pop("title", None)
    return schema


def render_output(value: Any) -> str:
    """A tool's return value as the text the model reads."""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(value, default=str, ensure_ascii=False)
