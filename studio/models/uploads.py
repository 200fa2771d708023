"""Files attached to messages: the bytes live once in the default storage, named by
their SHA-256 (``studio.files``); a row says that an owner attached them, and only
an owner with a row may read them."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models


class Upload(models.Model):
    """An owner's file: ``blob_id`` names the stored bytes (shared by every owner who
    attached the same bytes, stored once); ``content_type`` is what the bytes were
    sniffed to be, never what the client said."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="uploads"
    )
    blob_id = models.CharField(
        max_length=64, validators=[RegexValidator("^[0-9a-f]{64}$", "A SHA-256 in hex.")]
    )
    content_type = models.CharField(max_length=100)
    size = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["owner", "blob_id"], name="upload_unique_per_owner")
        ]

    def __str__(self) -> str:
        return f"{self.blob_id[:12]} ({self.content_type})"
