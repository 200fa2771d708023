"""What one viewer of a session was sent, and what it is sent next (``ViewerCursor``).

Stored events go out strictly in seq order, never a seq twice, never a gap: the cursor
remembers the last seq sent, drops anything at or below it, and fills any gap (a
message the channel layer dropped) from the database before going on. A token chunk
goes out only while the viewer is at the stored event it follows; a status only after
every event it has seen, and never one older than the last sent.

A batched cursor (``?batch=1``) sends the frames of one live message, or of one page of
the backlog, as one websocket message: a JSON array of them, in order. A server's cost
of a websocket message is mostly per message, not per byte, and so is a browser's: at
a hundred viewers this is what keeps a burst of events from queueing behind itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from studio.consumers.watch import SessionWatch
from studio.live import protocol

Send = Callable[[str], Awaitable[None]]


class ViewerCursor:
    def __init__(
        self, watch: SessionWatch, send: Send, *, after: int, batched: bool = False
    ) -> None:
        self.watch = watch
        self._send = send
        self._batch: list[str] | None = [] if batched else None
        self.last_seq = after
        self.status_key: tuple[Any, ...] | None = None
        self.status_seq = 0
        self.lock = asyncio.Lock()
        """Held while sending: live messages wait until the backlog is sent."""

    async def start(self) -> protocol.Status:
        """Send the stored events after ``after``, then the session's status (returned)."""
        await self._catch_up(upto=None)
        status = await self.watch.status()
        await self._send_status(status, force=True)
        await self._flush()
        return status

    async def deliver(self, batch: protocol.Batch) -> None:
        """A live message of the session's group."""
        async with self.lock:
            for seq, after_seq, event_json in batch.events:
                await self._forward(seq, after_seq, event_json)
            if batch.status is not None:
                await self._send_status(batch.status, text=batch.status_text)
            await self._flush()

    async def resync(self, last_seq: int, session_status: str) -> None:
        """Catch up with what the database held an interval ago (the watch's resync)."""
        async with self.lock:
            if last_seq > self.last_seq:
                await self._catch_up(upto=last_seq)
            sent = self.status_key[1] if self.status_key and self.status_key[1] else "idle"
            if session_status != sent:
                await self._send_status(await self.watch.status())
            await self._flush()

    async def send(self, frame: str) -> None:
        """Send ``frame`` now, or with the rest of the batch at the next flush."""
        if self._batch is None:
            await self._send(frame)
        else:
            self._batch.append(frame)

    async def _flush(self) -> None:
        if self._batch:
            frames, self._batch = self._batch, []
            await self._send(f"[{','.join(frames)}]")  # frames are JSON text already

    async def _forward(self, seq: int | None, after_seq: int, event_json: str) -> None:
        """Send one published event if it is the next one: fill a gap from the database
        first, drop what was sent already, and a partial that is not at the end."""
        if seq is None:
            if after_seq > self.last_seq:
                await self._catch_up(upto=after_seq)
            if after_seq == self.last_seq:
                await self.send(protocol.event_frame(event_json, after_seq))
            return
        if seq > self.last_seq + 1:
            await self._catch_up(upto=seq - 1)
        if seq == self.last_seq + 1:
            await self.send(protocol.event_frame(event_json))
            self.last_seq = seq

    async def _catch_up(self, *, upto: int | None) -> None:
        """Send the stored events after the last one sent, up to ``upto`` (all if None)."""
        while upto is None or self.last_seq < upto:
            page = await self.watch.events(self.last_seq, upto)
            for seq, event_json in page:
                await self.send(protocol.event_frame(event_json))
                self.last_seq = seq
            if len(page) < protocol.PAGE_SIZE:
                return
            await self._flush()  # a full page a message: a long backlog is not held whole

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
            await self.send(text or protocol.status_frame(status))
