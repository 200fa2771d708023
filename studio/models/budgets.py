"""What users and agent versions may spend, and what they spent each day
(``studio.budgets``)."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

from studio import costs

BUDGET_MAX_DIGITS = 16
BUDGET_PLACES = 6


class UserBudget(models.Model):
    """What one user's runs may spend per UTC day, all agents together; set by staff
    (the admin). Empty fields are unlimited. Costs are in ``costs.DEFAULT_CURRENCY``."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, primary_key=True, on_delete=models.CASCADE, related_name="budget"
    )
    day_cost = models.DecimalField(
        max_digits=BUDGET_MAX_DIGITS,
        decimal_places=BUDGET_PLACES,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0.000001"))],
        help_text=f"Most the user's model calls may cost per UTC day, in "
        f"{costs.DEFAULT_CURRENCY}; empty: no limit.",
    )
    day_tokens = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Most tokens (input and output) the user's model calls may use per UTC day.",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "user budget"

    def __str__(self) -> str:
        return f"budget of user {self.user_id}"


class DaySpend(models.Model):
    """What one budget's owner (``scope``: ``user:<id>`` or ``version:<id>``) spent on
    one UTC day, and what calls in flight hold back (``reserved``): a call reserves its
    worst case before it is made, atomically and only while spent + reserved stays
    within the limit, and settles to its actual cost once it is over."""

    scope = models.CharField(max_length=64)
    day = models.DateField()
    cost_spent = models.DecimalField(
        max_digits=costs.MAX_DIGITS, decimal_places=costs.PLACES, default=Decimal(0)
    )
    cost_reserved = models.DecimalField(
        max_digits=costs.MAX_DIGITS, decimal_places=costs.PLACES, default=Decimal(0)
    )
    tokens_spent = models.BigIntegerField(default=0)
    tokens_reserved = models.BigIntegerField(default=0)

    class Meta:
        verbose_name = "day's spend"
        verbose_name_plural = "days' spend"
        constraints = [models.UniqueConstraint(fields=["scope", "day"], name="one_spend_per_day")]

    def __str__(self) -> str:
        return f"{self.scope} on {self.day}"


class DayHold(models.Model):
    """What one model call of a run, in flight, holds back from one daily budget
    (``DaySpend.cost_reserved`` and ``tokens_reserved`` add these up). The call's
    settling deletes it; a run that ends with holds left (its process died, or it was
    stopped mid-call) releases them (``studio.budgets.days.release_run``), so nothing
    stays reserved for the rest of the day."""

    run = models.ForeignKey("Run", on_delete=models.CASCADE, related_name="+")
    scope = models.CharField(max_length=64)
    day = models.DateField()
    cost = models.DecimalField(max_digits=costs.MAX_DIGITS, decimal_places=costs.PLACES)
    tokens = models.BigIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "day's hold"

    def __str__(self) -> str:
        return f"{self.scope} on {self.day}, held by run {self.run_id}"
