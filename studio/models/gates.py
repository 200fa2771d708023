"""Rows shared by every process around model calls (``studio.gates``): per-minute
windows of each model config's rate limits, and kept answers of the response cache."""

from __future__ import annotations

from django.db import models


class RateWindow(models.Model):
    """What one model config's calls used in one window (``start`` counts windows since
    the epoch); updated only by one conditional UPDATE at a time, so two processes
    never both take the last room."""

    config = models.ForeignKey("studio.ModelConfig", on_delete=models.CASCADE, related_name="+")
    start = models.BigIntegerField()
    requests = models.PositiveIntegerField(default=0)
    tokens = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["config", "start"], name="rate_window_unique")
        ]

    def __str__(self) -> str:
        return f"{self.config_id} window {self.start}"


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
