"""The spend guard of one run (``agents_core.spend``): run budgets counted here, daily
ones reserved in the database (``days``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from agents_core import specs as core_specs
from agents_core.contracts import Usage
from agents_core.exceptions import BudgetExceededError
from agents_core.spend import CallEstimate
from studio import costs
from studio.budgets import days
from studio.budgets.days import DayBudget, Need
from studio.db import db_sync_to_async
from studio.models import AgentVersion, UserBudget

DEFAULT_MAX_OUTPUT_TOKENS = 4_096
"""A call's longest answer when its model names none, for its worst case."""
NOTHING = Need(Decimal(0), 0)


@dataclass(frozen=True, slots=True)
class RunBudget:
    label: str
    cost: Decimal | None = None
    tokens: int | None = None


@dataclass(slots=True)
class BudgetGuard:
    """Refuses a model call whose worst case could pass the run's or a daily budget."""

    prices: Mapping[str, costs.Price]
    """By agent name (``specs.agent_prices``)."""
    run: RunBudget
    run_id: Any = None
    """The run whose calls it guards: daily holds are recorded under it."""
    day_budgets: tuple[DayBudget, ...] = ()
    spent: Need = NOTHING
    held: Need = NOTHING
    """Worst cases of this run's calls in flight (parallel agents)."""

    @property
    def prices_cost(self) -> bool:
        """Whether any budget counts cost (then every call must be priced)."""
        return self.run.cost is not None or any(b.cost is not None for b in self.day_budgets)

    async def reserve(self, estimate: CallEstimate) -> _Hold:
        need = self.worst_case(estimate)
        self._check_run(need)
        day = datetime.now(UTC).date()
        self.held = _plus(self.held, need)  # before the await: parallel agents see it
        holds: tuple[int, ...] = ()
        try:
            if self.day_budgets:
                reserve = db_sync_to_async(days.reserve)
                holds = await reserve(self.day_budgets, day, need, self.run_id)
        except BaseException:
            self.held = _plus(self.held, Need(-need.cost, -need.tokens))
            raise
        return _Hold(self, estimate.agent, day, need, holds)

    def worst_case(self, estimate: CallEstimate) -> Need:
        answer = estimate.max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS
        tokens = estimate.prompt_tokens + answer
        if not self.prices_cost:
            return Need(Decimal(0), tokens)
        price = self.prices.get(estimate.agent)
        if price is None or price.currency != costs.DEFAULT_CURRENCY:
            raise BudgetExceededError(
                "unpriced",
                f"a cost budget applies, but the calls of agent {estimate.agent!r} cannot be "
                f"priced in {costs.DEFAULT_CURRENCY}: its model config has "
                + ("no price" if price is None else f"prices in {price.currency}"),
            )
        cost = costs.call_cost(price, input_tokens=estimate.prompt_tokens, output_tokens=answer)
        return Need(cost.amount, tokens)

    def _check_run(self, need: Need) -> None:
        run, spent, held = self.run, self.spent, self.held
        if run.cost is not None and spent.cost + held.cost + need.cost > run.cost:
            currency = costs.DEFAULT_CURRENCY
            args = (spent.cost, held.cost, run.cost, need.cost, currency)
            raise days.over("run_cost", run.label, *args)
        if run.tokens is not None and spent.tokens + held.tokens + need.tokens > run.tokens:
            tokens = (spent.tokens, held.tokens, run.tokens, need.tokens, "tokens")
            raise days.over("run_tokens", run.label, *tokens)

    async def settle(
        self, agent: str, day: date, held: Need, usage: Usage | None, holds: tuple[int, ...]
    ) -> None:
        cost = costs.cost_of(usage, self.prices.get(agent))
        used = Need(cost.amount if cost else Decimal(0), usage.total_tokens if usage else 0)
        self.held = _plus(self.held, Need(-held.cost, -held.tokens))
        self.spent = _plus(self.spent, used)
        if self.day_budgets:
            await db_sync_to_async(days.settle)(self.day_budgets, day, held, used, holds)


@dataclass(frozen=True, slots=True)
class _Hold:
    guard: BudgetGuard
    agent: str
    day: date
    need: Need
    holds: tuple[int, ...]

    async def settle(self, usage: Usage | None) -> None:
        await self.guard.settle(self.agent, self.day, self.need, usage, self.holds)


def _plus(a: Need, b: Need) -> Need:
    return Need(a.cost + b.cost, a.tokens + b.tokens)


def guard_for(
    version: AgentVersion,
    owner: AbstractBaseUser,
    prices: Mapping[str, costs.Price],
    run_id: Any = None,
) -> BudgetGuard:
    """The guard of run ``run_id`` of ``version`` by ``owner``: the version's spec
    budget and the owner's ``UserBudget``, as they are when the run starts."""
    spec = core_specs.AgentSpec.model_validate(version.spec).budget or core_specs.BudgetSpec()
    label = f"agent version {version}"
    found: list[DayBudget] = []
    if spec.day_cost is not None or spec.day_tokens is not None:
        scope, name = f"version:{version.pk}", f"the daily budget of {label}"
        found.append(DayBudget(scope, "day", name, spec.day_cost, spec.day_tokens))
    user = UserBudget.objects.filter(user_id=owner.pk).first()
    if user is not None and (user.day_cost is not None or user.day_tokens is not None):
        name = f"the daily budget of user {owner.get_username()}"
        scope = f"user:{owner.pk}"
        found.append(DayBudget(scope, "user_day", name, user.day_cost, user.day_tokens))
    run = RunBudget(f"the run budget of {label}", spec.run_cost, spec.run_tokens)
    return BudgetGuard(prices, run, run_id, tuple(found))
