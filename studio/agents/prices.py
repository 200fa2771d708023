"""The price table shipped with Studio (``prices.json``: its date and sources are in
it): what a new model config's price starts as. Prices are kept on each config after
that, and each stored model event keeps what it cost (``studio.costs``). A model call
ingested over OTLP names the provider's model, not a config: ``prices_of_models``."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path
from typing import Any

from studio.costs import Price
from studio.models import ModelConfig

TABLE = Path(__file__).with_name("prices.json")


@functools.cache
def table() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(TABLE.read_text(encoding="utf-8"))
    return data


def price_for(provider: str, model: str) -> Price | None:
    """The table's price of ``model`` on ``provider``: a scripted model's made-up one;
    otherwise the entry named ``model``, or ``model`` without a date or ``-latest``
    suffix (``gpt-4o-2024-08-06``, ``claude-3-5-sonnet-20241022``). Any other variant
    (``gpt-4o-audio-preview``) may be priced differently: ``None``, not known."""
    data = table()
    if provider == ModelConfig.Provider.SCRIPTED:
        return _price(data["scripted"], data["currency"])
    name = model.strip().lower()
    entry = data["models"].get(name) or data["models"].get(_unsnapped(name))
    return None if entry is None else _price(entry, data["currency"])


def prices_of_models(owner_id: int, models: Iterable[str]) -> dict[str, Price]:
    """What a call of each of ``models`` (provider model names, as an ingested span
    gives them: ``gpt-4o-2024-08-06``) costs user ``owner_id``: the price of their model
    configs of that model (or of the model it is a snapshot of), which they can correct;
    none when those configs disagree or have no price (unknown, never a guess); else the
    shipped table's (``price_for``). Models priced by neither are left out: unknown."""
    names = {name for name in models if name.strip()}
    if not names:
        return {}
    configs: dict[str, set[Price | None]] = {}
    rows = ModelConfig.objects.filter(owner_id=owner_id).exclude(model="")
    for config in rows.only("model", *_PRICE_FIELDS):
        configs.setdefault(config.model.strip().lower(), set()).add(config.price())
    priced: dict[str, Price] = {}
    for name in names:
        lowered = name.strip().lower()
        own = configs.get(lowered) or configs.get(_unsnapped(lowered))
        price = price_for("", name) if own is None else _agreed(own)
        if price is not None:
            priced[name] = price
    return priced


def _agreed(prices: set[Price | None]) -> Price | None:
    """The one price ``prices`` agree on; none when they differ."""
    return next(iter(prices)) if len(prices) == 1 else None


_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$")
_PRICE_FIELDS = ("price_input", "price_cached_input", "price_output", "price_currency")


def _unsnapped(name: str) -> str:
    """``name`` without a date or ``-latest`` suffix: the model it is a snapshot of."""
    return _SNAPSHOT.sub("", name)


def _price(entry: dict[str, str], currency: str) -> Price:
    return Price(
        input=Decimal(entry["input"]),
        output=Decimal(entry["output"]),
        cached_input=Decimal(entry["cached_input"]),
        currency=currency,
    )
