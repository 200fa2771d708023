"""What the viewers of one session in this process share (``SessionWatch``): one
member of the session's group, which hands every message to each of them, one resync
task that reads the session's cursor every ``STUDIO_LIVE_RESYNC_S`` for all of them, and
one read of the events (and status) they lack, instead of a receive and a query per
viewer. A channel layer outage (Redis stalled or away) never closes a socket: the watch
tries joining again at each resync, and what was published meanwhile comes from the
database.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
import uuid
from collections.abc import Coroutine
from typing import Any, ClassVar, Protocol

from channels.layers import get_channel_layer
from django.conf import settings

from studio import services
from studio.db import db_sync_to_async
from studio.live import protocol, reads

logger = logging.getLogger("studio.consumers")

Page = list[tuple[int, str]]

REJOIN_S = 3600.0
"""How often a watch renews its group membership: layers drop members after a day."""


class Viewer(Protocol):
    """One socket watching the session (``session.Viewer``)."""

    async def live_batch(self, batch: protocol.Batch) -> None: ...
    async def make_good(self, last_seq: int, session_status: str) -> None: ...
    async def close(self, code: int | bool | None = None, reason: str | None = None) -> None: ...


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
    _leaving: ClassVar[set[asyncio.Task[None]]] = set()
    """Group discards started by ``drop``, held until done."""

    def __init__(self, session_pk: uuid.UUID) -> None:
        self.session_pk = session_pk
        self.group = protocol.group_name(session_pk)
        self.viewers: set[Viewer] = set()
        self.layer = get_channel_layer(protocol.LAYER)
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
    async def enter(cls, session_pk: uuid.UUID, viewer: Viewer) -> SessionWatch:
        """The session's watch, with ``viewer`` among its viewers, joined to the group
        unless the channel layer is down (the next resync tries again)."""
        watch = cls.add(session_pk, viewer)
        await watch.join()
        return watch

    @classmethod
    def add(cls, session_pk: uuid.UUID, viewer: Viewer) -> SessionWatch:
        """The session's watch, with ``viewer`` among its viewers (not joined yet)."""
        watch = cls._watches.get(session_pk)
        if watch is None or watch._loop is not asyncio.get_running_loop():
            watch = cls._watches[session_pk] = cls(session_pk)
        watch.viewers.add(viewer)
        return watch

    async def leave(self, viewer: Viewer) -> None:
        if self._drop(viewer):
            await self._discard_group()

    def drop(self, viewer: Viewer) -> None:
        """``leave`` without waiting: for a viewer whose task is being cancelled (its
        last viewer's group membership is discarded in a task of its own)."""
        if self._drop(viewer):
            task = self._loop.create_task(self._discard_group(), name=f"leave-{self.group}")
            self._leaving.add(task)
            task.add_done_callback(self._leaving.discard)

    def _drop(self, viewer: Viewer) -> bool:
        """Take ``viewer`` off; when it was the last, stop the watch. Whether it was."""
        self.viewers.discard(viewer)
        if self.viewers:
            return False
        if self._watches.get(self.session_pk) is self:
            del self._watches[self.session_pk]
        for task in self._tasks:
            task.cancel()
        return True

    async def _discard_group(self) -> None:
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
                batch = protocol.Batch.of(message)
            except (KeyError, TypeError, ValueError):  # not ours: the resync covers for it
                logger.warning("dropped a message to %s: %.200r", self.group, message)
                continue
            # A task per viewer: one catching up from the database delays no other.
            # Each viewer takes them in order (its lock is first come, first served).
            # Eager: a delivery runs at once, up to its first wait; most never wait (the
            # send hands the frame to the server), so they finish here without a task
            # scheduled and run later (bench/README.md, "Live fan-out": ~5 ms of p99 at
            # 100 viewers on PostgreSQL + Redis).
            for viewer in list(self.viewers):
                task = asyncio.Task(viewer.live_batch(batch), loop=self._loop, eager_start=True)
                if not task.done():
                    self._deliveries.add(task)
                task.add_done_callback(self._delivered)

    def _delivered(self, task: asyncio.Task[None]) -> None:
        self._deliveries.discard(task)
        failure = None if task.cancelled() else task.exception()
        if failure is not None:
            self._missed(failure)

    def _missed(self, failure: BaseException) -> None:
        """A delivery (or a resync) failed when its viewer's socket dropped mid-send: an
        ordinary event (the viewer is gone, or catches up from the database when it
        comes back), told in one line; the other viewers are not concerned."""
        logger.info(
            "a live message of %s did not reach a viewer (%s: %s)",
            self.session_pk,
            type(failure).__name__,
            failure,
        )

    async def events(self, after: int, upto: int | None) -> Page:
        """``reads.stored_events``, read once for every viewer asking at the same time."""
        read = db_sync_to_async(reads.stored_events)
        page: Page = await self._once(("events", after, upto), read(self.session_pk, after, upto))
        return page

    async def status(self) -> protocol.Status:
        """The session's status, read once for every viewer asking at the same time."""
        read = services.session_status(self.session_pk)
        status: protocol.Status = await self._once(("status",), read)
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
                cursor = await db_sync_to_async(reads.cursor)(self.session_pk)
                if cursor is None:  # the session was deleted
                    for viewer in list(self.viewers):
                        await viewer.close(code=protocol.CLOSE_NOT_FOUND)
                    return
                await self.join()
                viewers = list(self.viewers)
                if before is not None:  # together, so that they share their reads
                    done = await asyncio.gather(
                        *(viewer.make_good(*before) for viewer in viewers), return_exceptions=True
                    )
                    for failed in (result for result in done if isinstance(result, Exception)):
                        self._missed(failed)
                before = cursor
            except Exception:  # the database hiccupped: try again next time
                logger.warning("could not resync the viewers of %s", self.session_pk, exc_info=True)
