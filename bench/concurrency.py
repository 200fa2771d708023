"""Concurrency: many sessions on one event loop, against the reference.

200 sessions x 5 turns (``bench.workload``) through the SDK's LangChain adapter, every
session a task running its turns one after another, all tasks gathered on one loop and
sharing one ``Runner`` and one ``InMemorySessionService``. The reference
(``bench.floor``) runs the same 200 tasks on one bound chat model, each with its own
list of messages. Passes alternate, runner then reference, for ``--rounds`` rounds; each
side's figure is its median pass.

- ``concurrency.turns_per_second``: target >= 0.7x the reference's (``cpu_ratio`` in
  the details: the same ratio from the process's CPU time over each pass).
- ``concurrency.memory_per_session``: Python memory still allocated per session once
  every session has run, while the sessions live (the runner, with its session
  service and caches; the reference's message lists), from ``tracemalloc``, in an
  untimed pass of each. Target <= 1.5x the reference's. Its details split the runner's
  into the histories its agent keeps for the sessions' next model calls
  (``agent_history_kib``) and the rest, the session service's stored events and
  sessions (``stored_kib``).
- ``concurrency.peak_rss``: the process's peak RSS (no target).
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

from agents_core import LlmAgent, Runner
from bench.common import Measurement, emit, log, parser, peak_rss_mib, rounded
from bench.floor import adapter_model, new_history, reference_model, reference_turn
from bench.workload import make_runner, run_turn

TURNS_TARGET = 0.7
MEMORY_TARGET = 1.5

Pass = Callable[[int, int], Awaitable[tuple[float, Any]]]


async def runner_pass(sessions: int, turns: int) -> tuple[float, Any]:
    """Seconds to run every session's turns concurrently, and what keeps them alive."""
    runner = make_runner(model=adapter_model())

    async def session(index: int) -> None:
        for _ in range(turns):
            await run_turn(runner, f"s{index}")

    started = time.perf_counter()
    await asyncio.gather(*(session(i) for i in range(sessions)))
    return time.perf_counter() - started, runner


async def reference_pass(sessions: int, turns: int) -> tuple[float, Any]:
    model = reference_model()
    histories = [new_history() for _ in range(sessions)]

    async def session(index: int) -> None:
        for _ in range(turns):
            await reference_turn(model, histories[index])

    started = time.perf_counter()
    await asyncio.gather(*(session(i) for i in range(sessions)))
    return time.perf_counter() - started, (model, histories)


def retained_bytes_per_session(
    run: Pass, sessions: int, turns: int, release: Callable[[Any], object] | None = None
) -> tuple[float, float]:
    """Python memory allocated by a pass and still held once it is over, per session;
    and how much of it ``release`` frees, given what keeps the sessions alive (0.0
    without one)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        _, alive = asyncio.run(run(sessions, turns))
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - before
        freed = 0
        if release is not None:
            release(alive)
            gc.collect()
            freed = retained - (tracemalloc.get_traced_memory()[0] - before)
        del alive
        return retained / sessions, freed / sessions
    finally:
        tracemalloc.stop()


def forget_histories(runner: Runner) -> None:
    """Drop the model histories the runner's agent keeps for its sessions' next calls
    (each session's messages and the LangChain messages made of them): what is left is
    the session service's stored events and sessions."""
    agent = runner.agent
    if isinstance(agent, LlmAgent):
        agent.histories.clear()


def traced_peak_mib(sessions: int, turns: int) -> float:
    tracemalloc.start()
    try:
        asyncio.run(runner_pass(sessions, turns))
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def cpu_timed(run: Pass, sessions: int, turns: int) -> tuple[float, float]:
    """A pass's wall seconds and the process's CPU seconds over it (on a shared machine
    the wall time includes waiting for a CPU; the CPU time does not)."""
    cpu_started = time.process_time()
    elapsed = asyncio.run(run(sessions, turns))[0]
    return elapsed, time.process_time() - cpu_started


def timed_rounds(sessions: int, turns: int, rounds: int) -> tuple[float, float, float]:
    """Median seconds of the runner's and of the reference's passes, alternating, and
    the ratio of their median CPU times (the reference's over the runner's)."""
    runner, reference, runner_cpu, reference_cpu = [], [], [], []
    for round_no in range(1, rounds + 1):
        for run, wall, cpu in (
            (runner_pass, runner, runner_cpu),
            (reference_pass, reference, reference_cpu),
        ):
            elapsed, used = cpu_timed(run, sessions, turns)
            wall.append(elapsed)
            cpu.append(used)
        log(
            f"concurrency: round {round_no}: runner {runner[-1]:.2f}s ({runner_cpu[-1]:.2f}s"
            f" CPU), reference {reference[-1]:.2f}s ({reference_cpu[-1]:.2f}s CPU)"
        )
    cpu_ratio = statistics.median(reference_cpu) / statistics.median(runner_cpu)
    return statistics.median(runner), statistics.median(reference), cpu_ratio


def main() -> None:
    args = parser(__doc__)
    args.add_argument("--sessions", type=int, default=200)
    args.add_argument("--turns", type=int, default=5)
    args.add_argument("--rounds", type=int, default=3)
    ns = args.parse_args()
    for warm in (runner_pass, reference_pass):  # imports and code paths
        asyncio.run(warm(5, 2))
    rss_before = peak_rss_mib()
    elapsed, reference_elapsed, cpu_ratio = timed_rounds(ns.sessions, ns.turns, ns.rounds)
    rss_peak = peak_rss_mib()
    total = ns.sessions * ns.turns
    shape = {
        "sessions": ns.sessions,
        "turns_per_session": ns.turns,
        "elapsed_s": rounded(elapsed, 2),
    }
    per_s, reference_per_s = total / elapsed, total / reference_elapsed
    emit(
        Measurement(
            "concurrency.turns_per_second",
            rounded(per_s),
            "turns/s",
            target=f">= {TURNS_TARGET}x reference",
            met=per_s >= TURNS_TARGET * reference_per_s,
            details={
                **shape,
                "ratio": round(per_s / reference_per_s, 2),
                "cpu_ratio": round(cpu_ratio, 2),
                "reference_turns_per_s": rounded(reference_per_s),
                "rounds": ns.rounds,
            },
        )
    )
    memory, history = retained_bytes_per_session(
        runner_pass, ns.sessions, ns.turns, forget_histories
    )
    memory, history = memory / 1024, history / 1024
    reference_memory = retained_bytes_per_session(reference_pass, ns.sessions, ns.turns)[0] / 1024
    emit(
        Measurement(
            "concurrency.memory_per_session",
            rounded(memory),
            "KiB",
            target=f"<= {MEMORY_TARGET}x reference",
            met=memory <= MEMORY_TARGET * reference_memory,
            details={
                **shape,
                "ratio": round(memory / reference_memory, 2),
                "reference_kib": rounded(reference_memory),
                "agent_history_kib": rounded(history),
                "stored_kib": rounded(memory - history),
            },
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
