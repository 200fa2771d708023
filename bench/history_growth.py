"""History growth: does a turn get slower as its session gets longer?

One session of 2,000 turns (``bench.workload``; six stored events a turn) through the
SDK's LangChain adapter (``--model scripted``: the SDK's own ``ScriptedModel``). The
figure is the median time of its last 100 turns over that of the first 100 turns of a session
(medians: on a shared machine a few preempted turns would otherwise decide it; the
ratio of means is in ``details``).
Target: <= 1.2 (the per-turn cost must not grow with the history).

On the LangChain adapter (the default) the figure is ``adapter_last_over_first``,
with no target: every LangChain call does work per message of the history (it
normalises and copies the list for tracing), so the reference grows too; its own
growth is in ``details``. What is compared there is ``history_growth.vs_reference``:
those last 100 turns (1,901-2,000) against the same turns of the reference
(``bench.floor``: one list of LangChain messages grown by 2,000 turns), timed in the
same interleaved loop. Target: <= 1.5x. ``--model scripted`` gives
``last_over_first`` with its 1.2 target (the SDK's own growth, no LangChain).

The last 100 turns are timed interleaved, turn by turn, with the first 100 turns of a
second, new session on the same runner, so that a machine getting busier or quieter
during the run does not pass for growth. ``details`` also gives the plain sequential
ratio (the long session's own first 100 turns, timed at the start).

The first 100 turns and the last 100 always run through the ``Runner``. Turns in
between run through it too until ``--fill-budget-s`` is spent; the rest are stored
directly with ``append_event`` as copies of a real turn's events (fresh ids), so the
session reaches 2,000 turns of identical shape without the run taking quadratic time.
``details`` says how many turns were run and how many appended. With
``--profile-turns N``, N turns at each end (again interleaved) run under cProfile and
the functions whose time per turn grew most are listed.
"""

from __future__ import annotations

import asyncio
import cProfile
import pstats
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents_core import Event, Runner, Session
from bench.common import Measurement, emit, log, mean, parser, rounded
from bench.floor import Model, adapter_model, new_history, reference_model, reference_turn
from bench.workload import USER, clone_turn, make_runner, run_turn

TARGET_RATIO = 1.2
REFERENCE_TARGET_RATIO = 1.5
ROOT = f"{Path(__file__).resolve().parents[1]}/"
SESSION = "long"
PAIRED = "paired"


@dataclass(slots=True)
class Run:
    """The turns of the long session as they were timed (ms) or appended."""

    head: list[float] = field(default_factory=list)
    """The long session's first turns, timed as they ran."""
    paired_head: list[float] = field(default_factory=list)
    """A new session's first turns, each timed just before one of ``tail``."""
    tail: list[float] = field(default_factory=list)
    reference_head: list[float] = field(default_factory=list)
    """The reference's first turns, timed as it was filled."""
    reference_tail: list[float] = field(default_factory=list)
    """The reference's last turns, each timed just after one of ``tail``."""
    real_middle: int = 0
    appended: int = 0


async def load(runner: Runner, session_id: str = SESSION) -> Session:
    session = await runner.session_service.get_session(
        app_name=runner.app_name, user_id=USER, session_id=session_id
    )
    assert session is not None
    return session


def last_turn(session: Session) -> list[Event]:
    start = max(i for i, e in enumerate(session.events) if e.author == "user")
    return session.events[start:]


async def timed_turn(runner: Runner, session_id: str = SESSION) -> float:
    started = time.perf_counter()
    await run_turn(runner, session_id)
    return (time.perf_counter() - started) * 1000


async def timed_reference_turn(model: Model, history: list[Any]) -> float:
    started = time.perf_counter()
    await reference_turn(model, history)
    return (time.perf_counter() - started) * 1000


async def long_session(
    runner: Runner,
    turns: int,
    window: int,
    fill_budget_s: float,
    tail_budget_s: float,
    *,
    reference: bool,
) -> Run:
    run = Run()
    for _ in range(window):
        run.head.append(await timed_turn(runner))
    middle = range(window, turns - window)
    started = time.perf_counter()
    for number in middle:
        if time.perf_counter() - started < fill_budget_s:
            await timed_turn(runner)
            run.real_middle += 1
            continue
        await append_copies(runner, number, turns - window - number)
        run.appended = turns - window - number
        break
    log(f"history_growth: {window + len(middle)} turns stored")
    model, history = reference_model(), new_history()
    for number in range(turns - window if reference else 0):
        took = await timed_reference_turn(model, history)
        if number < window:
            run.reference_head.append(took)
    log(f"history_growth: timing the last {window} turns")
    started = time.perf_counter()
    for _ in range(window):
        run.paired_head.append(await timed_turn(runner, PAIRED))
        run.tail.append(await timed_turn(runner))
        if reference:
            run.reference_tail.append(await timed_reference_turn(model, history))
        if time.perf_counter() - started > tail_budget_s:
            log(f"history_growth: tail budget spent after {len(run.tail)} turns")
            break
    return run


async def append_copies(runner: Runner, first: int, count: int) -> None:
    session = await load(runner)
    template = last_turn(session)
    for number in range(first, first + count):
        for event in clone_turn(template, number):
            await runner.session_service.append_event(session, event)


