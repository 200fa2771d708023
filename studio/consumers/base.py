"""What Studio's websockets do alike.

``GuardedConsumer``: accept first (close codes only reach a client after the
handshake), then ``open`` checks access and closes with a 4000-range code when it
fails (4401 signed out, 4404 not the user's); every client frame is checked for size
(4009) and rate (4429, ``STUDIO_WS_BURST`` at once, ``STUDIO_WS_RATE_PER_S`` sustained)
before ``frame`` sees it.

``FeedConsumer``: a socket that joins one channel group, sends a snapshot, then updates
as the group hears of changes, and reads again every ``RESYNC_S`` so that a dropped
message only delays a change (the approval inbox, an eval run's progress). The live
timeline (``session``) has a feed of its own, shared by the viewers of a session in
one process (``watch``).
"""

from __future__ import annotations

import asyncio
import contextlib

from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from studio.live import protocol


class GuardedConsumer(AsyncWebsocketConsumer):  # type: ignore[misc]  # channels is untyped
    async def connect(self) -> None:
        await self.accept()
        self.bucket = protocol.TokenBucket(settings.STUDIO_WS_RATE_PER_S, settings.STUDIO_WS_BURST)
        await self.open()

    async def open(self) -> None:
        """Check access (close when refused) and start what the socket sends."""
        raise NotImplementedError

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        size = len(text_data.encode()) if text_data is not None else len(bytes_data or b"")
        if size > settings.STUDIO_WS_MAX_MESSAGE_BYTES:
            await self.close(code=protocol.CLOSE_TOO_BIG)
            return
        if not self.bucket.take():
            await self.close(code=protocol.CLOSE_FLOOD)
            return
        await self.frame(text_data)

    async def frame(self, text_data: str | None) -> None:
        """A client frame within the size and rate limits (``None``: a binary one)."""
        raise NotImplementedError


class FeedConsumer(GuardedConsumer):
    """Joins ``group`` and sends ``snapshot()`` (``join``), again every ``RESYNC_S``."""

    RESYNC_S = 15.0
    group: str | None = None
    _resync: asyncio.Task[None] | None = None

    async def join(self, group: str) -> None:
        self.group = group
        await self.channel_layer.group_add(group, self.channel_name)  # before reading
        await self.snapshot()
        self._resync = asyncio.create_task(self._resync_forever())

    async def snapshot(self, *, only_if_moved: bool = False) -> None:
        """Send what the client watches (unless nothing moved since the last one)."""
        raise NotImplementedError

    async def disconnect(self, code: int) -> None:
        if self._resync is not None:
            self._resync.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._resync
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def _resync_forever(self) -> None:
        while True:
            await asyncio.sleep(self.RESYNC_S)
            await self.snapshot(only_if_moved=True)
