"""A long conversation in Studio: the CPU a run's turn costs as its session grows.

The benchmark turn (``bench.workload``: a model call, the tool, a model call) on the
zero-latency LangChain chat model through the SDK's adapter (``bench.floor``), in
sessions of ``--sizes`` stored events, as Studio's worker runs it: a new agent and
``Runner`` for every turn (the worker builds them from the run's pinned agent
version), sharing the process's history cache (``studio.session_cache.HISTORIES``), on
``DjangoSessionService`` (SQLite, or a throwaway PostgreSQL database).

- cold: the process never read the session (its caches cleared first): the turn reads
  every visible event and converts each for the model;
- warm: the conversation's previous turn ran in this process, which kept the session's
  events and their model messages (``studio.session_cache``): the turn reads and
  converts only what was stored since.

Each figure (``long_session.<backend>.events_<n>``) is the warm turn's median process
CPU (the event loop and the ORM thread; not the PostgreSQL server's), with the cold
turn's and the reference's in ``details``: the same turn written directly on
langchain-core with a history of as many turns (``bench.floor``), for scale (the
Studio turn also stores its six events, with a commit each). No target: the issue's
runner targets are the SDK's (``runner_overhead``, ``history_growth``).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench.big_history import run_backend
from bench.common import Measurement, add_backend_args, each_backend, emit, log, parser, rounded
from bench.floor import adapter_model, new_history, reference_model, reference_turn
from bench.workload import (
    EVENTS_PER_TURN,
    INSTRUCTION,
    USER,
    clone_turn,
    lookup_weather,
    run_turn,
    sample_turn,
)

BACKENDS = ("sqlite", "postgresql")
FILL_BATCH = 600


def measure(backend: str, ns: argparse.Namespace) -> None:
    from django.contrib.auth import get_user_model

    get_user_model().objects.create(username=USER)
    asyncio.run(_measure(backend, ns))


async def _measure(backend: str, ns: argparse.Namespace) -> None:
    from asgiref.sync import sync_to_async

    from studio.session_service import DjangoSessionService

    service = DjangoSessionService()
    template = await sample_turn()
    for size in sorted(ns.sizes):
        session = await service.create_session(app_name="agents", user_id=USER)
        await sync_to_async(_fill)(session.id, template, size // EVENTS_PER_TURN)
        turn = _turn(service, session.id)
        cold = [await _cpu_ms(turn, cold=True) for _ in range(ns.repeat)]
        await turn()  # the conversation's previous run, in this process
        warm = [await _cpu_ms(turn, cold=False) for _ in range(ns.repeat)]
        reference = await _reference_ms(size // EVENTS_PER_TURN, ns.repeat)
        warm_ms, cold_ms = statistics.median(warm), statistics.median(cold)
        log(f"long_session: {backend} {size:,} events: warm {warm_ms:.1f} ms, cold {cold_ms:.1f}")
        emit(
            Measurement(
                f"long_session.{backend}.events_{size}",
                rounded(warm_ms),
                "ms",
                details={
                    "events": size,
                    "warm_ms": rounded(warm_ms),
                    "cold_ms": rounded(cold_ms),
                    "reference_ms": rounded(reference),
                    "repeat": ns.repeat,
                },
            )
        )


def _fill(session_key: str, template: Any, turns: int) -> None:
    """``turns`` copies of a real turn, stored as the session service stores events."""
    from studio import event_rows

    events = [e for number in range(turns) for e in clone_turn(template, number)]
    for start in range(0, len(events), FILL_BATCH):
        event_rows.insert_batch([(session_key, e) for e in events[start : start + FILL_BATCH]])


def _turn(service: Any, session_key: str) -> Callable[[], Awaitable[int]]:
    from agents_core import FunctionTool, LlmAgent, Runner
    from agents_core.llm.resilience import BreakerRegistry
    from studio import session_cache

    async def turn() -> int:
        agent = LlmAgent(
            "assistant",
            model=adapter_model(),
            instruction=INSTRUCTION,
            tools=[FunctionTool(lookup_weather, side_effects=False)],
            histories=session_cache.HISTORIES,
        )
        runner = Runner(agent, session_service=service, breakers=BreakerRegistry())
        return await run_turn(runner, session_key)

    return turn


async def _cpu_ms(turn: Callable[[], Awaitable[int]], *, cold: bool) -> float:
    from studio import session_cache

    if cold:
        session_cache.CACHE.clear()
        session_cache.HISTORIES.clear()
    started = time.process_time()
    await turn()
    return (time.process_time() - started) * 1000


async def _reference_ms(turns: int, repeat: int) -> float:
    model, history = reference_model(), new_history()
    for _ in range(turns):
        await reference_turn(model, history)
    times = []
    for _ in range(repeat):
        started = time.process_time()
        await reference_turn(model, history)
        times.append((time.process_time() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    args = parser(__doc__)
    add_backend_args(args, BACKENDS)
    args.add_argument("--sizes", type=int, nargs="+", default=[60, 1_200, 6_000])
    args.add_argument("--repeat", type=int, default=7)
    ns = args.parse_args()
    if not each_backend("bench.long_session", BACKENDS, ns.backend):
        run_backend(ns.backend, ns, measure)


if __name__ == "__main__":
    main()
