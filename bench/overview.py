"""The overview dashboard's server time on a big history (issue 19): generate_history's
sessions, runs and events (default 10,000 sessions, 1,000,000 events), then
``GET /overview/`` through Django's test client (no network, no browser) for one user
over the default 14 days and over the longest range the page allows (92 days), and
the figures alone (``studio.overview.overview``).

``--users 1`` puts the whole history under one user (the worst case for one page);
generate_history's default spreads it over 20. SQLite is a throwaway file; PostgreSQL a
throwaway ``studio_bench_<pid>`` database (``bench.pgdb``).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from bench.big_history import run_backend
from bench.common import Measurement, add_backend_args, each_backend, emit, log, parser, percentile

TARGET_MS = 500
BACKENDS = ("sqlite", "postgresql")


def measure(backend: str, ns: argparse.Namespace) -> None:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from studio.management.history import START, Plan, generate
    from studio.models import Event, Run
    from studio.overview import DayRange, overview

    plan = Plan(users=ns.users, events=ns.events, sessions=ns.sessions, big_events=ns.big_events)
    started = time.perf_counter()
    written = generate(plan, log=log)
    took = time.perf_counter() - started
    log(f"generated {written.events} events, {written.runs} runs in {took:.0f} s")
    user = get_user_model().objects.get(username="history_user_0")
    client = Client()
    client.force_login(user)
    first = START.date()
    size = {"sessions": written.sessions, "events": written.events, "users": ns.users}
    mine = {
        "runs": Run.objects.filter(session__owner=user).count(),
        "events": Event.objects.filter(session__owner=user).count(),
    }
    for days in (14, 92):
        last = first + timedelta(days=days - 1)
        query = {"start": first.isoformat(), "end": last.isoformat()}
        details = {**size, "user": mine, "days": days}
        timed(
            f"overview.{backend}.page_{days}d",
            lambda q=query: client.get("/overview/", q),
            ns.repeat,
            details,
        )
        span = DayRange(first, last)
        timed(
            f"overview.{backend}.figures_{days}d",
            lambda s=span: overview(user, s),
            ns.repeat,
            details,
        )


def timed(name: str, read: Callable[[], Any], repeat: int, details: dict[str, Any]) -> None:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        answer = read()
        times.append((time.perf_counter() - started) * 1000)
        if getattr(answer, "status_code", 200) != 200:
            raise SystemExit(f"{name} answered {answer.status_code}")
    p50 = round(percentile(times, 50), 1)
    emit(
        Measurement(
            name,
            p50,
            "ms",
            target=f"< {TARGET_MS} ms",
            met=p50 < TARGET_MS,
            details={**details, "max_ms": round(max(times), 1), "first_ms": round(times[0], 1)},
        )
    )


def main() -> None:
    args = parser(__doc__)
    add_backend_args(args, BACKENDS)
    args.add_argument("--events", type=int, default=1_000_000)
    args.add_argument("--sessions", type=int, default=10_000)
    args.add_argument("--users", type=int, default=20)
    args.add_argument("--big-events", type=int, default=10_000)
    args.add_argument("--repeat", type=int, default=5)
    ns = args.parse_args()
    if not each_backend("bench.overview", BACKENDS, ns.backend):
        run_backend(ns.backend, ns, measure)


if __name__ == "__main__":
    main()
