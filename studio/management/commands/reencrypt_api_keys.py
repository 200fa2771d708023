"""Re-encrypts every stored secret (provider API keys, MCP servers' header and
environment values) under the first of FIELD_ENCRYPTION_KEYS."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from studio import crypto
from studio.models import McpServer, ModelConfig


class Command(BaseCommand):
    help = (
        "Re-encrypt stored provider API keys and MCP server secrets with the current "
        "(first) key of STUDIO_FIELD_ENCRYPTION_KEYS. Rotation: put a new key first, run this, "
        "then remove the old key."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        rotated = 0
        with transaction.atomic():
            configs = ModelConfig.objects.select_for_update().exclude(api_key_ciphertext="")
            for config in configs:
                try:
                    config.api_key_ciphertext = crypto.rotate(config.api_key_ciphertext)
                except crypto.DecryptionError as exc:
                    raise CommandError(f"model config {config.pk}: {exc}") from None
                config.save(update_fields=["api_key_ciphertext"])
                rotated += 1
            servers = self._rotate_mcp_secrets()
        self.stdout.write(
            f"re-encrypted {rotated} API key(s) and the secrets of {servers} MCP server(s) "
            "with the current key"
        )

    def _rotate_mcp_secrets(self) -> int:
        servers = McpServer.objects.select_for_update().exclude(
            headers_ciphertext="", env_ciphertext=""
        )
        for server in servers:
            for field in ("headers_ciphertext", "env_ciphertext"):
                token = getattr(server, field)
                try:
                    setattr(server, field, crypto.rotate(token) if token else "")
                except crypto.DecryptionError as exc:
                    raise CommandError(f"MCP server {server.pk}: {exc}") from None
            server.save(update_fields=["headers_ciphertext", "env_ciphertext"])
        return len(servers)
