"""Artifacts: named, versioned files a session's tools and agents save and load.

An ``ArtifactService`` keeps them per session: ``save`` stores the bytes under a name
as that name's next version (1, 2, ...) and answers the version; ``load`` reads a
version (the newest by default); ``list`` answers each name's newest version and
``versions`` every version of one name. ``InMemoryArtifactService`` is the one for
tests and scripts; Studio stores them through Django's storage API.

A runner given a service (``Runner(artifacts=...)``) hands it to the run, where:

- a function tool saves and loads through its context
  (``tool_context.save_artifact(name, data, content_type)``,
  ``tool_context.load_artifact(name)``); each save is recorded on the tool's
  ``tool_response`` event as ``actions.artifact_delta`` (name -> version saved), so a
  timeline can say "saved report.md v2";
- the artifact tools (``artifact_tools()``: ``save_artifact``, ``load_artifact``,
  ``list_artifacts``) let a model do the same with text; the tool registry offers them
  as the ``artifacts`` entry.

Every name and file is checked before anything is stored (``checked_name``,
``checked_content_type``, the service's size limit): a refused save stores nothing.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Protocol

from pydantic import AwareDatetime, Field, NonNegativeInt, PositiveInt

from agents_core.contracts import Contract
from agents_core.events import utc_now
from agents_core.exceptions import ToolExecutionError
from agents_core.tools.base import BaseTool, ToolContext
from agents_core.tools.function import FunctionTool

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAX_NAME_CHARS",
    "Artifact",
    "ArtifactError",
    "ArtifactService",
    "InMemoryArtifactService",
    "LoadedArtifact",
    "artifact_tools",
    "checked_content_type",
    "checked_name",
]

MAX_NAME_CHARS = 200
DEFAULT_MAX_BYTES = 10 * 1024 * 1024
MAX_TOOL_OUTPUT_CHARS = 20_000
"""What ``load_artifact`` shows a model of one artifact, at most."""
_CONTENT_TYPE = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}$")


class Artifact(Contract):
    """One stored version of a session's artifact (its bytes are apart)."""

    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    version: PositiveInt
    content_type: str = Field(min_length=3, max_length=128)
    size: NonNegativeInt
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    created_at: AwareDatetime = Field(default_factory=utc_now)


@dataclass(frozen=True, slots=True)
class LoadedArtifact:
    """A version of an artifact with its bytes."""

    artifact: Artifact
    data: bytes

    def text(self) -> str | None:
        """The bytes as UTF-8 text, or ``None`` when they are not."""
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError:
            return None


class ArtifactError(ToolExecutionError):
    """An artifact the service refuses (bad name, too large) or cannot find."""

    code = "artifact_error"


class ArtifactService(Protocol):
    """Where a session's artifacts live. A session id names one session of whoever the
    service serves; another's session's artifacts are never found."""

    async def save(self, session_id: str, name: str, data: bytes, content_type: str) -> int:
        """Store ``data`` as ``name``'s next version and answer that version;
        ``ArtifactError`` (and nothing stored) when the name, type or size is refused."""
        ...

    async def load(
        self, session_id: str, name: str, version: int | None = None
    ) -> LoadedArtifact | None:
        """A version of ``name`` (the newest when ``version`` is ``None``), or ``None``."""
        ...

    async def list(self, session_id: str) -> list[Artifact]:
        """The newest version of each of the session's artifacts, by name."""
        ...

    async def versions(self, session_id: str, name: str) -> list[Artifact]:
        """Every version of ``name``, oldest first (empty when there is none)."""
        ...


def checked_name(name: str) -> str:
    """``name`` when it is a plain file name: not empty, at most ``MAX_NAME_CHARS``
    characters, no path separators, no control or format characters, not ``.`` or
    ``..``, no leading or trailing spaces. ``ArtifactError`` otherwise."""
    if not name or not name.strip():
        raise ArtifactError("an artifact needs a name")
    if len(name) > MAX_NAME_CHARS:
        raise ArtifactError(f"an artifact name may be at most {MAX_NAME_CHARS} characters")
    if "/" in name or "\\" in name:
        raise ArtifactError(f"an artifact name may not contain / or \\: {name!r}")
    if any(unicodedata.category(ch) in {"Cc", "Cf", "Zl", "Zp"} for ch in name):
        raise ArtifactError(f"an artifact name may not contain control characters: {name!r}")
    if name in {".", ".."} or name != name.strip():
        raise ArtifactError(f"not a usable artifact name: {name!r}")
    return name


