"""Runner overhead: microseconds per user turn through ``Runner`` against the reference.

Each turn is a model call, the tool, and a model call (``bench.workload``), on a
zero-latency LangChain chat model (``bench.floor.ScriptedChatModel``) driven through
the SDK's LangChain adapter, with ``InMemorySessionService``. The reference is the same
turn written directly on langchain-core (``bench.floor``). Three shapes, each compared
with the same shape of the reference:

- fresh session: every turn in a new session (the reference starts a new message list);
- one session: every turn in the same session (the reference keeps one growing list);
- streaming: a fresh session per turn on ``astream``, every token published (the
  runner's partial events; the reference's bare ``astream`` loop hands each token on).
  The benchmark's answer is four words; the same turn with a 100-word answer is timed
  too, and the streaming row's details give the cost of one streamed chunk on each
  side (``per_chunk``: the difference between the two answers, over the chunks added),
  which is what a real model's answer of hundreds of tokens pays most of.

Targets: the runner within 1.5x of the reference (2x streaming). The runner on the
SDK's own ``ScriptedModel`` (no LangChain at all) is timed too, for the adapter's share.
In each round the variants take turns, one turn each at a time, so drift and a busy
machine hit them alike; each variant's figure is the median of its round means.
Each turn's CPU time (the thread's, ``time.thread_time_ns``) is recorded beside its
wall time and its ratio given in the details (``cpu_ratio``): on a shared machine a
turn's wall time includes the time the process waited for a CPU, and a long turn is
more likely to include such a wait than a short one, so the wall ratio overstates the
runner's cost under load; the CPU ratio does not count waiting.

Studio runs every agent in a process whose start-up heap is frozen (``studio.heap``: its
servers and its worker), so that a full garbage collection does not walk the modules,
classes and validators start-up made (~75 ms a collection here, for agents_core and
LangChain alone). Every variant runs twice: in this process as it is, then with its
start-up heap frozen as Studio's worker does. The figures are the second; the first
are in the details (``plain_process``), for a script that runs the SDK on its own.

Where a fresh turn's time goes is in its details (``breakdown``): the runner's fixed
cost (a turn of an agent that does nothing: session, user message, agent start and
end, the producer task), the agent's own work (the runner on the SDK's scripted model,
less that fixed cost), LangChain's share (the runner on the adapter, less the runner on
the scripted model), and each variant's garbage collection per turn (collections land
in whichever turn allocates when one is due, so this is only their sum, shared out).
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agents_core import BaseLlm, InMemorySessionService, Runner
from agents_core.agents.base import BaseAgent
from agents_core.context import Context
from agents_core.events import Event
from agents_core.llm.resilience import BreakerRegistry
from bench.common import Measurement, emit, log, mean, parser, percentile, rounded
from bench.floor import (
    ANSWER,
    adapter_model,
    new_history,
    reference_model,
    reference_stream_turn,
    reference_turn,
)
from bench.workload import make_runner, run_turn
from studio.heap import freeze_startup_heap

TARGET_RATIO = 1.5
STREAMING_TARGET_RATIO = 2.0
LONG_ANSWER = " ".join([ANSWER] * 25)
"""A streamed answer of 100 words (a chunk each), for the cost of a chunk."""
ADDED_CHUNKS = len(LONG_ANSWER.split(" ")) - len(ANSWER.split(" "))
"""The streamed chunks the long answer has more than the benchmark's."""

Turn = Callable[[int], Awaitable[None]]
TurnFactory = Callable[[], Turn]


def reference_variant(*, fresh: bool, stream: bool = False, answer: str = ANSWER) -> TurnFactory:
    def make() -> Turn:
        model, history, tokens = reference_model(answer), new_history(), []

        async def turn(index: int) -> None:
            messages = new_history() if fresh else history
            if stream:
                tokens.clear()
                await reference_stream_turn(model, messages, tokens.append)
            else:
                await reference_turn(model, messages)

        return turn

    return make


def runner_variant(*, fresh: bool, model: Callable[[], BaseLlm | None]) -> TurnFactory:
    def make() -> Turn:
        runner = make_runner(model=model())

        async def turn(index: int) -> None:
            await run_turn(runner, f"s{index}" if fresh else "s")

        return turn

    return make


class IdleAgent(BaseAgent):
    """An agent that does nothing: its turn is the runner's fixed cost alone."""

    async def _astream(self, ctx: Context) -> AsyncGenerator[Event]:
        return
        yield  # an async generator that yields nothing


def idle_variant() -> TurnFactory:
    def make() -> Turn:
        runner = Runner(
            IdleAgent("assistant"),
            session_service=InMemorySessionService(),
            breakers=BreakerRegistry(),
        )

        async def turn(index: int) -> None:
            await run_turn(runner, f"s{index}")

        return turn

    return make


class GcClock:
    """Seconds the garbage collector has spent since it was installed."""

    def __init__(self) -> None:
        self.spent = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.spent += time.perf_counter() - self._started


