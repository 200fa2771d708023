"""Runner overhead: microseconds per user turn through ``Runner`` against the floor.

Each turn is a tool call, the tool, and a final answer (``bench.workload``), on a
zero-latency scripted model and ``InMemorySessionService``. Two shapes, each compared
with the same shape of the floor (``bench.floor``):

- fresh session: every turn in a new session (the floor starts a new message list);
- one session: every turn in the same session (the floor keeps one growing list).

Target: the runner within 3x of the floor. In each round the variants take turns, one
turn each at a time, so drift and a busy machine hit them alike; each variant's figure
is the median of its round means.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agents_core.llm.langchain import LangChainModel
from bench.common import Measurement, emit, log, mean, parser, percentile, rounded
from bench.floor import fake_chat_model, floor_turn
from bench.workload import make_runner, run_turn

TARGET_RATIO = 3.0

Turn = Callable[[int], Awaitable[None]]
TurnFactory = Callable[[], Turn]


def floor_variant(*, fresh: bool, thread_hop: bool = False) -> TurnFactory:
    def make() -> Turn:
        model = fake_chat_model(thread_hop=thread_hop)
        history: list[Any] = []

        async def turn(index: int) -> None:
            await floor_turn(model, [] if fresh else history)

        return turn

    return make


def runner_variant(*, fresh: bool, langchain: bool = False) -> TurnFactory:
    def make() -> Turn:
        model = LangChainModel(fake_chat_model(), "fake", streaming=False) if langchain else None
        runner = make_runner(model=model)

        async def turn(index: int) -> None:
            await run_turn(runner, f"s{index}" if fresh else "s")

        return turn

    return make


@dataclass(slots=True)
class Timing:
    """Per-turn durations (microseconds) of every round a variant ran."""

    rounds: list[list[float]] = field(default_factory=list)

    @property
    def us_per_turn(self) -> float:
        return statistics.median(mean(r) for r in self.rounds)

    def summary(self) -> dict[str, float]:
        pooled = [d for r in self.rounds for d in r]
        return {
            "us_per_turn": rounded(self.us_per_turn),
            "p50_us": rounded(percentile(pooled, 50)),
            "p99_us": rounded(percentile(pooled, 99)),
            "rounds": len(self.rounds),
        }


async def time_round(
    variants: dict[str, TurnFactory], turns: int, warmup: int
) -> dict[str, list[float]]:
    """One round: each variant warmed on an instance of its own, then ``turns`` turns of
    every variant on new instances (a one-session variant starts from an empty session),
    interleaved turn by turn so that a busy machine slows them all alike."""
    for make in variants.values():
        warm = make()
        for index in range(warmup):
            await warm(index)
    running = {name: make() for name, make in variants.items()}
    durations: dict[str, list[float]] = {name: [] for name in variants}
    for index in range(turns):
        for name, turn in running.items():
            started = time.perf_counter_ns()
            await turn(index)
            durations[name].append((time.perf_counter_ns() - started) / 1000)
    return durations


async def measure(
    variants: dict[str, TurnFactory], *, turns: int, warmup: int, rounds: int, budget_s: float
) -> dict[str, Timing]:
    """Up to ``rounds`` rounds; none starts once ``budget_s`` seconds have been spent."""
    timings = {name: Timing() for name in variants}
    started = time.perf_counter()
    for round_no in range(1, rounds + 1):
        if round_no > 1 and time.perf_counter() - started > budget_s:
            break
        for name, durations in (await time_round(variants, turns, warmup)).items():
            timings[name].rounds.append(durations)
        figures = ", ".join(f"{n} {mean(t.rounds[-1]):.0f}" for n, t in timings.items())
        log(f"runner_overhead: round {round_no} (us/turn): {figures}")
    return timings


def compare(name: str, runner: Timing, floor: Timing, extra: dict[str, Any]) -> Measurement:
    ratio = runner.us_per_turn / floor.us_per_turn
    return Measurement(
        name=name,
        value=rounded(runner.us_per_turn),
        unit="us/turn",
        target=f"<= {TARGET_RATIO:g}x floor",
        met=ratio <= TARGET_RATIO,
        details={
            "ratio": round(ratio, 2),
            "runner": runner.summary(),
            "floor": floor.summary(),
            **extra,
        },
    )


async def main_async(turns: int, warmup: int, rounds: int, budget_s: float) -> None:
    variants = {
        "floor_fresh": floor_variant(fresh=True),
        "runner_fresh": runner_variant(fresh=True),
        "floor_one": floor_variant(fresh=False),
        "runner_one": runner_variant(fresh=False),
        "floor_fresh_thread_hop": floor_variant(fresh=True, thread_hop=True),
        "runner_fresh_langchain": runner_variant(fresh=True, langchain=True),
    }
    t = await measure(variants, turns=turns, warmup=warmup, rounds=rounds, budget_s=budget_s)
    floor = t["floor_fresh"].us_per_turn
    fresh_extra = {
        "turns": turns,
        "session": "a new session per turn",
        "runner_on_langchain_fake_us": rounded(t["runner_fresh_langchain"].us_per_turn),
        "runner_on_langchain_fake_ratio": round(t["runner_fresh_langchain"].us_per_turn / floor, 2),
        "floor_stock_generic_fake_us": rounded(t["floor_fresh_thread_hop"].us_per_turn),
    }
    emit(compare("runner_overhead.fresh_session", t["runner_fresh"], t["floor_fresh"], fresh_extra))
    one_extra = {"turns": turns, "session": f"one session, {turns} turns, starting empty"}
    emit(compare("runner_overhead.one_session", t["runner_one"], t["floor_one"], one_extra))


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