def checked_content_type(content_type: str) -> str:
    """``content_type`` lower-cased, without parameters, when it reads ``type/subtype``;
    ``ArtifactError`` otherwise. What it claims is only stored: whoever serves an
    artifact decides how (Studio serves only a few types as themselves)."""
    bare = content_type.split(";", 1)[0].strip().lower()
    if not _CONTENT_TYPE.fullmatch(bare):
        raise ArtifactError(f"not a content type: {content_type[:80]!r}")
    return bare


def checked_size(data: bytes, max_bytes: int) -> None:
    if len(data) > max_bytes:
        raise ArtifactError(
            f"an artifact may be at most {max_bytes} bytes; this one is {len(data)} bytes"
        )


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(slots=True)
class InMemoryArtifactService:
    """Artifacts in a dict, per session and name: for tests and scripts."""

    max_bytes: int = DEFAULT_MAX_BYTES
    stored: dict[tuple[str, str], list[LoadedArtifact]] = field(default_factory=dict)

    async def save(self, session_id: str, name: str, data: bytes, content_type: str) -> int:
        name, content_type = checked_name(name), checked_content_type(content_type)
        checked_size(data, self.max_bytes)
        versions = self.stored.setdefault((session_id, name), [])
        artifact = Artifact(
            name=name,
            version=len(versions) + 1,
            content_type=content_type,
            size=len(data),
            sha256=sha256_of(data),
        )
        versions.append(LoadedArtifact(artifact, bytes(data)))
        return artifact.version

    async def load(
        self, session_id: str, name: str, version: int | None = None
    ) -> LoadedArtifact | None:
        versions = self.stored.get((session_id, name), [])
        if not versions:
            return None
        if version is None:
            return versions[-1]
        return versions[version - 1] if 1 <= version <= len(versions) else None

    async def list(self, session_id: str) -> list[Artifact]:
        newest = [v[-1].artifact for (sid, _), v in self.stored.items() if sid == session_id and v]
        return sorted(newest, key=lambda a: a.name)

    async def versions(self, session_id: str, name: str) -> list[Artifact]:
        return [loaded.artifact for loaded in self.stored.get((session_id, name), [])]


# Saving and loading through a tool's context


def service_of(tool_context: ToolContext) -> ArtifactService:
    service = tool_context.context.invocation.artifacts
    if service is None:
        raise ArtifactError("this run has no artifact service: artifacts are not available here")
    return service


async def save(tool_context: ToolContext, name: str, data: bytes | str, content_type: str) -> int:
    """Save ``data`` (text is stored as UTF-8) as ``name``'s next version in the run's
    session, and record it on the call's ``tool_response`` (``artifact_delta``)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    ctx = tool_context.context
    version = await service_of(tool_context).save(ctx.session_id, name, raw, content_type)
    tool_context.effects.artifact_delta[name] = version
    return version


async def load(
    tool_context: ToolContext, name: str, version: int | None = None
) -> LoadedArtifact | None:
    """A version of the session's artifact ``name`` (the newest by default), or ``None``."""
    return await service_of(tool_context).load(tool_context.context.session_id, name, version)


# The tools


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
    version = await save(tool_context, name, content, content_type)
    return f"Saved {name} v{version} ({len(content.encode('utf-8'))} bytes)."


async def load_artifact(name: str, tool_context: ToolContext, version: int | None = None) -> str:
    """Read a file saved in this session.

    Args:
        name: The file name.
        version: Which version; the newest when left out.
    """
    loaded = await load(tool_context, name, version)
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
    found = await service_of(tool_context).list(tool_context.context.session_id)
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
