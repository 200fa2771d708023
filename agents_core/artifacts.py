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
- the artifact tools (``agents_core.tools.artifacts.artifact_tools()``:
  ``save_artifact``, ``load_artifact``, ``list_artifacts``) let a model do the same
  with text; the tool registry offers them as the ``artifacts`` entry.

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

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MAX_NAME_CHARS",
    "Artifact",
    "ArtifactError",
    "ArtifactService",
    "ArtifactVersions",
    "InMemoryArtifactService",
    "LoadedArtifact",
    "checked_content_type",
    "checked_name",
]

MAX_NAME_CHARS = 200
DEFAULT_MAX_BYTES = 10 * 1024 * 1024
_CONTENT_TYPE = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}$")


class Artifact(Contract):
    """One stored version of a session's artifact (its bytes are apart)."""

    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    version: PositiveInt
    content_type: str = Field(min_length=3, max_length=128)
    size: NonNegativeInt
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    created_at: AwareDatetime = Field(default_factory=utc_now)


ArtifactVersions = list[Artifact]
"""Artifacts, as ``list`` and ``versions`` answer them (an alias: inside a service's
class, ``list`` is the method)."""


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

    async def list(self, session_id: str) -> ArtifactVersions:
        """The newest version of each of the session's artifacts, by name."""
        ...

    async def versions(self, session_id: str, name: str) -> ArtifactVersions:
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

    async def list(self, session_id: str) -> ArtifactVersions:
        newest = [v[-1].artifact for (sid, _), v in self.stored.items() if sid == session_id and v]
        return sorted(newest, key=lambda a: a.name)

    async def versions(self, session_id: str, name: str) -> ArtifactVersions:
        return [loaded.artifact for loaded in self.stored.get((session_id, name), [])]
