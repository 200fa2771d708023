"""What a model call cost: exact decimal arithmetic, no Django, no floats.

A ``Price`` is per million tokens (input, cached input, output) in one currency. A
call's cost is its uncached input tokens at the input price, its cached input tokens at
the cached price and its output tokens at the output price, divided by a million and
rounded half-even to ``PLACES``. Unknown is never zero: a call without usage, or a
model without a price, costs ``None``.

Costs are computed once, when the event is stored (``studio.session_service``), and
kept with it: a price changed later never rewrites history.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal

from agents_core import events as core_events
from agents_core.contracts import Cost, Usage

PLACES = 10
"""Decimal places a cost is kept to: a token of the cheapest cached input priced
(cents per million) still counts, and a sum of stored costs is exact."""
QUANTUM = Decimal(1).scaleb(-PLACES)
MAX_DIGITS = 20
"""Digits of a stored cost (``PLACES`` of them after the point)."""
PRICE_PLACES = 6
PRICE_MAX_DIGITS = 12
"""A price per million tokens: up to 999,999.999999 with six decimal places."""
DEFAULT_CURRENCY = "USD"
MILLION = Decimal(1_000_000)


@dataclass(frozen=True, slots=True)
class Price:
    """Per million tokens. A missing cached price charges cached tokens as input."""

    input: Decimal
    output: Decimal
    cached_input: Decimal | None = None
    currency: str = DEFAULT_CURRENCY


def cost_of(usage: Usage | None, price: Price | None) -> Cost | None:
    """What a call with ``usage`` cost at ``price``; ``None`` when either is unknown."""
    if usage is None or price is None:
        return None
    return call_cost(
        price,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_input_tokens=usage.cached_input_tokens,
    )


def call_cost(
    price: Price, *, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0
) -> Cost:
    """The cost of one call: ``input_tokens`` includes the ``cached_input_tokens``."""
    cached = min(cached_input_tokens, input_tokens)
    cached_price = price.input if price.cached_input is None else price.cached_input
    per_million = (
        (input_tokens - cached) * price.input + cached * cached_price + output_tokens * price.output
    )
    return Cost(amount=rounded(per_million / MILLION), currency=price.currency)


def rounded(amount: Decimal) -> Decimal:
    """``amount`` to ``PLACES`` decimal places, half to even."""
    return amount.quantize(QUANTUM, rounding=ROUND_HALF_EVEN)


@dataclass(frozen=True, slots=True)
class Total:
    """A sum of calls' costs. ``amount`` adds the known ones (``None`` when none is
    known); ``complete`` says no call's cost was unknown. Calls in more than one
    currency have no total (``None``, incomplete)."""

    amount: Decimal | None
    currency: str
    complete: bool


def total(costs: Iterable[Cost | None]) -> Total:
    """The sum of ``costs``; no calls at all cost zero."""
    listed = list(costs)
    known = [cost for cost in listed if cost is not None]
    unknown = len(listed) - len(known)
    currencies = {cost.currency for cost in known}
    if len(currencies) > 1:
        return Total(None, DEFAULT_CURRENCY, complete=False)
    currency = currencies.pop() if currencies else DEFAULT_CURRENCY
    if not known:
        return Total(None if unknown else Decimal(0).quantize(QUANTUM), currency, unknown == 0)
    return Total(sum((c.amount for c in known), Decimal(0)), currency, complete=unknown == 0)


def total_of(totals: Iterable[Total]) -> Total:
    """The sum of ``totals`` (a session's runs'): complete when each of them is."""
    listed = list(totals)
    known = [Cost(amount=t.amount, currency=t.currency) for t in listed if t.amount is not None]
    added = total(known)
    return Total(added.amount, added.currency, added.complete and all(t.complete for t in listed))


def _price_of(
    event: core_events.Event,
    prices: Mapping[str, Price],
    model_prices: Mapping[str, Price] | None,
) -> Price | None:
    if event.model is not None and model_prices is not None:
        return model_prices.get(event.model)
    return prices.get(event.author)


def is_model_call(event: core_events.Event) -> bool:
    """Whether ``event`` is a complete model answer (what a cost belongs to)."""
    return (
        event.type is core_events.EventType.AGENT_MESSAGE
        and not event.partial
        and (event.usage is not None or event.latency_ms is not None)
    )


def priced(
    event: core_events.Event,
    prices: Mapping[str, Price],
    summary_price: Price | None = None,
    model_prices: Mapping[str, Price] | None = None,
) -> core_events.Event:
    """``event`` with its cost, when it reports its usage and is a model call of an
    agent in ``prices`` (by agent name; by model config name in ``model_prices`` when
    the event names the model that answered: a fallback's), a compaction summary (at
    ``summary_price``, its summariser's) or a turn's key facts (at its author's price);
    otherwise unchanged (cost unknown). An answer or a summary from the response cache,
    or played back by a replay, costs exactly nothing."""
    if event.cost is not None or event.partial:
        return event
    summary = event.type is core_events.EventType.COMPACTION
    if (is_model_call(event) or summary) and (event.cached or event.replayed):
        price = summary_price if summary else _price_of(event, prices, model_prices)
        free = Cost(amount=Decimal(0), currency=price.currency if price else DEFAULT_CURRENCY)
        return event.model_copy(update={"cost": free})
    if is_model_call(event):
        price = _price_of(event, prices, model_prices)
    elif summary:
        price = summary_price
    elif event.type is core_events.EventType.MEMORY_SAVED:
        price = prices.get(event.author)  # the key facts came from the root's model
    else:
        return event
    cost = cost_of(event.usage, price)
    return event if cost is None else event.model_copy(update={"cost": cost})
