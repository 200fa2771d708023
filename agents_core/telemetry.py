"""Observability: sinks receive every event of a run. A broken sink never affects the run."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from agents_core.events import Event

logger = logging.getLogger("agents_core.telemetry")

SINK_TIMEOUT_S = 1.0
DRAIN_TIMEOUT_S = 2.0


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


class TelemetryDispatcher:
    """Delivers one invocation's events to the sinks off the run's path.

    ``submit`` never waits: each sink has its own bounded queue and worker task, and gets
    ``SINK_TIMEOUT_S`` per event, so a slow or broken sink delays neither the run nor the
    other sinks. A full queue drops events (counted in ``dropped``). ``aclose`` gives the
    workers ``DRAIN_TIMEOUT_S`` in all to catch up, then stops them.
    """

    def __init__(self, sinks: Sequence[TelemetrySink], *, max_pending: int = 10_000) -> None:
        self._sinks = tuple(sinks)
        self._max_pending = max_pending
        self._queues: list[asyncio.Queue[Event]] = []
        self._workers: list[asyncio.Task[None]] = []
        self.dropped = 0

    def submit(self, event: Event) -> None:
        if self._sinks and not self._workers:
            self._start()
        for queue in self._queues:
            try:
                queue.put_nowait(event)
            except asyncio.QueueFull:
                self.dropped += 1
                if self.dropped == 1:
                    logger.warning("a telemetry sink is behind; dropping its events")

    async def aclose(self) -> None:
        """Wait (at most ``DRAIN_TIMEOUT_S``) for queued events to be delivered, then
        stop the workers."""
        if not self._workers:
            return
        try:
            async with asyncio.timeout(DRAIN_TIMEOUT_S):
                for queue in self._queues:
                    await queue.join()
        except TimeoutError:
            left = sum(q.qsize() for q in self._queues)
            logger.warning("telemetry sinks did not catch up; %d events undelivered", left)
        finally:
            for worker in self._workers:
                worker.cancel()
            await asyncio.gather(*self._workers, return_exceptions=True)

    def _start(self) -> None:
        for sink in self._sinks:
            queue: asyncio.Queue[Event] = asyncio.Queue(self._max_pending)
            self._queues.append(queue)
            self._workers.append(asyncio.create_task(_deliver(sink, queue), name="telemetry"))


async def _deliver(sink: TelemetrySink, queue: asyncio.Queue[Event]) -> None:
    while True:
        event = await queue.get()
        try:
            await notify((sink,), event)
        finally:
            queue.task_done()


async def notify(sinks: Sequence[TelemetrySink], event: Event) -> None:
    """Deliver ``event`` to every sink; failures and slow sinks are logged and dropped."""
    for sink in sinks:
        try:
            async with asyncio.timeout(SINK_TIMEOUT_S):
                await sink.on_event(event)
        except Exception:  # telemetry failures are silent to the run by design
            logger.warning("telemetry sink %r failed on event %s", sink, event.id, exc_info=True)
