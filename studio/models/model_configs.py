"""Model configurations: the endpoints an agent spec can name, with their encrypted keys,
prices and rate limits."""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

from studio import costs, crypto


def _price_field(what: str) -> models.DecimalField[Any, Any]:
    return models.DecimalField(
        max_digits=costs.PRICE_MAX_DIGITS,
        decimal_places=costs.PRICE_PLACES,
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
        help_text=f"Price of a million {what} tokens; empty: not known.",
    )


MAX_PER_MINUTE = 100_000_000


class ModelConfig(models.Model):
    """A model endpoint an agent spec can name. The API key is only ever stored
    encrypted (``api_key_ciphertext``); its plaintext exists only while in use."""

    class Provider(models.TextChoices):
        OPENAI_COMPATIBLE = "openai_compatible", "OpenAI-compatible"
        ANTHROPIC = "anthropic", "Anthropic"
        GEMINI = "gemini", "Google Gemini"
        OLLAMA = "ollama", "Ollama"
        SCRIPTED = "scripted", "Scripted (offline)"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="model_configs"
    )
    name = models.CharField(max_length=100)
    provider = models.CharField(max_length=32, choices=Provider.choices)
    base_url = models.URLField(blank=True)
    model = models.CharField(max_length=200, blank=True)
    options = models.JSONField(default=dict, blank=True)
    api_key_ciphertext = models.TextField(blank=True, editable=False)
    api_key_hint = models.CharField(max_length=8, blank=True, editable=False)
    # Per million tokens; none known (null) means its calls' cost is unknown, never zero.
    price_input = _price_field("input")
    price_cached_input = _price_field("cached input (charged as input when empty)")
    price_output = _price_field("output")
    price_currency = models.CharField(
        max_length=3,
        default=costs.DEFAULT_CURRENCY,
        validators=[RegexValidator("^[A-Z]{3}$", "An ISO 4217 code: three capital letters.")],
        help_text="The currency of its prices (ISO 4217), e.g. USD.",
    )
    # Shared by every run of this config, in every process (``studio.gates.rate_limits``).
    requests_per_minute = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_PER_MINUTE)],
        help_text="Most calls per minute, all runs together; empty: no limit.",
    )
    tokens_per_minute = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_PER_MINUTE)],
        help_text="Most tokens (prompt estimate plus longest answer) per minute; empty: no limit.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "model config"
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="model_name_unique_per_owner")
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def has_api_key(self) -> bool:
        return bool(self.api_key_ciphertext)

    @property
    def api_key_last_chars(self) -> str:
        """The key's last four characters as its hint shows them; empty for no or a short key."""
        return self.api_key_hint.removeprefix("...")

    def set_api_key(self, plaintext: str) -> None:
        """Encrypt and keep ``plaintext``; an empty string removes the key."""
        self.api_key_ciphertext = crypto.encrypt(plaintext) if plaintext else ""
        self.api_key_hint = crypto.hint(plaintext) if plaintext else ""

    def api_key(self) -> str:
        """The decrypted key, for the one call that sends it to the provider."""
        return crypto.decrypt(self.api_key_ciphertext) if self.api_key_ciphertext else ""

    def price(self) -> costs.Price | None:
        """Its price, or ``None`` unless both the input and the output price are known."""
        if self.price_input is None or self.price_output is None:
            return None
        return costs.Price(
            input=self.price_input,
            output=self.price_output,
            cached_input=self.price_cached_input,
            currency=self.price_currency,
        )

    def set_price(self, price: costs.Price | None) -> None:
        self.price_input = price.input if price else None
        self.price_cached_input = price.cached_input if price else None
        self.price_output = price.output if price else None
        self.price_currency = price.currency if price else costs.DEFAULT_CURRENCY
