"""Following a task's run as it goes: the run's session's live group (``studio.live``),
the way the timeline's websocket follows it, with the database as the truth.

``snapshots`` joins the session's group first, then reads the run (a ``Snapshot``), so
nothing published between the read and the subscription is missed: every later read
asks for what the run's agents said after the last seq already seen. It reads again
when a stored event or a status arrives on the group (token chunks are not waited
for), or after ``STUDIO_LIVE_RESYNC_S`` without one (a dropped message, or a channel
layer that is away: the run is then followed from the database alone).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from channels.layers import get_channel_layer
from django.conf import settings

from studio.a2a_endpoint import tasks
from studio.db import db_sync_to_async
from studio.live import protocol
from studio.models import Run
from studio.services import a2a_serving
from studio.services.a2a_serving import Snapshot

logger = logging.getLogger("studio.a2a_endpoint")


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
    """A member of the run's session's group while the block runs; yields ``moved(t)``,
    which returns once a stored event or a status arrived, or after ``t`` seconds."""
    layer = get_channel_layer()
    group = protocol.group_name(run.session_id)
    channel: str | None = None
    if layer is not None:
        try:
            channel = await layer.new_channel()
            await layer.group_add(group, channel)
        except Exception:  # followed from the database alone
            logger.warning("could not join %s", group, exc_info=True)
            channel = None

    async def moved(wait_s: float) -> None:
        if channel is None:
            await asyncio.sleep(wait_s)
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait_s):
                while not _news(await layer.receive(channel)):
                    pass

    try:
        yield moved
    finally:
        if channel is not None:
            try:
                await layer.group_discard(group, channel)
            except Exception:  # the layer expires the membership by itself
                logger.warning("could not leave %s", group, exc_info=True)


def _news(message: Any) -> bool:
    """A batch with a stored event or a status (not only token chunks)."""
    try:
        batch = protocol.Batch.of(message)
    except (KeyError, TypeError, ValueError):
        return True  # not ours: read the database rather than guess
    return batch.status is not None or any(seq is not None for seq, _, _ in batch.events)
