"""The live timeline websocket, ``/ws/sessions/<uuid>/?after=<seq>``; the protocol is
described in ``studio.live``.

The consumer checks access, joins the session's ``SessionWatch`` before reading the
backlog, then sends stored events strictly in seq order: it remembers the last seq it
sent, drops anything at or below it, and fills any gap (a message the channel layer
dropped) from the database before going on. Starting, cancelling and deciding go to the
services.
"""

from __future__ import annotations

import asyncio
from typing import Any, assert_never

from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from studio import services
from studio.consumers.watch import SessionWatch
from studio.db import db_sync_to_async
from studio.errors import StudioError
from studio.live import protocol, reads
from studio.models import Session


class SessionConsumer(AsyncWebsocketConsumer):  # type: ignore[misc]  # channels is untyped
    session: Session | None = None
    last_seq = 0
    status_key: tuple[Any, ...] | None = None
    status_seq = 0
    watch: SessionWatch | None = None

    async def connect(self) -> None:
        # Close codes only reach a client after the handshake, so accept first.
        await self.accept()
        self.lock = asyncio.Lock()
        self.bucket = protocol.TokenBucket(settings.STUDIO_WS_RATE_PER_S, settings.STUDIO_WS_BURST)
        try:
            self.session, after = await db_sync_to_async(reads.authorise)(
                self.scope["user"],
                self.scope["url_route"]["kwargs"]["session_id"],
                self.scope["query_string"],
            )
        except reads.Refused as refused:
            await self.close(code=refused.close_code)
            return
        async with self.lock:  # live messages wait until the backlog is sent
            self.watch = await SessionWatch.enter(self.session.pk, self)
            self.last_seq = after
            await self._catch_up(upto=None)
            await self._send_status(await self.watch.status(), force=True)

    async def disconnect(self, code: int) -> None:
        if self.watch is not None:
            await self.watch.leave(self)

    # From the group

    async def live_batch(self, batch: protocol.Batch) -> None:
        async with self.lock:
            for seq, after_seq, event_json in batch.events:
                await self._forward(seq, after_seq, event_json)
            if batch.status is not None:
                await self._send_status(batch.status, text=batch.status_text)

    async def _forward(self, seq: int | None, after_seq: int, event_json: str) -> None:
        """Send one published event if it is the next one: fill a gap from the database
        first, drop what was sent already, and a partial that is not at the end."""
        if seq is None:
            if after_seq > self.last_seq:
                await self._catch_up(upto=after_seq)
            if after_seq == self.last_seq:
                await self.send(text_data=protocol.event_frame(event_json, after_seq))
            return
        if seq > self.last_seq + 1:
            await self._catch_up(upto=seq - 1)
        if seq == self.last_seq + 1:
            await self.send(text_data=protocol.event_frame(event_json))
            self.last_seq = seq

    # From the client

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        size = len(text_data.encode()) if text_data is not None else len(bytes_data or b"")
        if size > settings.STUDIO_WS_MAX_MESSAGE_BYTES:
            await self.close(code=protocol.CLOSE_TOO_BIG)
            return
        if not self.bucket.take():
            await self.close(code=protocol.CLOSE_FLOOD)
            return
        if self.session is None:
            return
        if text_data is None:
            await self.send(text_data=protocol.error_frame("invalid", "frames are JSON text"))
            return
        try:
            await self._handle(protocol.parse_client_frame(text_data), self.session)
        except protocol.BadFrame as exc:
            await self.send(text_data=protocol.error_frame("invalid", str(exc)))
        except StudioError as exc:
            await self.send(text_data=protocol.error_frame(exc.code, exc.message))
        except Session.DoesNotExist:  # deleted while the socket was open
            await self.close(code=protocol.CLOSE_NOT_FOUND)

    async def _handle(
        self,
        frame: protocol.ClientFrame,
        session: Session,
    ) -> None:
        match frame:
            case protocol.UserMessageFrame(text=text):
                await db_sync_to_async(services.start_run)(session, text)
            case protocol.CancelFrame():
                await db_sync_to_async(services.cancel_active_run)(session)
            case protocol.ApprovalFrame():
                decided_by = self.scope["user"].get_username()
                await services.decide_approval(session, frame.body(), decided_by=decided_by)
            case _:
                assert_never(frame)

    # Sending stored events and status

    async def _catch_up(self, *, upto: int | None) -> None:
        """Send the stored events after the last one sent, up to ``upto`` (all if None)."""
        if self.watch is None:
            raise RuntimeError("the socket has no session")
        while upto is None or self.last_seq < upto:
            page = await self.watch.events(self.last_seq, upto)
            for seq, event_json in page:
                await self.send(text_data=protocol.event_frame(event_json))
                self.last_seq = seq
            if len(page) < protocol.PAGE_SIZE:
                return

    async def _send_status(
        self, status: protocol.Status, *, force: bool = False, text: str = ""
    ) -> None:
        """Send ``status`` (if it changed; ``text`` is its frame, when rendered already)
        after every event it has seen; never one older than the last sent (a late
        message after a resync)."""
        if status.last_seq < self.status_seq:
            return
        await self._catch_up(upto=status.last_seq)
        if force or status.key != self.status_key:
            self.status_key, self.status_seq = status.key, status.last_seq
            await self.send(text_data=text or protocol.status_frame(status))

    async def make_good(self, last_seq: int, session_status: str) -> None:
        """Catch up with what the database held an interval ago (the watch's resync)."""
        async with self.lock:
            if last_seq > self.last_seq:
                await self._catch_up(upto=last_seq)
            sent = self.status_key[1] if self.status_key and self.status_key[1] else "idle"
            if session_status != sent and self.watch is not None:
                await self._send_status(await self.watch.status())
