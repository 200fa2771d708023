"""Budgets as users see them: staff set them (the admin or the API), users read their own."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from studio import budgets
from studio.models import UserBudget


def user_budget(user_id: Any) -> budgets.UserDay:
    """``user_id``'s daily budget and what their runs spent under it today (UTC)."""
    return budgets.user_day(user_id)


def set_user_budget(user_id: Any, *, day_cost: Decimal | None, day_tokens: int | None) -> None:
    """Set ``user_id``'s daily budget (``None``: no limit on that count); it applies to
    the model calls their runs make from now on, today's spend included."""
    UserBudget.objects.update_or_create(
        user_id=user_id, defaults={"day_cost": day_cost, "day_tokens": day_tokens}
    )
