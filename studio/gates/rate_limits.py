"""Rate limits shared by every process: model configs' requests and tokens per minute,
ingest tokens' requests to ``POST /v1/traces``, and sign-in attempts.

Use is counted in windows (``CountedWindow`` rows: ``RateWindow`` for model configs,
windows of ``STUDIO_RATE_WINDOW_S``, a minute; ``IngestWindow`` for ingest tokens;
``SignInWindow`` for client addresses and usernames signing in). A
call takes its room with one conditional UPDATE that matches only while the window has
room (``take_room``), so two processes, on one server or several sharing the database,
can never both take the last of it (SQLite and PostgreSQL alike); a call that finds no
room is told how long until the next window: the core waits
(``agents_core._rate_limit_wait``), the OTLP endpoint and sign-in answer 429 with
``Retry-After``.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q

from studio.db import db_sync_to_async
from studio.models import IngestWindow, ModelConfig, RateWindow, SignInWindow
from studio.models.gates import CountedWindow


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
    room = Q()
    if limits.requests is not None:
        room &= Q(requests__lt=limits.requests)
    if limits.tokens is not None:
        room &= Q(tokens__lte=limits.tokens - min(tokens, limits.tokens))
    used = {"requests": F("requests") + 1, "tokens": F("tokens") + tokens}
    return take_room(RateWindow, {"config_id": limits.config_id}, room, used, now, window_s)


def take_ingest(token_id: uuid.UUID, now: float) -> float | None:
    """Count one request of ingest token ``token_id`` (``None``), or the seconds until it
    may send again: ``STUDIO_OTLP_BURST`` requests a window of ``STUDIO_OTLP_BURST /
    STUDIO_OTLP_RATE_PER_S`` seconds, so as many at once and that rate sustained."""
    burst: int = settings.STUDIO_OTLP_BURST
    window_s = burst / settings.STUDIO_OTLP_RATE_PER_S
    room = Q(requests__lt=burst)
    used = {"requests": F("requests") + 1}
    return take_room(IngestWindow, {"token_id": token_id}, room, used, now, window_s)


def take_sign_in(keys: Sequence[str], now: float) -> float | None:
    """Count one sign-in attempt against each of ``keys`` (the client's address, the
    username) and return ``None`` while each has room, else the seconds until the
    fullest has room again. One budget for every server, and for the sign-in page and
    the token exchange alike.

    ``STUDIO_AUTH_RATE`` attempts in any period, not per clock window: the window before
    counts as much of it as the period still overlaps (a sliding window, approximated
    from two counts). Fixed windows let twice the rate through, the limit at the end of
    one window and again at the start of the next. Windows before the last are dropped,
    whoever they counted, so an address seen once is not kept."""
    limit, window_s = settings.STUDIO_AUTH_RATE
    start = int(now // window_s)
    overlap = 1 - (now - start * window_s) / window_s  # of the window before
    used = {"requests": F("requests") + 1}
    waits = []
    for key in keys:
        counts = dict(
            SignInWindow.objects.filter(key=key, start__gte=start - 1).values_list(
                "start", "requests"
            )
        )
        before, now_count = counts.get(start - 1, 0), counts.get(start, 0)
        room = Q(requests__lt=math.ceil(limit - before * overlap))
        if take_room(SignInWindow, {"key": key}, room, used, now, window_s) is not None:
            waits.append(_sliding_wait(limit, window_s, before, now_count, overlap))
    SignInWindow.objects.filter(start__lt=start - 1).delete()
    return max(1.0, *waits) if waits else None  # Retry-After counts whole seconds


def _sliding_wait(limit: int, window_s: float, before: int, count: int, overlap: float) -> float:
    """Seconds until ``count`` attempts in this window and ``before`` in the one before
    (of which ``overlap`` still counts) come under ``limit``: while this window lasts,
    as the one before fades; else once this one is the window before and has faded
    enough."""
    if count < limit and before:
        return max(window_s * (overlap - (limit - count) / before), 0.0)
    return window_s * overlap + window_s * (1 - limit / max(count, limit))


def take_room(
    model: type[CountedWindow],
    owner: Mapping[str, Any],
    room: Q,
    used: Mapping[str, Any],
    now: float,
    window_s: float,
) -> float | None:
    """Add ``used`` to ``owner``'s window of ``model`` that ``now`` falls in while it
    matches ``room`` (``None``), else the seconds until the next window."""
    start = int(now // window_s)
    rows = model._default_manager
    with transaction.atomic():
        _, created = rows.get_or_create(start=start, **owner)
        if created:  # windows before the last one count for nothing any more
            rows.filter(start__lt=start - 1, **owner).delete()
        if rows.filter(room, start=start, **owner).update(**used):
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
