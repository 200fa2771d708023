"""Sending a session's stored events and status to its viewers, through the channel
layer: the fast path, which may drop messages (viewers fill gaps from the database)."""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import logging
import uuid
from collections.abc import Callable, Sequence

from channels.layers import get_channel_layer

from agents_core import events as core_events
from studio import metrics, wire
from studio.live.protocol import LAYER, Status, group_name

logger = logging.getLogger("studio.live")

PUBLISH_TIMEOUT_S = 5.0
BATCH_WINDOW_S = 0.005
"""After each message, how long a run's publisher gathers events into its next one."""


async def publish(
    session_pk: uuid.UUID,
    events: Sequence[tuple[core_events.Event, int]] = (),
    status: Status | None = None,
) -> None:
    """Send ``events`` (each with its ``after_seq``) and then ``status`` to the viewers of
    ``session_pk`` as one ``live.batch``. Call only once the events are stored (partials:
    as they come). Never raises: viewers resync from the database."""
    message = {
        "type": "live.batch",
        "events": [[event.seq, after, wire.event_text(event)] for event, after in events],
        "status": None if status is None else dataclasses.asdict(status),
    }
    layer = get_channel_layer(LAYER)
    if layer is None:
        return
    group = group_name(session_pk)
    try:
        async with asyncio.timeout(PUBLISH_TIMEOUT_S):
            await layer.group_send(group, message)
    except Exception:  # a layer outage must not stop the run; viewers resync
        metrics.CHANNEL_DROPS.inc()
        logger.warning("could not publish to %s", group, exc_info=True)


class Publisher:
    """Publishes one session's events and status from one task, in order: what is
    pending goes out at once, and what arrives within ``BATCH_WINDOW_S`` after a
    message (or while it is sent) goes out as the next one. The same frames reach
    viewers, through fewer channel-layer messages, and a status that changed several
    times meanwhile is sent once, as it ended."""

    def __init__(self, session_pk: uuid.UUID) -> None:
        self._session_pk = session_pk
        self._events: list[tuple[core_events.Event, int]] = []
        self._status: Callable[[], Status] | None = None
        self._wakeup = asyncio.Event()
        self._closing = False
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name=f"publisher-{session_pk}", context=contextvars.Context()
        )

    def event(self, event: core_events.Event, after_seq: int) -> None:
        self._events.append((event, after_seq))
        self._wakeup.set()

    def status(self, status: Callable[[], Status]) -> None:
        """The session's status changed: ``status()`` says how, when it is sent."""
        self._status = status
        self._wakeup.set()

    async def aclose(self) -> None:
        """Send what is pending, then stop."""
        self._closing = True
        self._wakeup.set()
        await self._task

    def cancel(self) -> None:
        self._task.cancel()

    async def _run(self) -> None:
        while not (self._closing and not self._events and self._status is None):
            await self._wakeup.wait()
            self._wakeup.clear()
            events, status = self._events, self._status
            self._events, self._status = [], None
            if events or status is not None:
                await publish(self._session_pk, events, None if status is None else status())
            if not self._closing:
                await asyncio.sleep(BATCH_WINDOW_S)
