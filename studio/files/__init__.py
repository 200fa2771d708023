"""Files attached to messages: checked, stored once by content, read back by owner.

The type of a file is what its bytes are (``sniff``), never what the client declared:
PNG, JPEG, GIF and WebP images, PDF documents and UTF-8 plain text, at most
``STUDIO_UPLOAD_MAX_BYTES`` each and ``STUDIO_UPLOAD_MAX_FILES`` a message. Every file
of a message is checked before any is stored. Bytes are stored once in the default
storage under their SHA-256 (a ``Blob`` row says so); an ``Upload`` row per owner says
who may read them. Bytes nobody refers to any more are swept (``studio.files.sweep``).
"""

from __future__ import annotations

import base64
import contextlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import UploadedFile
from django.http import Http404
from django.utils import timezone

from agents_core.blobs import blob_id_of
from agents_core.events import FilePart
from studio.errors import InvalidInputError, Problem
from studio.models import Blob, Upload

FIELD = "files"
ALLOWED_TYPES = frozenset(
    {"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf", "text/plain"}
)
_MAGIC: tuple[tuple[bytes, int, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "image/png"),
    (b"\xff\xd8\xff", 0, "image/jpeg"),
    (b"GIF87a", 0, "image/gif"),
    (b"GIF89a", 0, "image/gif"),
    (b"WEBP", 8, "image/webp"),  # after "RIFF" and a length
    (b"%PDF-", 0, "application/pdf"),
)
_TEXT_CONTROLS = frozenset(b"\t\n\r\f")
_MARKUP = re.compile(
    rb"^\s*<(?:!doctype\s+html|html|head|body|script|iframe|style|title|svg|\?xml|!--|"
    rb"h1|div|font|table|a|b|br|p)[\s>/]",
    re.IGNORECASE,
)
"""How a browser's sniffer (WHATWG MIME Sniffing) spots HTML or XML: such text is
refused, whatever it was declared as."""


@dataclass(frozen=True, slots=True)
class Checked:
    """A file that passed the checks, with the type its bytes are."""

    name: str
    data: bytes
    content_type: str


def sniff(data: bytes) -> str | None:
    """What ``data`` is, among ``ALLOWED_TYPES``; ``None`` for anything else."""
    for magic, offset, content_type in _MAGIC:
        found = data[offset : offset + len(magic)] == magic
        if found and (content_type != "image/webp" or data.startswith(b"RIFF")):
            return content_type
    return "text/plain" if _is_plain_text(data) else None


