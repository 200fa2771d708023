"""The sessions a process read lately, kept so that its next run of one reads only the
events stored since.

A run starts by reading its session's visible events (``session_service``), and a
conversation's next run usually comes to the same process (always in the embedded
default, where the server executes runs). Stored events never change and are only
appended, each with its session's next seq, committed in seq order (the seq is
allocated under the session row's lock, in the transaction that stores the event). So
a process keeps, per session, the visible events it read last and what seq they reach,
and next time reads only the rows after it: a long session's run then starts in the
time of its new events, not of its whole history.

What was kept is used only while it provably continues: the rows read from its last
event on must start with that very event and carry the next seqs, and none may be a
compaction (a new one changes which events are visible); otherwise the session is read
whole again. Kept per session row, so a deleted session's events never serve another.
At most ``STUDIO_SESSION_CACHE_EVENTS`` events are kept in all, the least recently read
sessions dropped first; 0 keeps none.

``HISTORIES`` does the same for what agents make of those events: the model messages
of each session's history, which the agents a run builds (``agents.specs.build``) take
up where the previous run's left them, bounded by as many messages.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from django.conf import settings

from agents_core.events import Event, EventType
from agents_core.history import HistoryCache
from agents_core.lru import SizedLru


class SessionCache(SizedLru[uuid.UUID, tuple[Event, ...]]):
    """Visible events by session row id, least recently read first, at most
    ``max_events`` in all; thread-safe (the ORM thread reads sessions, and so may
    request threads)."""

    def __init__(self, max_events: int) -> None:
        super().__init__(max_size=max_events)

    def put(self, key: uuid.UUID, value: Sequence[Event], size: int | None = None) -> None:
        events = tuple(value)
        super().put(key, events, len(events) if size is None else size)

    @property
    def events_kept(self) -> int:
        return self.size


def last_seq(events: Sequence[Event]) -> int:
    """The seq the kept events reach (0 for none: every stored event is newer)."""
    return (events[-1].seq or 0) if events else 0


def extension(kept: Sequence[Event], rows: Sequence[Event]) -> list[Event] | None:
    """What ``rows`` (the stored events from ``last_seq(kept)`` on, in seq order) add to
    ``kept``, or ``None`` when they do not continue it as it is: the first must be the
    last kept event itself (the same id: the session was not replaced), the rest the
    next seqs, none missing and no compaction among them."""
    new = rows
    if kept:
        if not rows or rows[0].id != kept[-1].id:
            return None
        new = rows[1:]
    expected = last_seq(kept) + 1
    for offset, event in enumerate(new):
        if event.seq != expected + offset or event.type is EventType.COMPACTION:
            return None
    return list(new)


CACHE = SessionCache(settings.STUDIO_SESSION_CACHE_EVENTS)
"""This process's cache (``session_service`` reads through it)."""
HISTORIES = HistoryCache(max_messages=settings.STUDIO_SESSION_CACHE_EVENTS)
"""This process's history builders, shared by the agents of every run it executes."""
