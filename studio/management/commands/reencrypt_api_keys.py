"""Re-encrypts every stored API key under the first of FIELD_ENCRYPTION_KEYS."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from studio import crypto
from studio.models import ModelConfig


class Command(BaseCommand):
    help = (
        "Re-encrypt stored provider API keys with the current (first) key of "
        "STUDIO_FIELD_ENCRYPTION_KEYS. Rotation: put a new key first, run this, "
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
        self.stdout.write(f"re-encrypted {rotated} API key(s) with the current key")
