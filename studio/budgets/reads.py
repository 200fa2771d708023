"""What a user may spend today and what they spent, for the API."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from studio import costs
from studio.models import DaySpend, UserBudget


@dataclass(frozen=True, slots=True)
class UserDay:
    """A user's daily budget (``None``: unlimited) and today's (UTC) spend under it;
    spend is counted only while a limit is set."""

    day: date
    day_cost: Decimal | None
    day_tokens: int | None
    cost_spent: Decimal
    cost_reserved: Decimal
    tokens_spent: int
    tokens_reserved: int
    currency: str = costs.DEFAULT_CURRENCY


def user_day(user_id: Any) -> UserDay:
    today = datetime.now(UTC).date()
    budget = UserBudget.objects.filter(user_id=user_id).first()
    spend = DaySpend.objects.filter(scope=f"user:{user_id}", day=today).first() or DaySpend()
    return UserDay(
        day=today,
        day_cost=budget.day_cost if budget else None,
        day_tokens=budget.day_tokens if budget else None,
        cost_spent=spend.cost_spent,
        cost_reserved=spend.cost_reserved,
        tokens_spent=spend.tokens_spent,
        tokens_reserved=spend.tokens_reserved,
    )
