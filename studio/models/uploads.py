"""Files attached to messages: the bytes live once in the default storage, named by
their SHA-256 (``studio.files``); a ``Blob`` row says they are stored (and is what
storing and sweeping lock), an ``Upload`` row that an owner attached them: only an
owner with a row may read them."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone

BLOB_ID = RegexValidator("^[0-9a-f]{64}$", "A SHA-256 in hex.")


class Blob(models.Model):
    """Stored bytes, by their SHA-256. Storing a file and sweeping it both lock this
    row first, so the sweeper never removes bytes a message is being stored with."""

    blob_id = models.CharField(max_length=64, primary_key=True, validators=[BLOB_ID])
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.blob_id[:12]


class Upload(models.Model):
    """An owner's file: ``blob_id`` names the stored bytes (shared by every owner who
    attached the same bytes, stored once); ``content_type`` is what the bytes were
    sniffed to be, never what the client said."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="uploads"
    )
    blob_id = models.CharField(max_length=64, validators=[BLOB_ID])
    content_type = models.CharField(max_length=100)
    size = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    used_at = models.DateTimeField(default=timezone.now)
    """When a message last attached these bytes: the sweeper leaves a row younger than
    its grace period alone, whatever references it (its message may not be stored
    yet)."""

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["owner", "blob_id"], name="upload_unique_per_owner")
        ]

    def __str__(self) -> str:
        return f"{self.blob_id[:12]} ({self.content_type})"
