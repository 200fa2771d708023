"""Group commit: the appends of every run on an event loop, stored by one writer task.

Each append queues its event and waits for its future. The writer takes everything
queued (up to ``MAX_BATCH``), stores it in one transaction on the ORM thread
(``event_rows.insert_batch``), and only then resolves the futures, in order. What
arrives while a batch is being written forms the next one, so a lone run pays no wait
(a batch of one takes the single-statement path) and many runs share each commit.

Every promise of one append holds for each event of a batch: its caller gets control
back only once it is committed (persist then yield, so it is published after its
commit), and seqs stay contiguous (the transaction allocates them). A batch that fails
is rolled back whole and each of its events is then tried alone (``write_one`` with
``retry=True``: looked up first, never stored twice), so a failure fails exactly the
appends it concerns. An appender cancelled before its batch is taken is dropped from
it; one cancelled later does not disturb the batch (its event is stored, as a
cancelled single append's would be).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import weakref
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from agents_core import events as core_events
from studio import event_rows

logger = logging.getLogger(__name__)

MAX_BATCH = 500
"""Events in one transaction at most (bounds a statement's parameters and a commit's
wait)."""

WriteBatch = Callable[
    [Sequence[tuple[str, core_events.Event]]], Coroutine[Any, Any, list[event_rows.Stored]]
]
WriteOne = Callable[..., Coroutine[Any, Any, core_events.Event]]
"""``write_one(session_key, event, retry=bool)``: one append, retried on a lost
connection; ``retry=True`` looks the event up first."""


@dataclass(slots=True)
class _Pending:
    session_key: str
    event: core_events.Event
    future: asyncio.Future[core_events.Event]


class GroupCommit:
    """The writer of one event loop. ``batches`` and ``events`` count what it committed
    in groups (for the benchmarks)."""

    def __init__(self, write_batch: WriteBatch, write_one: WriteOne) -> None:
        self._write_batch = write_batch
        self._write_one = write_one
        self._queue: list[_Pending] = []
        self._task: asyncio.Task[None] | None = None
        self.batches = 0
        self.events = 0

    async def append(self, session_key: str, event: core_events.Event) -> core_events.Event:
        loop = asyncio.get_running_loop()
        pending = _Pending(session_key, event, loop.create_future())
        self._queue.append(pending)
        if self._task is None:  # a fresh context: no appender's variables leak into it
            self._task = loop.create_task(
                self._drain(), name="studio-group-commit", context=contextvars.Context()
            )
        return await pending.future

    async def _drain(self) -> None:
        batch: list[_Pending] = []
        try:
            while self._queue:
                taken, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
                batch = [pending for pending in taken if not pending.future.done()]
                if len(batch) == 1:
                    await self._alone(batch[0], retry=False)
                elif batch:
                    await self._together(batch)
                batch = []
        finally:
            self._task = None
            for pending in [*batch, *self._queue]:  # cancelled: the loop is closing
                pending.future.cancel()
            self._queue = []

    async def _together(self, batch: list[_Pending]) -> None:
        try:
            answers = await self._write_batch([(p.session_key, p.event) for p in batch])
        except Exception:
            logger.warning(
                "a batch of %d events failed; storing each alone", len(batch), exc_info=True
            )
            for pending in batch:
                await self._alone(pending, retry=True)
            return
        self.batches += 1
        self.events += len(batch)
        for pending, answer in zip(batch, answers, strict=True):
            if isinstance(answer, core_events.Event):
                _resolve(pending.future, answer)
            else:
                _fail(pending.future, answer)

    async def _alone(self, pending: _Pending, *, retry: bool) -> None:
        try:
            stored = await self._write_one(pending.session_key, pending.event, retry=retry)
        except Exception as exc:
            _fail(pending.future, exc)
        else:
            _resolve(pending.future, stored)


def _resolve(future: asyncio.Future[core_events.Event], event: core_events.Event) -> None:
    if not future.done():
        future.set_result(event)


def _fail(future: asyncio.Future[core_events.Event], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


_writers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, GroupCommit] = (
    weakref.WeakKeyDictionary()
)


def running_writer() -> GroupCommit | None:
    """The running loop's writer, if an append made one (its counts, for benchmarks)."""
    return _writers.get(asyncio.get_running_loop())


def writer_for_loop(write_batch: WriteBatch, write_one: WriteOne) -> GroupCommit:
    """The running loop's writer, created on first use."""
    loop = asyncio.get_running_loop()
    writer = _writers.get(loop)
    if writer is None:
        writer = _writers[loop] = GroupCommit(write_batch, write_one)
    return writer