def profile_turns(runner: Runner, turns: int) -> tuple[pstats.Stats, pstats.Stats]:
    """Profiles of ``turns`` turns of a new session and of the long one, interleaved."""
    head, tail = cProfile.Profile(), cProfile.Profile()

    async def go() -> None:
        await run_turn(runner, "profile-head")
        for _ in range(turns):
            for profiler, session_id in ((head, "profile-head"), (tail, SESSION)):
                profiler.enable()
                await run_turn(runner, session_id)
                profiler.disable()

    asyncio.run(go())
    return pstats.Stats(head), pstats.Stats(tail)


def per_turn_ms(stats: pstats.Stats, turns: int) -> dict[str, tuple[float, float]]:
    """(cumulative, own) ms per turn for every function in the profile."""
    table: dict[str, tuple[float, float]] = {}
    for (path, line, func), row in stats.stats.items():  # type: ignore[attr-defined]
        own, cumulative = row[2], row[3]
        key = f"{short_path(path)}:{line}({func})"
        table[key] = (cumulative * 1000 / turns, own * 1000 / turns)
    return table


def short_path(path: str) -> str:
    if "site-packages/" in path:
        return path.split("site-packages/")[-1]
    if path.startswith(ROOT):
        return path[len(ROOT) :]
    if "/lib/python3" in path:
        return "stdlib/" + path.rsplit("/", 1)[-1]
    return path


def growth(head: pstats.Stats, tail: pstats.Stats, turns: int, top: int = 8) -> dict[str, Any]:
    """The functions whose time per turn grew most from the first turns to the last:
    cumulative time for the SDK's own functions, own time for everything."""
    before, after = per_turn_ms(head, turns), per_turn_ms(tail, turns)

    def ranked(index: int, keep: str) -> list[dict[str, Any]]:
        rows = [
            (name, before.get(name, (0.0, 0.0))[index], times[index])
            for name, times in after.items()
            if keep in name
        ]
        rows.sort(key=lambda r: r[2] - r[1], reverse=True)
        return [
            {"function": n, "first_ms": round(b, 3), "last_ms": round(a, 3)}
            for n, b, a in rows[:top]
        ]

    return {"sdk_cumulative": ranked(0, "agents_core/"), "own_time": ranked(1, "")}


def main() -> None:
    args = parser(__doc__)
    args.add_argument("--turns", type=int, default=2000)
    args.add_argument("--window", type=int, default=100)
    args.add_argument("--fill-budget-s", type=float, default=30.0)
    args.add_argument("--tail-budget-s", type=float, default=120.0)
    args.add_argument("--profile-turns", type=int, default=0)
    args.add_argument("--model", choices=("langchain", "scripted"), default="langchain")
    ns = args.parse_args()
    runner = make_runner(model=adapter_model() if ns.model == "langchain" else None)
    asyncio.run(run_turn(runner, "warm-up"))
    langchain = ns.model == "langchain"
    run = asyncio.run(
        long_session(
            runner,
            ns.turns,
            ns.window,
            ns.fill_budget_s,
            ns.tail_budget_s,
            reference=langchain,
        )
    )
    events = len(asyncio.run(load(runner)).events)
    ratio = statistics.median(run.tail) / statistics.median(run.paired_head)
    details: dict[str, Any] = {
        "first_ms_mean": rounded(mean(run.paired_head), 3),
        "last_ms_mean": rounded(mean(run.tail), 3),
        "first_ms_median": rounded(statistics.median(run.paired_head), 3),
        "last_ms_median": rounded(statistics.median(run.tail), 3),
        "mean_ratio": round(mean(run.tail) / mean(run.paired_head), 2),
        "sequential_ratio": round(statistics.median(run.tail) / statistics.median(run.head), 2),
        "sequential_first_ms_median": rounded(statistics.median(run.head), 3),
        "turns": ns.turns,
        "window": ns.window,
        "tail_turns_timed": len(run.tail),
        "turns_run": len(run.head) + run.real_middle + len(run.tail),
        "turns_appended": run.appended,
        "events_in_session": events,
        "model": ns.model,
    }
    if ns.profile_turns:
        head, tail = profile_turns(runner, ns.profile_turns)
        details["growth_profile"] = growth(head, tail, ns.profile_turns)
    if not langchain:
        target = f"<= {TARGET_RATIO}"
        emit(
            Measurement(
                "history_growth.last_over_first",
                round(ratio, 2),
                "x",
                target=target,
                met=ratio <= TARGET_RATIO,
                details=details,
            )
        )
        return
    reference_last = statistics.median(run.reference_tail)
    details["reference_growth"] = round(reference_last / statistics.median(run.reference_head), 2)
    emit(
        Measurement("history_growth.adapter_last_over_first", round(ratio, 2), "x", details=details)
    )
    versus = statistics.median(run.tail) / reference_last
    emit(
        Measurement(
            "history_growth.vs_reference",
            round(versus, 2),
            "x",
            target=f"<= {REFERENCE_TARGET_RATIO}",
            met=versus <= REFERENCE_TARGET_RATIO,
            details={
                "last_ms_median": rounded(statistics.median(run.tail), 3),
                "reference_last_ms_median": rounded(reference_last, 3),
                "turns": ns.turns,
                "tail_turns_timed": len(run.tail),
                "model": ns.model,
            },
        )
    )


if __name__ == "__main__":
    main()