def _is_plain_text(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if _MARKUP.match(data[:1024]):
        return False
    return not any(b < 0x20 and b not in _TEXT_CONTROLS for b in data)


def check_files(files: Sequence[UploadedFile[bytes]]) -> list[Checked]:
    """Every file of a message checked (``InvalidInputError`` on field ``files``, each
    problem at the file's index); nothing is stored here."""
    limit = settings.STUDIO_UPLOAD_MAX_FILES
    if len(files) > limit:
        message = f"at most {limit} files per message; {len(files)} were sent"
        raise InvalidInputError(FIELD, [Problem((), "too_many_files", message)])
    checked, problems = [], []
    for index, upload in enumerate(files):
        result = _check(upload)
        if isinstance(result, Problem):
            problems.append(Problem((index,), result.code, result.message))
        else:
            checked.append(result)
    if problems:
        raise InvalidInputError(FIELD, problems)
    return checked


def _check(upload: UploadedFile[bytes]) -> Checked | Problem:
    name = (upload.name or "")[-255:]
    limit = settings.STUDIO_UPLOAD_MAX_BYTES
    if upload.size is None or upload.size > limit:
        return Problem((), "file_too_large", f"{name!r} is larger than {limit} bytes")
    data = upload.read(limit + 1)
    if len(data) > limit:
        return Problem((), "file_too_large", f"{name!r} is larger than {limit} bytes")
    if not data:
        return Problem((), "file_empty", f"{name!r} is empty")
    content_type = sniff(data)
    if content_type is None:
        allowed = "PNG, JPEG, GIF, WebP, PDF or UTF-8 plain text"
        return Problem((), "file_type_not_allowed", f"{name!r} is not {allowed}")
    return Checked(name, data, content_type)


def store(
    owner: AbstractBaseUser, files: Sequence[Checked], *, written: list[str] | None = None
) -> list[FilePart]:
    """Store checked ``files`` for ``owner`` (bytes once per content, a row once per
    owner and content) and return their references. Call inside the transaction that
    stores the message: a failure leaves no row (at worst bytes nobody references,
    which the sweeper removes, unless the caller removes the paths noted in ``written``,
    the files this call wrote, with ``discard``)."""
    parts = []
    for file in files:
        blob_id = blob_id_of(file.data)
        _keep(owner, blob_id, file, written)
        parts.append(
            FilePart(
                blob_id=blob_id,
                content_type=file.content_type,
                size=len(file.data),
                name=file.name,
            )
        )
    return parts


def _keep(owner: AbstractBaseUser, blob_id: str, file: Checked, written: list[str] | None) -> None:
    """The blob's row locked (or made) first, as the sweeper locks it: while this
    transaction lasts the sweeper cannot remove the bytes. Then the owner's row, its
    use noted; then the bytes, if they are not there (a sweep may just have taken
    them)."""
    Blob.objects.select_for_update().get_or_create(blob_id=blob_id)
    used = Upload.objects.filter(owner_id=owner.pk, blob_id=blob_id)
    if not used.update(used_at=timezone.now()):
        Upload.objects.create(
            owner_id=owner.pk, blob_id=blob_id, content_type=file.content_type, size=len(file.data)
        )
    path = blob_path(blob_id)
    if not default_storage.exists(path):
        saved = default_storage.save(path, ContentFile(file.data))
        if written is not None:
            written.append(saved)


def discard(written: Iterable[str]) -> None:
    """Remove files ``store`` wrote, before the transaction that stored them rolls back
    (while it still holds their blobs' rows, so no one else has stored them since)."""
    for path in written:
        default_storage.delete(path)


def owned(owner: AbstractBaseUser, blob_id: str) -> Upload:
    """``owner``'s upload of ``blob_id``; ``Http404`` for anyone else's or none."""
    upload = Upload.objects.filter(owner_id=owner.pk, blob_id=blob_id).first()
    if upload is None:
        raise Http404("no such file")
    return upload


def attached(owner: AbstractBaseUser, events: Iterable[Mapping[str, Any]]) -> list[Upload]:
    """``owner``'s uploads of the files ``events`` (wire JSON) attach, each once, in the
    order first attached (a file ``owner`` has no row for is left out)."""
    named = dict.fromkeys(
        part["blob_id"]
        for event in events
        for part in event.get("parts", ())
        if part.get("kind") == "file"
    )
    uploads = {u.blob_id: u for u in Upload.objects.filter(owner_id=owner.pk, blob_id__in=named)}
    return [uploads[blob_id] for blob_id in named if blob_id in uploads]


def exported(owner: AbstractBaseUser, events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The files ``events`` (wire JSON) attach that ``owner`` may read, each once, in
    the order first attached: SHA-256, type, size and the bytes in base64. A file
    whose bytes are gone (swept) is listed without ``data``."""
    out: list[dict[str, Any]] = []
    for upload in attached(owner, events):
        entry: dict[str, Any] = {
            "sha256": upload.blob_id,
            "content_type": upload.content_type,
            "size": upload.size,
        }
        with contextlib.suppress(FileNotFoundError):
            entry["data"] = base64.b64encode(read(upload.blob_id)).decode("ascii")
        out.append(entry)
    return out


def read(blob_id: str) -> bytes:
    with default_storage.open(blob_path(blob_id), "rb") as handle:
        data: bytes = handle.read()
    return data


def blob_path(blob_id: str) -> str:
    return f"blobs/{blob_id[:2]}/{blob_id}"


class StorageBlobStore:
    """The runner's ``BlobStore`` over the default storage."""

    async def read(self, blob_id: str) -> bytes:
        try:
            return await sync_to_async(read, thread_sensitive=False)(blob_id)
        except FileNotFoundError as exc:
            raise KeyError(blob_id) from exc
