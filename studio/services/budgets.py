"""Budgets as users see them: staff set them (the admin), users read their own."""

from __future__ import annotations

from typing import Any

from studio import budgets


def user_budget(user_id: Any) -> budgets.UserDay:
    """``user_id``'s daily budget and what their runs spent under it today (UTC)."""
    return budgets.user_day(user_id)
