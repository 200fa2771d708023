"""Template filters (``{% load studio %}``): figures written the way the pages' scripts
write them (``studio.figures``)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django import template
from django.utils import timezone
from django.utils.timesince import timesince

from studio import figures
from studio.models import ModelConfig, Session

register = template.Library()


@register.filter
def duration(value: timedelta | float | str | None) -> str:
    """``320 ms``, ``1.5 s``, ``2:05 min``, ``1:02 h``."""
    return figures.duration(value)


@register.filter
def tokens(counts: dict[str, int] | None) -> str:
    """``1,204 in · 88 out`` from ``{"input": ..., "output": ...}``."""
    return figures.tokens(counts)


@register.filter
def session_cost(session: Session) -> str:
    """A session's ended runs' cost, all told (``≥`` when some calls' were unknown)."""
    return figures.cost(session.cost, session.cost_currency, complete=session.cost_complete)


@register.filter
def price_parts(config: ModelConfig) -> list[str]:
    """A model config's price per million tokens, input and output: ``["$2.50 in",
    "$10.00 out"]``, or ``["unknown"]``."""
    return figures.price_parts(config.price())


@register.filter
def read_ago(moment: datetime) -> str:
    """``just now`` within a minute (``timesince`` says ``0 minutes``), else ``5 minutes
    ago``, ``2 days, 3 hours ago``."""
    if timezone.now() - moment < timedelta(minutes=1):
        return "just now"
    return f"{timesince(moment)} ago"
