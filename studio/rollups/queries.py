"""Cost roll-ups: the model calls of a date range, added up per run, session, agent,
agent version, tool, model, user or day, in one aggregate query over ``Event``.

A model call is a stored, complete ``agent_message`` that reports its usage or has a
cost; its cost is the one stamped when it was stored (``studio.costs``), and what led
to it the attribution its run's end wrote (``attribution``). Rows are per key and
currency: calls whose cost is unknown are counted in a row of their own with no
currency, never as zero.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import Any

from django.db.models import BigIntegerField, Count, F, Lookup, Q, QuerySet, Sum
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast, Coalesce, TruncDate

from agents_core.events import EventType
from studio.models import Event


class GroupBy(StrEnum):
    RUN = "run"
    SESSION = "session"
    AGENT = "agent"
    AGENT_VERSION = "agent_version"
    TOOL = "tool"
    MODEL = "model"
    USER = "user"
    DAY = "day"


_KEYS: Mapping[GroupBy, tuple[Any, Any]] = {
    GroupBy.RUN: (F("run_id"), F("run__message")),
    GroupBy.SESSION: (F("session_id"), F("session__title")),
    GroupBy.AGENT: (F("author"), F("author")),
    GroupBy.AGENT_VERSION: (F("session__agent_version_id"), F("session__agent_version__number")),
    GroupBy.TOOL: (F("tool"), F("tool")),
    GroupBy.MODEL: (F("model"), F("model")),
    GroupBy.USER: (F("session__owner_id"), F("session__owner__username")),
    GroupBy.DAY: (TruncDate("created_at", tzinfo=UTC), TruncDate("created_at", tzinfo=UTC)),
}
"""Each grouping's key and the label shown with it (a run's message, a session's title,
an agent version's number, a user's name)."""


@dataclass(frozen=True, slots=True)
class RollUp:
    """The model calls of one key in one currency (``None``: calls of unknown cost)."""

    key: str | None
    label: str | None
    currency: str | None
    cost: Decimal | None
    calls: int
    input_tokens: int
    output_tokens: int

    def plus(self, other: RollUp) -> RollUp:
        """This row and ``other`` (same key and currency) added up."""
        cost = None if self.cost is None or other.cost is None else self.cost + other.cost
        return replace(
            self,
            cost=cost,
            calls=self.calls + other.calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


class InLiterals(Lookup):
    """``field IN ('a', 'b')`` with its values written into the SQL, not bound.

    SQLite uses a partial index only when the query's WHERE contains the index's own
    condition, and a bound parameter is not the literal in an index's condition: with
    ``type IN (?, ?, ?)`` it never used ``event_model_call`` or
    ``event_unattributed_call`` and scanned every event (staff's cost per user: 563 ms
    at 1,025,831 events). For the SDK's own constants only: each value must be a plain
    lower-case name, so nothing needs escaping."""

    lookup_name = "in_literals"
    prepare_rhs = False

    def __init__(self, lhs: Any, rhs: tuple[str, ...]) -> None:
        if not rhs or not all(isinstance(v, str) and _NAME.fullmatch(v) for v in rhs):
            raise ValueError(f"not plain names: {rhs!r}")
        super().__init__(lhs, tuple(rhs))

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, tuple[Any, ...]]:
        field, params = self.process_lhs(compiler, connection)
        literals = ", ".join(f"'{value}'" for value in self.rhs)
        return f"{field} IN ({literals})", tuple(params)


_NAME = re.compile(r"[a-z_]+")
MODEL_CALL_TYPES = (EventType.AGENT_MESSAGE, EventType.COMPACTION, EventType.MEMORY_SAVED)
MODEL_CALL = Q(InLiterals(F("type"), MODEL_CALL_TYPES)) & (
    Q(usage__isnull=False) | Q(cost__isnull=False)
)
"""A stored model call: a complete ``agent_message``, a compaction summary or a turn's
key facts (``memory_saved``), that reports its usage or has a cost."""


def model_calls(
    owner_id: Any | None, *, start: date | None = None, end: date | None = None
) -> QuerySet[Event]:
    """The model calls of ``owner_id``'s sessions (everyone's when ``None``) stored on
    the days ``start`` to ``end`` (UTC, both included)."""
    rows = Event.objects.filter(MODEL_CALL)
    if owner_id is not None:
        rows = rows.filter(session__owner_id=owner_id)
    if start is not None:
        rows = rows.filter(created_at__gte=datetime.combine(start, time(), UTC))
    if end is not None:
        rows = rows.filter(created_at__lt=datetime.combine(end + timedelta(days=1), time(), UTC))
    return rows


def roll_up(rows: QuerySet[Event], group_by: GroupBy, *, limit: int | None = None) -> list[RollUp]:
    """``rows`` added up per ``group_by`` key and currency, the costliest first (at most
    ``limit`` of them)."""
    key, label = _KEYS[group_by]
    summed = (
        rows.annotate(_key=key, _label=label)
        .values("_key", "_label", "cost_currency")
        .annotate(
            _cost=Sum("cost"),
            _calls=Count("id"),
            _input=Coalesce(Sum(tokens("input_tokens")), 0),
            _output=Coalesce(Sum(tokens("output_tokens")), 0),
        )
        .order_by(F("_cost").desc(nulls_last=True), "_key", "cost_currency")
    )
    return [_row(values) for values in (summed if limit is None else summed[:limit])]


def tokens(name: str) -> Cast:
    """The ``name`` count of a call's usage, as a number the database can add up."""
    return Cast(KeyTextTransform(name, "usage"), BigIntegerField())


def _row(values: Mapping[str, Any]) -> RollUp:
    currency = values["cost_currency"] or None
    return RollUp(
        key=_text(values["_key"]),
        label=_text(values["_label"]),
        currency=currency,
        cost=values["_cost"] if currency else None,
        calls=values["_calls"],
        input_tokens=values["_input"],
        output_tokens=values["_output"],
    )


def _text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return value.isoformat() if isinstance(value, date) else str(value)
