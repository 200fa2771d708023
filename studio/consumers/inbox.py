"""The approval inbox's websocket, ``/ws/approvals/``: one per signed-in user's page.

On connect, and whenever the user's inbox changes (``studio.live.inbox``), it sends
``{"type": "inbox", "count": N, "results": [...]}``, the same items as ``GET
/api/approvals/``; every ``RESYNC_S`` it reads again, so a dropped message only delays
a change. Only the user's own approvals: a socket joins only its user's group.
Anonymous: closed with 4401. It takes no frames (decisions go through the API or the
page); a client frame closes it with 4400."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from channels.generic.websocket import AsyncWebsocketConsumer

from studio.db import db_sync_to_async
from studio.live import protocol
from studio.live.inbox import inbox_group
from studio.services.inbox import pending_payload

RESYNC_S = 15.0


class InboxConsumer(AsyncWebsocketConsumer):  # type: ignore[misc]  # channels is untyped
    group: str | None = None
    _resync: asyncio.Task[None] | None = None
    _last: str | None = None

    async def connect(self) -> None:
        await self.accept()
        user = self.scope["user"]
        if not user.is_authenticated:
            await self.close(code=protocol.CLOSE_UNAUTHENTICATED)
            return
        self.group = inbox_group(user.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self._send_inbox()
        self._resync = asyncio.create_task(self._resync_forever())

    async def disconnect(self, code: int) -> None:
        if self._resync is not None:
            self._resync.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._resync
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        await self.close(code=protocol.CLOSE_BAD_REQUEST)

    async def inbox_changed(self, message: dict[str, Any]) -> None:
        await self._send_inbox()

    async def _resync_forever(self) -> None:
        while True:
            await asyncio.sleep(RESYNC_S)
            await self._send_inbox()

    async def _send_inbox(self) -> None:
        payload = await db_sync_to_async(pending_payload)(self.scope["user"])
        text = json.dumps({"type": "inbox", **payload})
        if text != self._last:  # unchanged: nothing to say
            self._last = text
            await self.send(text_data=text)
