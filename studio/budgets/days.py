"""Daily budgets in the database: reserve a call's worst case against every daily
budget it falls under, all or none, then settle it to what the call cost."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import F, Value

from agents_core.exceptions import BudgetExceededError
from studio.costs import DEFAULT_CURRENCY
from studio.models import DayHold, DaySpend


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


def reserve(budgets: Sequence[DayBudget], day: date, need: Need, run_id: Any) -> tuple[int, ...]:
    """Hold ``need`` back on ``day`` under each of ``budgets`` for a call of run
    ``run_id``, or under none of them and raise ``BudgetExceededError`` naming the first
    it would pass. Returns the holds (``DayHold`` ids) to settle the call with."""
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
        holds = DayHold.objects.bulk_create(
            DayHold(run_id=run_id, scope=b.scope, day=day, cost=need.cost, tokens=need.tokens)
            for b in budgets
        )
    return tuple(hold.pk for hold in holds)


def settle(
    budgets: Sequence[DayBudget], day: date, held: Need, used: Need, holds: Sequence[int]
) -> None:
    """Count ``used`` spent on ``day`` under each of ``budgets`` and release what the
    call's ``holds`` kept back (unless its run's end released them already)."""
    with transaction.atomic():
        rows = DayHold.objects.select_for_update().filter(pk__in=holds)
        still_held = set(rows.values_list("scope", flat=True))
        rows.delete()
        for budget in budgets:
            release = held if budget.scope in still_held else Need(Decimal(0), 0)
            DaySpend.objects.filter(scope=budget.scope, day=day).update(
                cost_reserved=F("cost_reserved") - Value(release.cost),
                tokens_reserved=F("tokens_reserved") - release.tokens,
                cost_spent=F("cost_spent") + Value(used.cost),
                tokens_spent=F("tokens_spent") + used.tokens,
            )


def release_run(run_id: Any) -> int:
    """Release what run ``run_id``'s calls still hold (calls that never settled: their
    process died, or the run was stopped mid-call); the number of holds released."""
    with transaction.atomic(savepoint=False):  # inside end_run's: no savepoint of its own
        holds = list(DayHold.objects.select_for_update().filter(run_id=run_id))
        for hold in holds:
            DaySpend.objects.filter(scope=hold.scope, day=hold.day).update(
                cost_reserved=F("cost_reserved") - Value(hold.cost),
                tokens_reserved=F("tokens_reserved") - hold.tokens,
            )
        DayHold.objects.filter(pk__in=[hold.pk for hold in holds]).delete()
    return len(holds)


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