GC_CLOCK = GcClock()


@dataclass(slots=True)
class Timing:
    """Per-turn durations (microseconds) of every round a variant ran."""

    rounds: list[list[float]] = field(default_factory=list)
    cpu_rounds: list[list[float]] = field(default_factory=list)
    """The same turns' CPU time (microseconds)."""
    gc_us: list[float] = field(default_factory=list)
    """Garbage collection in each round (microseconds a turn)."""

    @property
    def us_per_turn(self) -> float:
        return statistics.median(mean(r) for r in self.rounds)

    @property
    def cpu_us_per_turn(self) -> float:
        return statistics.median(mean(r) for r in self.cpu_rounds)

    @property
    def gc_us_per_turn(self) -> float:
        return statistics.median(self.gc_us)

    def summary(self) -> dict[str, float]:
        pooled = [d for r in self.rounds for d in r]
        return {
            "us_per_turn": rounded(self.us_per_turn),
            "p50_us": rounded(percentile(pooled, 50)),
            "p99_us": rounded(percentile(pooled, 99)),
            "cpu_us_per_turn": rounded(self.cpu_us_per_turn),
            "gc_us_per_turn": rounded(self.gc_us_per_turn),
            "rounds": len(self.rounds),
        }


async def time_round(
    variants: dict[str, TurnFactory], turns: int, warmup: int
) -> dict[str, tuple[list[float], list[float], float]]:
    """One round: each variant warmed on an instance of its own, then ``turns`` turns of
    every variant on new instances (a one-session variant starts from an empty session),
    interleaved turn by turn so that a busy machine slows them all alike."""
    for make in variants.values():
        warm = make()
        for index in range(warmup):
            await warm(index)
    running = {name: make() for name, make in variants.items()}
    durations: dict[str, tuple[list[float], list[float]]] = {n: ([], []) for n in variants}
    collecting = dict.fromkeys(variants, 0.0)
    for index in range(turns):
        for name, turn in running.items():
            gc_before = GC_CLOCK.spent
            started, cpu_started = time.perf_counter_ns(), time.thread_time_ns()
            await turn(index)
            cpu = time.thread_time_ns() - cpu_started
            durations[name][0].append((time.perf_counter_ns() - started) / 1000)
            durations[name][1].append(cpu / 1000)
            collecting[name] += GC_CLOCK.spent - gc_before
    return {n: (*d, collecting[n] * 1e6 / turns) for n, d in durations.items()}


async def measure(
    variants: dict[str, TurnFactory], *, turns: int, warmup: int, rounds: int, budget_s: float
) -> dict[str, Timing]:
    """Up to ``rounds`` rounds; none starts once ``budget_s`` seconds have been spent."""
    timings = {name: Timing() for name in variants}
    started = time.perf_counter()
    for round_no in range(1, rounds + 1):
        if round_no > 1 and time.perf_counter() - started > budget_s:
            break
        for name, (durations, cpu, gc_us) in (await time_round(variants, turns, warmup)).items():
            timings[name].rounds.append(durations)
            timings[name].cpu_rounds.append(cpu)
            timings[name].gc_us.append(gc_us)
        figures = ", ".join(f"{n} {mean(t.rounds[-1]):.0f}" for n, t in timings.items())
        log(f"runner_overhead: round {round_no} (us/turn): {figures}")
    return timings


def compare(
    name: str, runner: Timing, reference: Timing, target: float, extra: dict[str, Any]
) -> Measurement:
    ratio = runner.us_per_turn / reference.us_per_turn
    return Measurement(
        name=name,
        value=rounded(runner.us_per_turn),
        unit="us/turn",
        target=f"<= {target:g}x reference",
        met=ratio <= target,
        details={
            "ratio": round(ratio, 2),
            "cpu_ratio": round(runner.cpu_us_per_turn / reference.cpu_us_per_turn, 2),
            "runner": runner.summary(),
            "reference": reference.summary(),
            **extra,
        },
    )


VARIANTS: dict[str, TurnFactory] = {
    "reference_fresh": reference_variant(fresh=True),
    "runner_fresh": runner_variant(fresh=True, model=adapter_model),
    "reference_one": reference_variant(fresh=False),
    "runner_one": runner_variant(fresh=False, model=adapter_model),
    "reference_stream": reference_variant(fresh=True, stream=True),
    "runner_stream": runner_variant(fresh=True, model=lambda: adapter_model(streaming=True)),
    "runner_fresh_scripted": runner_variant(fresh=True, model=lambda: None),
    "runner_fresh_idle": idle_variant(),
}


CHUNK_VARIANTS: dict[str, TurnFactory] = {
    "reference_stream": VARIANTS["reference_stream"],
    "runner_stream": VARIANTS["runner_stream"],
    "reference_stream_long": reference_variant(fresh=True, stream=True, answer=LONG_ANSWER),
    "runner_stream_long": runner_variant(
        fresh=True, model=lambda: adapter_model(streaming=True, answer=LONG_ANSWER)
    ),
}
"""The streaming turn with the short and the long answer, for ``per_chunk``: timed in
rounds of their own, as the long turns allocate far more and would draw the garbage
collections that the other variants' turns would otherwise meet."""


