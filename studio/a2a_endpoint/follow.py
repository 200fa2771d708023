"""Following a task's run as it goes: the run's session's live group (``studio.live``),
the way the timeline's websocket follows it, with the database as the truth.

``snapshots`` joins the session's group first, then reads the run (a ``Snapshot``), so
nothing published between the read and the subscription is missed: every later read
asks for what the run's agents said after the last seq already seen. It reads again
when a stored event or a status arrives on the group (token chunks are not waited
for), or after ``STUDIO_LIVE_RESYNC_S`` without one (a dropped message, or a channel
layer that is away: the run is then followed from the database alone). It watches
through the process's ``SessionWatch`` of the session, as the timeline's sockets do:
one member of the group for all of them, joined again when the layer comes back.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from django.conf import settings

from studio.a2a_endpoint import tasks
from studio.consumers.watch import SessionWatch
from studio.db import db_sync_to_async
from studio.live import protocol
from studio.models import Run
from studio.services import a2a_serving
from studio.services.a2a_serving import Snapshot


async def snapshot(run: Run, after_seq: int = 0) -> Snapshot:
    return await db_sync_to_async(a2a_serving.snapshot)(run, after_seq=after_seq)


async def snapshots(run: Run) -> AsyncGenerator[Snapshot]:
    """The run now, then each time it moved (with what its agents said since the last
    one), until it settles or ``STUDIO_MCP_SERVE_RUN_TIMEOUT_S`` runs out."""
    async with _subscribed(run) as moved:
        snap = await snapshot(run)
        yield snap
        seen = max((seq for seq, _ in snap.messages), default=0)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + settings.STUDIO_MCP_SERVE_RUN_TIMEOUT_S
        while tasks.state_of(snap) not in tasks.SETTLED:
            left = deadline - loop.time()
            if left <= 0:
                return
            await moved(min(left, settings.STUDIO_LIVE_RESYNC_S))
            snap = await snapshot(run, after_seq=seen)
            seen = max((seq for seq, _ in snap.messages), default=seen)
            yield snap


@contextlib.asynccontextmanager
async def _subscribed(run: Run) -> AsyncIterator[Any]:
    """A viewer of the run's session (its process's ``SessionWatch``, shared with the
    timeline's sockets) while the block runs; yields ``moved(t)``, which returns once a
    stored event or a status arrived, or after ``t`` seconds."""
    viewer = _Waker()
    watch = await SessionWatch.enter(run.session_id, viewer)

    async def moved(wait_s: float) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait_s):
                await viewer.news.wait()
        viewer.news.clear()

    try:
        yield moved
    finally:
        await watch.leave(viewer)


class _Waker:
    """A ``SessionWatch`` viewer that only notes that the run moved: a batch with a
    stored event or a status (not only token chunks), a resync, or the session gone."""

    def __init__(self) -> None:
        self.news = asyncio.Event()

    async def live_batch(self, batch: protocol.Batch) -> None:
        if batch.status is not None or any(seq is not None for seq, _, _ in batch.events):
            self.news.set()

    async def make_good(self, last_seq: int, session_status: str) -> None:
        self.news.set()

    async def close(self, code: int | bool | None = None, reason: str | None = None) -> None:
        self.news.set()
