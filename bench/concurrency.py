"""Concurrency: many sessions on one event loop.

200 sessions x 5 turns (``bench.workload``), every session a task running its turns
one after another, all tasks gathered on one loop and sharing one ``Runner`` and one
``InMemorySessionService``. Reports turns per second and the process's peak RSS; a
second, untimed pass under ``tracemalloc`` gives the peak of Python allocations.
The issue sets no target for either.
"""

from __future__ import annotations

import asyncio
import time
import tracemalloc

from bench.common import Measurement, emit, log, parser, peak_rss_mib, rounded
from bench.workload import make_runner, run_turn


async def run_all_sessions(sessions: int, turns: int) -> float:
    """Seconds to run every session's turns concurrently."""
    runner = make_runner()

    async def session(index: int) -> None:
        for _ in range(turns):
            await run_turn(runner, f"s{index}")

    started = time.perf_counter()
    await asyncio.gather(*(session(i) for i in range(sessions)))
    return time.perf_counter() - started


def traced_peak_mib(sessions: int, turns: int) -> float:
    tracemalloc.start()
    try:
        asyncio.run(run_all_sessions(sessions, turns))
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def main() -> None:
    args = parser(__doc__)
    args.add_argument("--sessions", type=int, default=200)
    args.add_argument("--turns", type=int, default=5)
    ns = args.parse_args()
    asyncio.run(run_all_sessions(5, 2))  # warm imports and code paths
    rss_before = peak_rss_mib()
    elapsed = asyncio.run(run_all_sessions(ns.sessions, ns.turns))
    rss_peak = peak_rss_mib()
    total = ns.sessions * ns.turns
    log(f"concurrency: {total} turns in {elapsed:.2f}s")
    shape = {
        "sessions": ns.sessions,
        "turns_per_session": ns.turns,
        "elapsed_s": rounded(elapsed, 2),
    }
    emit(
        Measurement(
            "concurrency.turns_per_second", rounded(total / elapsed), "turns/s", details=shape
        )
    )
    emit(
        Measurement(
            "concurrency.peak_rss",
            rounded(rss_peak),
            "MiB",
            details={
                **shape,
                "rss_before_run_mib": rounded(rss_before),
                "python_alloc_peak_mib": rounded(traced_peak_mib(ns.sessions, ns.turns)),
            },
        )
    )


if __name__ == "__main__":
    main()
