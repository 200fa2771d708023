"""Remote A2A agents the owner's agents may call like tools (``studio.a2a`` reaches
them, the ``a2a`` tool entry names them)."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models

from agents_core import specs as core_specs
from studio.models.mcp import seal, unseal


class RemoteAgent(models.Model):
    """An agent elsewhere, reached over the Agent2Agent protocol at ``url`` (its card is
    under ``<url>/.well-known/``). ``url`` is checked by ``studio.security`` when saved
    and before every request. The token it takes is a secret: stored encrypted as the
    request headers it makes (``Authorization: Bearer ...``, sealed as an MCP server's
    headers are, so a registration moved from there keeps its own) and never shown. ``card``
    is what the agent's card said when last fetched (``studio.a2a.cards``): its name,
    description, skills and whether it streams; text, never markup."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="remote_agents"
    )
    name = models.CharField(
        max_length=64,
        validators=[RegexValidator(core_specs.NAME_PATTERN)],
        help_text="Letters, digits, '_' or '-': the agent's tool is a2a_ and this name.",
    )
    description = models.CharField(
        max_length=500, blank=True, help_text="What the model reads (else the card's)."
    )
    url = models.URLField(max_length=2_000, help_text="The agent's A2A base URL.")
    headers_ciphertext = models.TextField(blank=True, editable=False)
    header_names = models.JSONField(default=list, blank=True, editable=False)
    card = models.JSONField(default=dict, blank=True, editable=False)
    card_error = models.CharField(max_length=500, blank=True, editable=False)
    card_fetched_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "remote A2A agent"
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "name"], name="remote_agent_name_unique_per_owner"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def has_token(self) -> bool:
        return bool(self.headers_ciphertext)

    def set_token(self, token: str) -> None:
        """Store ``token`` (empty: none) as the bearer token, encrypted."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.headers_ciphertext, self.header_names = seal(headers)

    def headers(self) -> dict[str, str]:
        """The decrypted request headers, for the connection that sends them."""
        return unseal(self.headers_ciphertext)

    @property
    def shown_description(self) -> str:
        """The registration's own description, else the card's."""
        card: dict[str, Any] = self.card or {}
        return self.description or str(card.get("description", ""))
