"""Artifacts in Studio: versioned files of a session, stored through Django's storage API.

``save`` checks a file (name, declared type, ``STUDIO_ARTIFACT_MAX_BYTES``) before it
writes anything, then stores the bytes in the ``artifacts`` storage
(``STORAGES["artifacts"]``: the file system by default, object storage with a
setting) under a server-chosen name and makes the row; if the row cannot be made the
bytes are removed again, so a refused or failed save leaves nothing. Versions count
up per session and name, under a lock on the session's row.

What a version is served as is decided from its bytes when it is saved (``served_as``):
PNG, JPEG, GIF and WebP images as themselves, UTF-8 text (HTML and SVG included) as
``text/plain``, everything else as ``application/octet-stream``; whatever the saver
declared is kept, and shown, but never served.

``DjangoArtifactService`` is ``agents_core.artifacts.ArtifactService`` over the
artifacts of one owner's sessions (bound when a run starts); a run's session id is a
session key, resolved among that owner's sessions.
"""

from __future__ import annotations

import uuid

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import Storage, storages
from django.db import transaction
from django.db.models import Max, QuerySet
from django.db.models.signals import post_delete
from django.dispatch import receiver

from agents_core import artifacts as core
from studio.files import sniff
from studio.models import Artifact, Session

__all__ = ["DjangoArtifactService", "newest", "read", "save", "served_as", "versions"]

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
TEXT_TYPE = "text/plain; charset=utf-8"
BINARY_TYPE = "application/octet-stream"
PREVIEW_BYTES = 64 * 1024
"""How much of a text artifact the session page shows."""


def storage() -> Storage:
    return storages["artifacts"]


def served_as(data: bytes) -> str:
    """What Studio serves ``data`` as: one of the raster image types, UTF-8 text (as
    ``text/plain``, markup or not), or ``application/octet-stream``."""
    sniffed = sniff(data)
    if sniffed in IMAGE_TYPES:
        return sniffed
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return BINARY_TYPE
    if any(ord(ch) < 0x20 and ch not in "\t\n\r\f" for ch in text):
        return BINARY_TYPE
    return TEXT_TYPE


def save(session: Session, name: str, data: bytes, content_type: str) -> Artifact:
    """``data`` stored as the next version of ``session``'s artifact ``name``.
    ``ArtifactError`` (nothing stored) when the name or type is not usable or the data is
    larger than ``STUDIO_ARTIFACT_MAX_BYTES``."""
    name, content_type = core.checked_name(name), core.checked_content_type(content_type)
    core.checked_size(data, settings.STUDIO_ARTIFACT_MAX_BYTES)
    served = served_as(data)
    where = storage()
    path = where.save(f"artifacts/{session.pk}/{uuid.uuid4().hex}", ContentFile(data))
    try:
        with transaction.atomic():
            Session.objects.select_for_update().filter(pk=session.pk).exists()
            stored = Artifact.objects.filter(session=session, name=name)
            last = stored.aggregate(last=Max("version"))["last"] or 0
            return Artifact.objects.create(
                session=session,
                name=name,
                version=last + 1,
                content_type=content_type,
                served_type=served,
                size=len(data),
                sha256=core.sha256_of(data),
                path=path,
            )
    except BaseException:
        where.delete(path)
        raise


def newest(session: Session) -> list[Artifact]:
    """The newest version of each of ``session``'s artifacts, by name."""
    rows = Artifact.objects.filter(session=session).order_by("name", "-version")
    seen: dict[str, Artifact] = {}
    for row in rows:
        seen.setdefault(row.name, row)
    return list(seen.values())


def versions(session: Session, name: str) -> QuerySet[Artifact]:
    """Every version of ``session``'s artifact ``name``, newest first."""
    return Artifact.objects.filter(session=session, name=name).order_by("-version")


def find(session: Session, name: str, version: int | None = None) -> Artifact | None:
    found = versions(session, name)
    return found.filter(version=version).first() if version is not None else found.first()


def read(artifact: Artifact, limit: int | None = None) -> bytes:
    """The bytes of ``artifact`` (the first ``limit`` of them, when given)."""
    with storage().open(artifact.path, "rb") as handle:
        data: bytes = handle.read() if limit is None else handle.read(limit)
    return data


def preview_text(artifact: Artifact) -> str:
    """The start of a text artifact, for the session page (shown as text)."""
    return read(artifact, PREVIEW_BYTES).decode("utf-8", errors="replace")


@receiver(post_delete, sender=Artifact)
def _drop_bytes(sender: type[Artifact], instance: Artifact, **kwargs: object) -> None:
    """A version's bytes go with its row (a deleted session takes both), once the
    deletion is committed."""
    path = instance.path
    transaction.on_commit(lambda: storage().delete(path))


class DjangoArtifactService:
    """The core's artifact port over ``owner_id``'s sessions: one per run, bound to the
    run's owner, so a run only ever reaches its owner's sessions."""

    def __init__(self, owner_id: int) -> None:
        self.owner_id = owner_id

    async def save(self, session_id: str, name: str, data: bytes, content_type: str) -> int:
        return await sync_to_async(self._save)(session_id, name, data, content_type)

    async def load(
        self, session_id: str, name: str, version: int | None = None
    ) -> core.LoadedArtifact | None:
        return await sync_to_async(self._load)(session_id, name, version)

    async def list(self, session_id: str) -> core.ArtifactVersions:
        return await sync_to_async(self._list)(session_id)

    async def versions(self, session_id: str, name: str) -> core.ArtifactVersions:
        return await sync_to_async(self._versions)(session_id, name)

    def _session(self, session_id: str) -> Session:
        session = Session.objects.filter(owner_id=self.owner_id, key=session_id).first()
        if session is None:
            raise core.ArtifactError("no such session")
        return session

    def _save(self, session_id: str, name: str, data: bytes, content_type: str) -> int:
        return save(self._session(session_id), name, data, content_type).version

    def _load(self, session_id: str, name: str, version: int | None) -> core.LoadedArtifact | None:
        found = find(self._session(session_id), name, version)
        return None if found is None else core.LoadedArtifact(found.to_core(), read(found))

    def _list(self, session_id: str) -> core.ArtifactVersions:
        return [row.to_core() for row in newest(self._session(session_id))]

    def _versions(self, session_id: str, name: str) -> core.ArtifactVersions:
        rows = versions(self._session(session_id), name)
        return [row.to_core() for row in reversed(list(rows))]
