"""The approval inbox's websocket, ``/ws/approvals/``: one per signed-in user's page.

On connect, and whenever the user's inbox changes (``studio.live.inbox``), it sends
``{"type": "inbox", "count": N, "results": [...], "questions": [...]}``, the same items
as ``GET /api/approvals/``; every ``RESYNC_S`` it reads again, so a dropped message only
delays a change. Only the user's own approvals and questions: a socket joins only its
user's group.
Anonymous: closed with 4401. It takes no frames (decisions go through the API or the
page); a client frame closes it with 4400 (an oversized or flooding one 4009, 4429)."""

from __future__ import annotations

import json
from typing import Any

from studio.consumers.base import FeedConsumer
from studio.db import db_sync_to_async
from studio.live import protocol
from studio.live.inbox import inbox_group
from studio.services.inbox import pending_payload

RESYNC_S = 15.0


class InboxConsumer(FeedConsumer):
    RESYNC_S = RESYNC_S
    _last: str | None = None

    async def open(self) -> None:
        user = self.scope["user"]
        if not user.is_authenticated:
            await self.close(code=protocol.CLOSE_UNAUTHENTICATED)
            return
        await self.join(inbox_group(user.pk))

    async def frame(self, text_data: str | None) -> None:
        await self.close(code=protocol.CLOSE_BAD_REQUEST)

    async def inbox_changed(self, message: dict[str, Any]) -> None:
        await self.snapshot()

    async def snapshot(self, *, only_if_moved: bool = False) -> None:
        payload = await db_sync_to_async(pending_payload)(self.scope["user"])
        text = json.dumps({"type": "inbox", **payload})
        if text != self._last:  # unchanged: nothing to say
            self._last = text
            await self.send(text_data=text)
