"""What the model calls in a span cost (``agents_core.spans``): exact sums, where an
unknown cost is never zero."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Annotated

from pydantic import NonNegativeInt, PlainSerializer

from agents_core.contracts import Contract, Cost

Amount = Annotated[
    Decimal, PlainSerializer(lambda amount: format(amount, "f"), return_type=str, when_used="json")
]
"""A sum of costs, written as a plain decimal string (``0.00000012``, never ``1.2E-7``)."""


class SpanCost(Contract):
    """What the model calls in a span cost. Unknown is never zero: a call without a cost
    makes the sum incomplete, and calls in more than one currency have no sum at all."""

    amount: Amount | None
    """The sum of the known costs; ``None`` when none is known, or when they are in more
    than one currency."""
    currency: str | None
    """The currency of ``amount``."""
    complete: bool
    """Every call's cost is known, in one currency: ``amount`` is the whole cost."""
    calls: NonNegativeInt
    """The model calls summed."""
    unknown: NonNegativeInt
    """How many of them have no cost."""


def sum_costs(costs: Iterable[Cost | None]) -> SpanCost:
    """The exact sum of some model calls' ``costs`` (``None``: a call of unknown cost)."""
    listed = list(costs)
    known = [cost for cost in listed if cost is not None]
    currencies = {cost.currency for cost in known}
    unknown = len(listed) - len(known)
    if len(currencies) != 1:
        return SpanCost(
            amount=None, currency=None, complete=False, calls=len(listed), unknown=unknown
        )
    return SpanCost(
        amount=sum((cost.amount for cost in known), Decimal(0)),
        currency=currencies.pop(),
        complete=unknown == 0,
        calls=len(listed),
        unknown=unknown,
    )
