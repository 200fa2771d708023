"""Daily budgets in the database: reserve a call's worst case against every daily
budget it falls under, all or none, then settle it to what the call cost."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from django.db import transaction
from django.db.models import F, Value

from agents_core.exceptions import BudgetExceededError
from studio.costs import DEFAULT_CURRENCY
from studio.models import DaySpend


@dataclass(frozen=True, slots=True)
class DayBudget:
    """One daily budget: whose (``scope``, the ``DaySpend`` key), named how in errors."""

    scope: str
    name: str
    """``day`` (an agent version's) or ``user_day``: the error's ``limit`` is this name
    and ``_cost`` or ``_tokens``."""
    label: str
    cost: Decimal | None
    tokens: int | None


@dataclass(frozen=True, slots=True)
class Need:
    """A call's worst case (when reserving) or its actual use (when settling)."""

    cost: Decimal
    tokens: int


def reserve(budgets: Sequence[DayBudget], day: date, need: Need) -> None:
    """Hold ``need`` back on ``day`` under each of ``budgets``, or under none of them
    and raise ``BudgetExceededError`` naming the first it would pass."""
    with transaction.atomic():
        for budget in budgets:
            DaySpend.objects.get_or_create(scope=budget.scope, day=day)
            rows = DaySpend.objects.filter(scope=budget.scope, day=day)
            if budget.cost is not None:
                rows = rows.alias(held=F("cost_spent") + F("cost_reserved"))
                rows = rows.filter(held__lte=Value(budget.cost - need.cost))
            if budget.tokens is not None:
                rows = rows.alias(held_tokens=F("tokens_spent") + F("tokens_reserved"))
                rows = rows.filter(held_tokens__lte=budget.tokens - need.tokens)
            updated = rows.update(
                cost_reserved=F("cost_reserved") + Value(need.cost),
                tokens_reserved=F("tokens_reserved") + need.tokens,
            )
            if not updated:  # the atomic block undoes the budgets reserved before it
                raise _exceeded(budget, DaySpend.objects.get(scope=budget.scope, day=day), need)


def settle(budgets: Sequence[DayBudget], day: date, held: Need, used: Need) -> None:
    """Release ``held`` on ``day`` under each of ``budgets`` and count ``used`` spent."""
    with transaction.atomic():
        for budget in budgets:
            DaySpend.objects.filter(scope=budget.scope, day=day).update(
                cost_reserved=F("cost_reserved") - Value(held.cost),
                tokens_reserved=F("tokens_reserved") - held.tokens,
                cost_spent=F("cost_spent") + Value(used.cost),
                tokens_spent=F("tokens_spent") + used.tokens,
            )


def _exceeded(budget: DayBudget, row: DaySpend, need: Need) -> BudgetExceededError:
    if budget.cost is not None and row.cost_spent + row.cost_reserved + need.cost > budget.cost:
        amounts = (row.cost_spent, row.cost_reserved, budget.cost, need.cost)
        return over(f"{budget.name}_cost", budget.label, *amounts, DEFAULT_CURRENCY)
    tokens = (row.tokens_spent, row.tokens_reserved, budget.tokens, need.tokens)
    return over(f"{budget.name}_tokens", budget.label, *tokens, "tokens")


def over(
    name: str, label: str, spent: object, held: object, limit: object, need: object, unit: str
) -> BudgetExceededError:
    """The error for a call of worst case ``need`` refused by the budget ``name``."""
    return BudgetExceededError(
        name,
        f"{label}: {spent} {unit} spent ({held} held by calls in flight) of its limit of "
        f"{limit} {unit}, and the next model call could take up to {need} {unit}",
    )
