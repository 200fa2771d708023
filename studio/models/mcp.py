"""Model Context Protocol servers the owner's agents may use (``studio.mcp`` connects
them)."""

from __future__ import annotations

import json
import shlex
import uuid

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models

from agents_core import specs as core_specs
from studio import crypto


class McpServer(models.Model):
    """A Model Context Protocol server whose tools the owner's agents may use.

    ``http`` servers are reached at ``url`` (checked by ``studio.security`` when saved
    and before each connection), with optional ``headers`` kept encrypted. ``stdio``
    servers are programs Studio starts: exactly ``command`` with ``args``, no shell, with
    an environment of allowlisted variables only (``studio.mcp``); only staff create or
    change them. Header and environment values are secrets: stored encrypted, never shown.
    """

    class Transport(models.TextChoices):
        HTTP = "http", "Streamable HTTP"
        STDIO = "stdio", "Local process (stdio)"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mcp_servers"
    )
    name = models.CharField(
        max_length=64,
        validators=[RegexValidator(core_specs.NAME_PATTERN)],
        help_text="Letters, digits, '_' or '-': agent specs refer to the server by this name.",
    )
    description = models.CharField(max_length=500, blank=True)
    transport = models.CharField(max_length=8, choices=Transport.choices)
    url = models.URLField(max_length=2_000, blank=True)
    headers_ciphertext = models.TextField(blank=True, editable=False)
    header_names = models.JSONField(default=list, blank=True, editable=False)
    command = models.CharField(max_length=1_000, blank=True)
    args = models.JSONField(default=list, blank=True)
    env_ciphertext = models.TextField(blank=True, editable=False)
    env_names = models.JSONField(default=list, blank=True, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        editable=False,
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "MCP server"
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="mcp_name_unique_per_owner"),
            models.CheckConstraint(
                condition=(models.Q(transport="http") & ~models.Q(url=""))
                | (models.Q(transport="stdio") & ~models.Q(command="")),
                name="mcp_transport_has_target",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def command_line(self) -> str:
        """The exact program and arguments, quoted as a POSIX shell would need them:
        what staff approved, shown as text wherever the server appears."""
        return shlex.join([self.command, *self.args]) if self.command else ""

    def set_headers(self, headers: dict[str, str]) -> None:
        self.headers_ciphertext, self.header_names = seal(headers)

    def headers(self) -> dict[str, str]:
        """The decrypted headers, for the connection that sends them."""
        return unseal(self.headers_ciphertext)

    def set_env(self, env: dict[str, str]) -> None:
        self.env_ciphertext, self.env_names = seal(env)

    def env(self) -> dict[str, str]:
        """The decrypted environment values staff stored, for the process that gets them."""
        return unseal(self.env_ciphertext)


def seal(values: dict[str, str]) -> tuple[str, list[str]]:
    """A mapping of secrets as one encrypted token, and its (non-secret) names."""
    if not values:
        return "", []
    return crypto.encrypt(json.dumps(values, sort_keys=True)), sorted(values)


def unseal(token: str) -> dict[str, str]:
    if not token:
        return {}
    values: dict[str, str] = json.loads(crypto.decrypt(token))
    return values
