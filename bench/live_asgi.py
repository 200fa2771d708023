"""Studio's ASGI application, plus a commit clock for ``bench.live_fanout``.

Every event that ``DjangoSessionService`` stores goes through
``studio.session_service.append_event_sync``, which returns once its transaction has
committed. Wrapped here, it appends ``<seq> <time.monotonic_ns()>`` to the file named by
``BENCH_COMMIT_LOG`` right after the commit. ``CLOCK_MONOTONIC`` is system-wide, so the
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
    from studio import session_service

    append_event_sync = session_service.append_event_sync
    log = open(os.environ["BENCH_COMMIT_LOG"], "a", buffering=1)  # noqa: SIM115 (process-long)
    lock = threading.Lock()

    def timed_append_event_sync(session_key: str, event: Any) -> Any:
        stored = append_event_sync(session_key, event)
        committed = time.monotonic_ns()
        with lock:
            log.write(f"{stored.seq} {committed}\n")
        return stored

    session_service.append_event_sync = timed_append_event_sync


_install_commit_clock()
