"""Tokens other MCP clients use to reach Studio's MCP endpoint (``studio.mcp_endpoint``),
stored as digests (``studio.models.tokens``)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from studio.models.tokens import AccessToken
from studio.models.tokens import token_digest as token_digest

TOKEN_PREFIX = "smcp_"  # noqa: S105  (a marker, not a secret)


class McpToken(AccessToken):
    """One of ``owner``'s MCP tokens; deleting the row revokes it."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mcp_tokens"
    )

    PREFIX = TOKEN_PREFIX

    class Meta(AccessToken.Meta):
        pass
