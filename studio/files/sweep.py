"""Sweeping stored files nobody refers to any more.

An owner's ``Upload`` row goes once no event of the owner's sessions names its blob
(the sessions were deleted) and it was last used longer ago than the grace period;
a blob's bytes and ``Blob`` row go once no ``Upload`` row names it. Safe while files
are being stored: storing locks the ``Blob`` row before it writes anything, and the
sweeper takes the same row lock with its first statement (in SQLite, the database's
write lock), so it either waits for a message being stored and then sees its rows,
or removes the bytes first and the message stores them again. Rows and bytes younger
than the grace period are never touched: a message may be on its way to naming them.
Files in storage with no ``Blob`` row at all (left by a failed transaction) go once
they are older than the grace period, under the same lock.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.db.models import TextField
from django.db.models.functions import Cast
from django.utils import timezone

from studio.files import blob_path
from studio.models import Blob, Event, Upload

_REFERENCE = re.compile(r'"blob_id":\s*"([0-9a-f]{64})"')
_BLOB_NAME = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True, slots=True)
class Swept:
    uploads: int
    """Owners' rows removed: no event of theirs names the blob any more."""
    blobs: int
    """Stored blobs removed: no owner's row names them."""
    strays: int
    """Files removed that had no ``Blob`` row (from a transaction that failed)."""


class _StillUsed(Exception):
    """Rolls back a blob's removal: an upload row names it after all."""


def sweep(grace: timedelta, *, now: datetime | None = None) -> Swept:
    """Remove what nobody refers to and was last used before ``now - grace``."""
    cutoff = (now or timezone.now()) - grace
    uploads = _sweep_uploads(cutoff)
    unused = Blob.objects.filter(created_at__lt=cutoff).exclude(
        blob_id__in=Upload.objects.values("blob_id")
    )
    blobs = sum(
        _drop_blob(blob_id, cutoff) for blob_id in list(unused.values_list("pk", flat=True))
    )
    strays = sum(_drop_stray(name, cutoff) for name in _stored_names())
    return Swept(uploads, blobs, strays)


def _sweep_uploads(cutoff: datetime) -> int:
    named = _named_by_events()
    stale = Upload.objects.filter(used_at__lt=cutoff).values_list("pk", "owner_id", "blob_id")
    unnamed = [pk for pk, owner, blob_id in stale.iterator() if (owner, blob_id) not in named]
    # used_at is checked again as the row is deleted: a message stored since the events
    # were read has moved it past the cutoff.
    deleted, _ = Upload.objects.filter(pk__in=unnamed, used_at__lt=cutoff).delete()
    return deleted


def _named_by_events() -> set[tuple[int, str]]:
    """Every (owner, blob) an event of the owner's sessions names."""
    rows = (
        Event.objects.annotate(payload_text=Cast("payload", TextField()))
        .filter(payload_text__contains='"blob_id"')
        .values_list("session__owner_id", "payload_text")
    )
    return {
        (owner, blob_id) for owner, text in rows.iterator() for blob_id in _REFERENCE.findall(text)
    }


def _drop_blob(blob_id: str, cutoff: datetime) -> bool:
    """Remove a blob no upload names: its row first (locking it, as storing does),
    then, if still no upload names it, its bytes."""
    try:
        with transaction.atomic():
            deleted, _ = Blob.objects.filter(pk=blob_id, created_at__lt=cutoff).delete()
            if not deleted:
                return False
            if Upload.objects.filter(blob_id=blob_id).exists():
                raise _StillUsed
            default_storage.delete(blob_path(blob_id))
    except _StillUsed:
        return False
    return True


def _drop_stray(blob_id: str, cutoff: datetime) -> bool:
    """Remove bytes with no ``Blob`` row, older than the cutoff: the row is made first,
    so a message storing the same bytes right now waits for this or makes this fail."""
    path = blob_path(blob_id)
    if (
        Blob.objects.filter(pk=blob_id).exists()
        or default_storage.get_modified_time(path) >= cutoff
    ):
        return False
    try:
        with transaction.atomic():
            Blob.objects.create(blob_id=blob_id)
            default_storage.delete(path)
            Blob.objects.filter(pk=blob_id).delete()
    except IntegrityError:  # being stored right now
        return False
    return True


def _stored_names() -> Iterator[str]:
    if not default_storage.exists("blobs"):
        return
    folders, _ = default_storage.listdir("blobs")
    for folder in folders:
        _, names = default_storage.listdir(f"blobs/{folder}")
        yield from (name for name in names if _BLOB_NAME.match(name))
