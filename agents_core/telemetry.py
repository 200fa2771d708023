"""Observability: sinks receive every event of a run. A broken sink never affects the run."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from agents_core.events import Event

logger = logging.getLogger("agents_core.telemetry")

SINK_TIMEOUT_S = 1.0


@runtime_checkable
class TelemetrySink(Protocol):
    """Receives every event, partial ones included, after it is stored."""

    async def on_event(self, event: Event) -> None: ...


class LoggingSink:
    """Logs one line per stored event at DEBUG level (payloads are not logged)."""

    def __init__(self, logger_name: str = "agents_core.events") -> None:
        self._logger = logging.getLogger(logger_name)

    async def on_event(self, event: Event) -> None:
        if event.partial:
            return
        self._logger.debug(
            "event seq=%s type=%s author=%s branch=%s session=%s",
            event.seq,
            event.type,
            event.author,
            event.branch,
            event.session_id,
        )


async def notify(sinks: Sequence[TelemetrySink], event: Event) -> None:
    """Deliver ``event`` to every sink; failures and slow sinks are logged and dropped."""
    for sink in sinks:
        try:
            async with asyncio.timeout(SINK_TIMEOUT_S):
                await sink.on_event(event)
        except Exception:  # telemetry failures are silent to the run by design
            logger.warning("telemetry sink %r failed on event %s", sink, event.id, exc_info=True)
