"""Model configs' requests and tokens per minute, shared by every run in every process.

Each config's use is counted in windows of ``STUDIO_RATE_WINDOW_S`` (a minute) in
``RateWindow`` rows. A call takes its room with one conditional UPDATE that matches
only while the window has room, so two processes can never both take the last of it
(SQLite and PostgreSQL alike); a call that finds no room is told how long until the
next window, and the core waits (``agents_core._rate_limit_wait``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.db.models import F

from studio.db import db_sync_to_async
from studio.models import ModelConfig, RateWindow


@dataclass(frozen=True, slots=True)
class Limits:
    """One config's limits; ``None``: that one is unlimited."""

    config_id: uuid.UUID
    requests: int | None
    tokens: int | None


def take(limits: Limits, tokens: int, now: float, window_s: float) -> float | None:
    """Count one call of ``tokens`` tokens in the window ``now`` falls in and return
    ``None``, or count nothing and return the seconds until the next window. A call
    larger than the whole token limit is let through alone, in an empty window."""
    start = int(now // window_s)
    with transaction.atomic():
        _, created = RateWindow.objects.get_or_create(config_id=limits.config_id, start=start)
        if created:  # windows before the last one count for nothing any more
            RateWindow.objects.filter(config_id=limits.config_id, start__lt=start - 1).delete()
        rows = RateWindow.objects.filter(config_id=limits.config_id, start=start)
        if limits.requests is not None:
            rows = rows.filter(requests__lt=limits.requests)
        if limits.tokens is not None:
            rows = rows.filter(tokens__lte=limits.tokens - min(tokens, limits.tokens))
        if rows.update(requests=F("requests") + 1, tokens=F("tokens") + tokens):
            return None
    return (start + 1) * window_s - now


class DatabaseRateLimiter:
    """The core's ``RateLimiter`` over ``RateWindow`` rows, for the model configs (by
    name) that have limits."""

    def __init__(self, limits: Mapping[str, Limits]) -> None:
        self._limits = dict(limits)
        self.max_wait_s: float = settings.STUDIO_RATE_MAX_WAIT_S
        self._window_s: float = settings.STUDIO_RATE_WINDOW_S

    async def try_acquire(self, model: str, tokens: int) -> float | None:
        limits = self._limits.get(model)
        if limits is None:
            return None
        return await db_sync_to_async(take)(limits, tokens, time.time(), self._window_s)


def limiter_for(configs: Mapping[str, ModelConfig]) -> DatabaseRateLimiter | None:
    """A limiter for the configs among ``configs`` (by name) that set a limit; ``None``
    when none does."""
    limits = {
        name: Limits(config.pk, config.requests_per_minute, config.tokens_per_minute)
        for name, config in configs.items()
        if config.requests_per_minute or config.tokens_per_minute
    }
    return DatabaseRateLimiter(limits) if limits else None
