"""Figures in words, one way for every page: the templates' filters
(``studio.web.format``), the admin's columns and the pages' scripts
(``static/studio/js/lib/ui.js``: ``formatDuration``, ``formatTokens``) write a duration
and a token count alike."""

from __future__ import annotations

from datetime import timedelta
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal

from studio.costs import Price


def duration(value: timedelta | float | str | None) -> str:
    """``320 ms``, ``1.5 s``, ``2:05 min``, ``1:02 h`` (a ``timedelta`` or milliseconds;
    nothing for none, or for the empty string a template gives for a missing value);
    ``<1 ms`` for a time too short to round to one, which ``0 ms`` would deny."""
    if value is None or value == "":
        return ""
    ms = value / timedelta(milliseconds=1) if isinstance(value, timedelta) else float(value)
    if 0 < ms < 0.5:
        return "<1 ms"
    # Each unit is chosen by the rounded figure, so 999.7 ms is "1.0 s", not "1000 ms".
    if ms < 1000 and (whole_ms := _half_up(max(0.0, ms), 0)) != "1000":
        return f"{whole_ms} ms"
    seconds = ms / 1000
    if seconds < 60 and (tenths := _half_up(seconds, 1)) != "60.0":
        return f"{tenths} s"
    minutes, rest = divmod(int(_half_up(seconds, 0)), 60)
    if minutes < 60:
        return f"{minutes}:{rest:02d} min"
    return f"{minutes // 60}:{minutes % 60:02d} h"


def _half_up(value: float, places: int) -> str:
    """``value`` to ``places`` decimals, a tie rounded up, as the scripts' ``Math.round``
    and ``toFixed`` round (Python's ``round`` and ``format`` round a tie to even: 2.5 ms
    was "2 ms" here and "3 ms" on the live page)."""
    return str(Decimal(value).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))


def tokens(figures: dict[str, int] | None) -> str:
    """``1,204 in · 88 out`` from ``{"input": ..., "output": ...}``, and
    ``1,204 in (1,000 cached) · 88 out`` with a non-zero ``"cached"`` (the part of the
    input served from the prompt cache); nothing for none."""
    if not figures or not (figures.get("input") or figures.get("output")):
        return ""
    cached = figures.get("cached") or 0
    written = f"{figures.get('input') or 0:,} in"
    written += f" ({cached:,} cached)" if cached else ""
    return f"{written} · {figures.get('output') or 0:,} out"


def cost(amount: Decimal | str | None, currency: str = "USD", *, complete: bool = True) -> str:
    """``$0.0012``, ``$12.35``, ``0.50 EUR``: two significant digits below one, cents
    above (``formatCost`` in ``ui.js`` alike); ``≥ $0.0012`` when some calls' costs are
    unknown; nothing when none is known, or when only calls of unknown cost were made
    (``≥ $0.00`` says nothing)."""
    if amount is None or amount == "":
        return ""
    value = Decimal(amount)
    if value == 0 and not complete:
        return ""
    places = 2 if value >= 1 or value == 0 else min(max(2, 1 - value.adjusted()), 10)
    text = str(value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN))
    written = f"${text}" if currency == "USD" else f"{text} {currency}"
    return written if complete else f"≥ {written}"


def price(value: Price | None) -> str:
    """A model's price per million tokens as set, every digit kept (a price is not
    rounded as a cost is), at least cents: ``$2.50 in · $10.00 out``,
    ``$2.50 in ($1.25 cached) · $10.00 out``; ``unknown`` for none."""
    return " · ".join(price_parts(value))


def price_parts(value: Price | None) -> list[str]:
    """``price`` in its parts, input and output (for a page that keeps each on a line):
    ``["$2.50 in ($1.25 cached)", "$10.00 out"]``; ``["unknown"]`` for none."""
    if value is None:
        return ["unknown"]

    def money(amount: Decimal) -> str:
        places = max(2, -int(amount.normalize().as_tuple().exponent))
        text = f"{amount:.{places}f}"
        return f"${text}" if value.currency == "USD" else f"{text} {value.currency}"

    cached = "" if value.cached_input is None else f" ({money(value.cached_input)} cached)"
    return [f"{money(value.input)} in{cached}", f"{money(value.output)} out"]
