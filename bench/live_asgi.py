"""Studio's ASGI application, plus a commit clock for ``bench.live_fanout``: each
stored event appends ``<seq> <time.monotonic_ns()>`` to the file named by
``BENCH_COMMIT_LOG`` right after its commit (``bench.commit_clock``).
``CLOCK_MONOTONIC`` is system-wide, so the benchmark's websocket clients on the same
machine can subtract it from their receive times. Nothing else changes.
"""

from __future__ import annotations

import os
import time

from bench import commit_clock
from studio.asgi import application  # first: it sets Django up

__all__ = ["application"]

commit_clock.install(
    os.environ["BENCH_COMMIT_LOG"], key=lambda stored: stored.seq, clock=time.monotonic_ns
)
