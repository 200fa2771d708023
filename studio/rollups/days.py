"""Model calls kept added up per user, UTC day, model and currency (``ModelDay``).

A run's model calls are added once, when it ends (``records.end_run``, right after
``attribution`` stamped them with their run and model; taken away and added again with
calls stored after it ended, ``figures.refigure_ended``), and taken away when the run
is deleted (with its session, its agent or its user), so the rows always equal the
sums over the calls of ended runs that still exist. The overview reads these rows: a
few per day, whatever the number of events behind them.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Count, F, Q, QuerySet, Sum
from django.db.models.functions import Coalesce, TruncDate
from django.db.models.signals import pre_delete
from django.dispatch import receiver

from studio.models import Event, ModelDay, Run
from studio.rollups.queries import MODEL_CALL, GroupBy, RollUp, model_calls, roll_up, tokens


def add_run(run: Run) -> None:
    """Add the model calls of ``run`` (just ended and attributed) to its owner's days."""
    _apply(run, sign=1)


def subtract_run(run: Run) -> None:
    """Take the model calls of ``run`` away from its owner's days (``add_run`` adds them
    back, with any stored since)."""
    _apply(run, sign=-1)


@receiver(pre_delete, sender=Run, dispatch_uid="rollups.days.remove_run")
def remove_run(sender: type[Run], instance: Run, **kwargs: Any) -> None:
    """Take the model calls of a run about to be deleted (alone, or with its session,
    agent or user: the signal comes before any row goes) away from its owner's days."""
    subtract_run(instance)


def rebuild(owner_ids: Iterable[Any]) -> None:
    """Add the days of ``owner_ids`` up again from their calls of ended runs, in one
    grouped query (for histories written in bulk, without ``end_run``)."""
    owners = list(owner_ids)
    calls = Event.objects.filter(MODEL_CALL, run__isnull=False, session__owner_id__in=owners)
    with transaction.atomic():
        ModelDay.objects.filter(owner_id__in=owners).delete()
        # No server-side cursor (``iterator``): PostgreSQL plans a cursor for its first
        # rows and picks a plan that took minutes here; the groups are few in any case.
        rows = list(grouped(calls, "session__owner_id"))
        ModelDay.objects.bulk_create(
            [_row(group["session__owner_id"], group) for group in rows], batch_size=1_000
        )


def _apply(run: Run, sign: int) -> None:
    owner_id = run.session.owner_id
    with transaction.atomic(savepoint=False):  # inside end_run's or a delete's, no savepoint
        for group in grouped(Event.objects.filter(MODEL_CALL, run_id=run.pk)):
            _add(owner_id, group, sign)


def grouped(calls: QuerySet[Event], *keys: str) -> QuerySet[Any]:
    """``calls`` added up per UTC day, model and currency (the ``ModelDay`` key), and
    per ``keys`` before them."""
    rows: QuerySet[Any] = (
        calls.annotate(day=TruncDate("created_at", tzinfo=UTC))
        .values(*keys, *KEY)
        .annotate(
            calls=Count("id"),
            unknown=Count("id", filter=Q(cost__isnull=True)),
            input_tokens=Coalesce(Sum(tokens("input_tokens")), 0),
            output_tokens=Coalesce(Sum(tokens("output_tokens")), 0),
            cost=Sum("cost"),
        )
        .order_by()
    )
    return rows


KEY = ("day", "model", "cost_currency")
COUNTS = ("calls", "unknown", "input_tokens", "output_tokens", "cost")


def _key(owner_id: Any, group: dict[str, Any]) -> dict[str, Any]:
    return {
        "owner_id": owner_id,
        "day": group["day"],
        "model": group["model"],
        "currency": group["cost_currency"],
    }


def _row(owner_id: Any, group: dict[str, Any]) -> ModelDay:
    return ModelDay(**_key(owner_id, group), **{name: group[name] or 0 for name in COUNTS})


def _add(owner_id: Any, group: dict[str, Any], sign: int) -> None:
    key = _key(owner_id, group)
    amounts = {name: (group[name] or 0) * sign for name in COUNTS}
    increments = {name: F(name) + amount for name, amount in amounts.items()}
    rows = ModelDay.objects.filter(**key)
    if rows.update(**increments) or sign < 0:
        return
    try:
        with transaction.atomic():  # a savepoint: a concurrent first insert may win
            ModelDay.objects.create(**key, **amounts)
    except IntegrityError:
        rows.update(**increments)


def per_user(
    start: date | None = None, end: date | None = None, *, limit: int | None = None
) -> list[RollUp]:
    """Every user's model calls on the days ``start`` to ``end`` (UTC, both included),
    the costliest first: what ``roll_up(model_calls(None, ...), GroupBy.USER)`` gives,
    read from the ``ModelDay`` rows of ended runs plus the calls no ended run has
    claimed yet (a run still going; ``event_unattributed_call`` indexes those), so its
    time grows with users and days, not with every call ever stored."""
    days = ModelDay.objects.all()
    if start is not None:
        days = days.filter(day__gte=start)
    if end is not None:
        days = days.filter(day__lte=end)
    summed = days.values("owner_id", "owner__username", "currency").annotate(
        _cost=Sum("cost"),
        _calls=Sum("calls"),
        _input=Sum("input_tokens"),
        _output=Sum("output_tokens"),
    )
    totals: dict[tuple[str | None, str | None], RollUp] = {}
    for row in summed.order_by():
        currency = row["currency"] or None
        found = RollUp(
            key=str(row["owner_id"]),
            label=row["owner__username"],
            currency=currency,
            cost=row["_cost"] if currency else None,
            calls=row["_calls"],
            input_tokens=row["_input"],
            output_tokens=row["_output"],
        )
        totals[found.key, currency] = found
    unclaimed = model_calls(None, start=start, end=end).filter(run__isnull=True)
    for found in roll_up(unclaimed, GroupBy.USER):
        known = totals.get((found.key, found.currency))
        totals[found.key, found.currency] = found if known is None else known.plus(found)
    kept = [row for row in totals.values() if row.calls]  # a deleted run leaves zeros
    ranked = sorted(kept, key=_costliest_first)
    return ranked if limit is None else ranked[:limit]


def _costliest_first(row: RollUp) -> tuple[bool, Decimal, int, str, str]:
    """``roll_up``'s order: cost descending (unknown last), then the user's id (as a
    number, as the database orders it), then currency."""
    key = row.key or ""
    number = int(key) if key.isdigit() else 0
    return (row.cost is None, -(row.cost or Decimal(0)), number, key, row.currency or "")
