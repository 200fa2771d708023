"""A commit clock for benchmarks: the time each stored event's transaction committed.

Every event that ``DjangoSessionService`` stores goes through
``studio.session_service.append_event_sync`` (alone) or ``studio.event_rows.insert_batch``
(a group commit), each of which returns once its transaction has committed. ``install``
wraps both so that each event stored appends ``<key> <clock()>`` to a file right after
its commit; nothing else changes. ``bench.live_asgi`` keys by seq on the monotonic
clock, ``bench.load.commit_worker`` by event id on the wall clock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def install(path: str, *, key: Callable[[Any], object], clock: Callable[[], int]) -> None:
    from agents_core.events import Event
    from studio import event_rows, session_service

    append_event_sync = session_service.append_event_sync
    insert_batch = event_rows.insert_batch
    log = open(path, "a", buffering=1)  # noqa: SIM115 (process-long)
    lock = threading.Lock()

    def write(events: list[Any]) -> None:
        committed = clock()
        with lock:
            for stored in events:
                log.write(f"{key(stored)} {committed}\n")

    def timed_append_event_sync(session_key: str, event: Any) -> Any:
        stored = append_event_sync(session_key, event)
        write([stored])
        return stored

    def timed_insert_batch(items: Any) -> Any:
        answers = insert_batch(items)
        write([stored for stored in answers if isinstance(stored, Event)])
        return answers

    session_service.append_event_sync = timed_append_event_sync
    event_rows.insert_batch = timed_insert_batch
