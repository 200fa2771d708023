"""The live timeline websocket, ``/ws/sessions/<uuid>/?after=<seq>``; the protocol is
described in ``studio.live``.

The consumer checks access, joins the session's group before reading the backlog, then
sends stored events strictly in seq order: it remembers the last seq it sent, drops
anything at or below it, and fills any gap (a message the channel layer dropped) from
the database before going on. Starting, cancelling and deciding go to the services.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import Any

from channels.consumer import get_handler_name
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from studio import live, services
from studio.db import db_sync_to_async
from studio.errors import StudioError
from studio.models import Session
from studio.runs import manager

logger = logging.getLogger("studio.consumers")

_LIVE_MESSAGES = frozenset({"live.batch"})


class SessionConsumer(AsyncWebsocketConsumer):  # type: ignore[misc]  # channels is untyped
    session: Session | None = None
    last_seq = 0
    status_key: tuple[Any, ...] | None = None
    status_seq = 0
    _resync: asyncio.Task[None] | None = None

    async def connect(self) -> None:
        # Close codes only reach a client after the handshake, so accept first.
        await self.accept()
        self.lock = asyncio.Lock()
        self.bucket = live.TokenBucket(settings.STUDIO_WS_RATE_PER_S, settings.STUDIO_WS_BURST)
        try:
            self.session, after = await db_sync_to_async(live.authorise)(
                self.scope["user"],
                self.scope["url_route"]["kwargs"]["session_id"],
                self.scope["query_string"],
            )
        except live.Refused as refused:
            await self.close(code=refused.close_code)
            return
        await self.channel_layer.group_add(live.group_name(self.session.pk), self.channel_name)
        async with self.lock:
            self.last_seq = after
            await self._catch_up(upto=None)
            await self._send_status(await manager.status(self.session.pk), force=True)
        self._resync = asyncio.create_task(self._resync_forever())

    async def disconnect(self, code: int) -> None:
        if self._resync is not None:
            self._resync.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._resync
        if self.session is not None:
            group = live.group_name(self.session.pk)
            await self.channel_layer.group_discard(group, self.channel_name)

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Channels closes stale database connections before every handler, a hop onto
        # the one thread all ORM work shares. Live frames are the hot path (viewers times
        # events) and reach the database only through database_sync_to_async, which
        # closes them itself, so they skip that hop.
        if message["type"] in _LIVE_MESSAGES:
            await getattr(self, get_handler_name(message))(message)
            return
        await super().dispatch(message)

    # From the group

    async def live_batch(self, message: dict[str, Any]) -> None:
        async with self.lock:
            for seq, after_seq, event_json in message["events"]:
                await self._forward(seq, after_seq, event_json)
            if message["status"] is not None:
                await self._send_status(live.Status(**message["status"]))

    async def _forward(self, seq: int | None, after_seq: int, event_json: str) -> None:
        """Send one published event if it is the next one: fill a gap from the database
        first, drop what was sent already, and a partial that is not at the end."""
        if seq is None:
            if after_seq > self.last_seq:
                await self._catch_up(upto=after_seq)
            if after_seq == self.last_seq:
                await self.send(text_data=live.event_frame(event_json, after_seq))
            return
        if seq > self.last_seq + 1:
            await self._catch_up(upto=seq - 1)
        if seq == self.last_seq + 1:
            await self.send(text_data=live.event_frame(event_json))
            self.last_seq = seq

    # From the client

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        size = len(text_data.encode()) if text_data is not None else len(bytes_data or b"")
        if size > settings.STUDIO_WS_MAX_MESSAGE_BYTES:
            await self.close(code=live.CLOSE_TOO_BIG)
            return
        if not self.bucket.take():
            await self.close(code=live.CLOSE_FLOOD)
            return
        if self.session is None:
            return
        if text_data is None:
            await self.send(text_data=live.error_frame("invalid", "frames are JSON text"))
            return
        try:
            await self._handle(live.parse_client_frame(text_data), self.session)
        except live.BadFrame as exc:
            await self.send(text_data=live.error_frame("invalid", str(exc)))
        except StudioError as exc:
            await self.send(text_data=live.error_frame(exc.code, exc.message))

    async def _handle(
        self,
        frame: live.UserMessageFrame | live.CancelFrame | live.ApprovalFrame,
        session: Session,
    ) -> None:
        match frame:
            case live.UserMessageFrame(text=text):
                await db_sync_to_async(services.start_run)(session, text)
            case live.CancelFrame():
                await db_sync_to_async(services.cancel_active_run)(session)
            case live.ApprovalFrame():
                body = live.ApprovalBody.model_validate(frame.model_dump(exclude={"type"}))
                user = self.scope["user"]
                await manager.adecide(session, body, decided_by=user.get_username())

    # Sending stored events and status

    @property
    def session_pk(self) -> uuid.UUID:
        if self.session is None:
            raise RuntimeError("the socket has no session")
        return self.session.pk

    async def _catch_up(self, *, upto: int | None) -> None:
        """Send the stored events after the last one sent, up to ``upto`` (all if None)."""
        session_pk = self.session_pk
        while upto is None or self.last_seq < upto:
            page = await db_sync_to_async(live.stored_events)(session_pk, self.last_seq, upto)
            for seq, event_json in page:
                await self.send(text_data=live.event_frame(event_json))
                self.last_seq = seq
            if len(page) < live.PAGE_SIZE:
                return

    async def _send_status(self, status: live.Status, *, force: bool = False) -> None:
        """Send ``status`` (if it changed) after every event it has seen; never one
        older than the last sent (a late message after a resync)."""
        if status.last_seq < self.status_seq:
            return
        await self._catch_up(upto=status.last_seq)
        if force or status.key != self.status_key:
            self.status_key, self.status_seq = status.key, status.last_seq
            await self.send(text_data=live.status_frame(status))

    async def _resync_forever(self) -> None:
        """Make good what the channel layer dropped. What the database held one interval
        ago and has still not arrived is missing; anything newer is most likely on its
        way, and reading it now would race the live messages for nothing."""
        session_pk = self.session_pk
        before: tuple[int, str] | None = None
        while True:
            await asyncio.sleep(settings.STUDIO_LIVE_RESYNC_S)
            try:
                cursor = await db_sync_to_async(live.cursor)(session_pk)
                if cursor is None:
                    await self.close(code=live.CLOSE_NOT_FOUND)
                    return
                if before is not None:
                    async with self.lock:
                        await self._make_good(*before)
                before = cursor
            except Exception:  # the database hiccupped: try again next time
                logger.warning("could not resync a viewer of %s", session_pk, exc_info=True)

    async def _make_good(self, last_seq: int, session_status: str) -> None:
        if last_seq > self.last_seq:
            await self._catch_up(upto=last_seq)
        sent = self.status_key[1] if self.status_key and self.status_key[1] else "idle"
        if session_status != sent:
            await self._send_status(await manager.status(self.session_pk))
