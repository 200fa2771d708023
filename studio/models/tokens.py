"""Tokens other programs sign in with: an MCP client (``McpToken``), an OpenTelemetry
exporter (``IngestToken``). One shape for both.

Only a SHA-256 digest of each token is stored: the token itself is shown once, when it
is made, and cannot be read back. Tokens are 256 random bits, so a plain digest is as
hard to reverse as the token is to guess."""

from __future__ import annotations

import hashlib
import uuid

from django.db import models


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class AccessToken(models.Model):
    """One of ``owner``'s tokens (each kind declares its ``owner``); deleting the row
    revokes it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=100)
    hint = models.CharField(max_length=16, help_text="The token's first characters.")
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    PREFIX = ""
    """What every token of the kind starts with (a marker, not a secret)."""

    class Meta:
        abstract = True
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.hint}…)"
