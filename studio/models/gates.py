"""Rows shared by every process (``studio.gates``): the counted windows of model
configs' rate limits, of ingest tokens' request rates and of sign-in attempts, and kept
answers of the response cache."""

from __future__ import annotations

from django.db import models


class CountedWindow(models.Model):
    """What one limited thing used in one window (``start`` counts windows since the
    epoch); updated only by one conditional UPDATE at a time, so two processes never
    both take the last room (``studio.gates.rate_limits.take_room``)."""

    start = models.BigIntegerField()
    requests = models.PositiveIntegerField(default=0)

    class Meta:
        abstract = True


class RateWindow(CountedWindow):
    """What one model config's calls used in one window."""

    config = models.ForeignKey("studio.ModelConfig", on_delete=models.CASCADE, related_name="+")
    tokens = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["config", "start"], name="rate_window_unique")
        ]

    def __str__(self) -> str:
        return f"{self.config_id} window {self.start}"


class IngestWindow(CountedWindow):
    """The requests one OTLP ingest token sent in one window (``POST /v1/traces``)."""

    token = models.ForeignKey("studio.IngestToken", on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["token", "start"], name="ingest_window_unique")
        ]

    def __str__(self) -> str:
        return f"{self.token_id} window {self.start}"


class SignInWindow(CountedWindow):
    """The sign-in attempts (both sign-in pages and the token exchange together) from one
    client address, at one username, or from one known browser, in one window
    (``take_sign_in``)."""

    # "ip:<address>", "user:<the name's SHA-256>" or "device:<its cookie's id>"
    key = models.CharField(max_length=80)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["key", "start"], name="sign_in_window_unique")
        ]
        indexes = [models.Index(fields=["start"], name="sign_in_window_start")]

    def __str__(self) -> str:
        return f"{self.key} window {self.start}"


class CachedResponse(models.Model):
    """A model's answer to one request, kept until ``expires_at``; ``key`` hashes the
    model config and the whole request (``agents_core.llm.chain.request_key``)."""

    key = models.CharField(max_length=64, unique=True)
    config = models.ForeignKey("studio.ModelConfig", on_delete=models.CASCADE, related_name="+")
    response = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.config_id} answer {self.key[:12]}"
