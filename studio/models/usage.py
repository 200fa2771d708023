"""Model calls added up per user, UTC day, model and currency (``studio.rollups.days``),
so the overview reads a few rows per day instead of every event of its range."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import models

from studio import costs


class ModelDay(models.Model):
    """The model calls one user's runs made to one model on one UTC day, in one
    currency (``""``: the calls whose cost is unknown, counted in ``unknown``, never as
    zero). A run's calls are added when it ends and taken away when it is deleted."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    model = models.CharField(max_length=200, blank=True)
    currency = models.CharField(max_length=3, blank=True)
    calls = models.BigIntegerField(default=0)
    unknown = models.BigIntegerField(default=0)
    """Calls whose cost is unknown (no usage reported, or no price for the model)."""
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    cost = models.DecimalField(
        max_digits=costs.MAX_DIGITS, decimal_places=costs.PLACES, default=Decimal(0)
    )

    class Meta:
        verbose_name = "model's day"
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "day", "model", "currency"], name="one_model_day"
            )
        ]

    def __str__(self) -> str:
        return f"{self.model or 'unknown model'} on {self.day}"
