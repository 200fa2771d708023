"""The rendezvous between an invocation's agent tree and its runner."""

from __future__ import annotations

import asyncio
from collections import deque

from agents_core.events import Event


class Channel:
    """A rendezvous between the agent tree and the runner: ``send`` returns once the
    runner has stored the event, so agents never run ahead of what is persisted.
    ``post`` hands one over without waiting: partial events, never stored, and what an
    agent records as it is stopped (it can wait no more); the runner still takes every
    item in order, and stores each complete one.

    A deque and one waiter rather than an ``asyncio.Queue``: this is on the path of
    every event of a turn, and a queue's getters, putters and size bookkeeping cost a
    fifth of the hand-over."""

    __slots__ = ("_closed", "_items", "_waiter")

    def __init__(self) -> None:
        self._items: deque[tuple[Event, asyncio.Future[Event] | None] | None] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False

    async def send(self, event: Event) -> Event:
        ack: asyncio.Future[Event] = asyncio.get_running_loop().create_future()
        self._push((event, ack))
        return await ack

    def post(self, event: Event) -> None:
        self._push((event, None))

    async def receive(self) -> tuple[Event, asyncio.Future[Event] | None] | None:
        while not self._items:
            self._waiter = waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                self._waiter = None
        return self._items.popleft()

    def close(self) -> None:
        """The agent tree is done (once; later calls do nothing)."""
        if not self._closed:
            self._closed = True
            self._push(None)

    def _push(self, item: tuple[Event, asyncio.Future[Event] | None] | None) -> None:
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
