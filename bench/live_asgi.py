"""Studio's ASGI application, plus a commit clock for ``bench.live_fanout``.

Every event that ``DjangoSessionService`` stores goes through
``studio.session_service.append_event_sync`` (alone) or ``studio.event_rows.insert_batch``
(a group commit), each of which returns once its transaction has committed. Wrapped
here, they append ``<seq> <time.monotonic_ns()>`` for each event stored to the file
named by ``BENCH_COMMIT_LOG`` right after the commit. ``CLOCK_MONOTONIC`` is system-wide, so the
benchmark's websocket clients on the same machine can subtract it from their receive
times. Nothing else changes.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from studio.asgi import application  # first: it sets Django up

__all__ = ["application"]


def _install_commit_clock() -> None:
    from agents_core.events import Event
    from studio import event_rows, session_service

    append_event_sync = session_service.append_event_sync
    insert_batch = event_rows.insert_batch
    log = open(os.environ["BENCH_COMMIT_LOG"], "a", buffering=1)  # noqa: SIM115 (process-long)
    lock = threading.Lock()

    def timed_append_event_sync(session_key: str, event: Any) -> Any:
        stored = append_event_sync(session_key, event)
        committed = time.monotonic_ns()
        with lock:
            log.write(f"{stored.seq} {committed}\n")
        return stored

    def timed_insert_batch(items: Any) -> Any:
        answers = insert_batch(items)
        committed = time.monotonic_ns()
        with lock:
            for stored in answers:
                if isinstance(stored, Event):
                    log.write(f"{stored.seq} {committed}\n")
        return answers

    session_service.append_event_sync = timed_append_event_sync
    event_rows.insert_batch = timed_insert_batch


_install_commit_clock()
