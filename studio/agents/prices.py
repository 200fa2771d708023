"""The price table shipped with Studio (``prices.json``: its date and sources are in
it): what a new model config's price starts as. Prices are kept on each config after
that, and each stored model event keeps what it cost (``studio.costs``)."""

from __future__ import annotations

import functools
import json
import re
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
    entry = data["models"].get(name) or data["models"].get(_SNAPSHOT.sub("", name))
    return None if entry is None else _price(entry, data["currency"])


_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


def _price(entry: dict[str, str], currency: str) -> Price:
    return Price(
        input=Decimal(entry["input"]),
        output=Decimal(entry["output"]),
        cached_input=Decimal(entry["cached_input"]),
        currency=currency,
    )
