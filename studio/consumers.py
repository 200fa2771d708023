"""The live timeline websocket, ``/ws/sessions/<uuid>/?after=<seq>``; the protocol is
described in ``studio.live``.

The consumer checks access, makes sure its process is in the session's group before
reading the backlog, then sends stored events strictly in seq order: it remembers the
last seq it sent, drops anything at or below it, and fills any gap (a message the
channel layer dropped) from the database before going on. Starting, cancelling and
deciding go to the services.

The viewers of one session in this process share a ``SessionWatch``: one member of the
group that hands every message to each of them, one resync task that reads the
session's cursor every ``STUDIO_LIVE_RESYNC_S`` for all of them, and one read of the
events (and status) they lack, instead of a receive and a query per viewer. A channel
layer outage (Redis stalled or away) never closes a socket: the watch tries joining
again at each resync, and what was published meanwhile comes from the database.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
import uuid
from collections.abc import Coroutine
from typing import Any, ClassVar

from channels.generic.websocket import AsyncWebsocketConsumer
from channels.layers import get_channel_layer
from django.conf import settings

from studio import live, services
from studio.db import db_sync_to_async
from studio.errors import StudioError
from studio.models import Session
from studio.runs import manager

logger = logging.getLogger("studio.consumers")

Page = list[tuple[int, str]]

REJOIN_S = 3600.0
"""How often a watch renews its group membership: layers drop members after a day."""


class SessionWatch:
    """What the viewers of one session in this process share: one member of the
    session's group, which hands each message to every local viewer (a message per
    process rather than per viewer goes through the channel layer); a resync every
    ``STUDIO_LIVE_RESYNC_S`` (one cursor read for all); and reads of stored events and
    of the status (concurrent identical reads are made once).

    What the database held one interval ago and has still not reached a viewer is
    missing; anything newer is most likely on its way, and reading it now would race
    the live messages for nothing.
    """

    _watches: ClassVar[dict[uuid.UUID, SessionWatch]] = {}

    def __init__(self, session_pk: uuid.UUID) -> None:
        self.session_pk = session_pk
        self.group = live.group_name(session_pk)
        self.viewers: set[SessionConsumer] = set()
        self.layer = get_channel_layer()
        self.channel: str | None = None
        self._joined_at = 0.0
        self._joining = asyncio.Lock()
        self._reads: dict[tuple[Any, ...], asyncio.Future[Any]] = {}
        self._deliveries: set[asyncio.Task[None]] = set()
        self._loop = asyncio.get_running_loop()
        self._tasks = [self._start(self._resync_forever(), "resync")]

    def _start(self, work: Coroutine[Any, Any, None], what: str) -> asyncio.Task[None]:
        name = f"{what}-{self.session_pk}"
        return self._loop.create_task(work, name=name, context=contextvars.Context())

    @classmethod
    async def enter(cls, session_pk: uuid.UUID, viewer: SessionConsumer) -> SessionWatch:
        """The session's watch, with ``viewer`` among its viewers, joined to the group
        unless the channel layer is down (the next resync tries again)."""
        watch = cls._watches.get(session_pk)
        if watch is None or watch._loop is not asyncio.get_running_loop():
            watch = cls._watches[session_pk] = cls(session_pk)
        watch.viewers.add(viewer)
        await watch.join()
        return watch

    async def leave(self, viewer: SessionConsumer) -> None:
        self.viewers.discard(viewer)
        if self.viewers:
            return
        if self._watches.get(self.session_pk) is self:
            del self._watches[self.session_pk]
        for task in self._tasks:
            task.cancel()
        if self.channel is not None and self.layer is not None:
            try:
                await self.layer.group_discard(self.group, self.channel)
            except Exception:  # the layer expires the membership by itself
                logger.warning("could not leave %s", self.group, exc_info=True)

    async def join(self) -> None:
        """Join the group, or renew the membership once it is ``REJOIN_S`` old."""
        async with self._joining:
            joined = self.channel is not None
            if self.layer is None or (joined and time.monotonic() < self._joined_at + REJOIN_S):
                return
            channel = self.channel or await self.layer.new_channel()
            try:
                await self.layer.group_add(self.group, channel)
            except Exception:
                logger.warning("could not join %s", self.group, exc_info=True)
                return
            self._joined_at = time.monotonic()
            if not joined:
                self.channel = channel
                self._tasks.append(self._start(self._receive_forever(channel), "receive"))

    async def _receive_forever(self, channel: str) -> None:
        assert self.layer is not None  # noqa: S101 (joined)
        while True:
            message = await self.layer.receive(channel)
            try:
                batch = live.Batch.of(message)
            except (KeyError, TypeError, ValueError):  # not ours: the resync covers for it
                logger.warning("dropped a message to %s: %.200r", self.group, message)
                continue
            # A task per viewer: one catching up from the database delays no other.
            # Each viewer takes them in order (its lock is first come, first served).
            for viewer in list(self.viewers):
                task = self._loop.create_task(viewer.live_batch(batch))
                self._deliveries.add(task)
                task.add_done_callback(self._delivered)

    def _delivered(self, task: asyncio.Task[None]) -> None:
        self._deliveries.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.warning("a live message did not reach a viewer", exc_info=task.exception())

    async def events(self, after: int, upto: int | None) -> Page:
        """``live.stored_events``, read once for every viewer asking at the same time."""
        read = db_sync_to_async(live.stored_events)
        page: Page = await self._once(("events", after, upto), read(self.session_pk, after, upto))
        return page

    async def status(self) -> live.Status:
        """``manager.status``, read once for every viewer asking at the same time."""
        status: live.Status = await self._once(("status",), manager.status(self.session_pk))
        return status

    async def _once(self, key: tuple[Any, ...], read: Coroutine[Any, Any, Any]) -> Any:
        future = self._reads.get(key)
        if future is None:
            future = self._reads[key] = asyncio.ensure_future(read)
            future.add_done_callback(lambda _: self._reads.pop(key, None))
        else:
            read.close()  # never awaited: the read in flight answers for it
        return await asyncio.shield(future)

    async def _resync_forever(self) -> None:
        before: tuple[int, str] | None = None
        while True:
            await asyncio.sleep(settings.STUDIO_LIVE_RESYNC_S)
            try:
                cursor = await db_sync_to_async(live.cursor)(self.session_pk)
                if cursor is None:  # the session was deleted
                    for viewer in list(self.viewers):
                        await viewer.close(code=live.CLOSE_NOT_FOUND)
                    return
                await self.join()
                viewers = list(self.viewers)
                if before is not None:  # together, so that they share their reads
                    done = await asyncio.gather(
                        *(viewer.make_good(*before) for viewer in viewers), return_exceptions=True
                    )
                    for failed in (result for result in done if isinstance(result, Exception)):
                        raise failed
                before = cursor
            except Exception:  # the database hiccupped: try again next time
                logger.warning("could not resync the viewers of %s", self.session_pk, exc_info=True)


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
        async with self.lock:  # live messages wait until the backlog is sent
            self.watch = await SessionWatch.enter(self.session.pk, self)
            self.last_seq = after
            await self._catch_up(upto=None)
            await self._send_status(await self.watch.status(), force=True)

    async def disconnect(self, code: int) -> None:
        if self.watch is not None:
            await self.watch.leave(self)

    # From the group

    async def live_batch(self, batch: live.Batch) -> None:
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
        except Session.DoesNotExist:  # deleted while the socket was open
            await self.close(code=live.CLOSE_NOT_FOUND)

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

    async def _catch_up(self, *, upto: int | None) -> None:
        """Send the stored events after the last one sent, up to ``upto`` (all if None)."""
        if self.watch is None:
            raise RuntimeError("the socket has no session")
        while upto is None or self.last_seq < upto:
            page = await self.watch.events(self.last_seq, upto)
            for seq, event_json in page:
                await self.send(text_data=live.event_frame(event_json))
                self.last_seq = seq
            if len(page) < live.PAGE_SIZE:
                return

    async def _send_status(
        self, status: live.Status, *, force: bool = False, text: str = ""
    ) -> None:
        """Send ``status`` (if it changed; ``text`` is its frame, when rendered already)
        after every event it has seen; never one older than the last sent (a late
        message after a resync)."""
        if status.last_seq < self.status_seq:
            return
        await self._catch_up(upto=status.last_seq)
        if force or status.key != self.status_key:
            self.status_key, self.status_seq = status.key, status.last_seq
            await self.send(text_data=text or live.status_frame(status))

    async def make_good(self, last_seq: int, session_status: str) -> None:
        """Catch up with what the database held an interval ago (the watch's resync)."""
        async with self.lock:
            if last_seq > self.last_seq:
                await self._catch_up(upto=last_seq)
            sent = self.status_key[1] if self.status_key and self.status_key[1] else "idle"
            if session_status != sent and self.watch is not None:
                await self._send_status(await self.watch.status())
