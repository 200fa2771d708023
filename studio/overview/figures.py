"""The figures of one user's overview over a range of days (see the package)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Q, QuerySet, Sum
from django.db.models.functions import TruncDate

from studio.models import Agent, ExternalAgent, ModelDay, Run, RunStatus
from studio.overview import latency
from studio.overview.latency import RUN_AGENT

ERROR_STATUSES = (RunStatus.FAILED, RunStatus.INTERRUPTED)
UNKNOWN_MODEL = "unknown model"


@dataclass(frozen=True, slots=True)
class DayRange:
    """The days ``first`` to ``last``, both included (UTC)."""

    first: date
    last: date

    @property
    def days(self) -> list[date]:
        return [self.first + timedelta(days=n) for n in range((self.last - self.first).days + 1)]

    def created_in(self) -> Q:
        start = datetime.combine(self.first, time.min, tzinfo=UTC)
        end = datetime.combine(self.last + timedelta(days=1), time.min, tzinfo=UTC)
        return Q(created_at__gte=start, created_at__lt=end)


@dataclass(slots=True)
class Row:
    """One line of figures: a day, an agent or a model. ``cost`` is per currency;
    ``cost_incomplete`` counts runs (or model calls) whose cost was not known in full."""

    key: Any
    label: str
    runs: int = 0
    errors: int = 0
    p50: float | None = None
    p95: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    cost: dict[str, Decimal] = field(default_factory=dict)
    cost_incomplete: int = 0
    external: bool = False
    """An agent's row: one built elsewhere, whose runs were ingested over OTLP."""

    def add_cost(self, currency: str, amount: Decimal | None) -> None:
        if amount is not None and currency:
            self.cost[currency] = self.cost.get(currency, Decimal(0)) + amount


@dataclass(slots=True)
class Figures:
    span: DayRange
    days: list[Row]
    agents: list[Row]
    models: list[Row]
    total: Row


def overview(owner: AbstractBaseUser, span: DayRange) -> Figures:
    """``owner``'s figures over ``span``: only runs of their own sessions count."""
    # A fork's copies of its parent's runs happened once, in the parent: not counted again.
    runs = Run.objects.filter(span.created_in(), session__owner_id=owner.pk, copied_from=None)
    days = {day: Row(day, day.isoformat()) for day in span.days}
    agents: dict[Any, Row] = {}
    total = Row(None, "All")
    for row in _run_groups(runs):
        agent = agents.setdefault(row["agent"], Row(row["agent"], ""))
        for target in (days[row["day"]], agent, total):
            _add_runs(target, row)
    day_latency, agent_latency = latency.by_day_and_agent(runs)
    for day, (p50, p95) in day_latency.items():
        days[day].p50, days[day].p95 = p50, p95
    for agent_id, (p50, p95) in agent_latency.items():
        agents[agent_id].p50, agents[agent_id].p95 = p50, p95
    _name_agents(agents)
    ordered = sorted(agents.values(), key=lambda r: (-r.runs, r.label))
    return Figures(span, list(days.values()), ordered, _models(owner, span), total)


def _run_groups(runs: QuerySet[Run]) -> QuerySet[Any]:
    return (
        runs.annotate(day=TruncDate("created_at"), agent=RUN_AGENT)
        .values("day", "agent", "cost_currency")
        .annotate(
            n=Count("id"),
            errors=Count("id", filter=Q(status__in=ERROR_STATUSES)),
            input=Sum("input_tokens"),
            output=Sum("output_tokens"),
            amount=Sum("cost"),
            incomplete=Count("id", filter=Q(cost_complete=False, ended_at__isnull=False)),
        )
        .order_by()
    )


def _add_runs(target: Row, row: dict[str, Any]) -> None:
    target.runs += row["n"]
    target.errors += row["errors"]
    target.input_tokens += row["input"] or 0
    target.output_tokens += row["output"] or 0
    target.cost_incomplete += row["incomplete"]
    target.add_cost(row["cost_currency"], row["amount"])


def _name_agents(agents: dict[Any, Row]) -> None:
    keys = [key for key in agents if key]
    names = dict(Agent.objects.filter(pk__in=keys).values_list("pk", "name"))
    rest = [key for key in keys if key not in names]  # agents built elsewhere, if any
    external = dict(ExternalAgent.objects.filter(pk__in=rest).values_list("pk", "name"))
    for key, row in agents.items():
        if key in external:
            row.label, row.external = f"{external[key]} (external)", True
        else:
            row.label = names.get(key, "(no agent)")


def _models(owner: AbstractBaseUser, span: DayRange) -> list[Row]:
    """Model calls per model over the range, from the kept day totals (``ModelDay``)."""
    groups = (
        ModelDay.objects.filter(owner_id=owner.pk, day__gte=span.first, day__lte=span.last)
        .values("model", "currency")
        .annotate(
            n=Sum("calls"),
            input=Sum("input_tokens"),
            output=Sum("output_tokens"),
            amount=Sum("cost"),
            unknown=Sum("unknown"),
        )
        .order_by()
    )
    rows: dict[str, Row] = {}
    for group in groups:
        name = group["model"] or UNKNOWN_MODEL
        row = rows.setdefault(name, Row(group["model"], name))
        row.calls += group["n"]
        row.input_tokens += group["input"]
        row.output_tokens += group["output"]
        row.cost_incomplete += group["unknown"]
        if group["n"] > group["unknown"]:
            row.add_cost(group["currency"], group["amount"])
    return sorted(rows.values(), key=lambda r: (-r.calls, r.label))