SHAPES = (
    ("fresh_session", "runner_fresh", "reference_fresh", TARGET_RATIO, "a new session per turn"),
    ("one_session", "runner_one", "reference_one", TARGET_RATIO, "one session, {turns} turns"),
    (
        "streaming",
        "runner_stream",
        "reference_stream",
        STREAMING_TARGET_RATIO,
        "a new session per turn, astream, tokens published",
    ),
)


async def main_async(turns: int, warmup: int, rounds: int, budget_s: float) -> None:
    """Every variant in this process as it is, then again with its start-up heap frozen
    as Studio's servers and worker freeze theirs (``studio.heap``): the figures that
    count are the second, the path every Studio run takes; the first are in the details
    (``plain_process``), for a script that runs the SDK on its own."""
    gc.callbacks.append(GC_CLOCK)
    try:
        plain = await measure(
            VARIANTS, turns=turns, warmup=warmup, rounds=rounds, budget_s=budget_s
        )
        freeze_startup_heap()
        try:
            t = await measure(
                VARIANTS, turns=turns, warmup=warmup, rounds=rounds, budget_s=budget_s
            )
            chunks = await measure(
                CHUNK_VARIANTS, turns=turns, warmup=warmup, rounds=rounds, budget_s=budget_s
            )
        finally:
            gc.unfreeze()
    finally:
        gc.callbacks.remove(GC_CLOCK)
    for shape, runner, reference, target, session in SHAPES:
        extra: dict[str, Any] = {
            "turns": turns,
            "session": session.format(turns=turns),
            "heap": "start-up heap frozen, as in Studio's worker (studio.heap)",
        }
        if shape == "fresh_session":
            scripted = t["runner_fresh_scripted"].us_per_turn
            extra["runner_on_scripted_model_us"] = rounded(scripted)
            extra["runner_on_scripted_model_ratio"] = round(
                scripted / t["reference_fresh"].us_per_turn, 2
            )
            extra["breakdown"] = breakdown(t)
        if shape == "streaming":
            extra["per_chunk"] = per_chunk(chunks)
        extra["plain_process"] = {
            "ratio": round(plain[runner].us_per_turn / plain[reference].us_per_turn, 2),
            "us_per_turn": rounded(plain[runner].us_per_turn),
            "reference_us_per_turn": rounded(plain[reference].us_per_turn),
            "gc_us_per_turn": rounded(plain[runner].gc_us_per_turn),
        }
        emit(compare(f"runner_overhead.{shape}", t[runner], t[reference], target, extra))


def breakdown(t: dict[str, Timing]) -> dict[str, float]:
    """Where a fresh turn's microseconds go (see the module docstring)."""
    idle, scripted = t["runner_fresh_idle"], t["runner_fresh_scripted"]
    runner = t["runner_fresh"]
    return {
        "runner_fixed_us": rounded(idle.us_per_turn),
        "agent_steps_us": rounded(scripted.us_per_turn - idle.us_per_turn),
        "langchain_and_adapter_us": rounded(runner.us_per_turn - scripted.us_per_turn),
        "reference_us": rounded(t["reference_fresh"].us_per_turn),
        "runner_gc_us": rounded(runner.gc_us_per_turn),
        "reference_gc_us": rounded(t["reference_fresh"].gc_us_per_turn),
    }


def per_chunk(t: dict[str, Timing]) -> dict[str, float]:
    """What one more streamed chunk costs each side: the long answer's turn less the
    benchmark's, over the chunks between them (``ADDED_CHUNKS``); and the long turn's
    own ratio."""
    runner = (t["runner_stream_long"].us_per_turn - t["runner_stream"].us_per_turn) / ADDED_CHUNKS
    reference = (
        t["reference_stream_long"].us_per_turn - t["reference_stream"].us_per_turn
    ) / ADDED_CHUNKS
    long_ratio = t["runner_stream_long"].us_per_turn / t["reference_stream_long"].us_per_turn
    return {
        "runner_us": rounded(runner),
        "reference_us": rounded(reference),
        "ratio": round(runner / reference, 2) if reference > 0 else float("nan"),
        "long_answer_words": len(LONG_ANSWER.split(" ")),
        "long_answer_ratio": round(long_ratio, 2),
    }


def main() -> None:
    args = parser(__doc__)
    args.add_argument("--turns", type=int, default=200)
    args.add_argument("--warmup", type=int, default=20)
    args.add_argument("--rounds", type=int, default=3)
    args.add_argument("--budget-s", type=float, default=60.0, help="no new round after this")
    ns = args.parse_args()
    asyncio.run(main_async(ns.turns, ns.warmup, ns.rounds, ns.budget_s))


if __name__ == "__main__":
    main()
